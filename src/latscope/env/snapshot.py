"""Environment capture: what a result was measured on, what in it may bias the figures, and
whether two results can be compared at all.

`capture()` reads /proc, /sys and a few files under /etc and /boot, never runs a command and
never raises: a file that is missing or unreadable yields None for its field.  Every path is
read through `root`, so tests can point it at a fake tree.  The result is a plain, JSON-ready
dict (per-CPU maps are keyed by the CPU number as a string).

`check()` turns a captured dict into findings (warnings and hints with advice), `render()`
builds a rich table for the CLI, and `compatible()` lists the differences that make two results
incomparable.
"""

import gzip
import os
import platform
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

Env = dict[str, Any]

SCHEMA = 1

_TSC_FLAGS = ("constant_tsc", "nonstop_tsc", "tsc_reliable", "tsc_known_freq", "rdtscp")
_CPU_DIR = re.compile(r"cpu(\d+)$")
_OCTAL = re.compile(r"\\([0-7]{3})")

# Substrings of DMI vendor/product names that mean "this is a virtual machine".
_DMI_VM = (
    ("qemu", "qemu"),
    ("kvm", "kvm"),
    ("vmware", "vmware"),
    ("virtualbox", "virtualbox"),
    ("innotek", "virtualbox"),
    ("xen", "xen"),
    ("virtual machine", "hyperv"),  # Microsoft Corporation / Virtual Machine
    ("amazon ec2", "amazon"),
    ("google compute engine", "google"),
    ("bochs", "bochs"),
    ("parallels", "parallels"),
    ("bhyve", "bhyve"),
    ("openstack", "openstack"),
    ("cloud hypervisor", "cloud-hypervisor"),
    ("firecracker", "firecracker"),
)
# Clock sources that only exist under a hypervisor.
_CLOCKSOURCE_VM = {
    "kvm-clock": "kvm",
    "xen": "xen",
    "hyperv_clocksource_tsc_page": "hyperv",
    "hyperv_clocksource_msr": "hyperv",
    "vmware-tsc": "vmware",
}
_CONTAINER_CGROUP_HINTS = ("docker", "kubepods", "containerd", "libpod", "lxc", "crio", "garden")

# The clock source one expects on each architecture for cheap, fine-grained timestamps.
_GOOD_CLOCKSOURCE = {
    "x86_64": "tsc",
    "i386": "tsc",
    "i686": "tsc",
    "aarch64": "arch_sys_counter",
    "arm64": "arch_sys_counter",
    "armv7l": "arch_sys_counter",
}

_BUSY = 0.10  # a CPU busier than this share of the sample interval is "busy"


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


def _filesystem(root: str, path: str) -> Env | None:
    resolved = os.path.realpath(path) if root == "/" else os.path.normpath(os.path.join("/", path))
    mounts = parse_mountinfo(_read(root, "proc/self/mountinfo"))
    mount = _mount_of(mounts, resolved) if mounts else None
    if mount is None:
        return {
            "path": resolved,
            "fstype": None,
            "source": None,
            "mount_point": None,
            "mount_options": None,
            "super_options": None,
        }
    return {
        "path": resolved,
        "fstype": mount["fstype"],
        "source": mount["source"],
        "mount_point": mount["mount_point"],
        "mount_options": mount["mount_options"],
        "super_options": mount["super_options"],
    }


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


