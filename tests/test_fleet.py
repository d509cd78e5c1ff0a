"""`latscope fleet` on namespace hosts (tests/hosts.py): two- and three-host runs of a tiny
suite land in the store tagged with their hosts, a host that drops out is reported while the
others go on, and after the end or a SIGINT nothing of the fleet is left on any host (no
probe, no private directory, no process but the host's sshd) nor here (no workspace, no ssh
master connection)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

import latscope
from conftest import CLI, procs_mentioning, reaped
from latscope.errors import Unsupported


def _ansible() -> None:
    from latscope.fleet import ansible

    try:
        ansible.tool("ansible-playbook")
    except Unsupported as e:
        pytest.skip(e.message)


def _suite(d: Path, n: int = 200, slow: bool = False, pipe_n: int | None = None) -> Path:
    """Two scenarios; ``slow``: the pipe scenario long enough to be caught running;
    ``pipe_n``: its iterations otherwise (default ``n``)."""
    p = d / "tiny.toml"
    pipe_n = 2_000_000 if slow else pipe_n or n
    p.write_text(
        f'name = "tiny"\nwarmup = 10\n'
        f'[[scenario]]\nname = "sys"\nbenchmark = "syscall"\nn = {n}\n'
        f'[[scenario]]\nname = "pipe"\nbenchmark = "pipe"\nn = {pipe_n}\n'
    )
    return p


def _runs(store: Path) -> list[dict]:
    """The runs kept so far (partial ones left out)."""
    runs = store / "runs"
    if not runs.is_dir():
        return []
    return [
        json.loads((d / "run.json").read_text())
        for d in sorted(runs.iterdir())
        if not d.name.startswith(".")
    ]


def _workspaces() -> set[str]:
    """The fleet's local workspaces and control directories that exist now."""
    out = set()
    for d in {tempfile.gettempdir(), "/tmp"}:
        out |= {str(p) for p in Path(d).glob("latscope-fleet-*")}
        out |= {str(p) for p in Path(d).glob("lsf-cp-*")}
    return out


def _probes_on(fleet) -> dict[str, list[int]]:
    """The probe processes running on each host."""
    out = {}
    for h in fleet.hosts:
        mine = [p for p in procs_mentioning("latscope-probe") if p in h.pids()]
        if mine:
            out[h.name] = mine
    return out


