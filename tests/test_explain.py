"""latscope explain: the probe's tracing window (--trace-ctl), the attribution of a traced
loop's time on synthetic traces whose answer is known, the rights it needs, and a real trace
under perf where this machine allows it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import is_root, run_probe
from latscope.measure import trace

# --------------------------------------------------------------- the attribution, synthetic

T0 = 1000.0


def _ev(tid: int, t_us: float, event: str, rest: str, cpu: int = 0, stack=()) -> list[str]:
    line = f" {tid}/{tid} [{cpu:03d}] {T0 + t_us * 1e-6:.9f}: {event}: {rest}"
    return [line, *(f"\tffffffff8100{k:04x} {s}" for k, s in enumerate(stack)), ""]


def _one_round_trip(base: float, me: int = 10, peer: int = 11) -> list[str]:
    """One iteration of a ping-pong on one CPU, as the measuring thread ``me`` sees it (µs
    after base): write 1-3 (waking the peer at 2), user 3-4, read 4-5, asleep 5-9 in
    pipe_read (the peer's events meanwhile are not its), woken at 9, in the run queue 9-10,
    back in read 10-11."""
    out: list[str] = []
    out += _ev(me, base + 1, "raw_syscalls:sys_enter", "NR 1 (8, 0, 8)")
    out += _ev(me, base + 2, "sched:sched_wakeup", f"comm=p pid={peer} prio=120 target_cpu=000")
    out += _ev(me, base + 3, "raw_syscalls:sys_exit", "NR 1 = 8")
    out += _ev(me, base + 4, "raw_syscalls:sys_enter", "NR 0 (9, 0, 8)")
    out += _ev(
        me, base + 5, "sched:sched_switch",
        f"prev_comm=p prev_pid={me} prev_prio=120 prev_state=S ==> next_comm=p next_pid={peer} "
        "next_prio=120",
        stack=("__schedule", "schedule", "anon_pipe_read", "vfs_read", "ksys_read",
               "do_syscall_64"),
    )  # fmt: skip
    out += _ev(peer, base + 7, "raw_syscalls:sys_exit", "NR 0 = 8")
    out += _ev(peer, base + 9, "sched:sched_wakeup", f"comm=p pid={me} prio=120 target_cpu=000")
    out += _ev(
        peer, base + 10, "sched:sched_switch",
        f"prev_comm=p prev_pid={peer} prev_prio=120 prev_state=S ==> next_comm=p next_pid={me} "
        "next_prio=120",
    )  # fmt: skip
    out += _ev(me, base + 11, "raw_syscalls:sys_exit", "NR 0 = 8")
    return out


def test_a_traced_loop_splits_exactly_into_its_parts() -> None:
    """Two iterations, 12 µs apart: from its first event (1 µs) to its last (23 µs)."""
    lines = _one_round_trip(0) + _one_round_trip(12)
    a = trace.attribute(trace.parse(lines), 10, {0: "read", 1: "write"})
    us = {k: round(v * 1e6, 6) for k, v in a.parts.items()}
    assert us == {
        "syscall write": 4.0,  # 1-3, 13-15
        "user": 4.0,  # 3-4, 11-13, 15-16
        "syscall read": 4.0,  # 4-5, 10-11, 16-17, 22-23
        "blocked": 8.0,  # 5-9, 17-21
        "run queue, woken": 2.0,  # 9-10, 21-22
    }
    assert a.total_s == pytest.approx(22e-6)
    assert a.blocked_stacks == {"anon_pipe_read < vfs_read < ksys_read": pytest.approx(8e-6)}
    assert a.switches == {"voluntary": 2, "involuntary": 0}
    assert a.windows == 1
    assert trace.main_tid(trace.parse(lines)) == 10


def test_preemption_interrupts_and_a_gap_between_stretches() -> None:
    """Preempted while runnable: the run queue, not asleep; an interrupt on its CPU while it
    runs is the interrupt's; a silence longer than the gap is the tracer off (nothing
    counted across it, a second stretch)."""
    me, other = 5, 6
    lines: list[str] = []
    lines += _ev(me, 0, "raw_syscalls:sys_exit", "NR 0 = 0")
    lines += _ev(me, 2, "irq:irq_handler_entry", "irq=24 name=virtio", cpu=0)
    lines += _ev(me, 3, "irq:irq_handler_exit", "irq=24 ret=handled", cpu=0)
    lines += _ev(other, 3.5, "irq:irq_handler_entry", "irq=25 name=x", cpu=1)  # another CPU
    lines += _ev(other, 3.6, "irq:irq_handler_exit", "irq=25 ret=handled", cpu=1)
    lines += _ev(
        me, 4, "sched:sched_switch",
        f"prev_comm=p prev_pid={me} prev_prio=120 prev_state=R+ ==> next_comm=q "
        f"next_pid={other} next_prio=100",
    )  # fmt: skip
    lines += _ev(
        other, 9, "sched:sched_switch",
        f"prev_comm=q prev_pid={other} prev_prio=100 prev_state=S ==> next_comm=p "
        f"next_pid={me} next_prio=120",
    )  # fmt: skip
    lines += _ev(me, 10, "raw_syscalls:sys_enter", "NR 0 (0)")
    # the tracer off for a second, then a second stretch of 2 µs in a call
    lines += _ev(me, 1_000_010, "raw_syscalls:sys_enter", "NR 1 (0)")
    lines += _ev(me, 1_000_012, "raw_syscalls:sys_exit", "NR 1 = 0")
    a = trace.attribute(trace.parse(lines), me, {0: "read", 1: "write"})
    us = {k: round(v * 1e6, 6) for k, v in a.parts.items()}
    assert us == {"user": 4.0, "interrupts": 1.0, "run queue, preempted": 5.0, "syscall write": 2.0}
    assert a.switches == {"voluntary": 0, "involuntary": 1}
    assert a.windows == 2


def test_lost_events_leave_their_time_out_and_are_counted() -> None:
    """Where perf could not keep up, what happened is unknown: the time from the thread's
    last known state to its next event is not given to any part."""
    me = 7
    lines: list[str] = []
    lines += _ev(me, 0, "raw_syscalls:sys_exit", "NR 0 = 0")
    lines += _ev(me, 1, "raw_syscalls:sys_enter", "NR 1 (0)")
    lines.append(f" {me}/{me} [000] {T0 + 3e-6:.9f}: PERF_RECORD_LOST lost 12")
    lines += _ev(me, 8, "raw_syscalls:sys_exit", "NR 1 = 0")
    lines += _ev(me, 9, "raw_syscalls:sys_enter", "NR 0 (0)")
    a = trace.attribute(trace.parse(lines), me, {0: "read", 1: "write"})
    us = {k: round(v * 1e6, 6) for k, v in a.parts.items()}
    assert us == {"user": 2.0, "syscall write": 2.0}  # 0-1, 8-9; 1-3; nothing of 3-8
    assert a.lost == 12


def test_a_blocking_stack_is_named_below_the_schedulers_frames() -> None:
    assert (
        trace.stack_name(["__schedule", "schedule", "io_schedule", "folio_wait_bit_common",
                          "folio_wait_writeback", "ext4_truncate", "x"])
        == "folio_wait_bit_common < folio_wait_writeback < ext4_truncate"
    )  # fmt: skip
    assert trace.stack_name([]) == "(no kernel stack)"


def test_the_kernels_system_call_names_are_read_where_installed(tmp_path: Path) -> None:
    h = tmp_path / "unistd_64.h"
    h.write_text("#define __NR_read 0\n#define __NR_write 1\n#define __NR_getppid 110\n")
    assert trace.syscall_names(h) == {0: "read", 1: "write", 110: "getppid"}
    assert trace.syscall_names(tmp_path / "none.h") == {}


# --------------------------------------------------------------- the probe's window


def test_the_probe_enables_the_tracer_around_its_recorded_iterations(
    probe: str, tmp_path: Path
) -> None:
    """A stand-in for perf: it reads the probe's commands and acknowledges each as perf does
    ("ack\\n" and a NUL). One process: enable once before the samples, disable once after."""
    ctl_r, ctl_w = os.pipe()
    ack_r, ack_w = os.pipe()
    got: list[str] = []

    def tracer() -> None:
        with os.fdopen(ctl_r, "rb", buffering=0) as f:
            buf = b""
            while True:
                chunk = f.read(64)
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    got.append(line.decode())
                    os.write(ack_w, b"ack\n\0")

    th = threading.Thread(target=tracer, daemon=True)
    th.start()
    out = tmp_path / "s.lss"
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    r = subprocess.run(
        [probe, "syscall", "-n", "300", "--trace-ctl", f"{ctl_w},{ack_r}", "-o", str(out)],
        capture_output=True, text=True, timeout=60, env=env, pass_fds=(ctl_w, ack_r),
    )  # fmt: skip
    os.close(ctl_w)
    os.close(ack_r)
    th.join(timeout=10)
    os.close(ack_w)
    assert r.returncode == 0, r.stderr
    assert got == ["enable", "disable"]
    assert out.exists()


@pytest.mark.parametrize("value", ["3", "3,", "x,4", "900,901"])
def test_a_wrong_trace_ctl_is_one_line(probe: str, value: str, tmp_path: Path) -> None:
    r = run_probe(probe, "syscall", "-n", "10", "--trace-ctl", value, "-o", str(tmp_path / "x"))
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "--trace-ctl" in r.stderr


# --------------------------------------------------------------- rights, and a real trace


def test_without_perf_it_says_how_to_get_it(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from latscope.measure import explain

    monkeypatch.setattr(explain.shutil, "which", lambda name: None)
    r = cli("explain", "syscall", "-n", "100")
    assert r.returncode == 3, r.stderr
    assert "perf" in r.stderr and "linux-perf" in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1


@pytest.mark.skipif(
    not is_root or not shutil.which("setpriv"), reason="needs root to become nobody"
)
def test_without_the_right_it_says_which_and_exits_3(tmp_path: Path) -> None:
    import sys

    if int(Path("/proc/sys/kernel/perf_event_paranoid").read_text()) <= -1:
        pytest.skip("perf_event_paranoid is -1 here: every user may trace")
    r = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable,
         "-m", "latscope.cli", "explain", "syscall", "-n", "100", "--store", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 3, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "root" in lines[0] and "perf_event_paranoid" in lines[0]


needs_perf = pytest.mark.skipif(
    not is_root or shutil.which("perf") is None,
    reason="a real trace needs perf (linux-perf) and root",
)


@needs_perf
def test_a_real_explanation_of_a_system_call_is_kept_and_shown(cli, store: Path) -> None:
    r = cli("explain", "syscall", "-n", "3000", "--rounds", "1", "--json")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    parts = {p["part"]: p for p in rec["parts"]}
    assert sum(p["share"] for p in rec["parts"]) == pytest.approx(1.0)
    assert sum(p["ns_per_iteration"] for p in rec["parts"]) == pytest.approx(
        rec["traced_ns_per_iteration"]
    )
    # the timed call is a system call of its own: its part is there, and the thread slept
    # little or not at all
    assert "syscall getppid" in parts, list(parts)
    assert rec["overhead"]["column"] == "call" and rec["overhead"]["untraced_p50_ns"] > 0
    kept = store / "runs" / rec["run_id"] / "explain.json"
    assert json.loads(kept.read_text())["parts"] == rec["parts"]
    shown = cli("show", rec["run_id"])
    assert shown.returncode == 0, shown.stderr
    assert "where the time goes" in shown.stdout and "syscall getppid" in shown.stdout
    part = shown.stdout[shown.stdout.index("where the time goes") :]
    for line in part.splitlines():  # the explanation fits 80 columns
        assert len(line) <= 80, line


@needs_perf
def test_a_pipe_on_one_cpu_sleeps_in_pipe_read(cli, store: Path) -> None:
    r = cli("explain", "pipe", "-p", "cpus=0,0", "-n", "2000", "--rounds", "1", "--json")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    parts = {p["part"] for p in rec["parts"]}
    assert {"syscall read", "syscall write", "blocked"} <= parts, parts
    assert "pipe_read" in rec["blocked_stacks"][0]["stack"]
    # on one CPU the answer can come only while it is off its CPU: at least one switch per
    # iteration, unless perf lost events (then said)
    sw = rec["switches_per_iteration"]
    assert rec["lost_events"] > 0 or sw["voluntary"] + sw["involuntary"] >= 0.9


def test_show_prints_a_kept_explanation_and_ignores_a_damaged_one(cli, store: Path) -> None:
    r = cli("run", "syscall", "-n", "200", "--repeat", "1", "--quiet")
    assert r.returncode == 0, r.stderr
    run_id = r.stdout.strip()
    f = store / "runs" / run_id / "explain.json"
    rec = {
        "schema": 1, "tracer": "perf 6.1", "thread": "the measuring thread", "rounds": 1,
        "n": 200, "traced_ns_per_iteration": 900.0,
        "parts": [
            {"part": "syscall getppid", "ns_per_iteration": 600.0, "share": 600 / 900},
            {"part": "user", "ns_per_iteration": 299.5, "share": 299.5 / 900},
            {"part": "softirqs", "ns_per_iteration": 0.5, "share": 0.5 / 900},
        ],
        "blocked_stacks": [], "switches_per_iteration": {"voluntary": 0, "involuntary": 0},
        "lost_events": 0,
        "overhead": {"column": "call", "untraced_p50_ns": 200.0, "traced_p50_ns": 700.0,
                     "untraced_loop_ns": 300.0, "traced_loop_ns": 900.0},
    }  # fmt: skip
    f.write_text(json.dumps(rec))
    shown = cli("show", run_id)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout[shown.stdout.index("where the time goes") :]
    assert "syscall getppid" in text and "600.0 ns" in text and "66.7%" in text
    assert "other" in text  # softirqs under 0.1%
    flat = " ".join(text.split())
    assert "call median 200.0 ns untraced, 700.0 ns traced (3.50x)" in flat
    assert "The loop per iteration: 300.0 ns untraced, 900.0 ns traced" in flat
    md = cli("report", run_id, "--md", str(store.parent / "md"))
    assert md.returncode == 0, md.stderr
    text = (store.parent / "md" / "report.md").read_text()
    assert "Where the time goes" in text and "syscall getppid" in text and "66.7%" in text
    # the answer first: the sentence at a glance, before the run's section
    glance = text.index("Where the time goes (traced with perf 6.1")
    assert glance < text.index("## Run ") and "67% syscall getppid" in text
    for damaged in ("{", json.dumps({**rec, "schema": 99}), json.dumps({**rec, "parts": 3})):
        f.write_text(damaged)
        shown = cli("show", run_id)
        assert shown.returncode == 0 and "where the time goes" not in shown.stdout
        assert "Traceback" not in shown.stderr


def test_what_differs_between_two_explanations() -> None:
    """Two synthetic explanations: the parts set side by side, the largest change first, its
    share of the whole difference; a part only one of them has counts as 0 in the other."""
    from latscope.report.explain import difference, difference_lines

    def rec(parts: dict[str, float], stack: str) -> dict:
        total = sum(parts.values())
        return {
            "traced_ns_per_iteration": total,
            "parts": [
                {"part": k, "ns_per_iteration": v, "share": v / total} for k, v in parts.items()
            ],
            "blocked_stacks": [{"stack": stack, "ns_per_iteration": parts.get("blocked", 0)}],
        }

    a = rec({"blocked": 2000.0, "syscall read": 1000.0, "user": 500.0}, "anon_pipe_read")
    b = rec({"blocked": 60000.0, "syscall read": 1000.0, "syscall write": 12000.0,
             "user": 1500.0}, "anon_pipe_read")  # fmt: skip
    d = difference(a, b)
    assert [r["part"] for r in d] == ["blocked", "syscall write", "user", "syscall read"]
    assert d[0]["change_ns"] == 58000.0
    assert d[0]["share_of_change"] == pytest.approx(58000 / 71000)
    assert d[1]["a_ns"] == 0.0 and d[3]["change_ns"] == 0.0
    text = difference_lines(a, b)
    assert text[0].startswith("what differs, B - A per traced iteration: 3.500 µs -> 74.50 µs")
    assert "+58.00 µs" in text[2] and "82%" in text[2]
    assert all(len(line) <= 80 for line in text)
    assert not any("asleep in" in line for line in text)  # the same stack: nothing to say


@needs_perf
def test_two_scenarios_explained_side_by_side(cli, store: Path) -> None:
    r = cli(
        "explain", "syscall", "-n", "2000", "--rounds", "1", "--vs", "syscall op=read0", "--json"
    )
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["a"]["run_id"] != rec["b"]["run_id"]
    parts = {d["part"] for d in rec["difference"]}
    assert {"syscall getppid", "syscall read"} <= parts, parts
    for side in ("a", "b"):
        assert (store / "runs" / rec[side]["run_id"] / "explain.json").is_file()
    bad = cli("explain", "syscall", "--vs", "nosuch x=1")
    assert bad.returncode == 2 and "nosuch" in bad.stderr


@needs_perf
def test_a_stop_while_tracing_keeps_the_run_and_leaves_nothing(cli, store: Path) -> None:
    """SIGINT while perf traces: exit 130, one line saying the run was kept without its
    explanation, no perf or probe left, no temporary directory left."""
    import signal
    import time

    from conftest import children, procs_mentioning

    before = set(Path(tempfile_dir()).glob("latscope-explain-*"))
    p = cli.popen("explain", "pipe", "-p", "cpus=0,0", "-n", "20000", "--rounds", "3",
                  "--quiet", stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        tracing = False
        while not tracing and time.monotonic() < deadline and p.poll() is None:
            kids = children(p.pid)
            tracing = any(b"perf" in Path(f"/proc/{k}/cmdline").read_bytes()[:200]
                          for k in kids if Path(f"/proc/{k}").exists())  # fmt: skip
            time.sleep(0.02)
        assert tracing, "perf never started"
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "was kept, without its explanation" in lines[0], err
    time.sleep(0.3)
    assert procs_mentioning("latscope-explain-") == []  # perf and the probe it ran
    assert set(Path(tempfile_dir()).glob("latscope-explain-*")) == before


def tempfile_dir() -> str:
    import tempfile

    return tempfile.gettempdir()
