"""A store on a file system that is full or read-only (docs/store.md, "A full or read-only
store"): a run, an import and a suite's runs are kept whole or not at all, with one line and
exit 1 (full) or 3 (read-only) and the store's files as they were; the views (ls, history,
show, report) compute in memory what they cannot keep and work.  The store is a small tmpfs
mounted for each test (root only), filled with a file beside the store to leave a chosen
number of kilobytes free."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from latscope.store import table

SIZE_KB = 4096
FILLER = "filler"


@pytest.fixture()
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of `SIZE_KB` mounted at a fresh directory, unmounted at the end."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs as the store needs root")
    mnt = tmp_path / "fs"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE_KB}k,mode=0755", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(mnt: Path, free_kb: int) -> None:
    """Write a file beside the store so that about ``free_kb`` KB stay free on ``mnt``."""
    st = os.statvfs(mnt)
    left = st.f_bavail * st.f_frsize - free_kb * 1024
    chunk = b"\0" * (1 << 16)
    with open(mnt / FILLER, "ab") as f:
        while left > 0:
            try:
                left -= f.write(chunk[: min(left, len(chunk))])
                f.flush()
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                break


def listing(store: Path) -> list[str]:
    """Every entry under the store, relative, sorted."""
    return sorted(str(p.relative_to(store)) for p in store.rglob("*"))


def new_runs(before: list[str], after: list[str]) -> set[str]:
    return {p.split("/")[1] for p in set(after) - set(before) if p.count("/") == 1 and "runs/" in p}


def full_line(r: subprocess.CompletedProcess[str], code: int, words: str) -> str:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("latscope: error: "), lines[0]
    assert words in lines[0], lines[0]
    assert "Traceback" not in r.stderr + r.stdout
    return lines[0]


def seeded(cli, mnt: Path) -> Path:
    """A store on ``mnt`` holding one run (its table written), as the CLI's store."""
    store = mnt / "store"
    cli.store = store
    r = cli("run", "syscall", "-n", "500")
    assert r.returncode == 0, r.stderr
    return store


def kept_whole(cli, store: Path, run_id: str) -> None:
    """The run loads, `show` works and the summary table lists it."""
    from latscope import load

    run = load(run_id, store=store)
    assert run.summary().height >= 1
    r = cli("show", run_id)
    assert r.returncode == 0, r.stderr
    assert run_id in set(table.read(store).rows["run_id"].to_list())
    r = cli("ls")
    assert r.returncode == 0 and run_id in r.stdout, r.stderr


def whole_or_nothing(cli, store: Path, before: list[str], r) -> str | None:
    """A command that made a run on a nearly full store: one complete run added (None), or
    the store as it was and one line saying it is full (that line)."""
    after = listing(store)
    if r.returncode == 0:
        added = new_runs(before, after)
        assert len(added) == 1, (before, after)
        kept_whole(cli, store, added.pop())
        return None
    line = full_line(r, 1, "the store's file system is full")
    assert after == before
    return line


@pytest.mark.parametrize("free_kb", [0, 8, 28, 44, 52, 64, 76, 100, 300, 2000])
def test_run_whole_or_nothing(cli, small_fs: Path, free_kb: int) -> None:
    store = seeded(cli, small_fs)
    fill(small_fs, free_kb)
    before = listing(store)
    r = cli("run", "syscall", "-n", "2000")
    line = whole_or_nothing(cli, store, before, r)
    if line is not None:
        assert "nothing was kept" in line and "--store DIR" in line
    if free_kb == 0:
        assert r.returncode == 1
    if free_kb >= 2000:
        assert r.returncode == 0, r.stderr


def test_full_line_says_what_the_run_needs(cli, small_fs: Path) -> None:
    """Where the sample file fits but the rest does not, the line says how much the run
    needed and how much was free."""
    store = seeded(cli, small_fs)
    for free_kb in (48, 56, 64, 72):
        fill(small_fs, free_kb)
        before = listing(store)
        r = cli("run", "syscall", "-n", "2000")
        (small_fs / FILLER).unlink()
        if r.returncode == 0:
            continue
        line = full_line(r, 1, "did not fit")
        assert listing(store) == before
        if "it needs about" in line:
            assert f"{free_kb} KB were free" in line, line
            return
    pytest.skip("no free size here failed after the sample file was written")


