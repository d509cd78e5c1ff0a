"""What an arm of an interleaved run is (`Arm`: a benchmark, its parameters, an injected
delay; `parse_arm` reads one from a user's word), and arms that cannot share a probe process,
alternated as short processes (`alternate`; RMIT: randomised
multiple interleaved trials, Abedi & Brecht, ICPE 2017): the Python runtime engine beside the
C probe, two interpreters, a spinning mechanism (whose idle responder would spin while the
others run).

The rounds are those of an interleaved run: each round runs every arm once, in an order
shuffled afresh from a recorded seed; here an arm's block is one probe process of about
``PROCESS_BLOCK_MS`` of timed iterations (sized from a pilot process per arm), so a round
lasts a few hundred milliseconds instead of a few, and the host's level changes inside more
of them: the paired statistic needs more rounds for the same precision. Every process is a
fresh memory layout, so the layout's variation lies inside the round-to-round variation that
the bootstrap over rounds measures; the statistic treats the run as one worker without a
layout prior (``facts``: ``worker_sd=0``).

The processes' samples (in ns: the arms may time with different clocks) are written as one
sample file of format version 3, with each sample's arm, block (its process) and round, and
``interleave.mode`` "processes"; the run is kept and compared as any interleaved run.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import probe, samples
from ..errors import BadInput


@dataclass(frozen=True)
class Arm:
    """One scenario of an interleaved run: a benchmark, the parameters given, an injected
    delay (ns, 0: none), and how its process is scheduled (``sched``: ``fifo:P`` or ``rr:P``,
    the probe's ``--sched``; ``mlock``: its ``--mlock``), which makes it a process of its
    own."""

    bench: str
    params: dict[str, str]
    inject_ns: float = 0.0
    sched: str | None = None
    mlock: bool = False

    @property
    def word(self) -> str:
        """The arm as the probe's ``--arm`` takes it (and as a user writes it)."""
        parts = [self.bench, *(f"{k}={v}" for k, v in self.params.items())]
        if self.inject_ns:
            parts.append(f"inject_ns={int(round(self.inject_ns))}")
        if self.sched:
            parts.append(f"sched={self.sched}")
        if self.mlock:
            parts.append("mlock=true")
        return " ".join(parts)

    @property
    def realtime(self) -> bool:
        """Whether the arm asks for a scheduling policy or locked memory: a property of a
        whole process, so the arm cannot share one with others."""
        return bool(self.sched or self.mlock)


_SCHED = re.compile(r"(fifo|rr):([1-9][0-9]?)")
_BOOL = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def parse_arm(word: str) -> Arm:
    """``BENCH key=value ...`` as one word; BadInput (one line) for anything else."""
    parts = word.split()
    if not parts:
        raise BadInput("an empty scenario: give 'BENCH key=value ...' as one quoted word")
    bench, rest = parts[0], parts[1:]
    if "=" in bench:
        raise BadInput(f"'{word}': a scenario starts with the benchmark's name (latscope list)")
    probe.benchmark(bench)  # an unknown benchmark: its one line
    params: dict[str, str] = {}
    inject = 0.0
    sched: str | None = None
    mlock: bool | None = None
    for item in rest:
        k, sep, v = item.partition("=")
        if not sep or not k or not v:
            raise BadInput(f"'{item}' in '{word}': give parameters as key=value")
        again = {"inject_ns": bool(inject), "sched": sched is not None, "mlock": mlock is not None}
        if k in params or again.get(k, False):
            raise BadInput(f"'{word}': {k} given twice")
        if k == "sched":
            if not _SCHED.fullmatch(v):
                raise BadInput(
                    f"sched={v} in '{word}': give fifo:P or rr:P, P a priority from 1 to 99"
                )
            sched = v
            continue
        if k == "mlock":
            if v.lower() not in _BOOL:
                raise BadInput(f"mlock={v} in '{word}': give true or false")
            mlock = _BOOL[v.lower()]
            continue
        if k == "inject_ns":
            if not v.isdigit() or len(v) > 9:
                raise BadInput(f"inject_ns={v} in '{word}': give whole nanoseconds, 0 or more")
            inject = float(v)
            continue
        params[k] = v
    return Arm(bench, params, inject, sched, bool(mlock))


#: The timed part of one arm's process, ms.
PROCESS_BLOCK_MS = 100.0
#: Iterations of the pilot process that sizes an arm's blocks.
PILOT_N = 200
#: The fewest rounds a run makes, whatever the budget (the statistic's minimum is 10).
MIN_ROUNDS = 12
#: Iterations of one block (one process), at least and at most: a fast arm's process is
#: shorter than PROCESS_BLOCK_MS rather than record hundreds of thousands of samples.
BLOCK_N = (20, 50_000)


def _one(
    arm: Arm, out: Path, n: int, clock: str | None, warmup: int | None
) -> tuple[samples.SampleFile, float]:
    """One process of ``arm`` with ``n`` recorded iterations into ``out``: its file (read and
    checked) and its wall time (s)."""
    args = probe.probe_args(
        arm.bench,
        arm.params,
        out,
        n,
        warmup,
        clock,
        workers=1,
        inject_ns=arm.inject_ns or None,
        sched=arm.sched,
        mlock=arm.mlock,
    )
    t0 = time.monotonic()
    probe.run_probe(args)
    wall = time.monotonic() - t0
    f = samples.load(out).in_memory()  # its columns are used once the file is gone
    out.unlink()
    return f, wall


def _per_iteration_ns(f: samples.SampleFile) -> float:
    t = f.ns("t_start")
    n = len(t)
    return float(t[-1] - t[0]) / (n - 1) if n > 1 and t[-1] > t[0] else 1000.0


def _block_n(per_ns: float) -> int:
    """The iterations of one process of an arm that takes ``per_ns`` per iteration: about
    PROCESS_BLOCK_MS of them, within BLOCK_N."""
    return int(min(max(PROCESS_BLOCK_MS * 1e6 / per_ns, BLOCK_N[0]), BLOCK_N[1]))


def alternate(
    arms: Sequence[Arm],
    directory: Path,
    target: Path,
    *,
    time_s: float,
    seed: int | None,
    clock: str | None,
    warmup: int | None,
    why: str,
    progress: Callable[[int, int], None] | None = None,
) -> list[str]:
    """Run the arms as alternating processes in ``directory`` (a run's partial directory) and
    write their samples as one interleaved sample file ``target``; returns warning lines."""
    seed = seed if seed is not None else random.SystemRandom().randrange(2**53)
    rng = random.Random(seed)
    pilots = [
        _one(a, directory / f".pilot-{k}.lss", PILOT_N, clock, warmup) for k, a in enumerate(arms)
    ]
    names = [f.duration_columns for f, _ in pilots]
    for k in range(1, len(arms)):
        if names[k] != names[0]:
            raise BadInput(
                f"the arms record different columns ({arms[0].word}: {', '.join(names[0])}; "
                f"{arms[k].word}: {', '.join(names[k])}): compare scenarios of one benchmark, "
                "or ping-pong mechanisms with each other"
            )
    block_n = [_block_n(_per_iteration_ns(f)) for f, _ in pilots]
    first_n = list(block_n)  # the header's block_iterations: each arm's first block
    cols: dict[str, list[np.ndarray]] = {c: [] for c in ["t_start", *names[0]]}
    arm_i, block_i, round_i = [], [], []
    order: list[list[int]] = []
    counts = [0] * len(arms)
    start = time.monotonic()
    block = 0
    r = 0
    # rounds until the budget is spent (at least MIN_ROUNDS); each arm's next block is sized
    # from its last process, not only from its pilot: a pilot can run at another speed (an
    # unpinned ping-pong whose two sides shared a CPU in the pilot and not after it ran 15x
    # slower), and blocks sized from it alone made a 1 s budget take 30 s
    while r < MIN_ROUNDS or time.monotonic() - start < time_s:
        o = list(range(len(arms)))
        rng.shuffle(o)
        order.append(o)
        for k in o:
            at = time.monotonic() - start
            f, _ = _one(arms[k], directory / f".round-{r}-{k}.lss", block_n[k], clock, warmup)
            t = f.ns("t_start")
            cols["t_start"].append(np.rint(at * 1e9 + (t - t[0])).astype(np.int64))
            for c in names[0]:
                cols[c].append(np.rint(f.ns(c)).astype(np.int64))
            m = len(t)
            arm_i.append(np.full(m, k, np.int64))
            block_i.append(np.full(m, block, np.int64))
            round_i.append(np.full(m, r, np.int64))
            counts[k] += m
            block += 1
            block_n[k] = _block_n(_per_iteration_ns(f))
        r += 1
        if progress:  # done when both the budget and the fewest rounds are, in thousandths
            done = min(1.0, (time.monotonic() - start) / time_s, r / MIN_ROUNDS)
            progress(int(1000 * done), 1000)
    rounds = r
    spent = time.monotonic() - start
    warnings = []
    if spent > 1.5 * time_s:
        warnings.append(
            f"{rounds} rounds of processes took {spent:.0f} s, more than --time {time_s:g}: one "
            f"round takes about {spent / rounds:.2f} s, and an interval needs {MIN_ROUNDS}"
        )
    data = {c: np.concatenate(v) for c, v in cols.items()}
    data.update(
        arm=np.concatenate(arm_i), block=np.concatenate(block_i), round=np.concatenate(round_i)
    )
    # t_start on one timeline, in time order (a process's own clock starts at its first sample)
    data["t_start"] = np.maximum.accumulate(data["t_start"]) - data["t_start"][0]
    f0 = pilots[0][0]
    header = _header(arms, pilots, first_n, counts, rounds, order, seed, time_s, why)
    header["columns"] = [
        {"name": "t_start", "unit": "ticks", "kind": "time"},
        *[
            {**{k: v for k, v in c.items() if k != "unit"}, "unit": "ticks"}
            for c in f0.header["columns"]
            if isinstance(c, dict) and c.get("kind") == "duration"
        ],
        *[{"name": n, "unit": "index", "kind": "index"} for n in ("arm", "block", "round")],
    ]
    samples.write(target, header, data)
    return warnings


def _header(
    arms: Sequence[Arm],
    pilots: Sequence[tuple[samples.SampleFile, float]],
    block_n: Sequence[int],
    counts: Sequence[int],
    rounds: int,
    order: list[list[int]],
    seed: int,
    time_s: float,
    why: str,
) -> dict[str, Any]:
    h0 = pilots[0][0].header
    clock = dict(h0.get("clock") or {})
    clock["ns_per_tick"] = 1.0  # the samples are whole ns: the arms' clocks may differ
    return {
        "probe": h0.get("probe"),
        "benchmark": arms[0].bench,
        "params": h0.get("params") or {},
        "warmup": h0.get("warmup"),
        "inject_ns": 0,
        "clock": clock,
        "bench": h0.get("bench"),
        "env": h0.get("env"),
        "workers": [{"n": int(sum(counts)), "warmup": h0.get("warmup") or 0, "pid": 0}],
        "arms": [
            {
                "benchmark": a.bench,
                "params": f.header.get("params") or {},
                "given": list(a.params),
                "word": a.word,
                "inject_ns": a.inject_ns,
                "sched": a.sched,
                "mlock": a.mlock,
                "realtime": f.header.get("realtime"),
                "n": int(counts[k]),
                "bench": f.header.get("bench") if isinstance(f.header.get("bench"), dict) else {},
                "clock": (f.header.get("clock") or {}).get("name"),
                "block_iterations": [int(block_n[k])],
                "discard_per_block": [0],
            }
            for k, (a, (f, _)) in enumerate(zip(arms, pilots, strict=True))
        ],
        "interleave": {
            "mode": "processes",
            "why": why,
            "seed": int(seed),
            "time_s": float(time_s),
            "block_ms": PROCESS_BLOCK_MS,
            "rounds": [rounds],
            "order": [order],
        },
    }
