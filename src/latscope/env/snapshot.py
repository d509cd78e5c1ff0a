"""Environment capture: what a result was measured on, as a plain, JSON-ready dict.

`capture()` reads /proc, /sys and a few files under /etc and /boot, never raises: a file that
is missing or unreadable yields None for its field.  Every path is read through `root`, so
tests can point it at a fake tree.  Per-CPU maps are keyed by the CPU number as a string.  The
facts the probe records (`schema.PROBE_FACTS`) are never read here: they come from the probe's
record (a sample file's header, or ``latscope-probe --env``) and are merged in.
"""

import gzip
import os
import platform
import re
import time
from datetime import datetime, timezone

from .hardware import (
    _clocksource,
    _cpu,
    _cpu_dirs,
    _cpufreq,
    _cpuidle,
    _cpuinfo,
    _probe_clock,
    _virtualization,
)
from .readers import (
    Env,
    _exists,
    _int,
    _listdir,
    _path,
    _read,
    _read1,
    _safe,
    parse_mountinfo,
)
from .schema import SCHEMA, merge, of_header

_TSC_FLAGS = ("constant_tsc", "nonstop_tsc", "tsc_reliable", "tsc_known_freq", "rdtscp")


# --------------------------------------------------------------------------------------------
# sections


def _cmdline_params(cmdline: str | None) -> dict[str, str]:
    """Kernel parameters (before a "--", which hands the rest to init) as name -> value."""
    params: dict[str, str] = {}
    if not cmdline:
        return params
    for token in re.findall(r'(?:[^\s"]|"[^"]*")+', cmdline):
        if token == "--":
            break
        name, _, value = token.partition("=")
        params[name] = value.replace('"', "")
    return params


def _kernel(root: str, release: str | None) -> Env:
    """What the lab adds about the kernel; ``release`` (the probe's record) names the
    /boot/config-RELEASE file."""
    config = _safe(_kernel_config, root, release)
    return {
        "proc_version": _read1(root, "proc/version"),
        "cmdline": _read1(root, "proc/cmdline"),
        "config_hz": config.get("hz") if config else None,
        "preempt": config.get("preempt") if config else None,
        "config_source": config.get("source") if config else None,
    }


def _kernel_config(root: str, release: str | None) -> Env | None:
    text: str | None = None
    source = None
    try:
        with gzip.open(_path(root, "proc/config.gz"), "rt", encoding="utf-8") as f:
            text, source = f.read(), "/proc/config.gz"
    except (OSError, EOFError, ValueError):
        pass
    if text is None and release:
        text, source = _read(root, f"boot/config-{release}"), f"/boot/config-{release}"
    if text is None:
        return None
    opts = dict(re.findall(r"^(CONFIG_\w+)=(.*)$", text, flags=re.MULTILINE))
    preempt = None
    for key, name in (
        ("CONFIG_PREEMPT_RT", "rt"),
        ("CONFIG_PREEMPT_LAZY", "lazy"),
        ("CONFIG_PREEMPT", "full"),
        ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
        ("CONFIG_PREEMPT_NONE", "none"),
    ):
        if opts.get(key) == "y":
            preempt = name
            break
    if preempt and opts.get("CONFIG_PREEMPT_DYNAMIC") == "y":
        preempt += " (dynamic; boot parameter preempt= may override)"
    return {"hz": _int(opts.get("CONFIG_HZ")), "preempt": preempt, "source": source}


def _os_release(root: str) -> str | None:
    for rel in ("etc/os-release", "usr/lib/os-release"):
        text = _read(root, rel)
        if text is None:
            continue
        m = re.search(r"^PRETTY_NAME=(.*)$", text, flags=re.MULTILINE)
        return m.group(1).strip().strip("\"'") if m else None
    return None


