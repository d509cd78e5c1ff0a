"""Defensive readers of /proc and /sys below a root (tests point it at a fake tree), kernel
CPU lists and /proc/self/mountinfo: each returns None (or an empty list) for what cannot be
read, never raises.  Mountinfo is read for the cgroup hierarchies and the container hint of
an overlay root; the filesystem of a benchmark's directory is the probe's record."""

import os
import re
from typing import Any

Env = dict[str, Any]

_OCTAL = re.compile(r"\\([0-7]{3})")


# --------------------------------------------------------------------------------------------
# defensive readers


def _path(root: str, rel: str) -> str:
    return os.path.join(root, rel.lstrip("/"))


def _read(root: str, rel: str) -> str | None:
    """The whole text of a file under root, or None if it cannot be read."""
    try:
        with open(_path(root, rel), encoding="utf-8", errors="replace") as f:
            return f.read()
    except (OSError, ValueError):
        return None


def _read1(root: str, rel: str) -> str | None:
    """A one-value file (sysfs style), stripped; None if unreadable."""
    text = _read(root, rel)
    return None if text is None else text.strip()


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def _exists(root: str, rel: str) -> bool:
    try:
        return os.path.lexists(_path(root, rel))
    except (OSError, ValueError):
        return False


def _listdir(root: str, rel: str) -> list[str]:
    try:
        return sorted(os.listdir(_path(root, rel)))
    except (OSError, ValueError):
        return []


def _safe(fn: Any, *args: Any) -> Any:
    """Run one section of the capture; any surprise there costs that section only."""
    try:
        return fn(*args)
    except Exception:  # capture must never fail a measurement run
        return None


def parse_cpulist(text: str | None) -> list[int] | None:
    """Parse a kernel CPU list ("0-3,8,10-11"); None when unreadable. Flags and junk are
    skipped, so isolcpus values such as "nohz,domain,2-3" parse as [2, 3]."""
    if text is None:
        return None
    text = text.strip()
    if text in ("", "(null)"):
        return []
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        stride = 1
        if ":" in part:  # "0-7:2/4" group syntax: take the stride, ignore the group size
            part, _, spec = part.partition(":")
            stride = _int(spec.split("/")[0]) or 1
        lo, dash, hi = part.partition("-")
        a, b = _int(lo), _int(hi) if dash else _int(lo)
        if a is None or b is None or b < a:
            continue
        cpus.update(range(a, b + 1, stride))
    return sorted(cpus)


def format_cpulist(cpus: list[int] | None) -> str:
    """The inverse of parse_cpulist: [0, 1, 2, 5] -> "0-2,5"."""
    if not cpus:
        return "none"
    runs: list[list[int]] = []
    for c in sorted(set(cpus)):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


# --------------------------------------------------------------------------------------------
# mountinfo


def _unescape(field: str) -> str:
    """Undo the octal escapes of /proc/*/mountinfo (\\040 space, \\011 tab, \\012, \\134)."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str | None) -> list[dict[str, str]] | None:
    """Parse /proc/self/mountinfo into dicts, in file order (later mounts lie on top)."""
    if text is None:
        return None
    mounts: list[dict[str, str]] = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            sep = fields.index("-", 6)
        except ValueError:
            continue
        if len(fields) < sep + 3 or len(fields) < 6:
            continue
        mounts.append(
            {
                "root": _unescape(fields[3]),
                "mount_point": _unescape(fields[4]),
                "mount_options": fields[5],
                "fstype": fields[sep + 1],
                "source": _unescape(fields[sep + 2]),
                "super_options": fields[sep + 3] if len(fields) > sep + 3 else "",
            }
        )
    return mounts


def _mount_of(mounts: list[dict[str, str]], path: str) -> dict[str, str] | None:
    """The mount holding path: the longest mount point that is path or a parent of it; of
    equal mount points the last one listed (the one mounted on top)."""
    best: dict[str, str] | None = None
    for m in mounts:
        mp = m["mount_point"]
        inside = mp == "/" or path == mp or path.startswith(mp.rstrip("/") + "/")
        if inside and (best is None or len(mp) >= len(best["mount_point"])):
            best = m
    return best


def _get(env: Env, *keys: str) -> Any:
    """env[k1][k2]... or None if any level is missing or not a dict."""
    cur: Any = env
    for k in keys:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(k)
    return cur


def available_memory(root: str = "/") -> int | None:
    """Bytes this process may still allocate: the least of the kernel's MemAvailable, what its
    cgroup's memory.max leaves (cgroup v2), and what RLIMIT_AS leaves of its address space;
    None where none of them is known."""
    import resource

    out: list[int] = []
    m = re.search(r"^MemAvailable:\s+(\d+)\s*kB", _read(root, "proc/meminfo") or "", re.M)
    if m:
        out.append(int(m[1]) * 1024)
    cg = re.search(r"^0::(/\S*)$", _read(root, "proc/self/cgroup") or "", re.M)
    if cg:
        base = "sys/fs/cgroup" + cg[1].rstrip("/")
        limit = _int(_read1(root, f"{base}/memory.max"))
        used = _int(_read1(root, f"{base}/memory.current"))
        if limit is not None and used is not None:
            out.append(max(0, limit - used))
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        vm = re.search(r"^VmSize:\s+(\d+)\s*kB", _read(root, "proc/self/status") or "", re.M)
        out.append(max(0, soft - (int(vm[1]) * 1024 if vm else 0)))
    return min(out) if out else None
