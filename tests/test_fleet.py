"""`latscope fleet` on namespace hosts (tests/hosts.py): a three-host run of two rounds lands
in the store tagged with its hosts, each host's scenarios compared by a paired run (one run,
read by two tests: a fleet run costs its Ansible processes and connections); a host that is
down and one that drops out are reported while the others go on; and after the end or a
SIGINT nothing of the fleet is left on any host (no probe, no private directory, no process
but the host's sshd) nor here (no workspace, no ssh master connection)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

import latscope
from conftest import CLI
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
from hosts import fleet as namespace_hosts
from hosts import unavailable as hosts_unavailable


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


@pytest.fixture(scope="module")
def pipes_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """One fleet run that the tests below read, made once (each run of a fleet costs its
    Ansible processes and connections): the suite `pipes` on three hosts in two rounds, then
    its paired run on every host. Three hosts and two rounds, so that hosts and rounds each
    count more than one. The paired run is 0.5 s (not the default 5 s): some 30 rounds of
    two 5 ms blocks once the blocks are calibrated, three times the 10 a paired interval
    needs (stats.paired.MIN_ROUNDS), for a ratio of about 3.5."""
    need_ansible()
    why = hosts_unavailable()
    if why:
        pytest.skip(why)
    d = tmp_path_factory.mktemp("pipes-fleet")
    store = d / "store"
    remote = d / "remote"
    remote.mkdir()
    cli = CLI(store)
    with namespace_hosts(3, d) as fleet:
        before = workspaces()
        assert fleet.inventory is not None
        args = ["fleet", str(fleet.inventory), "--suite", str(_pipes(d)), "--rounds", "2"]
        r = cli(*args, "--paired-time", "0.5", "--remote-tmp", str(remote), "--seed", "3")
        yield SimpleNamespace(fleet=fleet, cli=cli, store=store, remote=remote, before=before, r=r)


def test_a_fleet_run_keeps_every_run_tagged_with_its_host(pipes_fleet: SimpleNamespace) -> None:
    fleet, r, store, cli = pipes_fleet.fleet, pipes_fleet.r, pipes_fleet.store, pipes_fleet.cli
    nhosts, rounds = 3, 2
    assert r.returncode == 0, r.stdout + r.stderr
    everything = kept_runs(store)
    runs = [m for m in everything if not m["tags"].get("paired")]  # those of the rounds
    names = [h.name for h in fleet.hosts]
    assert len(runs) == 2 * nhosts * rounds
    got = Counter((m["tags"]["host"], m["tags"]["scenario"], m["tags"]["repetition"]) for m in runs)
    want = {(h, s, k) for h in names for s in ("base", "big") for k in range(1, rounds + 1)}
    assert set(got) == want and set(got.values()) == {1}
    assert {m["tags"]["suite_run"] for m in everything} == {m["tags"]["fleet"] for m in everything}
    assert len({m["tags"]["fleet"] for m in everything}) == 1
    assert all(m["benchmark"] == "pipe" for m in runs)
    # each kept under its host, with the environment its probe recorded there (the header's)
    assert {m["id"]: m["host"] for m in everything} == {
        m["id"]: m["tags"]["host"] for m in everything
    }
    kept = [latscope.load(m["id"], store=store) for m in everything]
    assert all(k.env and k.env.get("kernel") for k in kept)
    ls = cli("ls", "--host", names[0], "--json")
    assert ls.returncode == 0 and len(json.loads(ls.stdout)["runs"]) == 2 * rounds + 1
    for h in names:  # one line per round and host, and the host's row in the table
        for k in range(1, rounds + 1):
            assert f"round {k}/{rounds}  {h}: 2 kept" in r.stdout
    total = (2 * rounds + 1) * nhosts
    assert f"{total} of {total} runs kept" in r.stdout
    nothing_left(fleet, pipes_fleet.remote, pipes_fleet.before)
    ls = cli("ls", "--suite", runs[0]["tags"]["suite_run"])
    assert ls.returncode == 0 and ls.stdout.count("pipes/") == len(everything), ls.stdout


def test_a_fleets_scenarios_are_compared_on_each_host_by_a_paired_run(
    pipes_fleet: SimpleNamespace,
) -> None:
    """After the rounds, every host measures the scenarios of one benchmark once more as the
    arms of one probe process; each host's comparison takes its ratio and verdict from it."""
    fleet, r = pipes_fleet.fleet, pipes_fleet.r
    assert r.returncode == 0, r.stdout + r.stderr
    plan = "2 scenarios x 3 hosts x 2 rounds + 1 paired x 3 hosts (0.5 s each) = 15 runs"
    assert plan in r.stdout
    runs = kept_runs(pipes_fleet.store)
    assert len(runs) == 15 and "15 of 15 runs kept" in r.stdout
    paired = [m for m in runs if m["tags"].get("paired")]
    assert sorted(m["tags"]["host"] for m in paired) == ["h1", "h2", "h3"]
    for m in paired:
        assert m["tags"]["scenario"] == "paired:base,big" and m["tags"]["ab"] is True
        assert m["tags"]["suite_run"] == m["tags"]["fleet"]
        (c, *_) = [c for c in m["ab"]["comparisons"] if c["column"] == "rtt"]
        assert c["arm"] == "B" and c["verdict"] == "slower" and c["ratio"] > 1.1
        assert [a["scenario"] for a in m["ab"]["arms"]][1] == "pipe size=32768"
        assert f"{m['tags']['host']}: paired:base,big: kept" in r.stdout
    for h in ("h1", "h2", "h3"):  # one table per host, the ratio from its paired run
        assert f"suite pipes on {h} — run" in r.stdout
    assert " ".join(r.stdout.split()).count("ratio and verdict: paired") == 1  # said once
    # the table's rows of scenario big (a warning about big, e.g. an order effect found in a
    # short paired run, may start a line with its name too)
    big = [ln for ln in r.stdout.splitlines() if re.match(r"\s*big\s+rtt\s+\d+\s+[\d.]+ µs", ln)]
    assert len(big) == 3 and all("slower" in ln and "‡" not in ln for ln in big)
    nothing_left(fleet, pipes_fleet.remote, pipes_fleet.before)