def _kernel(root: str) -> Env:
    release: str | None
    version: str | None
    machine: str | None
    if root == "/":
        u = os.uname()
        release, version, machine = u.release, u.version, u.machine
    else:
        release = _read1(root, "proc/sys/kernel/osrelease")
        version = _read1(root, "proc/sys/kernel/version") or _read1(root, "proc/version")
        machine = _read1(root, "proc/sys/kernel/arch")
    config = _safe(_kernel_config, root, release)
    return {
        "release": release,
        "version": version,
        "machine": machine,
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


def _cpuinfo(root: str) -> Env | None:
    text = _read(root, "proc/cpuinfo")
    if text is None:
        return None
    first: dict[str, str] = {}
    processors = 0
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if not colon:
            continue
        key = key.strip()
        if key == "processor":
            processors += 1
        first.setdefault(key, value.strip())
    model = next(
        (first[k] for k in ("model name", "Model", "Hardware", "cpu model", "cpu") if first.get(k)),
        None,
    )
    flags = first.get("flags")
    return {
        "model": model,
        "vendor": first.get("vendor_id") or first.get("CPU implementer"),
        "processors": processors or None,
        "flags": flags.split() if flags is not None else None,
    }


def _cpu_dirs(root: str) -> list[int]:
    return sorted(
        int(m.group(1))
        for name in _listdir(root, "sys/devices/system/cpu")
        if (m := _CPU_DIR.match(name))
    )


def _cpu(root: str, info: Env | None) -> Env:
    base = "sys/devices/system/cpu"
    dirs = _cpu_dirs(root)
    online = parse_cpulist(_read1(root, f"{base}/online"))
    logical = len(dirs) or (info or {}).get("processors")
    if not logical and root == "/":
        logical = os.cpu_count()

    siblings: dict[str, list[int]] = {}
    groups: set[tuple[int, ...]] = set()
    packages: set[int] = set()
    cores_by_id: set[tuple[int, int]] = set()
    for cpu in online if online is not None else dirs:
        topo = f"{base}/cpu{cpu}/topology"
        sib = parse_cpulist(_read1(root, f"{topo}/thread_siblings_list"))
        if sib:
            siblings[str(cpu)] = sib
            groups.add(tuple(sib))
        pkg = _int(_read1(root, f"{topo}/physical_package_id"))
        core = _int(_read1(root, f"{topo}/core_id"))
        if pkg is not None:
            packages.add(pkg)
        if pkg is not None and core is not None:
            cores_by_id.add((pkg, core))
    physical = len(groups) or len(cores_by_id) or None

    smt_control = _read1(root, f"{base}/smt/control")
    smt_active = _read1(root, f"{base}/smt/active")
    if groups:
        smt: bool | None = any(len(g) > 1 for g in groups)
    elif smt_active in ("0", "1"):
        smt = smt_active == "1"
    else:
        smt = None

    affinity = None
    if root == "/" and hasattr(os, "sched_getaffinity"):
        affinity = _safe(lambda: sorted(os.sched_getaffinity(0)))

    info = info or {}
    return {
        "model": info.get("model"),
        "vendor": info.get("vendor"),
        "logical": logical,
        "online": online,
        "physical_cores": physical,
        "packages": len(packages) or None,
        "smt": smt,
        "smt_control": smt_control,
        "siblings": siblings or None,
        "affinity": affinity,
    }


def _cpufreq(root: str, cpus: list[int]) -> Env:
    base = "sys/devices/system/cpu"
    per_cpu: dict[str, Env] = {}
    for cpu in cpus:
        d = f"{base}/cpu{cpu}/cpufreq"
        entry = {
            "governor": _read1(root, f"{d}/scaling_governor"),
            "driver": _read1(root, f"{d}/scaling_driver"),
            "cur_khz": _int(_read1(root, f"{d}/scaling_cur_freq")),
            "min_khz": _int(_read1(root, f"{d}/scaling_min_freq")),
            "max_khz": _int(_read1(root, f"{d}/scaling_max_freq")),
            "hw_max_khz": _int(_read1(root, f"{d}/cpuinfo_max_freq")),
        }
        if any(v is not None for v in entry.values()):
            per_cpu[str(cpu)] = entry
    governors = sorted({e["governor"] for e in per_cpu.values() if e["governor"]})
    drivers = sorted({e["driver"] for e in per_cpu.values() if e["driver"]})

    turbo: bool | None = None
    turbo_source = None
    no_turbo = _read1(root, f"{base}/intel_pstate/no_turbo")
    boost = _read1(root, f"{base}/cpufreq/boost")
    if no_turbo in ("0", "1"):
        turbo, turbo_source = no_turbo == "0", "/sys/devices/system/cpu/intel_pstate/no_turbo"
    elif boost in ("0", "1"):
        turbo, turbo_source = boost == "1", "/sys/devices/system/cpu/cpufreq/boost"
    else:  # per-policy boost (amd-pstate and newer kernels)
        per_policy = [_read1(root, f"{base}/cpu{c}/cpufreq/boost") for c in cpus]
        known = [b for b in per_policy if b in ("0", "1")]
        if known:
            turbo = "1" in known
            turbo_source = "/sys/devices/system/cpu/cpu*/cpufreq/boost"
    return {
        "per_cpu": per_cpu or None,
        "governors": governors or None,
        "driver": ",".join(drivers) or None,
        "turbo": turbo,
        "turbo_source": turbo_source,
    }


def _cpuidle(root: str, cpus: list[int]) -> Env | None:
    base = "sys/devices/system/cpu"
    driver = _read1(root, f"{base}/cpuidle/current_driver")
    governor = _read1(root, f"{base}/cpuidle/current_governor") or _read1(
        root, f"{base}/cpuidle/current_governor_ro"
    )
    states = []
    if cpus:
        d = f"{base}/cpu{cpus[0]}/cpuidle"
        names = [n for n in _listdir(root, d) if n.startswith("state") and n[5:].isdigit()]
        for name in sorted(names, key=lambda n: int(n[5:])):
            states.append(
                {
                    "name": _read1(root, f"{d}/{name}/name"),
                    "latency_us": _int(_read1(root, f"{d}/{name}/latency")),
                    "disabled": _read1(root, f"{d}/{name}/disable") == "1",
                }
            )
    if driver is None and governor is None and not states:
        return None
    return {"driver": driver, "governor": governor, "states": states or None}


def _clocksource(root: str) -> Env:
    d = "sys/devices/system/clocksource/clocksource0"
    available = _read1(root, f"{d}/available_clocksource")
    return {
        "current": _read1(root, f"{d}/current_clocksource"),
        "available": available.split() if available is not None else None,
    }


def _probe_clock() -> Env | None:
    """The clock the probe times with by default (its catalogue), or None without a probe."""
    from . import _probe

    clocks = _probe.catalogue().get("clocks") or []
    chosen = next((c for c in clocks if c.get("default") and c.get("available")), None)
    if chosen is None:
        return None
    return {"name": chosen.get("name"), "description": chosen.get("description")}


def _virtualization(root: str, flags: list[str] | None, kernel: Env, clock: Env) -> Env:
    hints: list[str] = []
    kind: str | None = None
    hv_flag = ("hypervisor" in flags) if flags is not None else None
    if hv_flag:
        hints.append("cpu flag 'hypervisor'")
    hv_type = _read1(root, "sys/hypervisor/type")
    if hv_type:
        hints.append(f"/sys/hypervisor/type={hv_type}")
        kind = hv_type
    vendor = _read1(root, "sys/class/dmi/id/sys_vendor")
    product = _read1(root, "sys/class/dmi/id/product_name")
    dmi = f"{vendor or ''} {product or ''}".lower()
    for needle, name in _DMI_VM:
        if needle in dmi:
            hints.append(f"DMI '{(vendor or '').strip()} {(product or '').strip()}'".strip())
            kind = kind or name
            break
    for cs in clock.get("available") or []:
        if cs in _CLOCKSOURCE_VM:
            hints.append(f"clock source {cs}")
            kind = kind or _CLOCKSOURCE_VM[cs]
            break

    release = f"{kernel.get('release') or ''} {kernel.get('proc_version') or ''}".lower()
    wsl = ("microsoft" in release or "wsl" in release) if release.strip() else None
    if wsl:
        hints.append("WSL kernel")
        kind = kind or "hyperv"

    if hints:
        vm: bool | None = True
    elif hv_flag is False or vendor is not None:
        vm = False  # x86 says "no hypervisor" or DMI names real hardware
    else:
        vm = None

    container_hints: list[str] = []
    if _exists(root, ".dockerenv"):
        container_hints.append("/.dockerenv")
    if _exists(root, "run/.containerenv"):
        container_hints.append("/run/.containerenv")
    sd = _read1(root, "run/systemd/container")
    if sd:
        container_hints.append(f"/run/systemd/container={sd}")
    cg1 = (_read(root, "proc/1/cgroup") or "").lower()
    for needle in _CONTAINER_CGROUP_HINTS:
        if needle in cg1:
            container_hints.append(f"/proc/1/cgroup mentions {needle}")
            break
    mounts = parse_mountinfo(_read(root, "proc/self/mountinfo")) or []
    rootfs = _mount_of(mounts, "/")
    if rootfs and rootfs["fstype"] in ("overlay", "aufs", "fuse-overlayfs"):
        container_hints.append(f"root filesystem is {rootfs['fstype']}")

    return {
        "vm": vm,
        "kind": kind if vm else None,
        "hints": hints,
        "hypervisor_flag": hv_flag,
        "hypervisor_type": hv_type,
        "dmi_vendor": vendor,
        "dmi_product": product,
        "wsl": wsl,
        "container": bool(container_hints),
        "container_hints": container_hints,
    }


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


def _hostname(root: str) -> str | None:
    if root == "/":
        return platform.node() or None
    return _read1(root, "proc/sys/kernel/hostname") or _read1(root, "etc/hostname")


def _latscope_version() -> str | None:
    try:
        from latscope import __version__
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
) -> Env:
    """Capture the environment as a JSON-ready dict.

    path: also record the filesystem (type, source, mount point, options) holding this path.
    root: read every file below this directory instead of "/" (for tests); os.uname and the
        host name are then taken from the tree too.
    sample_load: sample per-CPU busy share from /proc/stat over `interval` seconds into
        "cpu_busy" (check() uses it to warn about busy CPUs and busy SMT siblings).

    "clocksource" holds the kernel's clock source in use (``current``, from
    current_clocksource: it serves clock_gettime, hence the probe's mono and mono_raw clocks
    and its TSC calibration) and the ones offered; "probe_clock" the clock the probe times with
    by default (from its catalogue; None when root is not "/" or there is no probe). A run's
    own header records the clock it used.
    """
    kernel = _safe(_kernel, root) or {}
    info = _safe(_cpuinfo, root)
    flags = info.get("flags") if info else None
    cpu = _safe(_cpu, root, info) or {}
    cpus = cpu.get("online") or _cpu_dirs(root)
    clock = _safe(_clocksource, root) or {"current": None, "available": None}
    tsc = {f: f in flags for f in _TSC_FLAGS} if flags is not None else None
    return {
        "schema": SCHEMA,
        "captured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "latscope_version": _latscope_version(),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
        },
        "hostname": _safe(_hostname, root),
        "kernel": kernel,
        "distribution": _safe(_os_release, root),
        "cpu": cpu,
        "cpufreq": _safe(_cpufreq, root, cpus),
        "cpuidle": _safe(_cpuidle, root, cpus),
        "clocksource": clock,
        "probe_clock": _safe(_probe_clock) if root == "/" else None,
        "tsc": tsc,
        "virtualization": _safe(_virtualization, root, flags, kernel, clock),
        "cgroup": _safe(_cgroup, root),
        "seccomp": _safe(_seccomp, root),
        "mitigations": _safe(_mitigations, root),
        "isolation": _safe(_isolation, root, kernel.get("cmdline")),
        "load": _safe(_load, root),
        "memory_total_bytes": _safe(_memory_total, root),
        "cpu_busy": cpu_busy(root, interval) if sample_load else None,
        "filesystem": _safe(_filesystem, root, path) if path is not None else None,
    }


