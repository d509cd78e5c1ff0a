"""The probe as an attacker and an unlucky user meet it: a dir= swapped for a symbolic link
mid-run, a file that appears at -o, an -o that cannot be written, queue names squatted,
SIGKILL of the probe, of a worker and of latscope itself, and numbers written the way the lab
never writes them. Each ends in one line and the documented exit, with nothing outside the
target touched and nothing left once the lab has looked (`latscope rm --partial`, the next
run, the abandoned run)."""

from __future__ import annotations

import ctypes
import math
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import CLI, children, is_root, probe_error_line, procs_mentioning, run_probe
from latscope import leftovers, samples
from latscope import probe as probe_mod
from latscope.errors import BadInput

ENV = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
AT_FDCWD, RENAME_EXCHANGE = -100, 2
IPC_CREAT, IPC_EXCL, IPC_RMID = 0o1000, 0o2000, 0


def wait_for(pred: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.02)
    pytest.fail(f"{what} did not happen within {timeout:g} s")


def sysv_ids(kind: str) -> set[int]:
    """The ids of the System V objects of a kind (sem, msg) now."""
    lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
    return {int(ln.split()[1]) for ln in lines[1:] if ln.split()}


def records_in(d: Path) -> list[leftovers.Record]:
    """The unreleased records of every leftovers file in d."""
    out: list[leftovers.Record] = []
    for f in d.glob(f"*{leftovers.MARK}*"):
        try:
            out += leftovers.parse(f.read_text())
        except OSError:
            pass
    return out


def record_files(d: Path) -> list[Path]:
    return list(d.glob(f"*{leftovers.MARK}*"))


def alive(pid: int) -> bool:
    return leftovers.alive(pid, None)


def entry_path(rec: leftovers.Record) -> Path:
    return Path(bytes.fromhex(rec.fields[3]).decode()) / bytes.fromhex(rec.fields[4]).decode()


# ------------------------------------------------------------------ the file benchmark's dir=


def test_dir_swapped_for_a_symlink_mid_run_touches_nothing_outside(
    probe: str, tmp_path: Path
) -> None:
    """The attack: a user who owns dir= exchanges it (atomically, back and forth, while the
    benchmark runs) with a symbolic link to a directory holding a victim file of the test
    file's name. The probe works in the directory it opened: the victim is neither truncated,
    written nor removed, nothing is created beside it, and the run completes."""
    libc = ctypes.CDLL(None, use_errno=True)
    d, victim_dir = tmp_path / "d", tmp_path / "victim"
    d.mkdir()
    victim_dir.mkdir()
    victim = victim_dir / "t.dat"
    victim.write_bytes(b"precious")
    before = victim.stat()
    (tmp_path / "s").symlink_to(victim_dir)
    out = tmp_path / "out.lss"
    p = subprocess.Popen(
        [probe, "file", "-p", f"dir={d}", "-p", "file=t.dat", "-p", "size=16", "-n", "1500"]
        + ["-o", str(out)],
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    wait_for(lambda: (d / "t.dat").exists() or p.poll() is not None, 60, "the test file")
    swaps = 0
    a, b = str(d).encode(), str(tmp_path / "s").encode()
    while p.poll() is None:
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
            swaps += 1
        elif ctypes.get_errno() in (22, 38):  # EINVAL, ENOSYS: no RENAME_EXCHANGE here
            p.kill()
            p.wait()
            pytest.skip("this file system cannot exchange two names (RENAME_EXCHANGE)")
        time.sleep(0.002)
    err = p.stderr.read() if p.stderr else ""
    if swaps % 2:  # put the directory back where it was
        libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    assert p.returncode == 0, err
    assert swaps > 10
    assert victim.read_bytes() == b"precious"
    after = victim.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_size,
    )
    assert sorted(os.listdir(victim_dir)) == ["t.dat"]
    assert list(d.iterdir()) == []  # the test file was removed from the directory it used
    assert sorted(x.name for x in tmp_path.iterdir()) == ["d", "out.lss", "s", "victim"]


