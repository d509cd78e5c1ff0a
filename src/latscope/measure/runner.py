"""Making runs: one benchmark measured by the probe and kept in the store, with its summary
computed once, when the run is made; a sample file measured elsewhere brought in as a run
(`import_samples`); reading a kept run back; the store as the lab opens it.

A run enters the store in one transaction (`Store.transaction`): its sample file is written
into a partial directory, its summary is computed from it (`Run.summary`) and kept beside it as
summary.parquet with the run's metadata, and one rename makes the run visible (`keep`). The
store computes no summaries; the lab's `LabStore` (here) computes the summary of a run kept
without a current one (by an older latscope) the same way, from its samples.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import probe
from .. import store as _store
from .._version import __version__
from ..errors import BadInput, Interrupted, LatscopeError, MeasurementFailed
from ..files import open_regular
from ..store import space
from ..store.index import summary_frame

if TYPE_CHECKING:
    import polars as pl

    from ..record import Run


class LabStore(_store.Store):
    """The store as the lab opens it: a run kept without a current summary.parquet has its
    summary computed from its samples (`summary_rows`), as when a run is made."""

    def summarize(self, run: _store.StoredRun) -> pl.DataFrame:
        from ..record import Run

        return summary_rows(Run(run.dir), run.meta)


def open_store(store: str | os.PathLike[str] | _store.Store | None = None) -> _store.Store:
    """``store`` itself when it is a store, else the lab's `LabStore` at that path (None: the
    default location)."""
    return store if isinstance(store, _store.Store) else LabStore(store)


def summary_rows(run: Run, meta: Mapping[str, Any]) -> pl.DataFrame:
    """The rows of summary.parquet for ``run`` with its run.json ``meta``: `Run.summary()`
    with the run's identity and tags (`store.summary_frame`)."""
    m = dict(meta)
    m.setdefault("params", run.meta.get("params"))
    m.setdefault("clock", (run.meta.get("clock") or {}).get("name"))
    return summary_frame(m, run.summary())


def keep(t: _store.Transaction, meta: dict[str, Any], measured: Run | None = None) -> Run:
    """Commit a run whose sample file is written in ``t``'s partial directory (``measured``:
    that file, read): its summary and its facts (`latscope.facts`) computed now, kept with
    ``meta`` (run.json) by one rename; the run read back, its summary already known."""
    from .. import facts
    from ..facts.build import build_facts
    from ..record import Run

    if measured is None:
        measured = Run(t.samples_path)
    rows = summary_rows(measured, meta)
    measured.meta["run"] = meta  # the facts name the run as it is kept
    measured.id = str(meta["id"])
    kept = build_facts(measured)
    with probe.held_signals():  # a run is committed whole; a signal meanwhile comes after
        final = t.commit(meta, summary=rows, files={facts.FACTS_FILE: facts.dumps(kept)})
    run = Run(final)
    run._summaries[0.95] = measured._figures()  # the figures, computed once (not again)
    return run


@contextmanager
def new_run(st: _store.Store, bench: str, host: str | None = None) -> Iterator[_store.Transaction]:
    """A run being made in ``st`` (`Store.transaction`): its partial directory made whole
    before a signal acts; on any way out before it is kept (a failure, a signal) the partial
    directory goes, a second signal waiting for it, and a Ctrl-C becomes `Interrupted` (one
    line, its exit status)."""
    with ExitStack() as stack:
        with probe.held_signals():  # the partial directory is made whole, then a signal acts
            t = stack.enter_context(st.transaction(bench, host=host))
        try:
            yield t
        except BaseException as e:
            with probe.held_signals(during=e):
                if t.final is None:
                    st.abandon(t.dir)
            if isinstance(e, KeyboardInterrupt) and t.final is None:
                raise Interrupted(signum=probe.signum_of(e)) from None
            raise


def command_line() -> str:
    """The command this process was started with, as a shell would read it."""
    return " ".join(shlex.quote(a) for a in [os.path.basename(sys.argv[0])] + sys.argv[1:])


def _now_utc() -> str:
    # microseconds: runs made within one second still sort in the order they were made
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


