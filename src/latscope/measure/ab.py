"""A and B interleaved in one probe process (`latscope ab`): several *arms*, each a benchmark
with its parameters, measured by one probe in alternating blocks of a few milliseconds, in
balanced rounds shuffled afresh each round, so that every arm sees the same state of the host;
the verdict comes from the paired per-round ratios (`stats.paired`).

A scenario is one word, ``BENCH key=value ...`` (``inject_ns=N`` adds a known busy-wait of N ns
to that arm's timed regions, the validation aid). The first is the baseline. The run is kept
in the store as one run with arms: its columns are the arms' columns qualified by the arm's
letter (``A:rtt``, ``B:rtt``), and its comparison (one entry per arm and column: the ratio to
the baseline, its interval, the verdict, the order effect) is computed once, when the run is
kept, and stored in run.json as ``ab`` (`facts`); every view renders those facts.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import probe
from .. import store as _store
from .._version import __version__
from ..children import error_line
from ..errors import BadInput, Unsupported
from ..record import ARM_LETTERS
from .arms import Arm
from .comparison import DEFAULT_NOISE, facts

if TYPE_CHECKING:
    from ..record import Run

#: The default time budget (s), and the most without --long.
DEFAULT_TIME_S = 5.0
MAX_TIME_S = 10.0
#: The default block length (ms): short enough that the host's speed level rarely changes
#: inside a round, long enough that the switch between arms is a small part of it.
DEFAULT_BLOCK_MS = 5.0
MAX_ARMS = len(ARM_LETTERS)


def arms_args(
    arms: Sequence[Arm],
    out: str | os.PathLike[str] | None,
    *,
    time_s: float,
    block_ms: float,
    seed: int | None,
    workers: int | None,
    clock: str | None,
    warmup: int | None,
    max_samples: int | None = None,
    check: bool = False,
) -> list[str]:
    """The probe's command line for an interleaved run (docs/probe-cli.md, arms)."""
    args = [probe.probe_path()]
    for a in arms:
        args += ["--arm", a.word]
    args += ["--time", f"{time_s:g}", "--block-ms", f"{block_ms:g}"]
    if seed is not None:
        args += ["--seed", str(seed)]
    if workers is not None:
        args += ["--workers", str(workers)]
    if clock is not None:
        args += ["--clock", clock]
    if warmup is not None:
        args += ["--warmup", str(warmup)]
    if max_samples is not None:
        args += ["--max-samples", str(max_samples)]
    if check:
        args.append("--check")
    elif out is not None:
        args += ["-o", str(out)]
    return args


def check_arms(arms: Sequence[Arm], **kw: Any) -> dict[str, Any]:
    """The probe's ``--check`` of an interleaved run: every arm resolved, nothing measured;
    its refusal as one line (BadInput, Unsupported)."""
    import subprocess

    args = arms_args(arms, None, check=True, **kw)
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise Unsupported(f"cannot run the probe: {e.strerror}") from None
    if out.returncode != 0:
        exc = probe._EXIT.get(out.returncode, BadInput)
        raise exc(error_line(out.stderr))
    return dict(json.loads(out.stdout))


def sharing_refused(arms: Sequence[Arm], kw: Mapping[str, Any]) -> str | None:
    """None when the arms can share one probe process (the probe's ``--check`` of the arms
    passes); else the probe's reason, when each arm runs on its own: then they alternate as
    short processes (`arms.alternate`). An arm that cannot run here at all: its own one line."""
    rt = [a.word for a in arms if a.realtime]
    if rt:
        why = (
            f"'{rt[0]}' asks for a scheduling policy or locked memory, which belong to a whole "
            "process: each arm runs as a process of its own"
        )
    else:
        try:
            check_arms(arms, **kw)
            return None
        except BadInput as e:
            # the probe's reason, without its '--arm WORD: ' and its advice to a user of the
            # probe alone ('; run it alone ...'): here the lab alternates the arms instead
            why = re.sub(r"^--arm '[^']*': ", "", e.message).split("; run ")[0]
    for a in arms:
        params = dict(a.params)
        probe.check(a.bench, params, clock=kw.get("clock"), warmup=kw.get("warmup"))
    return why