def test_default_test_file_and_directory_names_cannot_be_guessed(
    probe: str, tmp_path: Path
) -> None:
    """The test file is latscope-PID-RANDOM.dat, in dir= or in a private directory
    latscope-PID-RANDOM of $TMPDIR: names nobody can take first; both removed afterwards."""
    d, tmpdir = tmp_path / "d", tmp_path / "t"
    d.mkdir()
    tmpdir.mkdir()
    pattern = re.compile(r"latscope-\d+-[0-9a-f]{16}(\.dat)?")
    paths = []
    for i, params in enumerate((["-p", f"dir={d}"], [], ["-p", f"dir={d}"], [])):
        out = tmp_path / f"{i}.lss"
        r = subprocess.run(
            [probe, "file", *params, "-n", "5", "--warmup", "1", "-o", str(out)],
            capture_output=True,
            text=True,
            env={**ENV, "TMPDIR": str(tmpdir)},
        )
        assert r.returncode == 0, r.stderr
        path = Path(samples.load(out).header["bench"]["path"])
        assert pattern.fullmatch(path.name), path
        if not params:
            assert path.parent.parent == tmpdir and pattern.fullmatch(path.parent.name), path
        paths.append(path)
    assert len(set(paths)) == len(paths)
    assert list(d.iterdir()) == [] and list(tmpdir.iterdir()) == []