def _hierarchy(
    root: str, mounts: list[dict[str, str]], controller: str | None, path: str
) -> tuple[str, str] | None:
    """(directory of cgroup `path`, mount point of its hierarchy), both as absolute paths of
    the measured system: the v1 hierarchy holding `controller`, or the v2 one if controller is
    None.  Without mountinfo, the usual mount points are tried."""
    fstype = "cgroup2" if controller is None else "cgroup"
    for m in mounts:
        if m["fstype"] != fstype:
            continue
        if controller and controller not in m["super_options"].split(","):
            continue
        mroot = m["root"].rstrip("/")
        rel = path[len(mroot) :] if mroot and path.startswith(mroot + "/") else path
        if mroot and path == mroot:
            rel = "/"
        mp = m["mount_point"].rstrip("/") or "/"
        return mp.rstrip("/") + "/" + rel.strip("/"), mp
    if controller is None:
        candidates = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
    else:
        candidates = [f"/sys/fs/cgroup/{n}" for n in (controller, "cpu,cpuacct", "cpuacct,cpu")]
    for mp in candidates:
        if _exists(root, mp):
            return mp + "/" + path.strip("/"), mp
    return None


def _ancestors(d: str, stop: str) -> list[str]:
    """d, its parent, ... up to and including stop (the hierarchy's mount point)."""
    out = [d.rstrip("/") or "/"]
    while out[-1] != stop.rstrip("/") and out[-1] not in ("/", ""):
        out.append(os.path.dirname(out[-1]))
    return out


def _cgroup(root: str) -> Env | None:
    """The CPU limits of this process's cgroup: the tightest CFS quota on the way from its
    cgroup up to the root (a parent's quota limits its children too), and its cpuset."""
    text = _read(root, "proc/self/cgroup")
    if text is None:
        return None
    v1: dict[str, str] = {}
    v2: str | None = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if hid == "0" and controllers == "":
            v2 = path
        for c in controllers.split(","):
            if c:
                v1[c] = path
    mounts = parse_mountinfo(_read(root, "proc/self/mountinfo")) or []

    limit: tuple[float, int, int, str] | None = None  # (CPUs, quota, period, where)
    cpuset = None
    throttled = None
    version: int | None = None

    def consider(q: int | None, p: int | None, where: str) -> None:
        nonlocal limit
        if q is None or p is None or q <= 0 or p <= 0:
            return
        if limit is None or q / p < limit[0]:
            limit = (q / p, q, p, where)

    if "cpu" in v1:
        version = 1
        h = _hierarchy(root, mounts, "cpu", v1["cpu"])
        if h is not None:
            for a in _ancestors(*h):
                q = _int(_read1(root, f"{a}/cpu.cfs_quota_us"))
                p = _int(_read1(root, f"{a}/cpu.cfs_period_us"))
                consider(q, p, a)
            throttled = _nr_throttled(_read(root, f"{h[0]}/cpu.stat"))
        hs = _hierarchy(root, mounts, "cpuset", v1["cpuset"]) if "cpuset" in v1 else None
        if hs is not None:
            cpuset = _read1(root, f"{hs[0]}/cpuset.effective_cpus") or _read1(
                root, f"{hs[0]}/cpuset.cpus"
            )
    elif v2 is not None:
        version = 2
        h = _hierarchy(root, mounts, None, v2)
        if h is not None:
            for a in _ancestors(*h):
                fields = (_read1(root, f"{a}/cpu.max") or "").split()
                if len(fields) == 2 and fields[0] != "max":
                    consider(_int(fields[0]), _int(fields[1]), a)
                if cpuset is None:  # a level without the cpuset controller inherits its parent's
                    cpuset = _read1(root, f"{a}/cpuset.cpus.effective")
            throttled = _nr_throttled(_read(root, f"{h[0]}/cpu.stat"))

    return {
        "version": version,
        "path": v1.get("cpu") if version == 1 else v2,
        "cpu_quota_us": limit[1] if limit else None,
        "cpu_period_us": limit[2] if limit else None,
        "cpu_limit": round(limit[0], 3) if limit else None,
        "limit_at": limit[3] if limit else None,
        "cpuset": cpuset,
        "nr_throttled": throttled,
    }


def _nr_throttled(text: str | None) -> int | None:
    m = re.search(r"^nr_throttled (\d+)$", text or "", flags=re.MULTILINE)
    return int(m.group(1)) if m else None


