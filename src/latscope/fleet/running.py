"""A suite run on every host of an Ansible inventory (docs/fleet.md).

One playbook does the work: on every host it makes a private directory
(REMOTE_TMP/latscope-fleet-<fleet run>-<digest of the hostname>, mode 0700, refused if anything
is there), copies the probe and `run.sh` into it and checks that the probe runs there; then
every step of the suite's plan, in the plan's order (round 1: every scenario once, in a
random order; then round 2, ...), each step on every host before the next step begins
(Ansible's linear strategy), so the rounds interleave across hosts as they do across
scenarios. A step is one probe run on the host (`run.sh`: its pid in a pid file, SIGINT after
``timeout`` seconds) and the fetch of its sample file, which is kept in the store as soon as
it arrives (`keeping.import_fetched`), tagged with the host. Its last task cleans up on every
host still in it (the private directory removed).

A host that cannot be reached or set up is reported in one line and the playbook goes on
with the others; a run a host refuses (the probe's exit 3: not possible there) is skipped
there, one that fails is reported, and the host goes on. Afterwards, whatever happened (the
end, a failure, SIGINT/SIGTERM/SIGHUP), a clean-up playbook stops any probe still running on
every host the main playbook did not clean up (by its pid file: SIGINT, SIGKILL after 10 s)
and removes the private directory (after a run that went well there is none left, and no
clean-up playbook runs); then the ssh connections Ansible kept open are closed and the local
workspace is removed.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import probe
from ..children import error_line
from ..errors import Interrupted, LatscopeError
from ..files import write_text
from ..scenarios import Step, Suite
from ..units import fmt, shown
from . import ansible
from .keeping import import_fetched
from .playbooks import (
    CLEANUP_TASK,
    SERVE_TASK,
    SETUP_TASKS,
    cleanup_playbook,
    main_playbook,
    probe_options,
)

if TYPE_CHECKING:
    from ..record import Run
    from ..store import Store
    from ..suite.running import PairedRun

#: How often the events of a running playbook are read.
POLL_S = 0.2
_STEP_TASK = re.compile(r"(run|fetch) (\d+)")


@dataclass(frozen=True)
class Serve:
    """The servers of a pairs run (fleet.pairs): on every host, `latscope-probe serve` on
    ``binds[host]`` (ADDR:PORT), admitting clients that hold the token (the local file
    ``token``, copied to each host), ending after ``sessions[host]`` sessions or
    ``max_time`` seconds, or at the clean-up."""

    binds: dict[str, str]
    sessions: dict[str, int]
    max_time: int
    token: Path | None = None  # made in the fleet's workspace when the run starts

    def with_token(self, d: Path) -> Serve:
        """These servers with a fresh random token (256 bits, hex) in ``d``, mode 0600."""
        import secrets
        from dataclasses import replace

        p = d / "serve.token"
        write_text(p, secrets.token_hex(32) + "\n", mode=0o600, replace=False)
        return replace(self, token=p)


@dataclass(frozen=True)
class PairedStep:
    """A suite's paired run (suite/paired.py), made on every host after the rounds: its
    scenarios (the baseline first) as the arms of one probe process; ``options``: the probe's
    command line for them, without the probe and without -o."""

    index: int
    benchmark: str
    scenarios: tuple[str, ...]
    options: tuple[str, ...]

    @property
    def name(self) -> str:
        return "paired:" + ",".join(self.scenarios)


def paired_plan(
    suite: Suite, seed: int, first_index: int, time_s: float
) -> tuple[list[PairedStep], list[str]]:
    """The paired runs of a fleet's suite (`suite.paired.plan_groups`), numbered from
    ``first_index``, and a line for each group whose arms cannot share one probe process
    (checked with this machine's probe): those are compared by their rounds alone, since a
    fleet runs one process per step."""
    from ..measure import ab
    from ..measure.arms import Arm
    from ..suite.paired import plan_groups

    scs = {sc.name: sc for sc in suite.scenarios}
    out: list[PairedStep] = []
    apart: list[str] = []
    for bench, names in plan_groups(suite.scenarios):
        arms = [Arm(scs[n].benchmark, dict(scs[n].params)) for n in names]
        warmups = [scs[n].warmup for n in names if scs[n].warmup is not None]
        kw: dict[str, Any] = dict(
            time_s=time_s,
            block_ms=ab.DEFAULT_BLOCK_MS,
            seed=seed,
            workers=None,
            clock=scs[names[0]].clock,
            warmup=max(warmups) if warmups else None,
        )
        try:
            why = ab.sharing_refused(arms, kw)
        except LatscopeError as e:
            why = e.message
        if why is not None:
            apart.append(f"{bench} ({', '.join(names)}): {why}")
            continue
        opts = tuple(ab.arms_args(arms, None, **kw)[1:])
        out.append(PairedStep(first_index + len(out), bench, tuple(names), opts))
    return out, apart


@dataclass
class HostResult:
    name: str
    kept: int = 0
    skipped: int = 0
    failed: int = 0
    not_run: int = 0
    problem: str | None = None  # why the host dropped out (unreachable, setup failed)
    cleanup: str | None = None  # why its clean-up was not done
    outcome: dict[int, str] = field(default_factory=dict)  # step index -> kept|skipped|failed
    skip_why: dict[str, str] = field(default_factory=dict)  # scenario -> why not possible

    @property
    def ok(self) -> bool:
        return not (self.failed or self.not_run or self.problem or self.cleanup)


@dataclass
class FleetRun:
    id: str
    suite: Suite
    seed: int
    steps: list[Step]
    hosts: dict[str, HostResult]
    store: Store
    #: step index -> the one host it runs on (a pair's client); a step not named runs on all
    on: dict[int, str] = field(default_factory=dict)
    #: step index -> the host whose server it talks to (a pair's far side)
    serve_on: dict[int, str] = field(default_factory=dict)
    serve: Serve | None = None  # the servers of a pairs run (fleet.pairs)
    #: hosts whose server did not start: why (their pairs are not run)
    serve_failed: dict[str, str] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    #: the suite's paired runs, made on every host after the rounds (`paired_plan`)
    paired_steps: list[PairedStep] = field(default_factory=list)
    #: (host, step index) -> the run kept for it
    kept: dict[tuple[str, int], Run] = field(default_factory=dict)
    interrupted: bool = False
    signum: int | None = None
    error: str | None = None  # the playbook failed before any host did: ansible's line

    @property
    def rounds(self) -> int:
        return max((s.repetition for s in self.steps), default=0)

    def steps_of(self, host: str) -> list[Step]:
        """The steps that run on ``host``: every step, but a pair's only on its client."""
        return [s for s in self.steps if self.on.get(s.index, host) == host]

    def indices_of(self, host: str) -> list[int]:
        """The indices of every run ``host`` makes: its steps, then the paired runs."""
        return [s.index for s in self.steps_of(host)] + [p.index for p in self.paired_steps]

    @property
    def total(self) -> int:
        """The runs the whole fleet makes."""
        return sum(len(self.indices_of(h)) for h in self.hosts)

    def paired_runs(self, host: str) -> list[PairedRun]:
        """The paired runs made on ``host`` (those kept), as a suite's (suite/running.py)."""
        from ..suite.running import PairedRun

        return [
            PairedRun(list(p.scenarios), p.benchmark, run=self.kept[(host, p.index)])
            for p in self.paired_steps
            if (host, p.index) in self.kept
        ]

    @property
    def failed(self) -> bool:
        return bool(self.error) or any(not h.ok for h in self.hosts.values())


class _Events:
    """The events of the main playbook turned into outcomes, runs kept and lines said."""

    def __init__(self, fr: FleetRun, say: Callable[[str], None], timeout: int) -> None:
        self.fr = fr
        self.say = say
        self.timeout = timeout
        self.by_index = {s.index: s for s in fr.steps}
        self.paired_by_index = {p.index: p for p in fr.paired_steps}
        # host -> round -> the indices of its steps in that round
        self.round_steps: dict[str, dict[int, set[int]]] = {}
        for h in fr.hosts:
            rs = self.round_steps[h] = {}
            for s in fr.steps_of(h):
                rs.setdefault(s.repetition, set()).add(s.index)
        self.warnings: dict[tuple[str, int], list[str]] = {}
        self.done_rounds: dict[str, set[int]] = {h: set() for h in fr.hosts}
        #: the hosts the main playbook's last task cleaned up
        self.cleaned: set[str] = set()

    def _suite_tags(self) -> dict[str, Any]:
        fr = self.fr
        return {
            "suite": fr.suite.name,
            "suite_run": fr.id,
            "suite_file": str(fr.suite.path),
            "suite_seed": fr.seed,
            "fleet": fr.id,
        }

    def _tags(self, s: Step) -> dict[str, Any]:
        return {
            **self._suite_tags(),
            "scenario": s.scenario.name,
            "repetition": s.repetition,
            "repeat": s.scenario.repeat,
            "order": s.index,
        }

    def _set(self, h: HostResult, i: int, what: str) -> None:
        if i in h.outcome:
            return
        h.outcome[i] = what
        setattr(h, what.replace(" ", "_"), getattr(h, what.replace(" ", "_")) + 1)
        self._round_done(h)

    def _round_done(self, h: HostResult) -> None:
        for r, idx in sorted(self.round_steps[h.name].items()):
            if r in self.done_rounds[h.name] or not idx <= h.outcome.keys():
                continue
            self.done_rounds[h.name].add(r)
            counts = {w: sum(h.outcome[i] == w for i in idx) for w in ("kept", "skipped", "failed")}
            counts["not run"] = sum(h.outcome[i] == "not run" for i in idx)
            said = ", ".join(f"{n} {w}" for w, n in counts.items() if n)
            self.say(f"round {r}/{self.fr.rounds}  {shown(h.name)}: {said}")

    def drop(self, h: HostResult, why: str) -> None:
        """The host is out: the steps it has not done are not run."""
        if h.problem is None:
            h.problem = why
            self.say(f"{shown(h.name)}: {shown(why)}; the other hosts go on")
        for i in self.fr.indices_of(h.name):
            if i not in h.outcome:
                self._set(h, i, "not run")

    def __call__(self, ev: dict[str, Any]) -> None:
        h = self.fr.hosts.get(str(ev.get("host")))
        if h is None:
            return
        task, status = str(ev.get("task")), ev.get("status")
        if task == CLEANUP_TASK:  # done, or (whatever went wrong) the clean-up playbook's
            if status == "ok":
                self.cleaned.add(h.name)
            return
        msg = _one_line(ev.get("msg") or ev.get("stderr") or ev.get("stdout") or status)
        if status == "unreachable":
            self.drop(h, f"unreachable: {msg}")
            return
        if status == "skipped":  # a step of another host, or one whose server is not up
            return
        if task == SERVE_TASK:
            self._served(h, ev)
            return
        if task in SETUP_TASKS:
            if status == "failed":
                self.drop(h, f"cannot be set up ({task}): {msg}")
            return
        m = _STEP_TASK.fullmatch(task)
        i = int(m.group(2)) if m else -1
        if i in self.paired_by_index:
            ps = self.paired_by_index[i]
            name, where = ps.name, f"{shown(h.name)}: {shown(ps.name)}"
        elif i in self.by_index:
            if self.fr.on.get(i, h.name) != h.name:  # another host's step: not this one's
                return
            s = self.by_index[i]
            name = s.scenario.name
            where = f"{shown(h.name)}: {shown(name)} (round {s.repetition})"
        else:
            return
        assert m is not None
        if m.group(1) == "run":
            self._ran(h, i, name, ev, where)
        elif status == "ok" and ev.get("dest"):
            self._keep(h, i, str(ev["dest"]), where)
        elif status == "failed":
            self.say(f"{where}: cannot fetch its samples: {shown(msg)}")
            self._set(h, i, "failed")

    def _served(self, h: HostResult, ev: dict[str, Any]) -> None:
        """A host's server started, or did not: then the pairs to it are not run."""
        if ev.get("status") == "ok" and ev.get("rc") == 0:
            return
        why = error_line(str(ev.get("stderr") or "")) or _one_line(
            ev.get("msg") or ev.get("status")
        )
        self.fr.serve_failed[h.name] = why
        self.say(
            f"{shown(h.name)}: its server did not start: {shown(why)}; the pairs to it are not run"
        )

    def _ran(self, h: HostResult, i: int, name: str, ev: dict[str, Any], where: str) -> None:
        rc = ev.get("rc")
        err = str(ev.get("stderr") or "")
        if ev.get("status") != "ok" or rc is None:
            why = _one_line(ev.get("msg") or err or "failed")
            self.say(f"{where}: failed: {shown(why)}")
            self._set(h, i, "failed")
        elif rc == 0:
            self.warnings[(h.name, i)] = [
                ln.split("warning: ", 1)[1]
                for ln in err.splitlines()
                if ln.startswith("latscope-probe: warning: ")
            ]
        elif rc == 3:
            why = error_line(err)
            if h.skip_why.get(name) != why:
                h.skip_why[name] = why
                self.say(f"{where}: skipped (not possible there): {shown(why)}")
            self._set(h, i, "skipped")
        else:
            why = (
                f"stopped after {self.timeout} s (--timeout)"
                if rc == 124
                else f"the probe ended with status {rc}: {error_line(err)}"
            )
            self.say(f"{where}: failed: {shown(why)}")
            self._set(h, i, "failed")

    def _keep(self, h: HostResult, i: int, path: str, where: str) -> None:
        ps = self.paired_by_index.get(i)
        if ps is not None:
            tags = {**self._suite_tags(), "scenario": ps.name, "paired": True, "order": i}
            command = " ".join(shlex.quote(a) for a in ps.options)
        else:
            s = self.by_index[i]
            tags = self._tags(s)
            command = " ".join(shlex.quote(a) for a in probe_options(s.scenario))
        try:
            run = import_fetched(
                self.fr.store,
                path,
                h.name,
                tags=tags,
                warnings=self.warnings.pop((h.name, i), []),
                probe_command=command,
            )
        except Interrupted as e:
            # the fleet's own stop (its signal arrived while the run was being kept): said,
            # then the stop goes on (`execute` cleans up and ends with Interrupted)
            self.say(f"{where}: its sample file cannot be kept: {shown(e.message)}")
            self._set(h, i, "failed")
            raise probe.Stopped(e.signum) from None
        except LatscopeError as e:
            self.say(f"{where}: its sample file cannot be kept: {shown(e.message)}")
            self._set(h, i, "failed")
            return
        finally:
            Path(path).unlink(missing_ok=True)
        self.fr.runs.append(run)
        self.fr.kept[(h.name, i)] = run
        if ps is not None:
            self.say(f"{where}: kept, interleaved in one process (run {shown(run.id)})")
        elif i in self.fr.on:  # one run at a time (pairs): each one said as it is kept
            self.say(
                f"{self._done_count()}/{len(self.fr.steps)}  {shown(s.scenario.name)} "
                f"(round {s.repetition}): {_median_text(run)}"
            )
        self._set(h, i, "kept")

    def _done_count(self) -> int:
        """Steps with an outcome so far, this one included."""
        return 1 + sum(len(h.outcome) for h in self.fr.hosts.values())


def _median_text(run: Run) -> str:
    """A kept run's first column and its median, for a progress line."""
    import polars as pl

    from ..summary import stat, value

    try:
        col = run.columns[0]
        row = run.summary().filter(pl.col("column") == col).row(0, named=True)
        v = value(row, stat("p50"))
    except Exception:  # a line of progress never stops the run
        return "kept"
    return f"kept, median {col} {fmt(v)}" if v is not None else "kept"


#: What Ansible puts before the words that say what went wrong.
_ANSIBLE_PREFIXES = ("Task failed: ", "Failed to connect to the host via ssh: ")


def _one_line(text: Any) -> str:
    """The last line of an Ansible message that says something, without its prefixes."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    line = lines[-1] if lines else ""
    for p in _ANSIBLE_PREFIXES:
        line = line.removeprefix(p)
    return line


def execute(
    fr: FleetRun,
    inventory: str,
    limit: str | None,
    say: Callable[[str], None],
    *,
    probe_file: str,
    remote_tmp: str = "/tmp",
    timeout: int = 900,
    forks: int | None = None,
) -> FleetRun:
    """Run the fleet's playbook, keep what it fetches, then clean up on every host (module
    docs). SIGINT, SIGTERM, SIGHUP (`probe.stop_signals`) stop it: the playbook is stopped,
    the clean-up runs (a second signal meanwhile is ignored), the runs kept so far stay, and
    `fr.interrupted` and `fr.signum` say so (the caller ends with `Interrupted`)."""
    import shutil

    # named with this process: a workspace left behind says whose it was
    ws = ansible.Workspace(Path(tempfile.mkdtemp(prefix=f"latscope-fleet-{os.getpid()}-")))
    try:
        ws.make_control()
        if fr.serve is not None and fr.serve.token is None:
            fr.serve = fr.serve.with_token(ws.dir)
        with probe.stop_signals():
            events = _Events(fr, say, timeout)
            pb: ansible.Playbook | None = None
            try:
                book = main_playbook(fr, ws, probe_file, remote_tmp, timeout)
                with probe.held_signals():  # started whole, then a signal stops it
                    pb = ansible.Playbook.start(ws, book, inventory, limit, forks)
                while True:
                    alive = pb.running()
                    for ev in pb.events():
                        events(ev)
                    if not alive:
                        break
                    time.sleep(POLL_S)
                if (
                    not fr.runs
                    and pb.proc.returncode not in (0, 2, 4)
                    and not any(h.outcome or h.problem for h in fr.hosts.values())
                ):
                    fr.error = ansible.last_error(ws.log)
            except KeyboardInterrupt as e:
                fr.interrupted, fr.signum = True, probe.signum_of(e)
            finally:
                with probe.held_signals(drop=True):
                    if pb is not None and pb.running():
                        pb.stop()
                    _clean_up(fr, ws, inventory, limit, remote_tmp, say, events.cleaned)
            for h in fr.hosts.values():
                if not fr.error:
                    for i in fr.indices_of(h.name):
                        if i not in h.outcome:
                            events._set(h, i, "not run")
    finally:
        ansible.close_connections(ws)
        shutil.rmtree(ws.dir, ignore_errors=True)
    return fr


def _clean_up(
    fr: FleetRun,
    ws: ansible.Workspace,
    inventory: str,
    limit: str | None,
    remote_tmp: str,
    say: Callable[[str], None],
    cleaned: set[str],
) -> None:
    """The clean-up playbook on the hosts the main playbook did not clean up (``cleaned``),
    if any; a host it cannot clean up is said."""
    left = [h for h in fr.hosts if h not in cleaned]
    if not left:
        return
    say(f"cleaning up on {len(left)} hosts")
    book = cleanup_playbook(fr, ws, remote_tmp, cleaned)
    rc, evs = ansible.run_to_end(ws, book, inventory, limit, ansible.CLEANUP_S)
    done = set(cleaned)
    for ev in evs:
        h = fr.hosts.get(str(ev.get("host")))
        if h is None or h.name in cleaned:  # skipped there: cleaned up already
            continue
        if ev.get("status") == "ok":
            done.add(h.name)
        else:
            why = _one_line(ev.get("msg") or ev.get("stderr") or ev.get("status"))
            h.cleanup = f"{ev.get('status')}: {why}"
    for h in fr.hosts.values():
        if h.name not in done and h.cleanup is None:
            h.cleanup = "no answer" if rc == 0 else f"clean-up playbook ended with {rc}"
        if h.cleanup:
            say(f"{shown(h.name)}: not cleaned up: {shown(h.cleanup)}")