@pytest.mark.skipif(not is_root, reason="cache=drop needs root")
def test_cold_cache_on_existing_file_still_works(probe: str, tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "c.lss"
    args = ["file", "-p", f"dir={d}", "-p", "cache=drop", "-p", "open=existing"]
    # two iterations, no warm-up: each drops the whole machine's page cache (its tests' files
    # too), and one existing file shows what five did
    r = run_probe(probe, *args, "-p", "order=rw", "-n", "2", "--warmup", "0", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.is_file() and list(d.iterdir()) == []
    assert record_files(tmp_path) == []


# ------------------------------------------------------------------ the output (-o)


def _state(pid: int) -> str:
    """The process's state letter (T: stopped), or "" once it has ended (a zombie, or gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""
    return "" if state in ("Z", "X") else state


def _held(probe: str, out: Path, n: int) -> subprocess.Popen[str] | None:
    """The probe on a pipe run of ``n`` round trips into ``out``, held (SIGSTOP) once its
    output's temporary is there and before its end; None where it ended first."""
    p = subprocess.Popen(
        [probe, "pipe", "-n", str(n), "-o", str(out)], stderr=subprocess.PIPE, text=True, env=ENV
    )
    temp = f"{out.name}.tmp.*"
    wait_for(lambda: list(out.parent.glob(temp)) or p.poll() is not None, 30, "the temporary")
    os.kill(p.pid, signal.SIGSTOP)
    wait_for(lambda: _state(p.pid) in ("T", ""), 30, "the probe's stop")
    if _state(p.pid) == "T" and not out.exists():
        return p
    os.kill(p.pid, signal.SIGCONT)
    p.communicate(timeout=300)
    return None


def test_a_file_that_appears_at_the_output_is_never_replaced(probe: str, tmp_path: Path) -> None:
    """The file appears while the probe is held between the output's temporary and its end;
    it runs on afterwards.  Held, a short run is as good as a long one (300,000 round trips
    cost a second of CPU time): only where it ended before it could be held is it run again,
    ten times as long."""
    for attempt, n in enumerate((20_000, 200_000, 2_000_000)):
        d = tmp_path / str(attempt)
        d.mkdir()
        out = d / "o.lss"
        p = _held(probe, out, n)
        if p is not None:
            break
    else:
        pytest.fail("the probe ended each time before it could be held")
    out.write_text("mine")
    os.kill(p.pid, signal.SIGCONT)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 1, err
    assert "appeared there during the run" in probe_error_line(err)
    assert out.read_text() == "mine"
    assert [x.name for x in d.iterdir()] == ["o.lss"]  # temporary and record removed


def _bad_output(tmp_path: Path, case: str) -> str:
    if case == "missing directory":
        return str(tmp_path / "nope" / "o.lss")
    if case == "parent is a file":
        (tmp_path / "f").write_text("x")
        return str(tmp_path / "f" / "o.lss")
    if case == "exists":
        (tmp_path / "o.lss").write_text("keep")
        return str(tmp_path / "o.lss")
    if case == "dangling symlink":
        (tmp_path / "o.lss").symlink_to(tmp_path / "elsewhere")
        return str(tmp_path / "o.lss")
    if case == "a directory":
        return str(tmp_path) + "/"
    if case == "name too long":
        return str(tmp_path / ("a" * 300))
    assert case == "a file system that makes no files"
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    return "/proc/latscope-test.lss"


@pytest.mark.parametrize(
    "case",
    [
        "missing directory",
        "parent is a file",
        "exists",
        "dangling symlink",
        "a directory",
        "name too long",
        "a file system that makes no files",
    ],
)
def test_an_output_that_cannot_be_written_is_refused_before_the_run(
    probe: str, tmp_path: Path, case: str
) -> None:
    """Refused at once (a run of this length would take minutes): exit 2, one line, no test
    file made, nothing changed."""
    d = tmp_path / "d"
    d.mkdir()
    out = _bad_output(tmp_path, case)
    before = {x.name: x.lstat().st_mtime_ns for x in tmp_path.iterdir()}
    args = ["file", "-p", f"dir={d}", "-p", "cache=fadvise", "-n", "100000", "-o", out]
    r = run_probe(probe, *args, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "-o " in probe_error_line(r.stderr)
    assert list(d.iterdir()) == []
    assert {x.name: x.lstat().st_mtime_ns for x in tmp_path.iterdir()} == before


def test_an_unwritable_output_directory_is_refused_before_the_run(
    probe: str, tmp_path: Path
) -> None:
    d = tmp_path / "ro"
    d.mkdir()
    if is_root:
        m = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "none", str(d)], capture_output=True
        )
        if m.returncode != 0:
            pytest.skip("cannot mount a read-only tmpfs here")
    else:
        d.chmod(0o555)
    try:
        r = run_probe(probe, "sysv_sem", "-n", "5000000", "-o", str(d / "o.lss"), timeout=60)
    finally:
        if is_root:
            subprocess.run(["umount", str(d)])
    assert r.returncode == 2, r.stderr
    assert "is not writable" in probe_error_line(r.stderr)


# ------------------------------------------------------------------ IPC names


def test_a_squatted_queue_name_is_left_alone(probe: str, tmp_path: Path) -> None:
    """Queues made beforehand under the names the probe used to take (latscope-PID-posix_mq-a
    and -b, the pid known by starting the probe from a stopped shell) neither stop the run nor
    are removed by it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "mq_open"):
        pytest.skip("no mq_open in this C library")
    out = tmp_path / "q.lss"
    sh = subprocess.Popen(
        ["sh", "-c", 'kill -STOP $$; exec "$0" "$@"', probe, "posix_mq", "-n", "2000"]
        + ["-o", str(out)],
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    stat = Path(f"/proc/{sh.pid}/stat")
    wait_for(lambda: stat.read_text().split(") ")[1].startswith("T"), 10, "the shell's stop")
    names = [f"/latscope-{sh.pid}-posix_mq-{x}".encode() for x in "ab"]
    libc.mq_open.restype = ctypes.c_int
    fds = [libc.mq_open(n, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600, None) for n in names]
    if min(fds) < 0:
        sh.kill()
        sh.wait()
        pytest.skip(f"cannot create a POSIX queue here (errno {ctypes.get_errno()})")
    try:
        os.kill(sh.pid, signal.SIGCONT)
        _, err = sh.communicate(timeout=120)
        assert sh.returncode == 0, err
        assert out.is_file()
        for n in names:  # still there: opened without O_CREAT
            fd = libc.mq_open(n, os.O_RDWR)
            assert fd >= 0, f"{n!r} was removed"
            os.close(fd)
    finally:
        for fd, n in zip(fds, names, strict=True):
            os.close(fd)
            libc.mq_unlink(n)


# ------------------------------------------------------------ kills: what is left, who removes it


LONG = {
    "sysv_sem": ["-n", "5000000"],
    "sysv_mq": ["-n", "5000000"],
    "file": ["-p", "cache=fadvise", "-n", "200000"],
}


def _start_run(cli: CLI, bench: str, *params: str, env: dict[str, str] | None = None) -> tuple:
    """`latscope run BENCH` as a process of its own, in one probe process (--repeat 1); returns
    it, its partial directory and the probe's record of the object it made (the object of the
    benchmark: a System V id, or the test file), once that exists."""
    args = ["run", bench, *LONG[bench], *params, "--repeat", "1", "--quiet"]
    p = cli.popen(*args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    runs = cli.store / "runs"

    def made() -> tuple[Path, leftovers.Record] | None:
        for d in runs.glob(".partial-*") if runs.is_dir() else []:
            for rec in records_in(d):
                if rec.kind.startswith("sysv_") or entry_path(rec).parent != d:
                    return d, rec
        return None

    partial, rec = wait_for(made, 60, f"the {bench} probe's record")  # type: ignore[misc]
    return p, partial, rec


def _probe_pids(cli: CLI) -> list[int]:
    return procs_mentioning(f"{cli.store}/runs/.partial-")


def _exists(rec: leftovers.Record) -> bool:
    if rec.kind == "sysv_sem":
        return int(rec.fields[0]) in sysv_ids("sem")
    if rec.kind == "sysv_msg":
        return int(rec.fields[0]) in sysv_ids("msg")
    return os.path.lexists(entry_path(rec))


def _kill_probe_and_latscope(cli: CLI, p: subprocess.Popen[str]) -> None:
    """SIGKILL the probe while latscope cannot look (stopped), then latscope: what a crash of
    the machine's user session or an OOM kill of both would leave."""
    os.kill(p.pid, signal.SIGSTOP)
    for pid in _probe_pids(cli):
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not _probe_pids(cli), 10, "the probe's end")
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)


