"""`latscope fleet`: a suite run on every host of an Ansible inventory (docs/fleet.md). Hooked
into the CLI (cli/__init__.py) by `add_parsers(sub)` and `COMMANDS`."""

from __future__ import annotations

import argparse
import os
import stat
from typing import Any

from ..errors import BadInput, Interrupted, LatscopeError
from ..units import shown
from .shared import RAW, console, open_store, params_arg, parse_params, store_arg, wrap

#: The port the servers of --pairs listen on unless --port says otherwise.
DEFAULT_PORT = 7300

EPILOG = """\
examples:
  latscope fleet hosts.ini                             quick suite, every host
  latscope fleet hosts.ini --suite my.toml --rounds 3  3 rounds of a suite
  latscope fleet hosts.ini --limit 'web*' --dry-run    hosts and plan only
  latscope fleet hosts.ini --suite my.toml --paired-time 0
                                                       rounds only, unpaired
  latscope ls --suite FLEET_RUN                        its runs, by host
  latscope fleet hosts.ini --pairs                     TCP round trip, every
                                                       ordered pair of hosts
  latscope fleet hosts.ini --pairs udp_remote -p size=1k --rounds 3 --port 7400

--pairs: every host runs latscope-probe serve on its address (the inventory's
latscope_address, else ansible_host) and --port, with a fresh token; then, one
at a time, every host is the client of every host (itself too), beside the
one-host counterpart (tcp for tcp_remote); a matrix of median round trips.

A suite's scenarios of one benchmark are compared on each host: after the rounds,
they run once more as the arms of one probe process (blocks of a few ms alternated
in shuffled rounds, as latscope ab), and each host's table of ratios to the
baseline takes its ratio and verdict from that paired run.

needs ansible-core (pip install 'latscope[fleet]'). The hosts need ssh (or any
connection Ansible has) and a POSIX shell, not Python: the probe (--probe; default: the
one latscope runs here) is copied to a private directory under --remote-tmp on each.
A host that cannot be reached or set up is reported in one line and the others go on;
the exit status is 1 if any host failed. SIGINT, SIGTERM and SIGHUP stop the playbook,
stop the probe on every host and remove its directory; the runs kept so far stay.
"""


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "fleet",
        help="run a suite on every host of an Ansible inventory (needs ansible-core)",
        description=wrap(
            "Run every scenario of a suite on every host of an Ansible inventory, in "
            "interleaved rounds (round 1: every scenario once on every host, in a random "
            "order; then round 2, ...), and keep each run in the store tagged with its host.  "
            "The probe is copied to the hosts; nothing but a shell is needed there."
        ),
        epilog=EPILOG,
        formatter_class=RAW,
    )
    p.add_argument("inventory", metavar="INVENTORY", help="Ansible inventory (file, dir, list)")
    p.add_argument(
        "--suite",
        metavar="NAME|FILE",
        help="built-in suite (quick, seeds, gil) or scenario file (default: quick)",
    )
    p.add_argument(
        "--pairs",
        nargs="?",
        const="tcp_remote",
        metavar="BENCH",
        help="round trips between every ordered pair of hosts instead of a suite "
        "(tcp_remote, the default, or udp_remote)",
    )
    params_arg(p, "with --pairs: a parameter of the benchmark (size=, cpu=)")
    p.add_argument("-n", type=int, metavar="N", help="with --pairs: iterations per run")
    p.add_argument(
        "--port",
        type=int,
        metavar="PORT",
        help=f"with --pairs: the port every server listens on (default {DEFAULT_PORT})",
    )
    p.add_argument("--rounds", type=int, metavar="R", help="rounds (repetitions of the suite)")
    p.add_argument(
        "--paired-time",
        type=float,
        metavar="S",
        help="after the rounds, each benchmark's scenarios are measured once more on every "
        "host as arms of one interleaved run of S seconds (as 'latscope ab'); each host's "
        "ratios and verdicts come from it (default 5; 0: none)",
    )
    p.add_argument("--seed", type=int, metavar="S", help="seed of the run order (default: random)")
    p.add_argument("--limit", metavar="PATTERN", help="only the hosts of this Ansible pattern")
    p.add_argument("--forks", type=int, metavar="N", help="hosts worked on at once (Ansible's)")
    p.add_argument(
        "--timeout",
        type=int,
        default=900,
        metavar="S",
        help="a run still going after S seconds is stopped (default 900)",
    )
    p.add_argument(
        "--remote-tmp",
        default="/tmp",
        metavar="DIR",
        help="where the private directory is made on each host (default /tmp)",
    )
    p.add_argument("--probe", metavar="FILE", help="the probe to copy (default: latscope's)")
    p.add_argument("--dry-run", action="store_true", help="print the hosts and the plan")
    store_arg(p)


