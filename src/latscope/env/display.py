"""The environment as a rich table for the terminal (`latscope env`), with the findings."""

from typing import Any

from ..units import shown
from .checks import Finding, costly_mitigations
from .readers import Env, _get, format_cpulist, parse_cpulist

# --------------------------------------------------------------------------------------------
# render


def _mhz(khz: int | None) -> str:
    return "?" if khz is None else f"{khz / 1000:.0f}"


def summary_rows(env: Env) -> list[tuple[str, str]]:
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
    for name, value in summary_rows(env):
        table.add_row(name, shown(value))  # paths, names: text, never markup
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
        ft.add_row(sev, fd.code, shown(fd.message), shown(fd.advice))
    return Group(table, ft)