def _validate(arms: Sequence[Arm], time_s: float, block_ms: float, long: bool) -> None:
    if len(arms) < 2:
        raise BadInput("give at least two scenarios: the baseline first, then what to compare")
    if len(arms) > MAX_ARMS:
        raise BadInput(f"{len(arms)} scenarios: at most {MAX_ARMS} arms share one process")
    if not (0.2 <= time_s <= 3600):
        raise BadInput(f"--time {time_s:g}: give seconds between 0.2 and 3600")
    if time_s > MAX_TIME_S and not long:
        raise BadInput(
            f"--time {time_s:g}: more than {MAX_TIME_S:g} s; add --long to measure that long"
        )
    if not (0.5 <= block_ms <= 1000):
        raise BadInput(f"--block-ms {block_ms:g}: give milliseconds between 0.5 and 1000")


def measure(
    arms: Sequence[Arm],
    *,
    time_s: float = DEFAULT_TIME_S,
    block_ms: float = DEFAULT_BLOCK_MS,
    seed: int | None = None,
    workers: int | None = None,
    clock: str | None = None,
    warmup: int | None = None,
    noise: float = DEFAULT_NOISE,
    long: bool = False,
    max_samples: int | None = None,
    store: str | os.PathLike[str] | _store.Store | None = None,
    progress: Callable[[int, int], None] | None = None,
    tags: Mapping[str, Any] | None = None,
) -> Run:
    """Measure the arms interleaved in one probe process and keep the run, its comparison
    computed now (`facts`) and kept in run.json as ``ab``."""
    from .. import env as envmod
    from .runner import _now_utc, command_line, keep, new_run, open_store

    _validate(arms, time_s, block_ms, long)
    if not (0.0 < noise < 1.0):
        raise BadInput(f"--noise {noise:g}: give a fraction between 0 and 1 (0.01 is 1%)")
    kw = dict(
        time_s=time_s,
        block_ms=block_ms,
        seed=seed,
        workers=workers,
        clock=clock,
        warmup=warmup,
        max_samples=max_samples,
    )
    apart = sharing_refused(arms, kw)
    st = open_store(store)
    load = envmod.load_now()
    with new_run(st, arms[0].bench) as t:
        args = arms_args(arms, t.samples_path, **kw)  # type: ignore[arg-type]
        probe.pause_point("probe")
        created = _now_utc()
        if apart is None:
            warnings = probe.run_probe(args, progress=progress)
        else:  # alternating processes, in the same shuffled rounds (arms.py)
            from . import arms as _arms

            warnings = _arms.alternate(
                arms,
                t.dir,
                t.samples_path,
                time_s=time_s,
                seed=seed,
                clock=clock,
                warmup=warmup,
                why=apart,
                progress=progress,
            )
            args = [probe.probe_path(), *(w for a in arms for w in ("--arm", a.word))]
        probe.pause_point("commit")
        from ..record import Run

        measured = Run(t.samples_path)
        if not measured.arms:
            raise BadInput("the probe wrote a run without arms; is it an older probe?")
        record = envmod.of_header(measured.meta)
        env = envmod.capture(probe_env=record or {}, load=load)
        meta = {
            "id": t.id,
            "created_utc": created,
            "benchmark": measured.benchmark,
            "params": measured.meta.get("params"),
            "params_given": dict(arms[0].params),
            "clock": measured.clock.get("name"),
            "command": command_line(),
            "probe_command": " ".join(shlex.quote(a) for a in args[1:]),
            "latscope_version": __version__,
            "probe_warnings": warnings,
            "tags": {"ab": True, **dict(tags or {})},
            "env": env,
            "status": "complete",
            "ab": facts(measured, arms, noise=noise),
        }
        return keep(t, meta, measured)


def fail_if(f: Mapping[str, Any], what: str | None) -> list[str]:
    """The comparisons that make ``--fail-if slower|different`` fail, as lines."""
    if not what:
        return []
    bad = {"slower"} if what == "slower" else {"slower", "faster"}
    return [
        f"{c['arm']} {c['column']}: {c['verdict']} ({c['ratio']:.3g}x)"
        for c in f["comparisons"]
        if c["verdict"] in bad
    ]