#: The lab's peak memory per sample while it analyses a run, besides the column analysed and
#: its start times (8 bytes each: the sample file's columns are read one at a time, whatever
#: their number): the analysis of that column (sorted copies, ranks, normal scores, the
#: transform of the dependence test: about 100 bytes a sample, with room to spare; keeping a
#: run of 10^8 pipe samples peaks at 34 bytes a sample all told).
ANALYSIS_BYTES = 100
#: From this many iterations on, a run is checked to fit in memory before it is made.
FITS_CHECK_N = 1_000_000


def fits_in_memory(n: int, available: int | None = None) -> None:
    """BadInput, before anything runs, where ``n`` samples would not fit in the memory this
    process may use (`env.readers.available_memory`), with the largest n that would. Any
    benchmark: its columns are analysed one at a time."""
    from ..env.readers import available_memory

    per = ANALYSIS_BYTES + 16
    have = available_memory() if available is None else available
    if have is None or n * per <= have:
        return
    gib = 2**30
    raise BadInput(
        f"-n {n:,} needs about {n * per / gib:.1f} GiB of memory to keep and analyse (about "
        f"{per} bytes a sample), more than the {have / gib:.1f} GiB this process may use here "
        f"(MemAvailable, its cgroup's memory.max, RLIMIT_AS); use at most -n "
        f"{max(1, have // per):,}, or several runs"
    )


def measure(
    bench: str,
    params: Mapping[str, Any] | None = None,
    n: int | None = None,
    warmup: int | None = None,
    clock: str | None = None,
    store: str | os.PathLike[str] | _store.Store | None = None,
    progress: Callable[[int, int], None] | None = None,
    tags: Mapping[str, Any] | None = None,
    env: Mapping[str, Any] | None = None,
    workers: int | None = None,
    inject_ns: float | None = None,
    sched: str | None = None,
    mlock: bool = False,
) -> Run:
    """Run one benchmark in the probe and keep the result in the store.

    ``workers``: worker processes (None: the probe's ``--workers auto``, up to 10 with at least
    200 iterations each, decided where each benchmark's default n is known; 1: a single
    process). ``inject_ns``: a known busy-wait added to every timed region (validation, `trust`).
    ``sched`` (``fifo:P`` or ``rr:P``) and ``mlock``: the measuring threads and their peers
    under a real-time policy, their memory locked (the probe's ``--sched``, ``--mlock``).
    ``env``: an environment the caller captured (None: captured here, the load averages before
    the run, the rest after it); either way the probe's record of the environment, in the
    sample file's header, is merged in and the merge is kept in run.json."""
    params = dict(params or {})
    probe.benchmark(bench)  # unknown benchmark: a clear error before anything is created
    if n is not None and n <= 0:
        raise BadInput(f"-n {n}: the number of iterations must be positive")
    if warmup is not None and warmup < 0:
        raise BadInput(f"--warmup {warmup}: must be 0 or more")
    if workers is not None and workers < 1:
        raise BadInput(f"--repeat {workers}: must be 1 or more")
    if inject_ns is not None and inject_ns < 0:
        raise BadInput(f"--inject-ns {inject_ns:g}: must be 0 or more")
    if (sched or mlock) and (probe.entry(bench) or {}).get("engine") == "python":
        raise BadInput(
            f"--sched and --mlock are for the probe's benchmarks; {bench} runs in the Python "
            "engine, whose interpreter they would not reach"
        )
    if workers is not None and n is not None and workers > n:
        raise BadInput(f"--repeat {workers}: more worker processes than iterations (-n {n})")
    if n is not None and n >= FITS_CHECK_N:
        fits_in_memory(n)
    w: int | str = workers if workers is not None else "auto"
    from .. import env as envmod

    if params.get("python"):  # a named interpreter answers a check first, under limits
        probe.check(bench, params, n, warmup, clock)
    st = open_store(store)
    load = envmod.load_now() if env is None else None  # before the run, which would count
    with new_run(st, bench) as t:
        args = probe.probe_args(
            bench,
            params,
            t.samples_path,
            n,
            warmup,
            clock,
            workers=w,
            inject_ns=inject_ns,
            sched=sched,
            mlock=mlock,
        )
        probe.pause_point("probe")
        created = _now_utc()
        times = envmod.cpu_times()
        try:
            warnings = probe.run_probe(args, progress=progress)
        except LatscopeError as e:  # the probe's one line: a full store says so as any write
            if "sample file" in e.message and space.message_says_full(e.message):
                what = f"the sample file of run {t.id} did not fit"
                raise space.full(st.root, what, None, st.free_before(t.dir)) from None
            raise
        steal = envmod.steal_between(times, envmod.cpu_times())
        probe.pause_point("commit")
        if not os.path.lexists(t.samples_path):
            raise MeasurementFailed(
                f"{args[0]} ended without writing its samples (exit 0): is it the probe, or a "
                "Python interpreter for the engine (python=)?"
            )
        from ..record import Run  # polars and numpy: once there is something to read

        measured = Run(t.samples_path)  # the complete sample file, in the partial directory
        # one environment: the probe's record (its header) and what the lab adds to it
        record = envmod.of_header(measured.meta)
        if env is None:
            env = envmod.capture(probe_env=record or {}, load=load)  # cheap: no load sampling
        else:
            env = envmod.merge(dict(env), record)
        env["steal"] = steal
        meta = {
            "id": t.id,
            "created_utc": created,
            "benchmark": bench,
            "params": measured.meta.get("params"),
            "params_given": {k: str(v) for k, v in params.items()},
            "clock": measured.clock.get("name"),
            "command": command_line(),
            "probe_command": " ".join(shlex.quote(a) for a in args[1:]),
            "latscope_version": __version__,
            "probe_warnings": warnings,
            # an injected run says so wherever runs are listed (ls, history)
            "tags": {**dict(tags or {}), **({"inject_ns": inject_ns} if inject_ns else {})},
            "env": env,
            "status": "complete",
        }
        return keep(t, meta, measured)


