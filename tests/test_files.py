"""The one atomic writer (latscope.files): a reader sees the old file or the new one, never a
part; the temporary is fresh, hidden and never a path someone planted; a failure leaves
nothing behind. The destination policy: an existing file or link is replaced only when asked
(the link itself, never what it points to), a FIFO, device or directory never, and the check
holds again at the final rename."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from latscope.errors import BadInput
from latscope.files import (
    atomic_write,
    check_destination,
    check_directory,
    output_directory,
    read_bytes,
    read_text,
    write_bytes,
    write_text,
)


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


# ------------------------------------------------------------------------------ destinations


def test_an_existing_destination_is_replaced_only_when_asked(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    assert check_destination(target) == target  # nothing there: fine
    target.write_text("old")
    with pytest.raises(BadInput, match=r"out.csv exists; --force replaces it$"):
        check_destination(target)
    assert check_destination(target, force=True) == target
    with pytest.raises(BadInput, match="exists; --force replaces it"):
        write_text(target, "new", replace=False)
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.csv"]
    write_text(target, "new", replace=True)
    assert target.read_text() == "new"


def test_a_file_that_appears_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    """The check comes before the work; the final rename refuses what appeared since."""
    target = tmp_path / "report.html"
    check_destination(target)
    with pytest.raises(BadInput, match="exists"), atomic_write(target, replace=False) as f:
        f.write(b"the report")
        target.write_text("someone else's")
    assert target.read_text() == "someone else's"
    assert os.listdir(tmp_path) == ["report.html"]  # no temporary left


def test_a_link_at_the_destination_is_refused_or_replaced_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "out").mkdir()
    target = tmp_path / "out" / "plot.png"
    target.symlink_to(victim)
    with pytest.raises(BadInput, match=r"plot.png exists \(a symbolic link\); --force replaces"):
        check_destination(target)
    with pytest.raises(BadInput, match="exists"):
        write_bytes(target, b"png", replace=False)
    assert target.is_symlink() and victim.read_text() == "precious"
    check_destination(target, force=True)
    write_bytes(target, b"png", replace=True)
    assert not target.is_symlink() and target.read_bytes() == b"png"
    assert victim.read_text() == "precious"
    dangling = tmp_path / "out" / "d.csv"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(BadInput, match="exists"):
        write_bytes(dangling, b"x", replace=False)
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_what_is_not_a_file_is_refused_even_with_force(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "x"
    if kind == "fifo":
        os.mkfifo(target)
        said = "is a FIFO"
    elif kind == "directory":
        target.mkdir()
        said = "is a directory"
    else:
        target = Path("/dev/null")
        said = "is a device"
    for force in (False, True):
        with pytest.raises(BadInput, match=said):
            check_destination(target, force=force)


def test_a_parent_that_is_missing_or_not_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for target, said in [
        (tmp_path / "missing" / "a.csv", "missing does not exist"),
        (tmp_path / "file" / "a.csv", "file is not a directory"),
        (tmp_path / "..", "give a file name"),
    ]:
        with pytest.raises(BadInput, match=said):
            check_destination(target)


def test_the_write_stays_in_the_directory_it_opened(tmp_path: Path) -> None:
    """The target's directory is opened once: swapping it for a link while the file is
    written does not move the file elsewhere."""
    d, moved, elsewhere = tmp_path / "d", tmp_path / "moved", tmp_path / "elsewhere"
    d.mkdir()
    elsewhere.mkdir()
    with atomic_write(d / "run.json") as f:
        f.write(b"{}")
        d.rename(moved)
        d.symlink_to(elsewhere)
    assert (moved / "run.json").read_bytes() == b"{}"
    assert os.listdir(elsewhere) == []


def test_an_output_directory_is_never_a_link_and_is_held_open(tmp_path: Path) -> None:
    victim_dir = tmp_path / "victim"
    victim_dir.mkdir()
    link = tmp_path / "report"
    link.symlink_to(victim_dir)
    with pytest.raises(BadInput, match="is a symbolic link"):
        check_directory(link)
    with pytest.raises(BadInput, match="is a symbolic link"), output_directory(link):
        pass
    assert os.listdir(victim_dir) == []
    (tmp_path / "plain").write_text("x")
    with pytest.raises(BadInput, match="exists and is not a directory"):
        check_directory(tmp_path / "plain")

    new = tmp_path / "new"
    with output_directory(new) as folder:
        assert folder.created
        folder.check(["report.md", "a.png"])
        folder.write_bytes("a.png", b"png")
        folder.write_text("report.md", "# r")
    assert sorted(os.listdir(new)) == ["a.png", "report.md"]
    with output_directory(new) as folder:
        with pytest.raises(BadInput, match="a.png exists; --force replaces it"):
            folder.check(["a.png"])
        folder.check(["a.png"], force=True)
        with pytest.raises(BadInput, match="exists"):
            folder.write_bytes("a.png", b"other")
        folder.write_bytes("a.png", b"other", replace=True)
    assert (new / "a.png").read_bytes() == b"other"


def test_a_directory_made_for_a_failed_write_goes_again(tmp_path: Path) -> None:
    d = tmp_path / "md"
    with pytest.raises(RuntimeError), output_directory(d) as folder:
        folder.write_text("report.md", "half")
        raise RuntimeError("drawing failed")
    assert not d.exists()
    d.mkdir()
    (d / "mine.txt").write_text("kept")
    with pytest.raises(RuntimeError), output_directory(d) as folder:
        raise RuntimeError("drawing failed")
    assert os.listdir(d) == ["mine.txt"]  # a directory that was there stays as it was


def test_without_renameat2_a_hard_link_refuses_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from latscope import files

    monkeypatch.setattr(files, "_renameat2", lambda: None)
    target = tmp_path / "a.csv"
    write_text(target, "one", replace=False)
    with pytest.raises(BadInput, match="exists"):
        write_text(target, "two", replace=False)
    assert target.read_text() == "one" and os.listdir(tmp_path) == ["a.csv"]


def test_the_heap_is_given_back_or_nothing_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """heap.give_back: glibc's malloc_trim where the C library has it, else nothing."""
    from latscope import heap

    heap.give_back()  # here (glibc), or a C library without malloc_trim: no error either way
    calls: list[int] = []
    monkeypatch.setattr(heap, "_malloc_trim", lambda: calls.append)
    heap.give_back()
    assert calls == [0]
    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)
    heap.give_back()
    assert calls == [0]
