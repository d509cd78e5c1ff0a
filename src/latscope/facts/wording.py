"""The words of a run's facts: its column labels, its clock and parameters in one line, what
its measuring threads did besides the measured work (page faults, context switches) and its
name.  Worded once, here; the facts (`latscope.facts.build.build_facts`) keep them, every
view renders them."""

from __future__ import annotations

import dataclasses
from typing import Any

from .. import probe
from ..env import emulator, of_header
from ..units import fmt
from .checks import display


def latency_label(col: dict[str, Any]) -> str:
    """A column's latency in words: its catalogue label (``latency_label``, else the
    catalogue's ``latencies`` label of its kind), with the context switches it holds."""
    name = col.get("latency_label") or probe.latency_label(col.get("latency"))
    cs = col.get("context_switches")
    if cs is not None and col.get("latency") != "call":
        name += f", {cs} ctx sw"
    return str(name)


#: The resource-usage counters the probe records per measuring thread over the timed loop.
RUSAGE_FIELDS = ("minflt", "majflt", "nvcsw", "nivcsw")


@dataclasses.dataclass(frozen=True)
class RoleUsage:
    """One measuring thread's page faults and context switches over the timed loop, summed
    over the worker processes."""

    role: str
    minflt: int
    majflt: int
    nvcsw: int
    nivcsw: int

    @property
    def faults(self) -> int:
        return self.minflt + self.majflt

    @property
    def switches(self) -> int:
        return self.nvcsw + self.nivcsw


@dataclasses.dataclass(frozen=True)
class TimedUsage:
    """What the measuring threads did besides the measured work (header ``workers[i].
    timed_rusage``): `line` says it in one line, `notes` where it is not what the benchmark
    implies."""

    workers: int
    iterations: int
    roles: tuple[RoleUsage, ...]
    scope: str  # "2 workers, 20,000 iterations"
    detail: str  # per role: page faults, context switches
    notes: tuple[str, ...]

    @property
    def line(self) -> str:
        return f"timed loop ({self.scope}): {self.detail}"