def is_sample_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` begins as a sample file does (its magic line); False for a file too
    short or unreadable (the caller's reader then says what is wrong with it)."""
    from ..samples import FILE_LIMIT, MAGIC

    try:
        with open_regular(path, "a sample file", FILE_LIMIT) as f:
            return f.read(len(MAGIC)) == MAGIC
    except BadInput:
        return False


def imported_as(st: _store.Store, sha256: str) -> str | None:
    """The id of the run in ``st`` imported from a sample file with this content, or None."""
    for m in st.list_meta():
        src = m.get("imported_from")
        if isinstance(src, dict) and src.get("sha256") == sha256:
            return str(m["id"])
    return None


def _copy_hashed(path: Path, target: Path) -> str:
    """Copy the regular file ``path`` (the guarded reader) to the new file ``target`` (never
    through a link); its sha256."""
    from ..samples import FILE_LIMIT

    h = hashlib.sha256()
    with open_regular(path, "a sample file", FILE_LIMIT) as src:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "wb") as out:  # a failed write: OSError (the caller's `writing`)
            while True:
                try:
                    chunk = src.read(1 << 20)
                except OSError as e:
                    raise BadInput(f"{path}: cannot read: {e.strerror or e}") from None
                if not chunk:
                    break
                h.update(chunk)
                out.write(chunk)
    return h.hexdigest()


def _given_in(argv: Any, params: Any) -> dict[str, str]:
    """The parameters a probe's command line gave (``-p KEY=VALUE``, as it recorded its
    argv), those its header knows, as given; nothing from a header that recorded none."""
    if not isinstance(argv, list) or not isinstance(params, dict):
        return {}
    out: dict[str, str] = {}
    for flag, item in zip(argv, argv[1:], strict=False):
        if flag == "-p" and isinstance(item, str) and "=" in item:
            k, v = item.split("=", 1)
            if k in params:
                out[k] = v
    return out


def import_samples(
    path: str | os.PathLike[str],
    store: str | os.PathLike[str] | _store.Store | None = None,
    tags: Mapping[str, Any] | None = None,
    host: str | None = None,
    warnings: Sequence[str] = (),
    probe_command: str | None = None,
) -> Run:
    """Keep a sample file measured elsewhere (by any probe, on any machine) as a run, with the
    environment its probe recorded (``host``: the host it is kept under, default the hostname
    the probe recorded; ``warnings`` and ``probe_command``: what the probe printed there and
    its command line, where the caller knows them, as the fleet does) (run.json's ``env`` is
    null: `Run.env` reads the header's, as for any file measured elsewhere). The file is
    copied into the run's partial directory and that copy is what is checked (`samples.load`
    through `Run`) and kept, so a file changed meanwhile cannot slip in; a file whose content
    was imported before is refused. Anything wrong: BadInput (one line) and nothing in the
    store."""
    from .. import env as envmod
    from .. import samples
    from ..record import Run
    from ..store.meta import RUN_SPEC, problem

    p = Path(path)
    bench = str(samples.load(p).header.get("benchmark"))  # checked whole before the store
    st = open_store(store)
    with new_run(st, bench, host=host) as t:
        with t.writing():
            sha = _copy_hashed(p, t.samples_path)
        measured = Run(t.samples_path)  # the copy, checked whole (layout, CRC, header)
        if measured.benchmark != bench:
            raise BadInput(f"{p}: changed while it was being imported; nothing imported")
        earlier = imported_as(st, sha)
        if earlier:
            raise BadInput(
                f"{p}: already in the store as run {earlier} (the same content); nothing imported"
            )
        header = measured.meta
        argv = header.get("argv")
        meta = {
            "id": t.id,
            "created_utc": _now_utc(),
            "benchmark": bench,
            "params": header.get("params"),
            "params_given": _given_in(argv, header.get("params")),
            "clock": measured.clock.get("name"),
            "command": command_line(),
            "probe_command": probe_command
            or (
                " ".join(shlex.quote(str(a)) for a in argv[1:]) if isinstance(argv, list) else None
            ),
            "latscope_version": __version__,
            "probe_warnings": list(warnings),
            "tags": dict(tags or {}),
            "env": None,  # measured elsewhere: the probe's record in the header is all there is
            "status": "complete",
            "imported_from": {"file": p.name, "path": str(p.resolve()), "sha256": sha},
        }
        if measured.arms:  # an interleaved run: its comparison, as `latscope ab` keeps it
            from .comparison import facts as ab_facts  # its statistics only for such a run

            meta["tags"] = {"ab": True, **meta["tags"]}
            meta["ab"] = ab_facts(measured)
        # the record as the lab would keep it: a header the store could not read back is refused
        why = problem(meta | {"env": envmod.of_header(header)}, RUN_SPEC)
        if why:
            raise BadInput(f"{p}: its header cannot be kept ({why}); nothing imported")
        return keep(t, meta, measured)


def load_facts(
    ref: str | os.PathLike[str],
    store: str | os.PathLike[str] | _store.Store | None = None,
    host: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The facts of a run (`latscope.facts`) and its run.json, found as `load` finds it: a
    kept run's facts are read without its samples; a run kept without current facts (by an
    older latscope) has them built and kept; a sample file's are built (its run.json: {})."""
    from .. import facts
    from ..store.layout import RUN_FILE
    from ..store.meta import read_run

    p = Path(ref)
    if os.path.lexists(p) and not p.is_dir():
        return load(p).facts, {}
    d = open_store(store).resolve(str(ref), host=host)
    # a run without its run.json is shown from its samples, as `Run` reads it
    meta = read_run(d) if os.path.lexists(d / RUN_FILE) else {}
    got = facts.kept(d)
    if got is None or got.get("id") != d.name:
        from ..record import Run

        got = Run(d).facts
    return got, meta


def load(
    ref: str | os.PathLike[str],
    store: str | os.PathLike[str] | _store.Store | None = None,
    host: str | None = None,
) -> Run:
    """A run by id (or unique prefix, or 'last') from the store, or from a path: a sample
    file (anything there but a directory is read as one, so a FIFO or a device is refused
    as what it is).  ``host``: a run of that host (`Store.resolve`)."""
    from ..record import Run

    p = Path(ref)
    if os.path.lexists(p) and not p.is_dir():
        return Run(p)
    return Run(open_store(store).resolve(str(ref), host=host))