# --------------------------------------------------------------------------------------------
# check


@dataclass(frozen=True)
class Finding:
    severity: Literal["warning", "info"]
    code: str
    message: str
    advice: str


def _get(env: Env, *keys: str) -> Any:
    """env[k1][k2]... or None if any level is missing or not a dict."""
    cur: Any = env
    for k in keys:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(k)
    return cur


def costly_mitigations(mitigations: dict[str, str] | None) -> dict[str, str]:
    """The active mitigations that add work to every kernel entry or exit, as
    vulnerability name -> what it costs.  Cheap ones (eIBRS, usercopy barriers, microcode
    that does not touch the system-call path) are left out."""
    out: dict[str, str] = {}
    for name, text in (mitigations or {}).items():
        t = text.lower()
        if name == "meltdown" and "pti" in t:
            out[name] = "page-table isolation switches page tables on every kernel entry and exit"
        elif name == "spectre_v2" and t.startswith("mitigation"):
            parts = [p.strip() for p in re.split(r"[;,]", t.removeprefix("mitigation:"))]
            why = []
            if "retpoline" in parts[0]:
                why.append("retpolines on kernel indirect branches")
            if parts[0] == "ibrs":
                why.append("IBRS written on every kernel entry")
            if any(p.startswith("bhi:") and "sw loop" in p for p in parts):
                why.append("branch-history clearing loop on every system call")
            if why:
                out[name] = "; ".join(why)
        elif name == "retbleed" and t.startswith("mitigation") and "enhanced ibrs" not in t:
            how = text.split(":", 1)[1].split(";")[0].strip()
            out[name] = f"{how} on kernel entry/return paths"
        elif name == "spec_rstack_overflow" and (
            "safe ret" in t or ("ibpb" in t and "vmexit" not in t)
        ):
            out[name] = "safe-RET thunks or IBPB on kernel entry"
        elif "clear cpu buffers" in t or "clear register file" in t:
            out[name] = "CPU buffers/register file cleared (VERW) on every return to user space"
        elif name == "indirect_target_selection" and ("retpoline" in t or "stuffing" in t):
            out[name] = "retpolines or return stuffing in the kernel"
    return out