def _probe_file(given: str | None) -> str:
    from .. import probe

    path = given or probe.probe_path()
    try:
        st = os.stat(path)
    except OSError as e:
        raise BadInput(f"--probe {path}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode) or not os.access(path, os.R_OK):
        raise BadInput(f"--probe {path}: not a readable file")
    return os.path.abspath(path)


def _checked(args: argparse.Namespace) -> None:
    from ..fleet import ansible

    if args.rounds is not None and args.rounds < 1:
        raise BadInput(f"--rounds {args.rounds}: must be 1 or more")
    if args.forks is not None and args.forks < 1:
        raise BadInput(f"--forks {args.forks}: must be 1 or more")
    if not 1 <= args.timeout <= 86_400:
        raise BadInput(f"--timeout {args.timeout}: give seconds between 1 and 86400")
    if not ansible.SAFE_PATH.fullmatch(args.remote_tmp) or ".." in args.remote_tmp.split("/"):
        raise BadInput(
            f"--remote-tmp {args.remote_tmp}: give an absolute path of letters, digits and _ . - /"
        )
    if args.paired_time and not (0.2 <= args.paired_time <= 3600):
        raise BadInput(
            f"--paired-time {args.paired_time:g}: give seconds between 0.2 and 3600, or 0 for "
            "no paired runs"
        )
    if args.pairs is None:
        for opt, v in (("-p", args.params), ("-n", args.n), ("--port", args.port)):
            if v is not None:
                raise BadInput(f"{opt} goes with --pairs (a suite's scenarios set their own)")
    else:
        if args.paired_time is not None:
            raise BadInput("--paired-time goes with a suite (--pairs compares no scenarios)")
        if args.suite is not None:
            raise BadInput("--pairs and --suite: give one (--pairs runs no suite)")
        if args.port is not None and not 1 <= args.port <= 65535:
            raise BadInput(f"--port {args.port}: give a port between 1 and 65535")
        if args.n is not None and args.n < 1:
            raise BadInput(f"-n {args.n}: must be 1 or more")


def _table(fr: Any) -> None:
    from ..tables import Column, fit

    cols = [
        Column("host", wrap=True),
        Column("kept", justify="right"),
        Column("skipped", justify="right"),
        Column("failed", justify="right"),
        Column("not run", justify="right"),
        Column("note", wrap=True),
    ]
    rows = []
    for h in fr.hosts.values():
        note = "; ".join(x for x in (h.problem, h.cleanup and "not cleaned up") if x)
        if not note and h.skipped:
            note = "skipped: not possible there"
        rows.append(
            [shown(h.name), str(h.kept), str(h.skipped), str(h.failed), str(h.not_run), shown(note)]
        )
    t, _ = fit(console, cols, rows, title="runs by host")
    console.print(t)


def cmd_fleet(args: argparse.Namespace) -> int:
    _checked(args)
    if args.pairs is not None:
        return _pairs(args)
    return _suite(args)


def _pairs(args: argparse.Namespace) -> int:
    """`latscope fleet INVENTORY --pairs [BENCH]` (fleet/pairs.py)."""
    from .. import scenarios
    from ..fleet import FleetRun, HostResult, ansible, pairs
    from ..suite import new_suite_run_id

    port = args.port or DEFAULT_PORT
    given = parse_params(args.params)
    probe_file = _probe_file(args.probe)
    pairs.check_settings(args.pairs, given, args.n)  # before the inventory: none is read
    found = ansible.inventory_hosts(args.inventory, args.limit)
    seed = args.seed if args.seed is not None else scenarios.new_seed()
    plan = pairs.make_plan(args.pairs, given, args.n, args.rounds or 1, seed, found, port)
    st = open_store(args)
    fr = FleetRun(
        id=new_suite_run_id(plan.suite.name),
        suite=plan.suite,
        seed=seed,
        steps=plan.steps,
        hosts={n: HostResult(n) for n in found},
        store=st,
        on=plan.on,
        serve_on=plan.serve_on,
        serve=pairs.serve_settings(plan, port, args.timeout),
    )
    nh = len(found)
    console.print(
        f"[bold]fleet {shown(fr.id)}[/bold]: {shown(args.pairs)} between {nh * nh} ordered "
        f"pairs of {nh} hosts and {plan.counterpart} on each, x {fr.rounds} rounds = "
        f"{len(plan.steps)} runs, one at a time, order seed {seed}; store {shown(st.root)}",
        soft_wrap=True,
    )
    where = ", ".join(f"{shown(h)} {shown(fr.serve.binds[h])}" for h in found)
    console.print(f"servers: {where}", soft_wrap=True)
    if args.dry_run:
        order = "  ".join(f"{s.index + 1}.{s.scenario.name}#{s.repetition}" for s in plan.steps)
        console.print(f"order: {shown(order)}", soft_wrap=True)
        console.print("[dim]dry run: nothing was run[/dim]")
        return 0
    st.ensure()
    rc = _execute(fr, args, probe_file, fr.total)
    pairs.show(console, fr, plan, args.pairs)
    return rc


def _execute(
    fr: Any,
    args: argparse.Namespace,
    probe_file: str,
    total: int,
    after: Any = None,
) -> int:
    """Run the fleet, print the table by host (then ``after(fr)``, if given, unless it was
    interrupted) and say what was kept; the exit status."""
    from ..fleet import execute

    execute(
        fr,
        args.inventory,
        args.limit,
        lambda line: console.print(line, soft_wrap=True),
        probe_file=probe_file,
        remote_tmp=args.remote_tmp,
        timeout=args.timeout,
        forks=args.forks,
    )
    _table(fr)
    if fr.interrupted:
        left = [h.name for h in fr.hosts.values() if h.cleanup]
        raise Interrupted(
            f"{len(fr.runs)} runs were kept (latscope ls --suite {fr.id}); "
            + (f"not cleaned up on {', '.join(left)}" if left else "every host was cleaned up"),
            fr.signum or 2,
        )
    if fr.error:
        raise LatscopeError(f"ansible-playbook failed: {fr.error}", 1)
    if after is not None:
        after(fr)
    console.print(
        f"{len(fr.runs)} of {total} runs kept (fleet run {fr.id}); latscope ls --suite {fr.id}"
    )
    return 1 if fr.failed else 0


def _suite(args: argparse.Namespace) -> int:
    """`latscope fleet INVENTORY [--suite S]`: a suite on every host."""
    from .. import probe, scenarios
    from ..fleet import FleetRun, HostResult, ansible
    from ..fleet.running import paired_plan

    suite = scenarios.load(args.suite or "quick", repeat=args.rounds)
    suite.interleave = "rounds"  # across hosts too: every scenario on every host, round by round
    local = [
        s for s in suite.scenarios if (probe.entry(s.benchmark) or {}).get("engine") == "python"
    ]
    for s in local:
        console.print(
            f"[yellow]not run:[/yellow] {shown(s.name)}: a benchmark of the Python engine "
            "(the hosts need no Python; run it there with latscope)"
        )
    suite.scenarios = [s for s in suite.scenarios if s not in local]
    if not suite.scenarios:
        raise BadInput(f"suite {suite.name}: no scenario a fleet can run (all need Python)")
    seed = args.seed if args.seed is not None else suite.seed
    if seed is None:
        seed = scenarios.new_seed()
    steps = scenarios.plan(suite, seed)
    time_s = 5.0 if args.paired_time is None else args.paired_time
    paired, apart = paired_plan(suite, seed, len(steps), time_s) if time_s else ([], [])
    probe_file = _probe_file(args.probe)
    found = ansible.inventory_hosts(args.inventory, args.limit)
    names = list(found)
    st = open_store(args)
    from ..suite import new_suite_run_id

    fr = FleetRun(
        id=new_suite_run_id(suite.name),
        suite=suite,
        seed=seed,
        steps=steps,
        hosts={n: HostResult(n) for n in names},
        store=st,
        paired_steps=paired,
    )
    total = fr.total
    also = f" + {len(paired)} paired x {len(names)} hosts ({time_s:g} s each)" if paired else ""
    console.print(
        f"[bold]fleet {shown(fr.id)}[/bold]: suite {shown(suite.name)}, "
        f"{len(suite.scenarios)} scenarios x {len(names)} hosts x {fr.rounds} rounds{also} = "
        f"{total} runs, order seed {seed}; store {shown(st.root)}",
        soft_wrap=True,
    )
    for k in suite.skipped:
        console.print(f"[yellow]not run:[/yellow] {shown(k.name)}: {shown(k.why)}")
    for line in apart:
        console.print(
            f"[yellow]not paired:[/yellow] {shown(line)}; compared by its rounds (unpaired)",
            soft_wrap=True,
        )
    if args.dry_run:  # each host and the address Ansible will connect to
        console.print(
            "hosts: "
            + ", ".join(f"{shown(n)} ({shown(found[n].get('ansible_host') or n)})" for n in names),
            soft_wrap=True,
        )
        order = "  ".join(f"{s.index + 1}.{s.scenario.name}#{s.repetition}" for s in steps)
        order += "".join(f"  {p.index + 1}.{p.name}" for p in paired)
        console.print(f"order (on every host): {shown(order)}")
        console.print("[dim]dry run: nothing was run[/dim]")
        return 0
    st.ensure()
    return _execute(fr, args, probe_file, total, after=_comparisons)


def _comparisons(fr: Any) -> None:
    """Each host's comparison of the scenarios, as `latscope suite` prints it: the ratios and
    verdicts from the host's paired runs where there are, else from its rounds (‡); what the
    columns mean said once, under the first host's table."""
    from ..suite import compare_rows, print_comparison
    from ..suite.running import StepResult, SuiteRun

    said = False
    for host in fr.hosts:
        results = [
            StepResult(s, "ok", fr.kept[(host, s.index)])
            for s in fr.steps_of(host)
            if (host, s.index) in fr.kept
        ]
        if not results:
            continue
        sr = SuiteRun(
            suite=fr.suite,
            suite_run=fr.id,
            seed=fr.seed,
            steps=fr.steps_of(host),
            store=fr.store,
            results=results,
            paired=fr.paired_runs(host),
        )
        rows = compare_rows(sr)
        if not any(r.baseline for r in rows):
            continue
        print_comparison(console, sr, rows, host=host, legend=not said)
        said = True


COMMANDS = {"fleet": cmd_fleet}