def _count(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _many(k: int, one: str, many: str) -> str:
    return f"{k:,} {one if k == 1 else many}"


def _per_iter(k: int, n: int) -> str:
    """'0.0016 per iteration', '1 per iteration', '1 per 20,000 iterations' (never 5e-05)."""
    if n <= 0:
        return ""
    if k and k / n < 0.001:
        return f"1 per {n / k:,.0f} iterations"
    return f"{k / n:.3g} per iteration"


def _expected_switches(meta: dict[str, Any], column: str | None) -> int | None:
    """Context switches per iteration, from the header: those of the benchmark's
    ``display.switches_column`` (`columns[].context_switches`), None where unknown."""
    for c in meta.get("columns") or []:
        if isinstance(c, dict) and column is not None and c.get("name") == column:
            return _count(c.get("context_switches"))
    return None


def timed_usage(meta: dict[str, Any]) -> TimedUsage | None:
    """The page faults and context switches of each measuring thread over the timed loop,
    summed over the workers, from a sample file's header; None where the file does not record
    them (older files, imports).  Fields that are missing or not counts are left out.

    Notes are added where the counts are not what the benchmark implies:

    - a page fault in the timed loop of a ping-pong or `syscall` benchmark (their timed region
      touches no new memory: every page is touched before timing), and
    - for ping-pong, switches per iteration of the two measuring threads together against the
      header's count for the round trip. Each measuring thread is switched out at most once per
      round trip (it blocks, or is preempted, waiting for the other), so the threads' own
      share is min(expected, 2); the rest (ZeroMQ's I/O threads) are other threads' switches.
      More than that (by over 10%, at least 0.05 per iteration) means the threads were switched
      out for other work inside the timed loop; fewer (under 90%) means some waits found the
      message already there, so not every iteration contains the switches its latency names.
    """
    workers = meta.get("workers")
    if not isinstance(workers, list):
        return None
    sums: dict[str, dict[str, int]] = {}
    iterations, seen = 0, 0
    for w in workers:
        if not isinstance(w, dict):
            continue
        iterations += _count(w.get("n")) or 0
        ru = w.get("timed_rusage")
        if not isinstance(ru, dict):
            continue
        seen += 1
        for role, counts in ru.items():
            if not isinstance(counts, dict):
                continue
            acc = sums.setdefault(str(role), dict.fromkeys(RUSAGE_FIELDS, 0))
            for f in RUSAGE_FIELDS:
                acc[f] += _count(counts.get(f)) or 0
    if not sums:
        return None
    if iterations <= 0:
        iterations = _count(meta.get("n")) or 0
    roles = tuple(RoleUsage(r, **c) for r, c in sums.items())
    parts = []
    for u in roles:
        pf = _many(u.faults, "page fault", "page faults")
        faults = (
            "no page faults"
            if u.faults == 0
            else f"{pf} ({u.minflt:,} minor, {u.majflt:,} major; {_per_iter(u.faults, iterations)})"
        )
        parts.append(
            f"{u.role}: {faults}, {_many(u.switches, 'context switch', 'context switches')} "
            f"({u.nvcsw:,} voluntary, "
            f"{u.nivcsw:,} involuntary"
            + (f"; {_per_iter(u.switches, iterations)})" if u.switches else ")")
        )
    wtxt = f"{seen} worker{'s' if seen != 1 else ''}"
    scope = f"{wtxt}, {iterations:,} iterations"

    notes: list[str] = []
    show = display(meta)
    measuring = set(show.get("roles") or [])
    under = emulator(of_header(meta))
    if show and not probe.holds(show.get("faults_expected_when"), meta.get("params") or {}):
        for u in roles:
            if not (u.faults and u.role in measuring):
                continue
            pf = _many(u.faults, "page fault", "page faults")
            if under:  # the probe says the same: nothing to do about them, nothing to report
                notes.append(
                    f"{u.role}: {pf} inside the timed loop under emulation "
                    f"({under}): the emulator's own (its translated code, its "
                    "view of the guest's memory), not the target machine's."
                )
            else:
                notes.append(
                    f"{u.role}: {pf} inside the timed loop, where this "
                    "benchmark touches no new memory: the iterations that took them include "
                    "the kernel's fault handling. A longer --warmup should remove them; if not, "
                    "the probe timed a page it had not touched (please report it)."
                )
    expected = _expected_switches(meta, show.get("switches_column"))
    if expected is not None and iterations > 0:
        own = min(expected, 2)
        got = sum(u.switches for u in roles if u.role in measuring) / iterations
        rate = f"{got:.3g} context switches per round trip against {own}"
        if got > own + max(0.05, 0.1 * own):
            notes.append(
                f"{rate} that the mechanism needs: the measuring threads were switched out for "
                "other work inside the timed loop (preempted, or the CPU shared), so the "
                "latencies include other programs' time. Pin the parties (-p cpus=A,B) to "
                "quiet CPUs."
            )
        elif got < 0.9 * own:
            notes.append(
                f"{rate} that the latency names: some waits found the message already there "
                "(the other side was faster), so not every round trip contains the switches "
                "its label counts."
            )
    return TimedUsage(seen, iterations, roles, scope, "; ".join(parts), tuple(notes))


def params_line(meta: dict[str, Any]) -> str:
    """The run's parameters as words, and how its threads were scheduled when not as usual
    (`realtime_words`)."""
    text = probe.params_text(str(meta.get("benchmark")), meta.get("params") or {})
    return " ".join(w for w in (text, realtime_words(meta)) if w)


def realtime_words(meta: dict[str, Any]) -> str:
    """``sched=fifo:80 mlock`` from the probe's ``realtime`` record (``--sched``,
    ``--mlock``); "" for a run scheduled as usual."""
    rt = meta.get("realtime")
    words = []
    if isinstance(rt, dict):
        policy, prio = rt.get("policy"), rt.get("priority")
        if policy in ("fifo", "rr") and isinstance(prio, int):
            words.append(f"sched={policy}:{prio}")
        if rt.get("mlock") is True:
            words.append("mlock")
    return " ".join(words)


def clock_line(clk: dict[str, Any]) -> str:
    """Read cost (overhead) and step of a run's clock, saying what is unknown or guessed."""
    if clk.get("overhead_ns") is None:
        over = "overhead unknown (imported)"
    else:
        over = f"overhead {fmt(clk['overhead_ns'])} (read cost, not subtracted below)"
    step = clk.get("step_ns")
    guessed = step is None and clk.get("resolution_guessed")
    if guessed:
        step = clk.get("resolution_ns")
    if step is None:
        return f"{over}, step unknown"
    guess = " (a guess from the data: the smallest step between values)" if guessed else ""
    return f"{over}, step {fmt(step)}{guess}"


def injected_line(ns: float) -> str:
    """What a run made with --inject-ns is, in every view of it."""
    return (
        f"a known delay of {ns:g} ns was added to every timed region (--inject-ns, a "
        "validation aid): the figures are the benchmark's plus that delay"
    )


def family_words(family: str) -> str:
    """An interval method's family (the start of ``ci_method``) as the 'CI of p50 by …' line
    says it: 'between runs: t interval over 10 worker medians' reads 'a t interval over the
    10 worker medians'."""
    if family.startswith("between runs: t interval over "):
        return "a t interval over the " + family.removeprefix("between runs: t interval over ")
    return family


def run_label(run: Any) -> str:
    """A short human name for a run: its --name / tag for imports and named runs, else the
    benchmark and the parameters the user gave."""
    meta = run.meta
    tags = (meta.get("run") or {}).get("tags") or {}
    if tags.get("name"):
        return str(tags["name"])
    if meta.get("benchmark") == "imported":
        return str(meta.get("name") or (meta.get("params") or {}).get("file") or run.id)
    given = (meta.get("run") or {}).get("params_given")
    # the parameters the user gave ({}: none, the benchmark's defaults); a run that does not
    # record them (kept by an older latscope) by all of its parameters
    params = given if isinstance(given, dict) else meta.get("params") or {}
    words = (probe.params_text(str(meta["benchmark"]), params), realtime_words(meta))
    return " ".join([str(meta["benchmark"]), *(w for w in words if w)])