def _cmdline(pid: int) -> bytes:
    """The command line of ``pid``, its arguments separated by spaces (empty once gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""


def _clean(fleet, remote: Path, before: set[str]) -> None:
    """Nothing of the fleet left on any host or here."""
    assert fleet.quiet() == {}, "processes left on the hosts (besides sshd)"
    assert _probes_on(fleet) == {}
    assert list(remote.iterdir()) == [], "private directories left on the hosts"
    assert _workspaces() - before == set(), "workspace left here"
    assert procs_mentioning(str(remote)) == [], "processes of the run left"
    for h in fleet.hosts:  # ssh clients (ControlPersist masters) name the host's address
        assert procs_mentioning(h.addr) == [], f"ssh connections to {h.name} left"
    from hosts import netns_names

    assert {h.ns for h in fleet.hosts} <= netns_names()  # the hosts themselves are the test's


@pytest.mark.parametrize(("nhosts", "rounds"), [(2, 2), (3, 1)])
def test_a_fleet_run_keeps_every_run_tagged_with_its_host(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path, nhosts: int, rounds: int
) -> None:
    _ansible()
    fleet = fleet_hosts(nhosts)
    remote = tmp_path / "remote"
    remote.mkdir()
    before = _workspaces()
    args = ["fleet", str(fleet.inventory), "--suite", str(_suite(tmp_path))]
    r = cli(*args, "--rounds", str(rounds), "--remote-tmp", str(remote), "--seed", "7")
    assert r.returncode == 0, r.stdout + r.stderr
    runs = _runs(store)
    names = [h.name for h in fleet.hosts]
    assert len(runs) == 2 * nhosts * rounds
    got = Counter((m["tags"]["host"], m["tags"]["scenario"], m["tags"]["repetition"]) for m in runs)
    want = {(h, s, k) for h in names for s in ("sys", "pipe") for k in range(1, rounds + 1)}
    assert set(got) == want and set(got.values()) == {1}
    assert {m["tags"]["suite_run"] for m in runs} == {m["tags"]["fleet"] for m in runs}
    assert all(m["benchmark"] in ("syscall", "pipe") for m in runs)
    # each kept under its host, with the environment its probe recorded there (the header's)
    assert {m["id"]: m["host"] for m in runs} == {m["id"]: m["tags"]["host"] for m in runs}
    kept = [latscope.load(m["id"], store=store) for m in runs]
    assert all(k.env and k.env.get("kernel") for k in kept)
    ls = cli("ls", "--host", names[0], "--json")
    assert ls.returncode == 0 and len(json.loads(ls.stdout)["runs"]) == 2 * rounds
    for h in names:  # one line per round and host, and the host's row in the table
        for k in range(1, rounds + 1):
            assert f"round {k}/{rounds}  {h}: 2 kept" in r.stdout
    assert f"{2 * nhosts * rounds} of {2 * nhosts * rounds} runs kept" in r.stdout
    _clean(fleet, remote, before)
    ls = cli("ls", "--suite", runs[0]["tags"]["suite_run"])
    assert ls.returncode == 0 and ls.stdout.count("tiny/") == len(runs)


def _pipes(d: Path, n: int = 300) -> Path:
    """Two scenarios of one benchmark (8-byte and 32 KiB messages: a difference no host can
    miss), compared on every host."""
    p = d / "pipes.toml"
    p.write_text(
        f'name = "pipes"\nwarmup = 10\n'
        f'[[scenario]]\nname = "base"\nbenchmark = "pipe"\nn = {n}\n'
        f'[[scenario]]\nname = "big"\nbenchmark = "pipe"\nn = {n}\n'
        'params = { size = "32768" }\n'
    )
    return p


def test_a_fleets_scenarios_are_compared_on_each_host_by_a_paired_run(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    """After the rounds, every host measures the scenarios of one benchmark once more as the
    arms of one probe process; each host's comparison takes its ratio and verdict from it."""
    _ansible()
    fleet = fleet_hosts(2)
    remote = tmp_path / "remote"
    remote.mkdir()
    before = _workspaces()
    args = ["fleet", str(fleet.inventory), "--suite", str(_pipes(tmp_path))]
    r = cli(*args, "--paired-time", "1", "--remote-tmp", str(remote), "--seed", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 scenarios x 2 hosts x 1 rounds + 1 paired x 2 hosts (1 s each) = 6 runs" in r.stdout
    runs = _runs(store)
    assert len(runs) == 6 and "6 of 6 runs kept" in r.stdout
    paired = [m for m in runs if m["tags"].get("paired")]
    assert sorted(m["tags"]["host"] for m in paired) == ["h1", "h2"]
    for m in paired:
        assert m["tags"]["scenario"] == "paired:base,big" and m["tags"]["ab"] is True
        assert m["tags"]["suite_run"] == m["tags"]["fleet"]
        (c, *_) = [c for c in m["ab"]["comparisons"] if c["column"] == "rtt"]
        assert c["arm"] == "B" and c["verdict"] == "slower" and c["ratio"] > 1.1
        assert [a["scenario"] for a in m["ab"]["arms"]][1] == "pipe size=32768"
        assert f"{m['tags']['host']}: paired:base,big: kept" in r.stdout
    for h in ("h1", "h2"):  # one table per host, the ratio from its paired run
        assert f"suite pipes on {h} — run" in r.stdout
    assert " ".join(r.stdout.split()).count("ratio and verdict: paired") == 1  # said once
    big = [ln for ln in r.stdout.splitlines() if ln.lstrip().startswith("big")]
    assert len(big) == 2 and all("slower" in ln and "‡" not in ln for ln in big)
    _clean(fleet, remote, before)


def test_a_paired_fleet_plan_and_its_refusals(cli: CLI, tmp_path: Path) -> None:
    """The dry run lists the paired run after the rounds; --paired-time 0 makes none; arms
    that cannot share one process (a spinning mechanism) are said and left unpaired."""
    _ansible()
    inv = tmp_path / "hosts.ini"
    inv.write_text("[web]\nweb1 ansible_host=192.0.2.250\n")
    args = ["fleet", str(inv), "--suite", str(_pipes(tmp_path)), "--dry-run", "--seed", "1"]
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    assert "+ 1 paired x 1 hosts (5 s each) = 3 runs" in r.stdout
    assert "3.paired:base,big" in r.stdout
    r = cli(*args, "--paired-time", "0")
    assert r.returncode == 0 and "paired x" not in r.stdout and "= 2 runs" in r.stdout
    assert ".paired:" not in r.stdout
    spin = tmp_path / "spin.toml"
    spin.write_text(
        'name = "spin"\n[[scenario]]\nname = "a"\nbenchmark = "spin"\nn = 100\n'
        '[[scenario]]\nname = "b"\nbenchmark = "spin"\nn = 100\n'
    )
    r = cli("fleet", str(inv), "--suite", str(spin), "--dry-run")
    if "not run:" in r.stdout:
        pytest.skip("spin cannot run on this machine")
    assert r.returncode == 0, r.stderr
    assert "not paired: spin (a, b):" in r.stdout and "compared by its rounds" in r.stdout
    assert "= 2 runs" in r.stdout


def test_a_host_that_is_down_is_reported_and_the_others_go_on(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    _ansible()
    fleet = fleet_hosts(3)
    fleet.host("h2").kill_sshd()
    remote = tmp_path / "remote"
    remote.mkdir()
    before = _workspaces()
    r = cli(
        "fleet", str(fleet.inventory), "--suite", str(_suite(tmp_path)), "--remote-tmp", str(remote)
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "h2: unreachable" in r.stdout and "the other hosts go on" in r.stdout
    assert "4 of 6 runs kept" in r.stdout
    assert sorted(m["tags"]["host"] for m in _runs(store)) == ["h1", "h1", "h3", "h3"]
    row = next(ln for ln in r.stdout.splitlines() if ln.split()[:1] == ["h2"])
    assert row.split()[1:5] == ["0", "0", "0", "2"]  # kept, skipped, failed, not run
    _clean(fleet, remote, before)


def _interrupted(p: subprocess.Popen) -> str:
    """SIGINT to a running `latscope fleet`: it ends with 130, says it was interrupted and
    that every host was cleaned up; its stderr."""
    p.send_signal(signal.SIGINT)
    with reaped(p):
        out, err = p.communicate(timeout=300)
    assert p.returncode == 130, out + err
    assert "interrupted by SIGINT" in err and "every host was cleaned up" in err
    return err


def _wait_for_probes(fleet, hosts: list[str], proc: subprocess.Popen, timeout: float = 240) -> None:
    end = time.monotonic() + timeout
    while not set(hosts) <= set(_probes_on(fleet)):
        assert proc.poll() is None, "latscope ended before the probes ran"
        assert time.monotonic() < end, "the probes did not start on the hosts"
        time.sleep(0.1)


def test_a_host_that_drops_out_during_the_run(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    """h2's sshd and its sessions are killed while h2 runs its second probe: h2 is reported,
    its remaining runs are not run, h1 keeps all its runs. The pipe scenario takes a second
    or more, so that its probe is seen running however slowly this test is scheduled."""
    _ansible()
    fleet = fleet_hosts(2)
    remote = tmp_path / "remote"
    remote.mkdir()
    suite = _suite(tmp_path, pipe_n=200_000)
    args = ["fleet", str(fleet.inventory), "--suite", str(suite), "--rounds", "3"]
    p = cli.popen(
        *args, "--remote-tmp", str(remote), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    with reaped(p):
        # the kill comes while h2 runs a probe after an earlier run ended (whose samples are
        # fetched before the next step starts): on Ansible's progress, not on the store's,
        # which imports behind it; runs only (-o), not the set-up's check (--list)
        end = time.monotonic() + 300
        first: set[int] = set()
        while True:
            now = {q for q in _probes_on(fleet).get("h2", []) if b" -o " in _cmdline(q)}
            if now and first and not now & first:
                break
            first = first or now
            assert p.poll() is None, "latscope ended before h2 ran a second probe"
            assert time.monotonic() < end, "h2 ran no second probe"
            time.sleep(0.02)
        fleet.host("h2").kill_sshd()
        out, err = p.communicate(timeout=600)
    assert p.returncode == 1, out + err
    assert re.search(r"^h2: unreachable: .*; the other hosts go on$", out, re.M), out
    hosts = Counter(m["tags"]["host"] for m in _runs(store))
    assert hosts["h1"] == 6 and 1 <= hosts["h2"] < 6
    row = next(ln for ln in out.splitlines() if ln.split()[:1] == ["h2"]).split()
    assert int(row[1]) == hosts["h2"] and int(row[4]) == 6 - hosts["h2"]  # kept, not run
    assert "h2: not cleaned up" in out  # what may be left there is said
    assert fleet.quiet() == {}
    # h1's private directory is gone; h2's, which nothing could reach, is there
    h2 = hashlib.sha1(b"h2").hexdigest()[:12]
    assert [d.name[-12:] for d in remote.iterdir()] == [h2]


def test_sigint_stops_the_probes_and_cleans_up_every_host(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    _ansible()
    fleet = fleet_hosts(2)
    remote = tmp_path / "remote"
    remote.mkdir()
    before = _workspaces()
    suite = _suite(tmp_path, slow=True)
    p = cli.popen(
        "fleet",
        str(fleet.inventory),
        "--suite",
        str(suite),
        "--remote-tmp",
        str(remote),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for_probes(fleet, ["h1", "h2"], p)
    except BaseException:
        p.kill()
        p.wait()
        raise
    err = _interrupted(p)
    assert len(err.strip().splitlines()) == 1
    _clean(fleet, remote, before)


# ------------------------------------------------------------- without hosts


def test_without_ansible_one_line_says_what_to_install(
    cli: CLI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nowhere" / "python"))
    inv = tmp_path / "hosts.ini"
    inv.write_text("h1 ansible_host=192.0.2.250\n")
    r = cli("fleet", str(inv), "--suite", str(_suite(tmp_path)), env={"PATH": str(tmp_path)})
    assert r.returncode == 3
    assert r.stderr.startswith("latscope: error: latscope fleet needs ansible-core")
    assert "latscope[fleet]" in r.stderr and len(r.stderr.splitlines()) == 1


def test_dry_run_lists_hosts_and_plan(cli: CLI, tmp_path: Path) -> None:
    _ansible()
    inv = tmp_path / "hosts.ini"
    inv.write_text("[web]\nweb1 ansible_host=192.0.2.250\nweb2 ansible_host=192.0.2.251\n")
    args = ["fleet", str(inv), "--suite", str(_suite(tmp_path)), "--rounds", "2", "--dry-run"]
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    assert "2 scenarios x 2 hosts x 2 rounds = 8 runs" in r.stdout
    assert "hosts: web1, web2" in r.stdout and "nothing was run" in r.stdout
    r = cli(*args, "--limit", "web2")
    assert "hosts: web2" in r.stdout and "= 4 runs" in r.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--remote-tmp", "tmp"], "--remote-tmp tmp: give an absolute path"),
        (["--remote-tmp", "/tmp/$(x)"], "give an absolute path"),
        (["--rounds", "0"], "--rounds 0: must be 1 or more"),
        (["--timeout", "0"], "--timeout 0: give seconds"),
        (["--paired-time", "0.1"], "--paired-time 0.1: give seconds between 0.2 and 3600"),
        (["--pairs", "--paired-time", "1"], "--paired-time goes with a suite"),
    ],
)
def test_bad_options_are_one_line(cli: CLI, tmp_path: Path, extra: list[str], message: str) -> None:
    inv = tmp_path / "hosts.ini"
    inv.write_text("h1\n")
    r = cli("fleet", str(inv), "--suite", str(_suite(tmp_path)), *extra)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.splitlines()) == 1


def test_an_inventory_without_hosts_is_one_line(cli: CLI, tmp_path: Path) -> None:
    _ansible()
    r = cli("fleet", str(tmp_path / "missing.ini"), "--suite", str(_suite(tmp_path)))
    assert r.returncode == 2 and "no hosts" in r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr


def test_template_syntax_cannot_reach_ansible(tmp_path: Path) -> None:
    from latscope.errors import BadInput
    from latscope.fleet import ansible

    with pytest.raises(BadInput, match="cannot be passed through Ansible"):
        ansible.no_template("dir={{ lookup('pipe', 'id') }}", "scenario x")
    assert os.path.basename(ansible.RUN_SH) == "run.sh" and ansible.RUN_SH.is_file()


# ------------------------------------------------------------------------------ --pairs


def _headers(store: Path, runs: list[dict]) -> dict[str, dict]:
    """Each run's sample-file header, by run id."""
    return {m["id"]: latscope.load(m["id"], store=store).meta for m in runs}


def test_pairs_measure_every_ordered_pair_through_the_servers(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    """Three hosts: 9 pairs (each client connected from its own address to the server's)
    and tcp on each host, one run each, the matrix with every cell, nothing left after."""
    _ansible()
    fleet = fleet_hosts(3)
    remote = tmp_path / "remote"
    remote.mkdir()
    before = _workspaces()
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
    runs = _runs(store)
    assert len(runs) == 12
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
    assert len(rows) == 3 and all("—" not in ln and ln.count("µs") == 4 for ln in rows), r.stdout
    table = [ln for ln in r.stdout.splitlines() if ln[:1] in "┏┃┡│└"]
    assert len(table) >= 8 and max(len(ln) for ln in table) <= 80
    assert "12 of 12 runs kept" in r.stdout
    # each run said as it is kept, with its median: one at a time, 1/12 to 12/12
    said = re.findall(
        r"^(\d+)/12  (h\d -> h\d|tcp on h\d) \(round 1\): kept, median rtt ", r.stdout, re.M
    )
    assert sorted(int(k) for k, _ in said) == list(range(1, 13)), r.stdout
    _clean(fleet, remote, before)


def test_pairs_to_a_host_whose_server_cannot_start_are_not_run(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    """h2's port is taken: its server does not start, that is said with the probe's reason,
    the pairs to h2 are not run (the rest are), and the exit status says not all ran."""
    _ansible()
    fleet = fleet_hosts(2)
    h2 = fleet.host("h2")
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
    kept = {(m["tags"]["host"], m["tags"]["scenario"]) for m in _runs(store)}
    assert kept == {
        ("h1", "h1 -> h1"),
        ("h2", "h2 -> h1"),
        ("h1", "tcp on h1"),
        ("h2", "tcp on h2"),
    }
    assert fleet.quiet() == {} and list(remote.iterdir()) == []


def test_pairs_with_a_host_that_is_down(fleet_hosts, cli: CLI, store: Path, tmp_path: Path) -> None:
    """h2 cannot be reached: said in one line; h1 measures itself and its counterpart, its
    pair to h2 is not run (h2 serves nothing), and the exit status says so."""
    _ansible()
    fleet = fleet_hosts(2)
    fleet.host("h2").kill_sshd()
    remote = tmp_path / "remote"
    remote.mkdir()
    r = cli("fleet", str(fleet.inventory), "--pairs", "-n", "300", "--remote-tmp", str(remote))
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"^h2: unreachable: .*; the other hosts go on$", r.stdout, re.M), r.stdout
    kept = {(m["tags"]["host"], m["tags"]["scenario"]) for m in _runs(store)}
    assert kept == {("h1", "h1 -> h1"), ("h1", "tcp on h1")}
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("│ h1 "))
    assert row.count("µs") == 2 and row.count("—") == 1, row
    assert fleet.quiet() == {} and list(remote.iterdir()) == []


def test_sigint_during_pairs_stops_clients_and_servers(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    """SIGINT while a client measures: every client and every server stopped, every host
    cleaned up, one line."""
    _ansible()
    fleet = fleet_hosts(2)
    remote = tmp_path / "remote"
    remote.mkdir()
    before = _workspaces()
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
        _wait_for_probes(fleet, ["h1", "h2"], p)  # the servers
        end = time.monotonic() + 240
        while sum(len(v) for v in _probes_on(fleet).values()) < 3:  # and a client
            assert p.poll() is None and time.monotonic() < end, "no client started"
            time.sleep(0.1)
    except BaseException:
        p.kill()
        p.wait()
        raise
    _interrupted(p)
    _clean(fleet, remote, before)


def test_pairs_dry_run_shows_servers_and_order(cli: CLI, tmp_path: Path) -> None:
    """The servers' addresses come from latscope_address, else ansible_host; nothing runs."""
    _ansible()
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
    _ansible()
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