def _seccomp(root: str) -> Env | None:
    text = _read(root, "proc/self/status")
    if text is None:
        return None
    fields = dict(re.findall(r"^(Seccomp|Seccomp_filters|NoNewPrivs):\s*(\d+)", text, re.M))
    if not fields:
        return None
    return {
        "mode": _int(fields.get("Seccomp")),
        "filters": _int(fields.get("Seccomp_filters")),
        "no_new_privs": _int(fields.get("NoNewPrivs")),
    }


def _mitigations(root: str) -> dict[str, str] | None:
    d = "sys/devices/system/cpu/vulnerabilities"
    if not _exists(root, d):
        return None
    out = {}
    for name in _listdir(root, d):
        value = _read1(root, f"{d}/{name}")
        if value is not None:
            out[name] = value
    return out


def _isolation(root: str, cmdline: str | None) -> Env:
    params = _cmdline_params(cmdline)
    base = "sys/devices/system/cpu"

    def sysfs(rel: str) -> str | None:
        v = _read1(root, f"{base}/{rel}")
        return "" if v == "(null)" else v

    return {
        "isolcpus": params.get("isolcpus"),
        "nohz_full": params.get("nohz_full"),
        "rcu_nocbs": params.get("rcu_nocbs"),
        "isolated": sysfs("isolated"),
        "nohz_full_active": sysfs("nohz_full"),
    }


def _load(root: str) -> Env | None:
    fields = (_read1(root, "proc/loadavg") or "").split()
    if len(fields) < 4:
        return None
    try:
        runnable, _, threads = fields[3].partition("/")
        return {
            "1m": float(fields[0]),
            "5m": float(fields[1]),
            "15m": float(fields[2]),
            "runnable": _int(runnable),
            "threads": _int(threads),
        }
    except ValueError:
        return None


def _memory_total(root: str) -> int | None:
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", _read(root, "proc/meminfo") or "", re.M)
    return int(m.group(1)) * 1024 if m else None


def _latscope_version() -> str | None:
    try:
        from .._version import __version__
    except Exception:  # absent or broken package: record "unknown"
        return None
    return str(__version__)


def _proc_stat(root: str) -> dict[str, tuple[int, int]] | None:
    """Per CPU (busy, total) jiffies from /proc/stat."""
    text = _read(root, "proc/stat")
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields or not fields[0].startswith("cpu") or fields[0] == "cpu":
            continue
        try:
            v = [int(x) for x in fields[1:9]]  # user nice system idle iowait irq softirq steal
        except ValueError:
            continue
        v += [0] * (8 - len(v))
        total = sum(v)
        out[fields[0][3:]] = (total - v[3] - v[4], total)
    return out or None


def cpu_times(root: str = "/") -> tuple[int, int] | None:
    """The whole machine's (steal, total) jiffies from /proc/stat's ``cpu`` line, or None."""
    text = _read(root, "proc/stat")
    for line in (text or "").splitlines():
        fields = line.split()
        if fields[:1] == ["cpu"]:
            try:
                v = [int(x) for x in fields[1:9]]
            except ValueError:
                return None
            v += [0] * (8 - len(v))
            return v[7], sum(v)
    return None


