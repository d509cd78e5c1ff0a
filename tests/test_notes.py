"""The notes that explain what a benchmark's figure means, and that every view prints them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from latscope.notes import grouped_notes, notes_for, run_notes


def keys(bench, params, fs=None):
    return [n.key for n in notes_for(bench, params, fs)]


def test_spin_on_one_cpu_is_explained_and_not_elsewhere():
    assert keys("spin", {"mode": "processes", "cpus": "0,0"}) == ["spin-one-cpu"]
    assert keys("spin_pause", {"cpus": "1, 1"}) == ["spin-one-cpu"]
    assert "scheduler tick" in notes_for("spin", {"cpus": "0,0"})[0].text
    assert keys("spin", {"cpus": "0,1"}) == []
    assert keys("spin", {"cpus": "none"}) == []
    assert keys("pipe", {"cpus": "0,0"}) == []
    assert keys("pipe", {}) == []


def test_file_cache_modes_are_explained():
    fad = keys("file", {"cache": "fadvise"})
    assert fad == ["file-fadvise", "file-read-cached"]
    text = notes_for("file", {"cache": "fadvise"})[0].text
    assert "dentries" in text and "pause" in text and "ORWC cache lab" in text
    assert keys("file", {"cache": "drop", "open": "existing", "order": "rw"}) == [
        "file-drop",
        "file-read-cold",
    ]
    assert "file-tmpfs" in keys("file", {"cache": "fadvise"}, "tmpfs")
    assert keys("file", {"cache": "warm"}) == [] and keys("file", {}) == []


def test_busy_waiting_python_threads_are_explained_by_the_gil_switch_interval():
    for bench in ("py_spinlock", "py_semlock", "py_spin"):
        assert keys(bench, {"mode": "threads"}) == ["python-gil"]
        assert keys(bench, {}) == ["python-gil"]  # threads: the engine's default mode
    text = notes_for("py_semlock", {"mode": "threads", "switchinterval": "0.0005"})[0].text
    assert "0.5 ms in this run" in text and "report 002" in text
    assert "5 ms by default" in notes_for("py_spin", {"mode": "threads"})[0].text
    assert keys("py_spin", {"mode": "processes"}) == []  # a GIL each
    assert keys("py_pipe", {"mode": "threads"}) == []  # blocking: the GIL is given up
    assert keys("spin", {"mode": "threads", "cpus": "0,1"}) == []  # C: no GIL


def test_grouped_notes_name_every_item_once_per_note():
    got = grouped_notes(
        [
            ("a", "spin", {"cpus": "0,0"}),
            ("b", "spin_pause", {"cpus": "0,0"}),
            ("c", "pipe", {"cpus": "0,0"}),
        ]
    )
    assert [(names, n.key) for names, n in got] == [("a, b", "spin-one-cpu")]


def test_a_grouped_note_never_reads_as_one_items_switch_interval():
    # suite gil: the same note for runs at 0.1 and 10 ms; before, it said "0.1 ms in this run"
    # for all of them, the first scenario's interval
    got = grouped_notes(
        [
            ("si-0.1ms", "py_spinlock", {"mode": "threads", "switchinterval": "0.0001"}),
            ("si-10ms", "py_spinlock", {"mode": "threads", "switchinterval": "0.01"}),
        ]
    )
    [(names, note)] = got
    assert names == "si-0.1ms, si-10ms"
    assert "in this run" not in note.text and "each run's switchinterval" in note.text
    # runs at one interval keep it
    [(_, same)] = grouped_notes([("a", "py_semlock", {"switchinterval": "0.002"})] * 2)
    assert "2 ms in this run" in same.text


def test_grouped_python_rows_on_one_cpu_get_the_spin_note_under_one_name():
    # matrix --runtime python: py_spin processes on one CPU is the scheduler's tick as C spin
    got = dict(
        (n.key, names)
        for names, n in grouped_notes(
            [
                ("py_spin processes", "py_spin", {"mode": "processes", "cpus": "0,0"}),
                ("py_spin processes", "py_spin", {"mode": "processes", "cpus": "0,1"}),
                ("py_spin threads", "py_spin", {"mode": "threads", "cpus": "0,0"}),
                ("py_spin threads", "py_spin", {"mode": "threads", "cpus": "0,1"}),
                ("py_pipe processes", "py_pipe", {"mode": "processes", "cpus": "0,0"}),
            ]
        )
    )
    assert got == {
        "spin-one-cpu": "py_spin processes, py_spin threads",
        "python-gil": "py_spin threads",
    }


@pytest.mark.parametrize(
    ("bench", "params", "n", "key"),
    [
        ("spin", {"cpus": "0,0"}, 3, "spin-one-cpu"),
        ("file", {"cache": "fadvise"}, 20, "file-fadvise"),
        ("pipe", {"cpus": "0,0"}, 50, None),
        ("py_semlock", {"mode": "threads", "switchinterval": "0.0002"}, 20, "python-gil"),
    ],
)
def test_run_show_and_report_print_the_notes(tmp_path, monkeypatch, probe, bench, params, n, key):
    monkeypatch.setenv("LATSCOPE_PROBE", probe)  # the probe under test (sanitizers in make test)
    from latscope.measure.runner import measure
    from latscope.report import parts as report
    from latscope.report.text import print_run

    if bench == "file":
        params = {**params, "dir": str(tmp_path)}
    run = measure(bench, params, n=n, warmup=1, store=tmp_path / "store")
    out = io.StringIO()
    print_run(Console(file=out, width=300), run, details=True)
    codes = [getattr(b, "code", None) for b in report._measurement(run)]
    if key is None:
        assert "note (" not in out.getvalue()
        assert not [c for c in codes if c and c.startswith(("spin", "file-", "python-"))]
    else:
        assert f"note ({key})" in out.getvalue()
        assert key in codes


@pytest.mark.parametrize(
    "header",
    [
        {"env": {"schema": 2, "filesystem": {"fstype": "tmpfs"}}},
        # a sample file of an older probe: the filesystem in bench.filesystem
        {"env": {"release": "6.1"}, "bench": {"filesystem": {"type": "tmpfs"}}},
    ],
)
def test_the_tmpfs_note_reads_the_filesystem_in_either_header(header: dict) -> None:
    meta = {"benchmark": "file", "params": {"cache": "drop", "order": "rw"}, **header}
    assert "file-tmpfs" in [n.key for n in run_notes(meta)]


def test_the_runtime_matrix_asks_for_the_notes_of_its_rows_with_their_cpus() -> None:
    from latscope.matrix.ipc import Cell
    from latscope.matrix.runtime import Pair, runtime_note_items

    pairs = [
        Pair(Cell("py_spin", mode, cpus), Cell("spin", mode, cpus))
        for mode in ("threads", "processes")
        for cpus in ("0,0", "0,1")
    ]
    got = {n.key: names for names, n in grouped_notes(runtime_note_items(pairs))}
    # py_spin processes on one CPU is the scheduler's tick, as C spin is: both named
    assert got["spin-one-cpu"] == "py_spin threads, spin cpus=0,0, py_spin processes"
    assert got["python-gil"] == "py_spin threads"


def test_the_file_systems_mount_options_are_said_where_they_change_the_figure():
    """discard with open=create (O_TRUNC frees the blocks: the open times the device's
    discard), sync and dirsync, data=journal; none of them elsewhere."""

    def k(params, options, bench="file"):
        return [n.key for n in notes_for(bench, params, "ext4", options)]

    here = "rw,relatime,rw,discard,resv_strict"  # this VM's root: mount, then superblock
    assert k({}, here) == ["file-discard"]  # open=create is the default
    assert k({"open": "create"}, here) == ["file-discard"]
    assert "blkdev_issue_discard" in notes_for("file", {}, "ext4", here)[0].text
    assert k({"open": "existing"}, here) == []
    assert k({}, "rw,relatime,rw") == []
    assert k({"open": "existing"}, "rw,sync") == ["file-sync"]
    assert k({"open": "create"}, "rw,dirsync") == ["file-sync"]
    assert k({"open": "existing"}, "rw,dirsync") == []
    assert k({"open": "existing"}, "rw,data=journal") == ["file-data-journal"]
    assert k({}, here, bench="pipe") == []
    # a kept run: the probe's record of the file system
    meta = {
        "benchmark": "file",
        "params": {"open": "create"},
        "env": {
            "schema": 2,
            "filesystem": {"fstype": "ext4", "mount_options": "rw,relatime", "super_options": here},
        },
    }
    assert [n.key for n in run_notes(meta)] == ["file-discard"]


def test_an_fsync_on_a_device_with_a_write_back_cache_holds_its_flush() -> None:
    from latscope.notes import notes_for

    dev = {"name": "vda", "write_cache": "write back", "scheduler": "mq-deadline"}
    keys = [n.key for n in notes_for("file", {"fsync": True}, "ext4", "rw", dev)]
    assert "file-write-cache" in keys
    text = next(n.text for n in notes_for("file", {"fsync": "true"}, "ext4", "rw", dev)
                if n.key == "file-write-cache")  # fmt: skip
    assert "(vda)" in text and "flush" in text
    assert "file-write-cache" not in [
        n.key for n in notes_for("file", {"fsync": False}, "ext4", "rw", dev)
    ]
    through = {**dev, "write_cache": "write through"}
    assert "file-write-cache" not in [
        n.key for n in notes_for("file", {"fsync": True}, "ext4", "rw", through)
    ]
    assert "file-write-cache" not in [
        n.key for n in notes_for("file", {"fsync": True}, "ext4", "rw")
    ]


def test_the_probe_names_the_block_device_behind_a_directory(probe: str) -> None:
    """--env DIR: the file system's device and its queue (a block device's name, its write
    cache and scheduler), or null on a file system with none (tmpfs)."""
    import json
    import os

    from conftest import run_probe

    for d in ("/var/tmp", "/tmp", "/"):
        if os.major(os.stat(d).st_dev) != 0:
            break
    else:
        pytest.skip("no directory here lies on a block device")
    fs = json.loads(run_probe(probe, "--env", d).stdout)["filesystem"]
    assert fs["device"] and "/" not in fs["device"]
    assert Path(f"/sys/class/block/{fs['device']}").exists()
    assert fs["rotational"] in (True, False, None)
    assert fs["write_cache"] in ("write back", "write through", None)
    if Path("/dev/shm").is_dir() and os.major(os.stat("/dev/shm").st_dev) == 0:
        shm = json.loads(run_probe(probe, "--env", "/dev/shm").stdout)["filesystem"]
        assert shm["device"] is None and shm["write_cache"] is None


HALTPOLL = {
    "driver": "haltpoll",
    "states": [
        {"name": "POLL", "latency_us": 0, "disabled": False},
        {"name": "haltpoll idle", "latency_us": 1, "disabled": False},
    ],
}
INTEL = {
    "driver": "intel_idle",
    "states": [
        {"name": "POLL", "latency_us": 0, "disabled": False},
        {"name": "C1", "latency_us": 2, "disabled": False},
        {"name": "C6", "latency_us": 133, "disabled": False},
    ],
}


def env_keys(bench: str, params: dict, env: dict) -> list[str]:
    from latscope.notes import env_notes

    return [n.key for n in env_notes(bench, params, env)]


def test_a_wait_across_cpus_holds_the_wake_up_from_idle_and_says_which() -> None:
    """idle-wake: a blocking pair that may sit on two CPUs, on a VM (any idle driver: the
    hypervisor wakes a halted vCPU) or on a machine whose idle states include a deep one;
    never for one CPU, a busy-waiting pair, or shallow states on bare metal."""
    from latscope.notes import env_notes

    vm = {"cpuidle": HALTPOLL, "virtualization": {"vm": True}}
    metal = {"cpuidle": INTEL, "virtualization": {"vm": False}}
    assert env_keys("pipe", {"cpus": "0,1"}, vm) == ["idle-wake"]
    assert env_keys("futex", {"cpus": "none"}, vm) == ["idle-wake"]  # unpinned: may be two
    assert env_keys("pipe", {"cpus": "0,0"}, vm) == []
    assert env_keys("spin", {"cpus": "0,1"}, vm) == []  # the waiting CPU spins: never idle
    assert env_keys("syscall", {}, vm) == []  # one party
    assert env_keys("pipe", {"cpus": "0,1"}, metal) == ["idle-wake"]
    text = env_notes("pipe", {"cpus": "0,1"}, metal)[0].text
    assert "C6" in text and "133 µs" in text and "intel_idle" in text
    shallow = {**INTEL, "states": INTEL["states"][:2]}
    assert env_keys("pipe", {"cpus": "0,1"}, {"cpuidle": shallow}) == []
    off = {**INTEL, "states": [*INTEL["states"][:2], {**INTEL["states"][2], "disabled": True}]}
    assert env_keys("pipe", {"cpus": "0,1"}, {"cpuidle": off}) == []
    assert "polls for a moment" in env_notes("pipe", {"cpus": "0,1"}, vm)[0].text
    assert env_keys("pipe", {"cpus": "0,1"}, {}) == []  # nothing recorded: nothing said


def test_a_governor_that_scales_the_clock_is_said_with_every_figure() -> None:
    def freq(*governors: str | None) -> dict:
        per = {str(i): {"governor": g} for i, g in enumerate(governors)}
        return {"cpufreq": {"per_cpu": per, "driver": "intel_pstate", "turbo": True}}

    assert env_keys("syscall", {}, freq("powersave", "powersave")) == ["frequency"]
    assert env_keys("syscall", {}, freq("performance", "schedutil")) == ["frequency"]
    assert env_keys("syscall", {}, freq("performance", "performance")) == []
    assert env_keys("syscall", {}, {"cpufreq": {"per_cpu": None}}) == []  # a VM: the host's
    from latscope.notes import env_notes

    text = env_notes("syscall", {}, freq("schedutil"))[0].text
    assert "schedutil" in text and "intel_pstate" in text and "turbo on" in text


def test_a_stored_run_gets_the_notes_of_the_machine_it_ran_on() -> None:
    """run_notes reads the lab's capture in run.json (not the sample file's smaller record)."""
    meta = {
        "benchmark": "pipe",
        "params": {"cpus": [0, 1]},
        "env": {},
        "run": {"env": {"cpuidle": HALTPOLL, "virtualization": {"vm": True}}},
    }
    assert [n.key for n in run_notes(meta)] == ["idle-wake"]
    items = [("a", "pipe", {"cpus": "0,1"}, meta), ("b", "pipe", {"cpus": "0,0"}, meta)]
    assert [(names, n.key) for names, n in grouped_notes(items)] == [("a", "idle-wake")]