def _expected_clocksource(env: Env) -> str | None:
    machine = _get(env, "kernel", "machine")
    if machine in _GOOD_CLOCKSOURCE:
        return _GOOD_CLOCKSOURCE[machine]
    if env.get("tsc") is not None:  # cpuinfo had an x86 "flags" line
        return "tsc"
    return None


def _is_x86(env: Env) -> bool:
    machine = _get(env, "kernel", "machine")
    if machine:
        return machine in ("x86_64", "i386", "i686")
    return env.get("tsc") is not None


def _warn(out: list[Finding], code: str, message: str, advice: str) -> None:
    out.append(Finding("warning", code, message, advice))


def _info(out: list[Finding], code: str, message: str, advice: str) -> None:
    out.append(Finding("info", code, message, advice))


def _n_cpus(env: Env) -> int | None:
    online = _get(env, "cpu", "online")
    return len(online) if online else _get(env, "cpu", "logical")


def frequency_control(env: Env) -> bool | None:
    """Whether this system controls its CPUs' frequency: True when cpufreq shows a governor
    (scaling_governor) for some CPU, False when cpufreq was captured and shows none, None when
    it is unknown. A virtual machine without cpufreq has no say: the host sets the frequency,
    and governor, turbo, cooling or power advice does not apply to the guest."""
    freq = env.get("cpufreq")
    if not isinstance(freq, dict):
        return None
    per_cpu = freq.get("per_cpu") or {}
    return any(e.get("governor") for e in per_cpu.values())


def _check_frequency(env: Env, out: list[Finding]) -> None:
    """Governor, turbo, invisible frequency; in a VM without frequency control, what applies
    instead."""
    freq = env.get("cpufreq") or {}
    per_cpu = freq.get("per_cpu") or {}
    slow = {
        int(c): e["governor"]
        for c, e in per_cpu.items()
        if e.get("governor") and e["governor"] != "performance"
    }
    if slow:
        names = ", ".join(sorted(set(slow.values())))
        _warn(
            out,
            "governor",
            f"CPU frequency governor is {names} on CPUs {format_cpulist(list(slow))}, not "
            "performance: the clock ramps up and down with load, so short operations are "
            "timed at a varying, often low, frequency.",
            "sudo cpupower frequency-set -g performance  (or: echo performance | sudo tee "
            "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)",
        )
    if freq.get("turbo"):
        src = freq.get("turbo_source") or ""
        off = (
            "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo"
            if "no_turbo" in src
            else f"echo 0 | sudo tee {src or '/sys/devices/system/cpu/cpufreq/boost'}"
        )
        _warn(
            out,
            "turbo",
            "Turbo/boost is on: the clock rises and falls with temperature and with how many "
            "cores are busy, which adds run-to-run variance.",
            f"Disable it while measuring: {off}",
        )
    vm = _get(env, "virtualization", "vm")
    if vm and frequency_control(env) is False:
        _info(
            out,
            "frequency-host",
            "This virtual machine has no CPU frequency control (no scaling_governor in "
            "sysfs): the host sets the frequency and schedules the vCPUs, so governor, turbo, "
            "cooling and power settings in the guest do not apply. Variation between and "
            "within runs comes from the host and its other guests.",
            "Repeat runs and compare the repetitions (latscope suite interleaves them), pin "
            "the benchmark to a CPU (cpu=/cpus=), and compare only with runs on the same VM "
            "type and host.",
        )
    if isinstance(env.get("cpufreq"), dict) and not per_cpu and not vm:
        _info(
            out,
            "frequency-unknown",
            "CPU frequency and governor are not visible (no cpufreq in sysfs): the clock may "
            "change during a run unnoticed.",
            "Load a cpufreq driver, or fix the frequency in the firmware settings.",
        )