@pytest.mark.parametrize(
    "bench,with_dir", [("sysv_sem", False), ("sysv_mq", False), ("file", True), ("file", False)]
)
def test_rm_partial_removes_what_a_killed_probe_left(
    cli: CLI, tmp_path: Path, bench: str, with_dir: bool
) -> None:
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    d = tmp_path / "d"
    d.mkdir()
    params = ["-p", f"dir={d}"] if with_dir else []
    p, partial, rec = _start_run(cli, bench, *params, env={"TMPDIR": str(tmpdir)})
    _kill_probe_and_latscope(cli, p)
    assert _exists(rec), "the object the killed probe made should still be there"
    r = cli("rm", "--partial")
    assert r.returncode == 0, r.stderr
    assert not partial.exists()
    assert not _exists(rec)
    assert list(d.iterdir()) == [] and list(tmpdir.iterdir()) == []


def test_the_next_run_removes_what_a_killed_probe_left(cli: CLI) -> None:
    p, partial, rec = _start_run(cli, "sysv_sem")
    _kill_probe_and_latscope(cli, p)
    assert _exists(rec)
    r = cli("run", "syscall", "-n", "200", "--quiet")
    assert r.returncode == 0, r.stderr
    assert not _exists(rec)
    assert partial.is_dir() and record_files(partial) == []  # the run itself: rm --partial's


