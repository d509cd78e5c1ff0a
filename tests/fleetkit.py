"""What the fleet's tests share (tests/test_fleet.py, tests/test_fleet_pairs.py): the
Ansible check, a tiny suite, the runs kept, and the checks that nothing of a fleet is left on
any host or here."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from conftest import procs_mentioning, reaped
from latscope.errors import Unsupported


def need_ansible() -> None:
    from latscope.fleet import ansible

    try:
        ansible.tool("ansible-playbook")
    except Unsupported as e:
        pytest.skip(e.message)


def tiny_suite(d: Path, n: int = 200, slow_s: float | None = None, workers: int = 1) -> Path:
    """Two scenarios: a system call and a pipe ping-pong, ``n`` iterations each. ``slow_s``:
    the second one instead lasts about that long, so that it is caught running however
    slowly a test is scheduled, at a few milliseconds of CPU: a `file` run idling between its
    iterations (`pause`, an untimed nanosleep), where a pipe ping-pong as long keeps two CPUs
    busy; in ``workers`` worker processes (200 iterations each, as `--workers auto` splits
    them), which the probe forks one after another, so that it has a child while it runs."""
    p = d / "tiny.toml"
    second = f'name = "pipe"\nbenchmark = "pipe"\nn = {n}\n'
    if slow_s is not None:
        slow_n = 200 * workers
        pause_us = int(slow_s * 1e6 / (slow_n + 10 * workers))
        second = (
            f'name = "slow"\nbenchmark = "file"\nn = {slow_n}\n'
            f'params = {{ pause = "{pause_us}" }}\n'
        )
    p.write_text(
        f'name = "tiny"\nwarmup = 10\n'
        f'[[scenario]]\nname = "sys"\nbenchmark = "syscall"\nn = {n}\n'
        f"[[scenario]]\n{second}"
    )
    return p


def kept_runs(store: Path) -> list[dict]:
    """The runs kept so far (partial ones left out)."""
    runs = store / "runs"
    if not runs.is_dir():
        return []
    return [
        json.loads((d / "run.json").read_text())
        for d in sorted(runs.iterdir())
        if not d.name.startswith(".")
    ]


def workspaces(pid: int | None = None) -> set[str]:
    """The fleet's local workspaces and control directories that exist now, of the latscope
    process ``pid`` (default: this one, where the CLI runs in-process): those of a fleet test
    running beside this one in another worker are not this test's to count."""
    pid = os.getpid() if pid is None else pid
    out = set()
    for d in {tempfile.gettempdir(), "/tmp"}:
        out |= {str(p) for p in Path(d).glob(f"latscope-fleet-{pid}-*")}
        out |= {str(p) for p in Path(d).glob(f"lsf-cp-latscope-fleet-{pid}-*")}
    return out


def probes_on(fleet) -> dict[str, list[int]]:
    """The probe processes running on each host."""
    out = {}
    for name, pids in fleet.pids().items():
        mine = sorted(p for p in pids if b"latscope-probe" in cmdline(p))
        if mine:
            out[name] = mine
    return out


def cmdline(pid: int) -> bytes:
    """The command line of ``pid``, its arguments separated by spaces (empty once gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""


def private_dir_of(host: str) -> str:
    """How the name of a host's private directory ends (a digest of its name)."""
    return hashlib.sha1(host.encode()).hexdigest()[:12]


def nothing_left(
    fleet, remote: Path, before: set[str], pid: int | None = None, unreached: Iterable[str] = ()
) -> None:
    """Nothing of the fleet left on any host or here (``pid``: the latscope process's, when
    it ran in a process of its own; ``unreached``: hosts that dropped out during the run,
    whose private directory nothing could remove: theirs, and only theirs, is left)."""
    assert fleet.quiet() == {}, "processes left on the hosts (besides sshd)"
    assert probes_on(fleet) == {}
    left = sorted(d.name[-12:] for d in remote.iterdir())
    assert left == sorted(map(private_dir_of, unreached)), "private directories left on the hosts"
    assert workspaces(pid) - before == set(), "workspace left here"
    assert procs_mentioning(str(remote)) == [], "processes of the run left"
    for h in fleet.hosts:  # ssh clients (ControlPersist masters) name the host's address
        assert procs_mentioning(h.addr) == [], f"ssh connections to {h.name} left"
    from hosts import netns_names

    assert {h.ns for h in fleet.hosts} <= netns_names()  # the hosts themselves are the test's


def interrupted(p: subprocess.Popen) -> str:
    """SIGINT to a running `latscope fleet`: it ends with 130, says it was interrupted and
    that every host was cleaned up; its stderr."""
    p.send_signal(signal.SIGINT)
    with reaped(p):
        out, err = p.communicate(timeout=300)
    assert p.returncode == 130, out + err
    assert "interrupted by SIGINT" in err and "every host was cleaned up" in err
    return err


def wait_for_probes(fleet, hosts: list[str], proc: subprocess.Popen, timeout: float = 240) -> None:
    end = time.monotonic() + timeout
    while not set(hosts) <= set(probes_on(fleet)):
        assert proc.poll() is None, "latscope ended before the probes ran"
        assert time.monotonic() < end, "the probes did not start on the hosts"
        time.sleep(0.1)