def steal_between(
    before: tuple[int, int] | None, after: tuple[int, int] | None
) -> dict[str, float] | None:
    """The share of the CPUs' time the hypervisor kept for itself between two `cpu_times`
    (steal), and how many CPU-seconds that span held (at 100 jiffies a second); None when
    either is missing or no time passed."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    total = after[1] - before[1]
    return {
        "share": round(max(0.0, (after[0] - before[0]) / total), 4),
        "cpu_seconds": round(total / 100.0, 2),
    }


def cpu_busy(root: str = "/", interval: float = 0.2) -> dict[str, float] | None:
    """Share of `interval` seconds each CPU was not idle (steal counts as busy: the CPU was
    not ours), sampled from /proc/stat twice.  None if /proc/stat is unreadable; CPUs whose
    counters did not move (too short an interval) are left out."""
    try:
        a = _proc_stat(root)
        if a is None:
            return None
        time.sleep(interval)
        b = _proc_stat(root)
        if b is None:
            return None
    except Exception:  # never fail a capture
        return None
    out: dict[str, float] = {}
    for cpu, (busy1, total1) in b.items():
        if cpu not in a:
            continue
        busy0, total0 = a[cpu]
        dt = total1 - total0
        if dt > 0:
            out[cpu] = round(min(1.0, max(0.0, (busy1 - busy0) / dt)), 3)
    return dict(sorted(out.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0))


# --------------------------------------------------------------------------------------------
# capture


def capture(
    path: str | None = None,
    root: str = "/",
    sample_load: bool = False,
    interval: float = 0.2,
    probe_env: Env | None = None,
    load: Env | None = None,
) -> Env:
    """Capture the environment as a JSON-ready dict, in the schema of docs/store.md.

    probe_env: the probe's record of the environment (a sample file's header ``env``, as
        `schema.of_header` reads it): the facts it holds are taken from it. None: asked of the
        probe (``latscope-probe --env [path]``) when root is "/"; with another root (a fake
        tree) they stay unknown unless given.
    path: the directory whose filesystem the probe records when it is asked here.
    root: read every file below this directory instead of "/" (for tests).
    sample_load: sample per-CPU busy share from /proc/stat over `interval` seconds into
        "cpu_busy" (check() uses it to warn about busy CPUs and busy SMT siblings).
    load: the load averages sampled earlier (`load_now`; a run samples them before the probe
        starts, so that they do not count the run itself); None: read now.

    "clocksource" holds the kernel's clock source in use (``current``, the probe's record: it
    serves clock_gettime, hence the probe's mono and mono_raw clocks and its TSC calibration)
    and the ones offered; "probe_clock" the clock the probe times with by default (from its
    catalogue; None when root is not "/" or there is no probe). A run's own header records the
    clock it used.
    """
    if probe_env is None and root == "/":
        probe_env = _safe(_ask_probe, path)
    facts = probe_env or {}
    if path is not None and not isinstance(facts.get("filesystem"), dict):
        facts = dict(facts, filesystem={"path": path})
    release = (facts.get("kernel") or {}).get("release")
    kernel = _safe(_kernel, root, release) or {}
    info = _safe(_cpuinfo, root)
    flags = info.get("flags") if info else None
    cpu = _safe(_cpu, root, info) or {}
    cpus = cpu.get("online") or _cpu_dirs(root)
    clock = _safe(_clocksource, root) or {"available": None}
    tsc = {f: f in flags for f in _TSC_FLAGS} if flags is not None else None
    lab: Env = {
        "schema": SCHEMA,
        "captured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "latscope_version": _latscope_version(),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
        },
        "kernel": kernel,
        "distribution": _safe(_os_release, root),
        "cpu": cpu,
        "cpufreq": _safe(_cpufreq, root, cpus),
        "cpuidle": _safe(_cpuidle, root, cpus),
        "clocksource": clock,
        "probe_clock": _safe(_probe_clock) if root == "/" else None,
        "tsc": tsc,
        "virtualization": _safe(_virtualization, root, flags, dict(kernel, release=release), clock),
        "cgroup": _safe(_cgroup, root),
        "seccomp": _safe(_seccomp, root),
        "mitigations": _safe(_mitigations, root),
        "isolation": _safe(_isolation, root, kernel.get("cmdline")),
        "load": load if load is not None else load_now(root),
        "memory_total_bytes": _safe(_memory_total, root),
        "cpu_busy": cpu_busy(root, interval) if sample_load else None,
    }
    return merge(lab, facts)


def load_now(root: str = "/") -> Env | None:
    """The load averages and runnable threads now (/proc/loadavg), or None."""
    return _safe(_load, root)  # type: ignore[no-any-return]


def _ask_probe(path: str | None) -> Env | None:
    from .. import probe

    return of_header({"env": probe.environment(path)})