def test_a_paired_fleet_plan_refuses_arms_that_cannot_share_a_process(
    cli: CLI, tmp_path: Path
) -> None:
    """Arms that cannot share one process (a spinning mechanism) are said and left unpaired:
    compared by their rounds. (The paired run in a plan, and none with --paired-time 0: the
    dry run's test.)"""
    need_ansible()
    inv = tmp_path / "hosts.ini"
    inv.write_text("[web]\nweb1 ansible_host=192.0.2.250\n")
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


def _drop_out(fleet, name: str, done: threading.Event, said: list[str]) -> None:
    """Kill host ``name``'s sshd and its sessions while it runs a probe after an earlier run
    ended (whose samples are fetched before the next step starts): on Ansible's progress, not
    on the store's, which imports behind it; runs only (-o), not the set-up's check (--list).
    What went wrong goes to ``said``."""
    end = time.monotonic() + 300
    first: set[int] = set()
    while True:
        now = {q for q in probes_on(fleet).get(name, []) if b" -o " in cmdline(q)}
        if now and first and not now & first:
            break
        first = first or now
        if done.is_set() or time.monotonic() > end:
            said.append(f"{name} ran no second probe (latscope ended: {done.is_set()})")
            return
        time.sleep(0.02)
    fleet.host(name).kill_sshd()


def test_hosts_that_are_down_or_drop_out_are_reported_and_the_others_go_on(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    """h2 is down from the start; h3's sshd and its sessions are killed while h3 runs its
    second probe. Each is reported in one line, their remaining runs are not run, h1 keeps all
    its runs; h3's private directory, which nothing could reach, is left and said. The slow
    scenario takes a second or more, so that its probe is seen running however slowly this
    test is scheduled. latscope runs in this process, h3 is watched and killed from a thread."""
    need_ansible()
    fleet = fleet_hosts(3)
    fleet.host("h2").kill_sshd()
    remote = tmp_path / "remote"
    remote.mkdir()
    before = workspaces()
    suite = tiny_suite(tmp_path, slow_s=1.5)
    done, said = threading.Event(), []
    watch = threading.Thread(target=_drop_out, args=(fleet, "h3", done, said), daemon=True)
    watch.start()
    try:
        args = ["fleet", str(fleet.inventory), "--suite", str(suite), "--rounds", "3"]
        r = cli(*args, "--remote-tmp", str(remote))
    finally:
        done.set()
        watch.join()
    assert said == [], r.stdout + r.stderr
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    for h in ("h2", "h3"):
        assert re.search(rf"^{h}: unreachable: .*; the other hosts go on$", out, re.M), out
    hosts = Counter(m["tags"]["host"] for m in kept_runs(store))
    assert hosts["h1"] == 6 and hosts["h2"] == 0 and 1 <= hosts["h3"] < 6
    assert f"{6 + hosts['h3']} of 18 runs kept" in out
    rows = {w[0]: w for w in map(str.split, out.splitlines()) if w[:1] in (["h2"], ["h3"])}
    assert rows["h2"][1:5] == ["0", "0", "0", "6"]  # kept, skipped, failed, not run
    assert int(rows["h3"][1]) == hosts["h3"] and int(rows["h3"][4]) == 6 - hosts["h3"]
    assert "h3: not cleaned up" in out  # what may be left there is said
    assert "h1: not cleaned up" not in out  # by the main playbook's last task
    # h1's private directory is gone, h2 never had one; h3's, which nothing could reach, is there
    nothing_left(fleet, remote, before, unreached=["h3"])


def test_sigint_stops_the_probes_and_cleans_up_every_host(
    fleet_hosts, cli: CLI, store: Path, tmp_path: Path
) -> None:
    need_ansible()
    fleet = fleet_hosts(2)
    remote = tmp_path / "remote"
    remote.mkdir()
    suite = tiny_suite(tmp_path, slow_s=20, workers=2)
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
    """The hosts with their addresses and the plan, nothing run: the rounds, then the paired
    run of the scenarios of one benchmark; with --limit only its hosts, and --paired-time 0
    makes no paired run."""
    need_ansible()
    inv = tmp_path / "hosts.ini"
    inv.write_text("[web]\nweb1 ansible_host=192.0.2.250\nweb2 ansible_host=192.0.2.251\n")
    args = ["fleet", str(inv), "--suite", str(_pipes(tmp_path)), "--rounds", "2", "--dry-run"]
    r = cli(*args, "--seed", "1")
    assert r.returncode == 0, r.stderr
    plan = "2 scenarios x 2 hosts x 2 rounds + 1 paired x 2 hosts (5 s each) = 10 runs"
    assert plan in r.stdout
    assert "hosts: web1 (192.0.2.250), web2 (192.0.2.251)" in r.stdout
    order = " ".join(r.stdout.split()).split("order (on every host): ")[1]
    assert re.match(r"(\d\.(base|big)#[12] ){4}5\.paired:base,big ", order), order
    assert "nothing was run" in r.stdout
    r = cli(*args, "--limit", "web2", "--paired-time", "0")
    assert r.returncode == 0, r.stderr
    assert "hosts: web2 (192.0.2.251)" in r.stdout and "= 4 runs" in r.stdout
    assert "paired x" not in r.stdout and ".paired:" not in r.stdout


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