def _check_load(env: Env, out: list[Finding]) -> None:
    """Load average, busy CPUs and busy SMT siblings (the latter from cpu_busy)."""
    n_cpus = _n_cpus(env)
    load1 = _get(env, "load", "1m")
    if load1 is not None and n_cpus and load1 > 0.1 * n_cpus:
        _warn(
            out,
            "load",
            f"1-minute load average is {load1:.2f} on {n_cpus} CPUs (more than "
            f"{0.1 * n_cpus:.1f}): other work competes for CPUs, caches and memory bandwidth.",
            "Stop other work (look with top or htop) and wait for the load average to settle "
            "before measuring.",
        )
    busy = env.get("cpu_busy") or {}
    hot = {int(c): f for c, f in busy.items() if c.isdigit() and f > 2 * _BUSY}
    if hot:
        shown = ", ".join(f"{c} ({f:.0%})" for c, f in sorted(hot.items()))
        _warn(
            out,
            "cpus-busy",
            f"CPUs were busy while sampled: {shown}.",
            "Stop the work running there, or pin the benchmark to idle CPUs.",
        )
    siblings = _get(env, "cpu", "siblings") or {}
    if busy and any(len(s) > 1 for s in siblings.values()):
        groups = {tuple(s) for s in siblings.values()}
        noisy = []
        quiet: list[int] = []
        for g in sorted(groups):
            shares: dict[int, float] = {c: busy[str(c)] for c in g if str(c) in busy}
            if len(shares) < len(g):
                continue
            busy_ones = [c for c in g if shares[c] > _BUSY]
            idle_ones = [c for c in g if c not in busy_ones]
            if busy_ones and idle_ones:
                noisy += [
                    f"CPU {i} (sibling {b} is {shares[b]:.0%} busy)"
                    for i in idle_ones
                    for b in busy_ones
                ]
            if not busy_ones:
                quiet += list(g)
        if noisy:
            _warn(
                out,
                "smt-sibling-busy",
                "An SMT sibling is busy, so a benchmark on its partner shares the core: "
                + "; ".join(noisy)
                + ".",
                "Pin benchmarks to cores whose siblings are idle"
                + (f" (quiet CPUs now: {format_cpulist(quiet)})" if quiet else "")
                + ", or stop the work on the sibling.",
            )


def _check_virtualization(env: Env, out: list[Finding]) -> None:
    """VM, WSL, container, seccomp."""
    vm = _get(env, "virtualization", "vm")
    virt = env.get("virtualization") or {}
    if vm:
        kind = virt.get("kind") or "unknown hypervisor"
        hints = ", ".join(virt.get("hints") or [])
        _warn(
            out,
            "vm",
            f"Running in a virtual machine ({kind}; {hints}): timer interrupts, some clock "
            "reads and system calls can exit to the hypervisor, the host schedules the vCPUs "
            "and controls their frequency, and the TSC may be emulated or scaled.",
            "Measure on bare metal for figures about the hardware; compare VM results only "
            "with results from the same VM type and host.",
        )
    if virt.get("wsl"):
        _warn(
            out,
            "wsl",
            "Running under WSL: Linux runs in a Hyper-V VM, and files under /mnt/<drive> "
            "go through 9P to Windows, which is far slower than the Linux filesystem.",
            "Compare only with WSL results; keep benchmark files on the Linux filesystem "
            "(e.g. under ~) unless the Windows path is what you mean to measure.",
        )
    if virt.get("container"):
        hints = ", ".join(virt.get("container_hints") or [])
        _warn(
            out,
            "container",
            f"Running in a container ({hints}): its cgroup limits, seccomp filters and "
            "filesystem layers can make figures differ from the host's.",
            "Compare only with results from the same container setup; for file benchmarks "
            "use a bind-mounted host directory rather than the container's root.",
        )
    sec = env.get("seccomp") or {}
    if sec.get("mode") == 2:
        n = sec.get("filters")
        _warn(
            out,
            "seccomp",
            f"{n if n is not None else 'Some'} seccomp filter(s) run on every system call of "
            "this process: system-call figures include the filter cost.",
            "Compare only with the same sandbox, or run unconfined (e.g. docker run "
            "--security-opt seccomp=unconfined) to measure the kernel alone.",
        )


def _check_cgroup(env: Env, out: list[Finding]) -> None:
    """A CFS quota on this process's cgroup."""
    cg = env.get("cgroup") or {}
    if cg.get("cpu_limit") is not None:
        _warn(
            out,
            "cgroup-quota",
            f"CPU quota of {cg['cpu_limit']:g} CPUs ({cg.get('cpu_quota_us')} µs per "
            f"{cg.get('cpu_period_us')} µs, set at {cg.get('limit_at')}): when the quota runs "
            "out the process is throttled until the next period, and a throttled sample "
            "looks like a latency spike.",
            "Run outside the limited cgroup or lift the quota (docker --cpus, systemd "
            "CPUQuota=); check nr_throttled in cpu.stat after a run.",
        )