def test_a_probe_killed_under_latscope_leaves_nothing(cli: CLI) -> None:
    """SIGKILL of the probe alone: latscope reports it (one line, exit 1) and abandons the run,
    removing what the probe recorded."""
    p, partial, rec = _start_run(cli, "sysv_mq")
    for pid in _probe_pids(cli):
        os.kill(pid, signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1, err
    assert "Traceback" not in err
    assert not partial.exists()
    assert not _exists(rec)


@pytest.mark.parametrize("bench", ["sysv_sem", "file"])
def test_the_probe_dies_with_latscope(cli: CLI, tmp_path: Path, bench: str) -> None:
    """SIGKILL of latscope: the kernel tells the probe (parent-death signal, SIGTERM), which
    stops within seconds and removes what it made, as for any signal."""
    d = tmp_path / "d"
    d.mkdir()
    params = ["-p", f"dir={d}"] if bench == "file" else []
    p, partial, rec = _start_run(cli, bench, *params)
    probes = _probe_pids(cli)
    assert probes
    p.kill()
    p.wait(timeout=10)
    wait_for(lambda: not any(alive(x) for x in probes), 10, "the probe's end")
    assert not _exists(rec)
    assert record_files(partial) == [] and not list(partial.glob("*.tmp.*"))
    assert list(d.iterdir()) == []
    r = cli("rm", "--partial")
    assert r.returncode == 0 and not partial.exists(), r.stderr


def test_a_killed_worker_leaves_nothing(probe: str, tmp_path: Path) -> None:
    """A worker killed mid-run ends the probe (exit 1, one line); the probe removes the
    System V set the worker made and could not remove, and its own record."""
    out = tmp_path / "w.lss"
    p = subprocess.Popen(
        [probe, "sysv_sem", "-n", "5000000", "--workers", "2", "-p", "cpus=0,0"] + ["-o", str(out)],
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )

    def made() -> list[leftovers.Record]:
        return [r for r in records_in(tmp_path) if r.kind == "sysv_sem"]

    rec = wait_for(made, 60, "the worker's record")[0]  # type: ignore[index]
    assert rec.pid in children(p.pid)
    os.kill(rec.pid, signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1, err
    assert "killed by signal 9" in probe_error_line(err)
    assert not _exists(rec)
    assert list(tmp_path.iterdir()) == []


def test_records_are_removed_on_a_clean_end(probe: str, tmp_path: Path) -> None:
    for bench in ("sysv_sem", "sysv_mq", "file"):
        r = run_probe(probe, bench, "-n", "200", "--workers", "2", "-o", str(tmp_path / bench))
        assert r.returncode == 0, r.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["file", "sysv_mq", "sysv_sem"]


# ------------------------------------------------------------------ a record cannot be forged


def _semget() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    semid = libc.semget(0, 1, IPC_CREAT | IPC_EXCL | 0o600)
    if semid < 0:
        pytest.skip(f"semget failed (errno {ctypes.get_errno()})")
    return int(semid)


def _semrm(semid: int) -> None:
    ctypes.CDLL(None, use_errno=True).semctl(semid, 0, IPC_RMID)


def _sem_row(semid: int) -> dict[str, int]:
    lines = Path("/proc/sysvipc/sem").read_text().splitlines()
    head = lines[0].split()
    for ln in lines[1:]:
        row = dict(zip(head, (int(x) for x in ln.split()), strict=True))
        if row["semid"] == semid:
            return row
    raise AssertionError(f"no semaphore set {semid}")


def _dead_pid() -> int:
    return 2**22 + 12345  # above the largest pid Linux hands out (pid_max is at most 2**22)


def test_a_forged_record_removes_nothing_of_anyone_else(tmp_path: Path) -> None:
    """A record whose maker is dead removes only the very object recorded (id, creator and
    change time for System V; directory, inode and type for files), and, when written by
    another user, only what that user owns."""
    semid = _semget()
    try:
        row = _sem_row(semid)
        victim = tmp_path / "victim"
        victim.write_text("precious")
        st, dst = victim.stat(), tmp_path.stat()
        dead = _dead_pid()
        wrong_time = f"sysv_sem 1.1 {dead} 0 {semid} {row['cuid']} {row['ctime'] + 1}"
        hexdir, hexname = bytes(str(tmp_path), "utf-8").hex(), b"victim".hex()
        wrong_ino = (
            f"file 1.2 {dead} 0 {dst.st_dev} {dst.st_ino} {st.st_ino + 1} {hexdir} {hexname}"
        )
        rec = tmp_path / "x.leftovers.1"
        rec.write_text(f"{leftovers.HEAD}\n{wrong_time}\n{wrong_ino}\n")
        leftovers.clean_dir(tmp_path)
        assert semid in sysv_ids("sem") and victim.read_text() == "precious"
        assert not rec.exists()  # its maker is dead: handled, then removed
        if is_root:  # the same records, right this time, but written by another user
            right = f"sysv_sem 1.1 {dead} 0 {semid} {row['cuid']} {row['ctime']}"
            ino = f"file 1.2 {dead} 0 {dst.st_dev} {dst.st_ino} {st.st_ino} {hexdir} {hexname}"
            rec.write_text(f"{leftovers.HEAD}\n{right}\n{ino}\n")
            os.chown(rec, 65534, 65534)
            leftovers.clean_dir(tmp_path)
            assert semid in sysv_ids("sem") and victim.read_text() == "precious"
            # and by root, the maker dead: both go
            rec.write_text(f"{leftovers.HEAD}\n{right}\n{ino}\n")
            os.chown(rec, 0, 0)
            leftovers.clean_dir(tmp_path)
            assert semid not in sysv_ids("sem") and not victim.exists()
    finally:
        _semrm(semid)


def test_a_record_of_a_live_maker_is_kept(tmp_path: Path) -> None:
    semid = _semget()
    try:
        row = _sem_row(semid)
        me = os.getpid()
        line = f"sysv_sem {me}.1 {me} {leftovers.proc_start_ticks(me)} {semid} {row['cuid']} "
        rec = tmp_path / "x.leftovers.2"
        rec.write_text(f"{leftovers.HEAD}\n{line}{row['ctime']}\n")
        leftovers.clean_dir(tmp_path)
        assert semid in sysv_ids("sem") and rec.exists()
        rec.write_text(rec.read_text() + f"released {me}.1\n")
        leftovers.clean_dir(tmp_path)
        assert semid in sysv_ids("sem") and not rec.exists()
    finally:
        _semrm(semid)


# ------------------------------------------------------------------ numbers


@pytest.mark.parametrize(
    "args",
    [
        ["-n", "+5"],
        ["-n", " 1"],
        ["-n", "1 "],
        ["-n", ""],
        ["-n", "0x10"],
        ["-n", "010"],
        ["-n", "1e3"],
        ["--warmup", "-1"],
        ["--workers", "+2"],
        ["-p", "batch=+5"],
        ["-p", "batch= 5"],
        ["-p", "batch=5 "],
        ["-p", "batch="],
        ["-p", "batch=0x10"],
        ["-p", "batch=99999999999999999999"],
        ["-p", "cpu=+0"],
        ["-p", "cpu= 0"],
    ],
)
def test_numbers_the_lab_never_writes_are_refused(
    probe: str, tmp_path: Path, args: list[str]
) -> None:
    for check in ([], ["--check"]):
        r = run_probe(probe, "syscall", *args, *check, "-o", str(tmp_path / "x.lss"))
        assert r.returncode == 2, (args, r.stderr)
        probe_error_line(r.stderr)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "value", ["nan", "inf", "-1", "+2", " 2", "2 ", "1e1", "0x1p1", "", "0.05"]
)
def test_peer_timeout_refuses_what_would_switch_stall_detection_off(
    probe: str, tmp_path: Path, value: str
) -> None:
    r = run_probe(probe, "pipe", "--peer-timeout", value, "-n", "10", "-o", str(tmp_path / "x"))
    assert r.returncode == 2, r.stderr
    assert "give seconds between 0.1 and 3600" in probe_error_line(r.stderr)
    assert list(tmp_path.iterdir()) == []


def test_peer_timeout_accepts_seconds(probe: str, tmp_path: Path) -> None:
    for value in ("2", "0.5", "2.0", "3600"):
        r = run_probe(probe, "pipe", "--peer-timeout", value, "-n", "50", "--check")
        assert r.returncode == 0, (value, r.stderr)


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 0.0, 4000.0])
def test_the_lab_refuses_the_same_peer_timeouts(tmp_path: Path, value: float) -> None:
    with pytest.raises(BadInput, match="give seconds between 0.1 and 3600"):
        probe_mod.probe_args("pipe", {}, tmp_path / "x.lss", peer_timeout=value)
    args = probe_mod.probe_args("pipe", {}, tmp_path / "y", peer_timeout=1.5)
    assert args[args.index("--peer-timeout") + 1] == "1.5"
