"""What in a captured environment biases latency figures: findings (warnings and hints), each
with what to do about it."""

import re
from dataclasses import dataclass
from typing import Literal

from .readers import Env, _get, format_cpulist, parse_cpulist
from .snapshot import _cmdline_params

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
# check


@dataclass(frozen=True)
class Finding:
    severity: Literal["warning", "info"]
    code: str
    message: str
    advice: str


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