def _check_clock(env: Env, out: list[Finding]) -> None:
    """The clocks in use; clock source and TSC invariance."""
    current = _get(env, "clocksource", "current")
    probe = env.get("probe_clock") or {}
    if current or probe.get("name"):
        _info(
            out,
            "clock",
            f"Kernel clock source: {current or 'unknown'} (serves clock_gettime: the probe's "
            f"mono_raw and mono clocks and its TSC calibration); the probe times with "
            f"{probe.get('name') or 'an unknown clock'} by default"
            + (f" ({probe['description']})" if probe.get("description") else "")
            + ".",
            "Each run records its clock, its step and its read overhead in its header "
            "('latscope show RUN'); compare runs that used the same clock.",
        )
    expected = _expected_clocksource(env)
    if current and expected and current != expected:
        avail = _get(env, "clocksource", "available") or []
        how = (
            f"echo {expected} | sudo tee "
            "/sys/devices/system/clocksource/clocksource0/current_clocksource"
            if expected in avail
            else f"{expected} is not offered; look in dmesg for why the kernel rejected it"
        )
        _warn(
            out,
            "clocksource",
            f"Clock source is {current}, not {expected}: clock reads may be slower or coarser "
            "(possibly a system call each), so timer overhead weighs on short operations.",
            f"Switch if it is reliable here: {how}.",
        )
    tsc = env.get("tsc")
    if (
        tsc is not None
        and _is_x86(env)
        and not (tsc.get("constant_tsc") and tsc.get("nonstop_tsc"))
    ):
        missing = [f for f in ("constant_tsc", "nonstop_tsc") if not tsc.get(f)]
        _warn(
            out,
            "tsc-not-invariant",
            f"The TSC is not invariant (no {', '.join(missing)}): its rate may change with "
            "frequency or stop in idle, so cycle counts do not convert to time.",
            "Time with CLOCK_MONOTONIC_RAW rather than the TSC on this machine.",
        )


def _check_topology(env: Env, out: list[Finding]) -> None:
    """SMT, too few CPUs, no isolated CPUs."""
    n_cpus = _n_cpus(env)
    siblings = _get(env, "cpu", "siblings") or {}
    if _get(env, "cpu", "smt"):
        example = next((s for s in siblings.values() if len(s) > 1), None)
        eg = f" (e.g. CPUs {format_cpulist(example)})" if example else ""
        _warn(
            out,
            "smt",
            f"SMT (hyper-threading) is on: two logical CPUs share one core{eg}, so work on a "
            "sibling competes for the same execution units and caches.",
            "Place the peers of a cross-CPU benchmark on distinct cores and keep their "
            "siblings idle, or switch SMT off (echo off | sudo tee "
            "/sys/devices/system/cpu/smt/control).",
        )
    if n_cpus is not None and n_cpus < 2:
        _warn(
            out,
            "few-cpus",
            f"Only {n_cpus} CPU online: cross-CPU placements (peers on different CPUs) are "
            "impossible and every peer shares the CPU with the kernel's housekeeping.",
            "Use a machine or VM with at least 2 CPUs (4 to keep housekeeping apart).",
        )
    iso = env.get("isolation") or {}
    isolated = parse_cpulist(iso.get("isolated")) or parse_cpulist(iso.get("isolcpus"))
    known = iso.get("isolated") is not None or _get(env, "kernel", "cmdline") is not None
    if known and not isolated and not parse_cpulist(iso.get("nohz_full")):
        _info(
            out,
            "no-isolation",
            "No CPUs are isolated: the scheduler, timer ticks and RCU callbacks may run on the "
            "benchmark CPUs.",
            "For the lowest noise, boot with isolcpus=<cpus> nohz_full=<cpus> rcu_nocbs=<cpus> "
            "and pin the benchmark to those CPUs.",
        )


def _check_idle(env: Env, out: list[Finding]) -> None:
    """Deep C-states that add wake-up latency."""
    states = _get(env, "cpuidle", "states") or []
    deep = [s for s in states if not s.get("disabled") and (s.get("latency_us") or 0) > 10]
    if deep:
        worst = max(deep, key=lambda s: s["latency_us"])
        _info(
            out,
            "idle-states",
            f"Deep CPU idle states are enabled (up to {worst.get('name')}, exit latency "
            f"{worst['latency_us']} µs): a peer that sleeps while waiting pays the wake-up "
            "in its latency.",
            "For IPC latency, limit idle states (sudo cpupower idle-set -D 10) or hold "
            "/dev/cpu_dma_latency at 0 during the run, and record which you did.",
        )


def _check_mitigations(env: Env, out: list[Finding]) -> None:
    """Mitigations on the system-call path, or none at all."""
    costly = costly_mitigations(env.get("mitigations"))
    if costly:
        what = "; ".join(f"{k}: {v}" for k, v in costly.items())
        _warn(
            out,
            "mitigations",
            "CPU vulnerability mitigations add work to each kernel entry/exit, so system calls "
            f"are slower than on an unmitigated kernel ({what}).",
            "Compare system-call figures only with the same kernel and mitigation settings; to "
            "see the raw cost on a test machine, boot with mitigations=off (never in "
            "production).",
        )
    params = _cmdline_params(_get(env, "kernel", "cmdline"))
    if params.get("mitigations") == "off":
        _info(
            out,
            "mitigations-off",
            "The kernel was booted with mitigations=off: system calls are cheaper than on a "
            "default kernel.",
            "Say so when you publish these figures; they do not describe a default setup.",
        )


