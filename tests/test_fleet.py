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
import time
from collections import Counter
from pathlib import Path

import pytest

import latscope
from conftest import CLI, reaped
from fleetkit import (
    cmdline,
    interrupted,
    kept_runs,
    need_ansible,
    nothing_left,
    probes_on,
    tiny_suite,
    wait_for_probes,
    workspaces,
)


@pytest.mark.parametrize(("nhosts", "rounds"), [(2, 2), (3, 1)])
def test_a_fleet_run_keeps_every_run_tagged_with_its_host(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path, nhosts: int, rounds: int
) -> None:
    need_ansible()
    fleet = fleet_hosts(nhosts)
    remote = tmp_path / "remote"
    remote.mkdir()
    before = workspaces()
    args = ["fleet", str(fleet.inventory), "--suite", str(tiny_suite(tmp_path))]
    r = cli(*args, "--rounds", str(rounds), "--remote-tmp", str(remote), "--seed", "7")
    assert r.returncode == 0, r.stdout + r.stderr
    runs = kept_runs(store)
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
    nothing_left(fleet, remote, before)
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
    need_ansible()
    fleet = fleet_hosts(2)
    remote = tmp_path / "remote"
    remote.mkdir()
    before = workspaces()
    args = ["fleet", str(fleet.inventory), "--suite", str(_pipes(tmp_path))]
    r = cli(*args, "--paired-time", "1", "--remote-tmp", str(remote), "--seed", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 scenarios x 2 hosts x 1 rounds + 1 paired x 2 hosts (1 s each) = 6 runs" in r.stdout
    runs = kept_runs(store)
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
    nothing_left(fleet, remote, before)


def test_a_paired_fleet_plan_and_its_refusals(cli: CLI, tmp_path: Path) -> None:
    """The dry run lists the paired run after the rounds; --paired-time 0 makes none; arms
    that cannot share one process (a spinning mechanism) are said and left unpaired."""
    need_ansible()
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
    need_ansible()
    fleet = fleet_hosts(3)
    fleet.host("h2").kill_sshd()
    remote = tmp_path / "remote"
    remote.mkdir()
    before = workspaces()
    r = cli(
        "fleet",
        str(fleet.inventory),
        "--suite",
        str(tiny_suite(tmp_path)),
        "--remote-tmp",
        str(remote),
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "h2: unreachable" in r.stdout and "the other hosts go on" in r.stdout
    assert "4 of 6 runs kept" in r.stdout
    assert sorted(m["tags"]["host"] for m in kept_runs(store)) == ["h1", "h1", "h3", "h3"]
    row = next(ln for ln in r.stdout.splitlines() if ln.split()[:1] == ["h2"])
    assert row.split()[1:5] == ["0", "0", "0", "2"]  # kept, skipped, failed, not run
    nothing_left(fleet, remote, before)


def test_a_host_that_drops_out_during_the_run(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    """h2's sshd and its sessions are killed while h2 runs its second probe: h2 is reported,
    its remaining runs are not run, h1 keeps all its runs. The pipe scenario takes a second
    or more, so that its probe is seen running however slowly this test is scheduled."""
    need_ansible()
    fleet = fleet_hosts(2)
    remote = tmp_path / "remote"
    remote.mkdir()
    suite = tiny_suite(tmp_path, pipe_n=200_000)
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
            now = {q for q in probes_on(fleet).get("h2", []) if b" -o " in cmdline(q)}
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
    hosts = Counter(m["tags"]["host"] for m in kept_runs(store))
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
    need_ansible()
    fleet = fleet_hosts(2)
    remote = tmp_path / "remote"
    remote.mkdir()
    suite = tiny_suite(tmp_path, slow=True)
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
        wait_for_probes(fleet, ["h1", "h2"], p)
    except BaseException:
        p.kill()
        p.wait()
        raise
    err = interrupted(p)
    assert len(err.strip().splitlines()) == 1
    nothing_left(fleet, remote, set(), pid=p.pid)


# ------------------------------------------------------------- without hosts


def test_without_ansible_one_line_says_what_to_install(
    cli: CLI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nowhere" / "python"))
    inv = tmp_path / "hosts.ini"
    inv.write_text("h1 ansible_host=192.0.2.250\n")
    r = cli("fleet", str(inv), "--suite", str(tiny_suite(tmp_path)), env={"PATH": str(tmp_path)})
    assert r.returncode == 3
    assert r.stderr.startswith("latscope: error: latscope fleet needs ansible-core")
    assert "latscope[fleet]" in r.stderr and len(r.stderr.splitlines()) == 1


def test_dry_run_lists_hosts_and_plan(cli: CLI, tmp_path: Path) -> None:
    need_ansible()
    inv = tmp_path / "hosts.ini"
    inv.write_text("[web]\nweb1 ansible_host=192.0.2.250\nweb2 ansible_host=192.0.2.251\n")
    args = ["fleet", str(inv), "--suite", str(tiny_suite(tmp_path)), "--rounds", "2", "--dry-run"]
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    assert "2 scenarios x 2 hosts x 2 rounds = 8 runs" in r.stdout
    assert "hosts: web1 (192.0.2.250), web2 (192.0.2.251)" in r.stdout
    assert "nothing was run" in r.stdout
    r = cli(*args, "--limit", "web2")
    assert "hosts: web2 (192.0.2.251)" in r.stdout and "= 4 runs" in r.stdout


@pytest.mark.parametrize("key", ["ansible_host", "latscope_address"])
def test_a_templated_address_is_refused_before_anything_runs(
    cli: CLI, tmp_path: Path, key: str
) -> None:
    """An inventory whose host address is an Ansible template (a lookup that would run a
    command on this machine when Ansible connects): one line, exit 2, nothing run, for a
    suite and for pairs."""
    need_ansible()
    marker = tmp_path / "ran"
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        f"all:\n  hosts:\n    h1:\n      {key}: \"{{{{ lookup('pipe', 'touch {marker}') }}}}\"\n"
    )
    for extra in (["--suite", str(tiny_suite(tmp_path))], ["--pairs"]):
        r = cli("fleet", str(inv), *extra)
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"host h1: {key} is an Ansible template" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert not marker.exists()


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
    r = cli("fleet", str(inv), "--suite", str(tiny_suite(tmp_path)), *extra)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.splitlines()) == 1


def test_an_inventory_without_hosts_is_one_line(cli: CLI, tmp_path: Path) -> None:
    need_ansible()
    r = cli("fleet", str(tmp_path / "missing.ini"), "--suite", str(tiny_suite(tmp_path)))
    assert r.returncode == 2 and "no hosts" in r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr


def test_template_syntax_cannot_reach_ansible(tmp_path: Path) -> None:
    from latscope.errors import BadInput
    from latscope.fleet import ansible

    with pytest.raises(BadInput, match="cannot be passed through Ansible"):
        ansible.no_template("dir={{ lookup('pipe', 'id') }}", "scenario x")
    assert os.path.basename(ansible.RUN_SH) == "run.sh" and ansible.RUN_SH.is_file()


# ------------------------------------------------------------------------------ --pairs


@pytest.mark.parametrize("failure", ["stop", "damage"])
def test_a_stop_while_a_fetched_run_is_kept_stops_the_fleet(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, failure: str
) -> None:
    """A signal that reaches the fleet while it keeps a fetched sample file (the keep turns it
    into Interrupted) stops the fleet: raised on as the fleet's own stop, so that `execute`
    cleans up and ends with 130, never a failed run and exit 1 (it did, under load). A damaged
    file is that one run failed, and the fleet goes on."""
    from types import SimpleNamespace

    from latscope import probe
    from latscope.errors import BadInput, Interrupted
    from latscope.fleet import running

    def refuse(*args: object, **kwargs: object) -> None:
        if failure == "stop":
            raise Interrupted("interrupted by SIGTERM; nothing was kept", signal.SIGTERM)
        raise BadInput("x.lss: not a sample file")

    monkeypatch.setattr(running, "import_fetched", refuse)
    monkeypatch.setattr(running, "probe_options", lambda scenario: ["syscall"])
    ev = object.__new__(running._Events)
    said: list[str] = []
    ev.say, ev.paired_by_index, ev.warnings = said.append, {}, {}
    ev.round_steps, ev.done_rounds = {"h1": {1: {0, 1}}}, {"h1": set()}
    ev.by_index = {0: SimpleNamespace(scenario=None)}
    ev.fr = SimpleNamespace(store=tmp_path)
    monkeypatch.setattr(ev, "_tags", lambda s: {})
    h = running.HostResult("h1")
    fetched = tmp_path / "x.lss"
    fetched.write_bytes(b"")
    if failure == "stop":
        with pytest.raises(probe.Stopped) as got:
            ev._keep(h, 0, str(fetched), "h1: sys (round 1)")
        assert got.value.signum == signal.SIGTERM
    else:
        ev._keep(h, 0, str(fetched), "h1: sys (round 1)")
    assert h.outcome == {0: "failed"} and not fetched.exists()
    assert len(said) == 1 and "cannot be kept" in said[0]