CSV = "iteration,open_us,write_us\n" + "".join(
    f"{i},{3.5 + i % 7 * 0.1:.1f},{2.0 + i % 5 * 0.1:.1f}\n" for i in range(1, 400)
)


@pytest.mark.parametrize("free_kb", [0, 8, 28, 44, 100, 2000])
def test_import_whole_or_nothing(cli, small_fs: Path, tmp_path: Path, free_kb: int) -> None:
    src = tmp_path / "orwc.csv"
    src.write_text(CSV)
    store = seeded(cli, small_fs)
    fill(small_fs, free_kb)
    before = listing(store)
    r = cli("import", str(src))
    whole_or_nothing(cli, store, before, r)  # a new benchmark's partition directories too
    if free_kb == 0:
        assert r.returncode == 1
    if free_kb >= 2000:
        assert r.returncode == 0, r.stderr


SUITE = 'name = "tiny"\nrepeat = 2\nn = 2000\n[[scenario]]\nname = "a"\nbenchmark = "syscall"\n'


@pytest.mark.parametrize("free_kb", [0, 44, 120, 3000])
def test_suite_keeps_whole_runs(cli, small_fs: Path, tmp_path: Path, free_kb: int) -> None:
    suite = tmp_path / "tiny.toml"
    suite.write_text(SUITE)
    store = seeded(cli, small_fs)
    fill(small_fs, free_kb)
    before = listing(store)
    r = cli("suite", str(suite), "--no-figures")
    after = listing(store)
    assert "Traceback" not in r.stderr + r.stdout
    assert not [p for p in after if ".partial-" in p or p.rsplit("/", 1)[-1].startswith(".")]
    added = new_runs(before, after)
    for run_id in added:
        kept_whole(cli, store, run_id)
    if free_kb >= 3000:
        assert r.returncode == 0, r.stderr
        assert len(added) == 2
    else:
        assert r.returncode == 1, (r.stdout, r.stderr)
        assert "the store's file system is full" in r.stdout + r.stderr
        assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) <= 1, r.stderr
    if free_kb == 0:
        assert not added


@pytest.fixture()
def derived_gone(cli, small_fs: Path) -> Path:
    """A store of two runs whose summary table, rows cache, and one run's summary.parquet and
    facts.json are deleted: a view must rebuild them."""
    store = seeded(cli, small_fs)
    assert cli("run", "pipe", "-n", "300").returncode == 0
    with contextlib.suppress(FileNotFoundError):
        (store / ".summary-rows.parquet").unlink()
    subprocess.run(["rm", "-rf", str(store / table.TABLE_DIR)], check=True)
    first = sorted((store / "runs").iterdir())[0]
    (first / "summary.parquet").unlink()
    (first / "facts.json").unlink()
    return store


def views_work(cli, store: Path, out: Path) -> None:
    ids = sorted(p.name for p in (store / "runs").iterdir())
    assert len(ids) == 2
    r = cli("ls")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    for rid in ids:
        assert rid in r.stdout
    assert "2 runs, 0 partial, 0 skipped" in r.stdout, r.stdout
    r = cli("history", "syscall")
    assert r.returncode == 0, r.stderr
    assert "syscall call: p50 over time (1 runs)" in r.stdout, r.stdout
    for rid in ids:
        r = cli("show", rid)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
        assert rid in r.stdout
    r = cli("report", ids[0], "--md", str(out / "rep"), "--no-figures", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert ids[0] in (out / "rep" / "report.md").read_text()


def test_views_on_a_full_store(cli, small_fs: Path, derived_gone: Path, tmp_path: Path) -> None:
    fill(small_fs, 0)
    before = listing(derived_gone)
    views_work(cli, derived_gone, tmp_path)
    assert listing(derived_gone) == before  # nothing could be kept, nothing half written


def test_read_only_store(cli, small_fs: Path, derived_gone: Path, tmp_path: Path) -> None:
    r = subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot remount the tmpfs read-only: {r.stderr.strip()}")
    views_work(cli, derived_gone, tmp_path)
    full_line(cli("run", "syscall", "-n", "200"), 3, "read-only file system")
    src = tmp_path / "orwc.csv"
    src.write_text(CSV)
    full_line(cli("import", str(src)), 3, "read-only file system")
    rid = sorted(p.name for p in (derived_gone / "runs").iterdir())[0]
    full_line(cli("rm", rid), 3, "read-only file system")