def _check_filesystem(env: Env, out: list[Finding]) -> None:
    """A target path on a network, virtual or memory filesystem."""
    fs = env.get("filesystem") or {}
    fstype = fs.get("fstype")
    if fstype in (
        "9p",
        "virtiofs",
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "fuse",
        "fuseblk",
        "overlay",
        "tmpfs",
        "ramfs",
    ) or (fstype or "").startswith("fuse."):
        _info(
            out,
            "filesystem",
            f"{fs.get('path')} is on {fstype} ({fs.get('source')} at {fs.get('mount_point')}): "
            "file figures describe that filesystem, not a local disk filesystem.",
            "Name the filesystem with the result, and compare only with the same type.",
        )


def check(env: Env) -> list[Finding]:
    """What in this environment biases or adds noise to latency figures, as warnings and
    hints with advice.  Pure: it looks only at the dict, so it works on stored results too
    (capture with sample_load=True to include the busy-CPU checks)."""
    out: list[Finding] = []
    for part in (
        _check_frequency,
        _check_load,
        _check_virtualization,
        _check_cgroup,
        _check_clock,
        _check_topology,
        _check_idle,
        _check_mitigations,
        _check_filesystem,
    ):
        part(env, out)
    return out


# --------------------------------------------------------------------------------------------
# render


def _mhz(khz: int | None) -> str:
    return "?" if khz is None else f"{khz / 1000:.0f}"


def _summary_rows(env: Env) -> list[tuple[str, str]]:
    def s(v: Any) -> str:
        return "unknown" if v is None or v == "" else str(v)

    k = env.get("kernel") or {}
    c = env.get("cpu") or {}
    f = env.get("cpufreq") or {}
    v = env.get("virtualization") or {}
    cg = env.get("cgroup") or {}
    iso = env.get("isolation") or {}
    load = env.get("load") or {}
    rows: list[tuple[str, str]] = [
        ("Host", s(env.get("hostname"))),
        (
            "Kernel",
            f"{s(k.get('release'))} ({s(k.get('machine'))}), HZ={s(k.get('config_hz'))},"
            f" preempt={s(k.get('preempt'))}",
        ),
        ("Distribution", s(env.get("distribution"))),
        ("CPU", s(c.get("model"))),
        (
            "CPUs",
            f"{s(c.get('logical'))} logical, online {format_cpulist(c.get('online'))}, "
            f"{s(c.get('physical_cores'))} cores, {s(c.get('packages'))} package(s), "
            f"SMT {'on' if c.get('smt') else 'off' if c.get('smt') is False else 'unknown'}",
        ),
    ]
    per_cpu = f.get("per_cpu") or {}
    if per_cpu:
        cur = [e.get("cur_khz") for e in per_cpu.values() if e.get("cur_khz")]
        rng = f"{_mhz(min(cur))}-{_mhz(max(cur))} MHz now" if cur else "current unknown"
        first = next(iter(per_cpu.values()))
        rows.append(
            (
                "Frequency",
                f"governor {', '.join(f.get('governors') or ['?'])} ({s(f.get('driver'))}), "
                f"{rng}, limits {_mhz(first.get('min_khz'))}-{_mhz(first.get('max_khz'))} MHz",
            )
        )
    else:
        host = " - set by the host" if _get(env, "virtualization", "vm") else ""
        rows.append(("Frequency", f"not visible (no cpufreq){host}"))
    turbo = f.get("turbo")
    rows.append(("Turbo", "unknown" if turbo is None else "on" if turbo else "off"))
    cs = env.get("clocksource") or {}
    rows.append(
        (
            "Clock source",
            f"{s(cs.get('current'))} (kernel, in use; available: "
            f"{' '.join(cs.get('available') or [])})",
        )
    )
    pc = env.get("probe_clock") or {}
    if pc.get("name"):
        rows.append(("Probe clock", f"{pc['name']} (default of latscope-probe)"))
    tsc = env.get("tsc")
    if tsc is not None:
        rows.append(("TSC flags", " ".join(n for n, on in tsc.items() if on) or "none"))
    where = []
    if v.get("vm"):
        where.append(f"VM ({v.get('kind') or 'unknown hypervisor'})")
    elif v.get("vm") is False:
        where.append("bare metal")
    if v.get("wsl"):
        where.append("WSL")
    if v.get("container"):
        where.append("container")
    rows.append(("Virtualisation", ", ".join(where) or "unknown"))
    limit = cg.get("cpu_limit")
    rows.append(
        (
            "cgroup",
            f"v{s(cg.get('version'))} {s(cg.get('path'))}, CPU limit "
            f"{'none' if limit is None else f'{limit:g} CPUs'}, cpuset {s(cg.get('cpuset'))}",
        )
    )
    sec = env.get("seccomp")
    if sec:
        mode = {0: "off", 1: "strict", 2: f"filter ({sec.get('filters')} filters)"}
        rows.append(("Seccomp", mode.get(sec.get("mode"), "unknown")))
    mit = env.get("mitigations")
    if mit is not None:
        costly = costly_mitigations(mit)
        active = [n for n, t in mit.items() if t.lower().startswith("mitigation")]
        rows.append(
            (
                "Mitigations",
                f"{len(active)} active ({', '.join(active) or 'none'}); on the system-call "
                f"path: {', '.join(costly) or 'none'}",
            )
        )

    def cpus(v: str | None) -> str:
        return "unknown" if v is None else format_cpulist(parse_cpulist(v)) if v else "none"

    rows.append(
        (
            "Isolation",
            f"isolated {cpus(iso.get('isolated'))} (cmdline: isolcpus={s(iso.get('isolcpus'))},"
            f" nohz_full={s(iso.get('nohz_full'))}, rcu_nocbs={s(iso.get('rcu_nocbs'))})",
        )
    )
    if load:
        rows.append(("Load", f"{load['1m']:.2f} {load['5m']:.2f} {load['15m']:.2f}"))
    busy = env.get("cpu_busy")
    if busy:
        rows.append(("CPU busy", ", ".join(f"{c}: {b:.0%}" for c, b in busy.items())))
    mem = env.get("memory_total_bytes")
    rows.append(("Memory", "unknown" if mem is None else f"{mem / 2**30:.1f} GiB"))
    fs = env.get("filesystem")
    if fs:
        rows.append(
            (
                "Filesystem",
                f"{s(fs.get('path'))}: {s(fs.get('fstype'))} from {s(fs.get('source'))} at "
                f"{s(fs.get('mount_point'))} ({s(fs.get('mount_options'))}; "
                f"{s(fs.get('super_options'))})",
            )
        )
    py = env.get("python") or {}
    rows.append(("Python", f"{s(py.get('implementation'))} {s(py.get('version'))}"))
    rows.append(("latscope", s(env.get("latscope_version"))))
    return rows


