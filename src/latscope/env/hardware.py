"""The processor and the machine around it: /proc/cpuinfo, CPUs and their topology,
frequency scaling, idle states, the kernel's clock source, the probe's default clock, and
virtualisation (hypervisor, container, WSL)."""

import os
import re

from .readers import (
    Env,
    _exists,
    _int,
    _listdir,
    _mount_of,
    _read,
    _read1,
    _safe,
    parse_cpulist,
    parse_mountinfo,
)

_CPU_DIR = re.compile(r"cpu(\d+)$")

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
    return {  # the model is the probe's record
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
    """The clock sources the kernel offers (the one in use is the probe's record)."""
    d = "sys/devices/system/clocksource/clocksource0"
    available = _read1(root, f"{d}/available_clocksource")
    return {"available": available.split() if available is not None else None}


def _probe_clock() -> Env | None:
    """The clock the probe times with by default (its catalogue), or None without a probe."""
    from .. import probe

    clocks = probe.catalogue().get("clocks") or []
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
