"""Whether two results can be compared at all: the differences between the environments
they were measured in."""

from typing import Any

from .checks import costly_mitigations
from .readers import Env, _get

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


def brief(env: Env) -> dict[str, Any]:
    """The part of an environment `compatible` reads (kept with a run's rows in the store's
    summary table, so that runs can be told apart without their run.json): compatible of two
    briefs says what compatible of the two environments says."""
    out: dict[str, Any] = {}
    for section, keys in (
        ("cpu", ("model",)),
        ("kernel", ("machine", "release")),
        ("clocksource", ("current",)),
        ("virtualization", ("vm", "kind", "wsl", "container")),
        ("cpufreq", ("governors", "turbo")),
        ("filesystem", ("fstype",)),
    ):
        v = env.get(section)
        if isinstance(v, dict):
            out[section] = {k: v.get(k) for k in keys if k in v}
    if "mitigations" in env:
        out["mitigations"] = env["mitigations"]
    return out


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