def render(env: Env, findings: list[Finding] | None = None) -> Any:
    """A rich renderable: a table of the main fields, then (if given) the findings."""
    from rich.console import Group
    from rich.table import Table

    table = Table(title="Environment", show_header=False, title_justify="left")
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for name, value in _summary_rows(env):
        table.add_row(name, value)
    if findings is None:
        return table
    if not findings:
        return Group(table, "[green]No problems found.[/green]")
    ft = Table(title="Findings", title_justify="left", show_lines=True)
    ft.add_column("", no_wrap=True)
    ft.add_column("code", no_wrap=True)
    ft.add_column("what", overflow="fold", ratio=3)
    ft.add_column("advice", overflow="fold", ratio=2)
    for fd in findings:
        sev = "[yellow]warning[/yellow]" if fd.severity == "warning" else "[cyan]info[/cyan]"
        ft.add_row(sev, fd.code, fd.message, fd.advice)
    return Group(table, ft)


# --------------------------------------------------------------------------------------------
# compatible


def _placement(env: Env) -> str | None:
    v = env.get("virtualization")
    if not isinstance(v, dict) or v.get("vm") is None:
        return None
    parts = [f"VM ({v.get('kind') or 'unknown hypervisor'})" if v["vm"] else "bare metal"]
    if v.get("wsl"):
        parts.append("WSL")
    if v.get("container"):
        parts.append("container")
    return ", ".join(parts)


def compatible(env_a: Env, env_b: Env) -> list[str]:
    """Why results taken in env_a and env_b should not be compared; empty when they may be.
    A field unknown on either side is not counted as a difference."""
    out: list[str] = []

    def differ(what: str, a: Any, b: Any) -> None:
        if a is not None and b is not None and a != b:
            out.append(f"Different {what}: {a} vs {b}.")

    differ("CPU", _get(env_a, "cpu", "model"), _get(env_b, "cpu", "model"))
    differ("architecture", _get(env_a, "kernel", "machine"), _get(env_b, "kernel", "machine"))
    differ("kernel", _get(env_a, "kernel", "release"), _get(env_b, "kernel", "release"))
    differ(
        "clock source",
        _get(env_a, "clocksource", "current"),
        _get(env_b, "clocksource", "current"),
    )
    differ("virtualisation", _placement(env_a), _placement(env_b))
    ga, gb = _get(env_a, "cpufreq", "governors"), _get(env_b, "cpufreq", "governors")
    differ("governor", ",".join(ga) if ga else None, ",".join(gb) if gb else None)
    ta, tb = _get(env_a, "cpufreq", "turbo"), _get(env_b, "cpufreq", "turbo")
    differ(
        "turbo",
        None if ta is None else "on" if ta else "off",
        None if tb is None else "on" if tb else "off",
    )
    ma, mb = env_a.get("mitigations"), env_b.get("mitigations")
    if ma is not None and mb is not None:
        ca, cb = set(costly_mitigations(ma)), set(costly_mitigations(mb))
        if ca != cb:
            out.append(
                "Different system-call mitigations: "
                f"{', '.join(sorted(ca)) or 'none'} vs {', '.join(sorted(cb)) or 'none'}."
            )
    differ(
        "filesystem type",
        _get(env_a, "filesystem", "fstype"),
        _get(env_b, "filesystem", "fstype"),
    )
    return out
