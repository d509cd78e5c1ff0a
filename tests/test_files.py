"""The one atomic writer (latscope.files): a reader sees the old file or the new one, never a
part; the temporary is fresh, hidden and never a path someone planted; a failure leaves
nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from latscope.errors import BadInput
from latscope.files import atomic_write, read_bytes, read_text, write_bytes, write_text


def test_replaces_the_target_whole(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")
    with atomic_write(target) as f:
        f.write(b"new, ")
        assert target.read_text() == "old"  # not visible until the block ends
        f.write(b"complete")
    assert target.read_text() == "new, complete"
    assert os.listdir(tmp_path) == ["report.html"]
    assert write_text(target, "µs") == target and target.read_bytes() == "µs".encode()


def test_a_failure_leaves_the_target_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_text("kept")
    with pytest.raises(RuntimeError), atomic_write(target) as f:
        f.write(b"half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "kept"
    assert os.listdir(tmp_path) == ["run.json"]


def test_a_link_at_the_target_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "samples.csv"
    target.symlink_to(victim)
    write_bytes(target, b"data")
    assert victim.read_text() == "precious"
    assert not target.is_symlink() and target.read_bytes() == b"data"


def test_the_temporary_is_fresh_hidden_and_in_the_target_directory(tmp_path: Path) -> None:
    target = tmp_path / "summary.parquet"
    planted = tmp_path / ".summary.parquet.tmp"  # a predictable name is never used
    planted.symlink_to(tmp_path / "elsewhere")
    with atomic_write(target) as f:
        names = [n for n in os.listdir(tmp_path) if n != planted.name]
        assert len(names) == 1 and names[0].startswith(".summary.parquet.")
        assert names[0].endswith(".tmp")
        assert os.readlink(f"/proc/self/fd/{f.fileno()}") == str(tmp_path / names[0])
    assert not (tmp_path / "elsewhere").exists()
    assert sorted(os.listdir(tmp_path)) == [planted.name, "summary.parquet"]


def test_new_files_get_the_mode_the_umask_allows(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        p = write_text(tmp_path / "a", "x")
    finally:
        os.umask(old)
    assert p.stat().st_mode & 0o777 == 0o640
    assert (write_text(tmp_path / "b", "x", mode=0o600)).stat().st_mode & 0o777 == 0o600


def test_reading_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for p, said in [
        (fifo, "not a regular file"),
        ("/dev/zero", "not a regular file"),
        (tmp_path, "is a directory"),
        (tmp_path / "missing", "no such file"),
    ]:
        with pytest.raises(BadInput, match=said):
            read_bytes(p, "a CSV file")


def test_reading_refuses_a_file_above_the_limit_before_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 1001)
    with pytest.raises(BadInput, match=r"1001 bytes, larger than a test file may be \(1000"):
        read_bytes(big, "a test file", limit=1000)
    assert read_bytes(big, "a test file", limit=1001) == b"x" * 1001


def test_text_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "latin1.csv"
    p.write_bytes(b"caf\xe9\n")
    with pytest.raises(BadInput, match=r"not UTF-8 text \(byte 3\)"):
        read_text(p, "a CSV file")
