"""A store other users can write to (docs/store.md, "A store other users can write to").

latscope often runs as root, and a store may sit where others can write: a shared /tmp or
/srv directory, a group directory. An unprivileged user who can write in a directory latscope
writes into can swap it for a symbolic link while latscope works, and root then writes (and
deletes) in the link's target. So, before anything is written, the store's root and every
directory above it must be owned by root or the user running latscope and not writable by
group or others unless sticky (as /tmp), and so must every directory latscope writes into
inside it; a symbolic link where the store keeps a directory of its own is never followed.
Whatever fails is refused with one line (exit 2) and nothing is written; reading such a store
goes on and writes nothing (no cache is refreshed). A sticky store (1777, root's) with its
directories made by root is a store shared on purpose, and accepted.

The race is played deterministically: the partial directory of a run is taken away and
replaced by a link to a victim's directory between the measurement and the commit (as a user
who could write in runs/ would), with a System V semaphore of a dead probe recorded in it:
the commit, which works through the directories held open, refuses; the victim's files are
untouched, the run is not kept, and the semaphore is removed through the held directory.

These tests build stores owned by other users and modes that only root can set: they need
root (`pytest.skip` otherwise); the other user is uid 65534 (nobody).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import sysv_objects
from synth import lognormal, make_run
from test_planted_symlinks import Victim, refused

NOBODY = 65534
RUN = ("run", "syscall", "-n", "200", "--repeat", "1", "--quiet")


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: stores owned by another user, modes only root can set")


def tree(top: Path) -> dict[str, tuple[object, ...]]:
    """Everything under ``top`` (links not followed): type, mode, owner, size, inode,
    modification time, a link's target and a file's contents."""
    out: dict[str, tuple[object, ...]] = {}
    if not os.path.lexists(top):
        return out
    for d, dirs, files in os.walk(top):
        for name in [".", *dirs, *files]:
            p = Path(d) / name
            st = os.lstat(p)
            extra: object = None
            if stat.S_ISLNK(st.st_mode):
                extra = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                extra = p.read_bytes()
            key = str(p.relative_to(top))
            out[key] = (st.st_mode, st.st_uid, st.st_ino, st.st_mtime_ns, st.st_size, extra)
    return out


def runs_in(store: Path) -> list[str]:
    d = store / "runs"
    return sorted(os.listdir(d)) if d.is_dir() else []


@pytest.fixture()
def shared(tmp_path: Path) -> Iterator[Path]:
    """A directory every user can reach (pytest's own is private to root), removed after."""
    d = Path(tempfile.mkdtemp(prefix="latscope-shared-", dir="/tmp"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _store_0777(store: Path) -> tuple[Path, str]:
    store.mkdir()
    store.chmod(0o777)
    return store, "is writable by every user (mode 0777)"


def _store_0775(store: Path) -> tuple[Path, str]:
    store.mkdir()
    store.chmod(0o775)
    return store, "is writable by its group (mode 0775)"


def _store_of_nobody(store: Path) -> tuple[Path, str]:
    store.mkdir()
    os.chown(store, NOBODY, NOBODY)
    return store, "is owned by nobody (uid 65534), not by you or root"


def _parent_0777(store: Path) -> tuple[Path, str]:
    parent = store.parent / "open"
    parent.mkdir()
    parent.chmod(0o777)
    return parent / "store", f"{parent}, above the store"


def _runs_0777(store: Path) -> tuple[Path, str]:
    (store / "runs").mkdir(parents=True)
    (store / "runs").chmod(0o777)
    return store, f"{store / 'runs'} is writable by every user"


def _runs_of_nobody(store: Path) -> tuple[Path, str]:
    (store / "runs").mkdir(parents=True)
    os.chown(store / "runs", NOBODY, NOBODY)
    return store, f"{store / 'runs'} is owned by nobody"


UNSAFE = {
    "store 0777": _store_0777,
    "store 0775": _store_0775,
    "store of another user": _store_of_nobody,
    "parent 0777 without sticky bit": _parent_0777,
    "runs/ 0777": _runs_0777,
    "runs/ of another user": _runs_of_nobody,
}


def _suite(tmp_path: Path) -> Path:
    f = tmp_path / "tiny.toml"
    f.write_text(
        'name = "tiny"\nrepeat = 1\n[[scenario]]\nname = "sys"\nbenchmark = "syscall"\nn = 200\n'
    )
    return f


def _csv(tmp_path: Path) -> Path:
    f = tmp_path / "in.csv"
    f.write_text("call_ns\n" + "\n".join(str(500 + i % 7) for i in range(100)) + "\n")
    return f


COMMANDS = {
    "run": lambda tmp: list(RUN),
    "import": lambda tmp: ["import", str(_csv(tmp)), "--quiet"],
    "suite": lambda tmp: ["suite", str(_suite(tmp)), "--no-figures", "--quiet"],
    "trust": lambda tmp: ["trust", "syscall", "--time", "0.3", "--pairs", "2", "--quiet"],
}


# ------------------------------------------------------------------------------ refused


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kind", list(UNSAFE))
def test_a_store_others_can_write_to_is_refused(
    cli, tmp_path: Path, kind: str, command: str
) -> None:
    """One line saying which directory, why and what to do; exit 2; nothing written (not
    even the store's directories), nothing measured."""
    need_root()
    store, said = UNSAFE[kind](tmp_path / "store")
    args = COMMANDS[command](tmp_path)
    before = tree(tmp_path)
    r = cli(*args, "--store", str(store))
    refused(r, said, "chmod" if "writable" in said else "--store DIR")
    assert tree(tmp_path) == before


def test_the_messages_say_how_to_fix_it(cli, tmp_path: Path) -> None:
    need_root()
    store, _ = _store_0777(tmp_path / "store")
    r = cli(*RUN, "--store", str(store))
    refused(r, f"the store {store} is writable", f"'chmod go-w {store}'", f"'chmod +t {store}'")
    store.chmod(0o755)
    store, _ = _parent_0777(tmp_path / "x")
    r = cli(*RUN, "--store", str(store))
    refused(r, "keep the store elsewhere (--store DIR)")


def test_rm_in_a_store_others_can_write_to_is_refused(cli, store: Path) -> None:
    """`rm` renames and deletes in runs/: refused, the run stays."""
    need_root()
    run = make_run(store, {"call": lognormal(300, 500.0, seed=1)})
    store.chmod(0o777)
    before = tree(store)
    refused(cli("rm", run.id), "is writable by every user")
    assert tree(store) == before
    os.mkdir(store / "runs" / f".partial-{run.id}x")  # killed long ago, ownerless
    os.utime(store / "runs" / f".partial-{run.id}x", (0, 0))
    before = tree(store)
    refused(cli("rm", "--partial"), "is writable by every user")
    assert tree(store) == before


def test_reading_a_store_others_can_write_to_writes_nothing(cli, store: Path) -> None:
    """`ls`, `history` and `show` read it as it is: the summary it lacks (and the summary
    table) are computed from the samples, and never written."""
    need_root()
    run = make_run(store, {"call": lognormal(300, 500.0, seed=1)})
    (store / "runs" / run.id / "summary.parquet").unlink()
    shutil.rmtree(store / "summary")
    store.chmod(0o777)
    before = tree(store)
    for args in (("ls",), ("history", "synthetic"), ("show", run.id)):
        r = cli(*args)
        assert r.returncode == 0, r.stderr
        assert r.stderr.strip() == "", r.stderr
    assert run.id in cli("ls").stdout
    assert tree(store) == before


# ------------------------------------------------------------------------------ accepted


def test_a_sticky_store_with_its_directories_made_by_root_is_accepted(cli, tmp_path: Path) -> None:
    """1777, root's, with runs/ made by root 1777: a store shared on purpose. The run is
    kept, its directory root's and writable by root alone."""
    need_root()
    store = tmp_path / "shared"
    store.mkdir()
    store.chmod(0o1777)
    (store / "runs").mkdir()
    (store / "runs").chmod(0o1777)
    r = cli(*RUN, "--store", str(store))
    assert r.returncode == 0, r.stderr
    (rid,) = runs_in(store)
    st = os.lstat(store / "runs" / rid)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) & 0o022 == 0
    assert rid in cli("ls", "--store", str(store)).stdout


def test_a_store_in_a_sticky_directory_and_through_a_link_of_root_is_accepted(
    cli, tmp_path: Path
) -> None:
    """A parent like /tmp (1777) is no reason to refuse; a link to the store that root made
    there is followed on the way (it cannot be swapped by another user)."""
    need_root()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    real = tmp_path / "real"
    real.mkdir()
    (tmp / "link").symlink_to(real)
    r = cli(*RUN, "--store", str(tmp / "link"))
    assert r.returncode == 0, r.stderr
    assert len(runs_in(real)) == 1
    r = cli(*RUN, "--store", str(tmp / "store"))
    assert r.returncode == 0, r.stderr
    assert len(runs_in(tmp / "store")) == 1


def test_a_link_of_another_user_in_a_sticky_directory_is_not_followed(cli, tmp_path: Path) -> None:
    need_root()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp / "link").symlink_to(victim)
    os.lchown(tmp / "link", NOBODY, NOBODY)
    refused(cli(*RUN, "--store", str(tmp / "link")), "is a symbolic link of nobody")
    assert os.listdir(victim) == []


def test_another_user_runs_into_a_shared_store(cli, shared: Path) -> None:
    """A user other than root measures into a sticky store root set up (1777, its runs/
    too): the run is theirs; root then reads it, and root's own runs go in beside it (in
    this process: root's run needs no process of its own)."""
    need_root()
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is needed to run as another user")
    store = shared / "store"
    store.mkdir()
    store.chmod(0o1777)
    (store / "runs").mkdir()
    (store / "runs").chmod(0o1777)
    env = {**os.environ, "HOME": str(shared), "COLUMNS": "200"}
    as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    argv = [*as_nobody, sys.executable, "-m", "latscope.cli", *RUN, "--store", str(store)]
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0 and "Permission denied" in r.stderr:
        pytest.skip(f"latscope cannot run as nobody here: {r.stderr.strip()[:200]}")
    assert r.returncode == 0, r.stderr
    (rid,) = runs_in(store)
    assert os.lstat(store / "runs" / rid).st_uid == NOBODY
    r = cli(*RUN, "--store", str(store), env={"HOME": str(shared)})
    assert r.returncode == 0, r.stderr
    assert len(runs_in(store)) == 2


# ------------------------------------------------------------------------------ links


@pytest.mark.parametrize("where", ["runs", "suites", "reports", "trust"])
def test_a_link_where_the_store_keeps_a_directory(
    cli, store: Path, tmp_path: Path, where: str
) -> None:
    """A link planted at runs/, suites/, reports/ or trust/ before a command that writes
    there: refused before the first run, with one line; the link's target untouched."""
    need_root()
    victim = Victim(tmp_path)
    link = victim.plant(store / where, to_dir=True, temporaries=False)
    command = {"runs": "run", "suites": "suite", "reports": "suite", "trust": "trust"}[where]
    r = cli(*COMMANDS[command](tmp_path))
    refused(r, f"{link} is a symbolic link where the store keeps a directory of its own")
    assert link.is_symlink()
    assert not [n for n in runs_in(store) if not n.startswith(".")]
    victim.assert_untouched()


def test_a_link_at_the_summary_table(cli, store: Path, tmp_path: Path) -> None:
    """The summary table is a cache: a link at STORE/summary is never written through; the
    run is kept all the same (its rows are read from its directory), and `ls` says so."""
    need_root()
    victim = Victim(tmp_path)
    link = victim.plant(store / "summary", to_dir=True, temporaries=False)
    r = cli(*RUN)
    assert r.returncode == 0, r.stderr
    assert len(runs_in(store)) == 1
    r = cli("ls")
    assert r.returncode == 0 and runs_in(store)[0] in r.stdout
    assert "a symbolic link" in r.stderr
    assert link.is_symlink()
    victim.assert_untouched()


# ------------------------------------------------------------------------------ the race


def _dead_semaphore(directory: Path) -> tuple[int, int]:
    """A System V semaphore set made by a process that has ended, recorded as a killed
    probe records it (docs/probe-cli.md, "Leftovers") in ``directory``: (id, ctime)."""
    from latscope import leftovers

    code = (
        "import ctypes, os\n"
        "sid = ctypes.CDLL(None, use_errno=True).semget(0, 1, 0o1000 | 0o600)\n"
        "s = open('/proc/self/stat').read()\n"
        "print(sid, os.getpid(), s[s.rindex(')') + 2:].split()[19])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    sid, pid, start = (int(x) for x in out.stdout.split())
    assert sid >= 0
    row = _semaphores()[sid]
    line = f"sysv_sem {pid}.1 {pid} {start} {sid} {row['cuid']} {row['ctime']}"
    (directory / "samples.lss.leftovers.race").write_text(f"{leftovers.HEAD}\n{line}\n")
    return sid, row["ctime"]


def _semaphores() -> dict[int, dict[str, int]]:
    lines = Path("/proc/sysvipc/sem").read_text().splitlines()
    names = lines[0].split()
    rows = [dict(zip(names, (int(v) for v in ln.split()), strict=True)) for ln in lines[1:]]
    return {r["semid"]: r for r in rows}


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_a_partial_directory_swapped_for_a_link_before_the_commit(
    cli, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the measurement and the commit, the run's partial directory is taken away and
    a link to a victim's directory (holding a run.json, a summary.parquet and an owner.json
    of its own) put in its place, with a dead probe's semaphore recorded in the directory:
    the commit refuses (one line, exit 2), nothing in the victim's directory is written or
    deleted, the run is not kept, and the semaphore is gone (cleaned through the directory
    held open, before it was emptied)."""
    need_root()
    from latscope.store import Store

    victim = tmp_path / "victim"
    victim.mkdir()
    for name in ("run.json", "summary.parquet", "owner.json", "samples.lss"):
        (victim / name).write_text(f"the victim's {name}\n")
    before = tree(victim)
    moved = tmp_path / "moved"
    made: dict[str, int] = {}
    commit = Store.commit

    def swapped(self: Store, run_id: str, partial: Path, *args: object, **kw: object) -> Path:
        os.rename(partial, moved)  # the directory taken away...
        partial.symlink_to(victim)  # ...and a link to the victim in its place
        made["sid"], made["ctime"] = _dead_semaphore(moved)
        return commit(self, run_id, partial, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "commit", swapped)
    sysv_before = set(sysv_objects())
    try:
        r = cli(*RUN)
        refused(r, "was replaced by a symbolic link", "the run is not kept")
        assert tree(victim) == before
        assert runs_in(store) == []  # no run, no partial directory, no link
        assert os.listdir(moved) == []  # emptied through its descriptor
        assert made["sid"] not in _semaphores()
        left = {
            k
            for k, users in sysv_objects().items()
            if k not in sysv_before and not any(_alive(u) for u in users)
        }
        assert not left, left
    finally:
        row = _semaphores().get(made.get("sid", -1))
        if row is not None and row["ctime"] == made["ctime"]:
            ctypes.CDLL(None).semctl(made["sid"], 0, 0)  # IPC_RMID: never left by a test


def test_a_partial_directory_swapped_for_another_directory_before_the_commit(
    cli, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same with a directory in the link's place (a rename within runs/): refused, and
    that directory is left as it is (it is not the one latscope made)."""
    need_root()
    from latscope.store import Store

    moved = tmp_path / "moved"
    other = tmp_path / "other"
    other.mkdir()
    (other / "precious").write_text("theirs\n")
    commit = Store.commit

    def swapped(self: Store, run_id: str, partial: Path, *args: object, **kw: object) -> Path:
        os.rename(partial, moved)
        os.rename(other, partial)
        return commit(self, run_id, partial, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "commit", swapped)
    r = cli(*RUN)
    refused(r, "was replaced by another directory", "the run is not kept")
    (partial,) = runs_in(store)
    assert partial.startswith(".partial-")
    assert os.listdir(store / "runs" / partial) == ["precious"]
    assert os.listdir(moved) == []
