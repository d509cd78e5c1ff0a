"""`latscope fleet --pairs` on namespace hosts (tests/hosts.py): every ordered pair of hosts
measured through the servers, a host whose server cannot start or that is down, SIGINT
stopping clients and servers, and the plan and table as a person reads them."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import latscope
from conftest import CLI
from fleetkit import (
    interrupted,
    kept_runs,
    need_ansible,
    nothing_left,
    probes_on,
    wait_for_probes,
    workspaces,
)


def _headers(store: Path, runs: list[dict]) -> dict[str, dict]:
    """Each run's sample-file header, by run id."""
    return {m["id"]: latscope.load(m["id"], store=store).meta for m in runs}


def test_pairs_measure_every_ordered_pair_through_the_servers(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    """Two hosts: 4 pairs, a host to itself and to the other both ways (each client connected
    from its own address to the server's), and tcp on each host, one run each, the matrix with
    every cell, nothing left after. (Two hosts have every kind of pair; the matrix of three,
    in 80 columns, is the next test's.)"""
    need_ansible()
    fleet = fleet_hosts(2)
    remote = tmp_path / "remote"
    remote.mkdir()
    before = workspaces()
    r = cli(
        "fleet",
        str(fleet.inventory),
        "--pairs",
        "-n",
        "300",
        "--remote-tmp",
        str(remote),
        "--seed",
        "3",
        env={"COLUMNS": "80"},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    runs = kept_runs(store)
    assert len(runs) == 6
    addr = {h.name: h.addr for h in fleet.hosts}
    headers = _headers(store, runs)
    pairs = set()
    for m in runs:
        h = headers[m["id"]]
        client = m["tags"]["host"]
        if m["benchmark"] == "tcp":
            assert m["tags"]["scenario"] == f"tcp on {client}"
            continue
        assert m["benchmark"] == "tcp_remote"
        server = m["tags"]["scenario"].split(" -> ")[1]
        assert m["tags"]["scenario"] == f"{client} -> {server}"
        # measured from the client's address to the server's: across the hosts' network
        assert h["bench"]["client_address"].rsplit(":", 1)[0] == addr[client]
        assert h["bench"]["server"]["address"] == f"{addr[server]}:7300"
        assert h["bench"]["peer"]["env"]["kernel"]  # the far side's environment, recorded
        pairs.add((client, server))
    assert pairs == {(a, b) for a in addr for b in addr}
    assert {m["tags"]["host"] for m in runs if m["benchmark"] == "tcp"} == set(addr)
    # the matrix: a row per client with a figure in every cell, in 80 columns
    rows = [ln for ln in r.stdout.splitlines() if re.match(r"^│ h\d ", ln)]
    assert len(rows) == 2 and all("—" not in ln and ln.count("µs") == 3 for ln in rows), r.stdout
    table = [ln for ln in r.stdout.splitlines() if ln[:1] in "┏┃┡│└"]
    assert len(table) >= 7 and max(len(ln) for ln in table) <= 80
    assert "6 of 6 runs kept" in r.stdout
    # each run said as it is kept, with its median: one at a time, 1/6 to 6/6
    said = re.findall(
        r"^(\d+)/6  (h\d -> h\d|tcp on h\d) \(round 1\): kept, median rtt ", r.stdout, re.M
    )
    assert sorted(int(k) for k, _ in said) == list(range(1, 7)), r.stdout
    nothing_left(fleet, remote, before)


def test_pairs_of_three_hosts_are_a_matrix_that_fits_80_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three hosts with a figure in every cell: a row per client, every figure on its row,
    in 80 columns (the figures as the runs of a fleet give them, `pairs.figures`)."""
    from types import SimpleNamespace

    from rich.console import Console

    from latscope.fleet import pairs

    hosts = {f"h{i}": {"ansible_host": f"192.0.2.{i}"} for i in range(1, 4)}
    plan = pairs.make_plan("tcp_remote", {}, 300, 1, 3, hosts, 7300)
    figs = {
        name: pairs.Figure(24_790.0 + k, 24_790.0 + k, 24_790.0 + k, [str(k)])
        for k, name in enumerate(plan.cells)
    }
    monkeypatch.setattr(pairs, "figures", lambda p, runs: figs)
    con = Console(width=80, record=True, color_system=None)
    pairs.show(con, SimpleNamespace(runs=[], serve_failed={}), plan, "tcp_remote")
    text = con.export_text()
    rows = [ln for ln in text.splitlines() if re.match(r"^│ h\d ", ln)]
    assert len(rows) == 3 and all("—" not in ln and ln.count("µs") == 4 for ln in rows), text
    table = [ln for ln in text.splitlines() if ln[:1] in "┏┃┡│└"]
    assert len(table) >= 8 and max(len(ln) for ln in text.splitlines()) <= 80


def test_pairs_to_a_host_whose_server_cannot_start_or_that_is_down_are_not_run(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    """Three hosts. h2's port is taken: its server does not start, that is said with the
    probe's reason, and the pairs to h2 are not run. h3 cannot be reached: said in one line;
    its pairs are not run either way (it serves nothing). The rest are run (h1 measures itself
    and its counterpart, h2 its pair to h1 and its counterpart), and the exit status says not
    all ran."""
    need_ansible()
    fleet = fleet_hosts(3)
    h2 = fleet.host("h2")
    fleet.host("h3").kill_sshd()
    squat = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            h2.ns,
            sys.executable,
            "-c",
            "import socket,time; s=socket.socket(); s.bind(('0.0.0.0', 7301)); s.listen();"
            "print('ready', flush=True); time.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert squat.stdout and squat.stdout.readline().strip() == "ready"
        remote = tmp_path / "remote"
        remote.mkdir()
        r = cli(
            "fleet",
            str(fleet.inventory),
            "--pairs",
            "-n",
            "300",
            "--port",
            "7301",
            "--remote-tmp",
            str(remote),
        )
    finally:
        squat.kill()
        squat.wait()
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"h2: its server did not start: .*7301.*the pairs to it are not run", r.stdout)
    assert "not measured: pairs to h2" in r.stdout
    assert re.search(r"^h3: unreachable: .*; the other hosts go on$", r.stdout, re.M), r.stdout
    kept = {(m["tags"]["host"], m["tags"]["scenario"]) for m in kept_runs(store)}
    assert kept == {
        ("h1", "h1 -> h1"),
        ("h2", "h2 -> h1"),
        ("h1", "tcp on h1"),
        ("h2", "tcp on h2"),
    }
    # h1's row: itself and its counterpart measured, its pairs to h2 and h3 not
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("│ h1 "))
    assert row.count("µs") == 2 and row.count("—") == 2, row
    assert fleet.quiet() == {} and list(remote.iterdir()) == []


def test_sigint_during_pairs_stops_clients_and_servers(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    """SIGINT while a client measures: every client and every server stopped, every host
    cleaned up, one line."""
    need_ansible()
    fleet = fleet_hosts(2)
    remote = tmp_path / "remote"
    remote.mkdir()
    p = cli.popen(
        "fleet",
        str(fleet.inventory),
        "--pairs",
        "-n",
        "2000000",
        "--remote-tmp",
        str(remote),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_probes(fleet, ["h1", "h2"], p)  # the servers
        end = time.monotonic() + 240
        while sum(len(v) for v in probes_on(fleet).values()) < 3:  # and a client
            assert p.poll() is None and time.monotonic() < end, "no client started"
            time.sleep(0.1)
    except BaseException:
        p.kill()
        p.wait()
        raise
    interrupted(p)
    nothing_left(fleet, remote, set(), pid=p.pid)


def test_pairs_dry_run_shows_servers_and_order(cli: CLI, tmp_path: Path) -> None:
    """The servers' addresses come from latscope_address, else ansible_host; nothing runs."""
    need_ansible()
    inv = tmp_path / "hosts.ini"
    inv.write_text(
        "a ansible_host=192.0.2.10\nb ansible_host=b.invalid latscope_address=192.0.2.11\n"
        "c ansible_host=2001:db8::5\n"
    )
    r = cli("fleet", str(inv), "--pairs", "--rounds", "2", "--port", "7400", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "between 9 ordered pairs of 3 hosts and tcp on each, x 2 rounds = 24 runs" in r.stdout
    assert "a 192.0.2.10:7400, b 192.0.2.11:7400, c [2001:db8::5]:7400" in r.stdout
    order = re.search(r"order: (.*)", r.stdout.replace("\n", " "))
    assert order and order.group(1).count("#1") == 12 and order.group(1).count("#2") == 12


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--pairs", "pipe"], "--pairs pipe: not a benchmark between hosts"),
        (["--pairs", "-p", "port=1"], "-p port=: --pairs sets it"),
        (["--pairs", "--suite", "quick"], "--pairs and --suite: give one"),
        (["--pairs", "--port", "0"], "--port 0: give a port"),
        (["-n", "5"], "-n goes with --pairs"),
        (["--pairs", "-p", "size=0"], "size"),
    ],
)
def test_bad_pairs_options_are_one_line(
    cli: CLI, tmp_path: Path, extra: list[str], message: str
) -> None:
    need_ansible()
    inv = tmp_path / "hosts.ini"
    inv.write_text("h1 ansible_host=192.0.2.10\n")
    r = cli("fleet", str(inv), *extra, "--dry-run")
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr


def test_pairs_of_many_hosts_are_a_list_that_fits_80_columns() -> None:
    """Six hosts: 36 pairs and 6 counterparts as rows of a list (the matrix would not fit),
    each '—' where nothing was kept, and the host whose server did not start named."""
    from types import SimpleNamespace

    from rich.console import Console

    from latscope.fleet import pairs

    hosts = {f"host-{i}": {"ansible_host": f"192.0.2.{i}"} for i in range(1, 7)}
    plan = pairs.make_plan("tcp_remote", {"size": "64"}, 200, 2, 5, hosts, 7300)
    assert len(plan.steps) == 2 * (36 + 6)
    assert {plan.on[s.index] for s in plan.steps} == set(hosts)
    assert all(plan.cells[s.scenario.name].server == plan.serve_on.get(s.index) for s in plan.steps)
    assert all(s.scenario.params.get("size") == "64" for s in plan.steps)
    fr = SimpleNamespace(runs=[], serve_failed={"host-3": "cannot listen on 192.0.2.3:7300"})
    con = Console(width=80, record=True, color_system=None)
    pairs.show(con, fr, plan, "tcp_remote")
    text = con.export_text()
    rows = [ln for ln in text.splitlines() if ln.startswith(" host-")]
    assert len(rows) == 42 and all("—" in ln for ln in rows)
    assert max(len(ln) for ln in text.splitlines()) <= 80
    assert "not measured: pairs to host-3: cannot listen on 192.0.2.3:7300" in text
    assert "the median of its 2 runs' medians" in text


def test_pairs_say_how_far_apart_rounds_fall() -> None:
    """With several rounds the widest spread of a cell's round medians is named (cells closer
    than that are not told apart); with one round, nothing is said."""
    from latscope.fleet.pairs import Figure, _widest_spread

    figs = {
        "a -> b": Figure(25_000.0, 24_000.0, 26_000.0, ["1", "2", "3"]),
        "b -> a": Figure(30_000.0, 24_400.0, 37_500.0, ["4", "5", "6"]),
        "tcp on a": Figure(20_000.0, 20_000.0, 20_000.0, ["7"]),
    }
    name, f = _widest_spread(figs)
    assert name == "b -> a" and f.high_ns / f.low_ns == pytest.approx(37_500 / 24_400)
    assert _widest_spread({"tcp on a": figs["tcp on a"]}) is None
