"""A CSV is read in blocks of rows (measure/csvread.py): the same file read in many small
blocks and in one gives the same run (samples, notes, summary) and the same refusal, word for
word, wherever in the file the bad value sits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from latscope.errors import BadInput
from latscope.measure import csvread
from latscope.measure.importer import import_csv, read_csv
from latscope.record import Run
from test_import import BAD, runs_in

#: Block sizes in bytes: a few rows, a line and a bit, and the whole file at once.
SMALL = (7, 64, 1000)
WHOLE = 1 << 30


def _read(f: Path, block: int, monkeypatch: pytest.MonkeyPatch, **kw: str) -> object:
    """read_csv with blocks of ``block`` bytes: the parsed file, or the refusal's line."""
    monkeypatch.setattr(csvread, "BLOCK", block)
    try:
        parsed = read_csv(f, **kw)
    except BadInput as e:
        return ("refused", e.message)
    cols = [(c.name, c.header, c.unit, c.ticks.tolist()) for c in parsed.columns]
    t = parsed.times.ticks.tolist() if parsed.times is not None else None
    return (parsed.rows, cols, t, parsed.notes, parsed.skipped, parsed.delimiter, parsed.sha256)


def _latencies(rows: int, seed: int = 5) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "iteration": np.arange(rows),
            "t_start_us": np.cumsum(np.round(rng.uniform(1.0, 3.0, rows), 3)),
            "label": rng.choice(["cold", "warm"], rows),
            "open_us": np.round(rng.lognormal(np.log(2.5), 0.3, rows), 3),
            "read_ns": np.rint(rng.lognormal(np.log(800.0), 0.2, rows)).astype(np.int64),
        }
    )


def test_many_blocks_give_the_run_one_block_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "lat.csv"
    # 200 rows of about 33 bytes: blocks of 7 bytes cut a row at each of its places many
    # times over (more rows add blocks, not kinds of cut)
    _latencies(200).write_csv(f)
    whole = _read(f, WHOLE, monkeypatch)
    assert whole[0] == 200 and [c[0] for c in whole[1]] == ["open", "read"]
    assert whole[2] is not None  # the time column
    for block in SMALL:
        assert _read(f, block, monkeypatch) == whole, block

    # the run kept from each: the same samples and the same summary
    frames = []
    for block, name in ((WHOLE, "whole"), (97, "blocks")):
        monkeypatch.setattr(csvread, "BLOCK", block)
        run, _ = import_csv(f, name=name, store=tmp_path / name)
        frames.append((run.samples, run.summary().drop("run_id")))
    assert_frame_equal(frames[0][0], frames[1][0])
    assert_frame_equal(frames[0][1], frames[1][1])


@pytest.mark.parametrize(
    "name,text",
    [
        ("crlf", "a_us,b_ns\r\n1.5,2\r\n3,4\r\n\r\n5,6\r\n"),
        ("cr only", "a_us\r1\r2\r3\r"),
        ("blank lines", "\n\nopen_us\n1\n\n2\n\n"),
        ("quoted newlines", 'name,open_us\n"a\nb",1\n"c ""d""\ne",2\n"f",3\n'),
        ("decimal comma late", "open_us;read_us\n1;2\n3;4\n5;6\n7,5;8\n9;1,25\n"),
        ("no final newline", "open_us,read_us\n1,2\n3,4"),
        ("BOM", "\ufeffopen_us\n1\n2\n3\n"),
        ("quoted header", '"open, first (us)",read_us\n1,2\n3,4\n'),
    ],
)
def test_awkward_files_read_alike_in_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str
) -> None:
    f = tmp_path / "f.csv"
    f.write_bytes(text.encode("utf-8"))
    whole = _read(f, WHOLE, monkeypatch)  # read, or refused (a blank line is a missing value)
    for block in (1, 2, 3, 5, 8, 13):
        assert _read(f, block, monkeypatch) == whole, (name, block)


@pytest.mark.parametrize("name,text,extra,words", BAD, ids=[b[0] for b in BAD])
def test_refusals_are_word_for_word_the_same_in_blocks(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    text: str,
    extra: tuple[str, ...],
    words: str,
) -> None:
    f = tmp_path / name
    f.write_text(text)
    kw = {"unit": extra[1]} if extra[:1] == ("--unit",) else {}
    kw |= {"time_column": extra[1]} if extra[:1] == ("--time-column",) else {}
    whole = _read(f, WHOLE, monkeypatch, **kw)
    assert whole[0] == "refused" and words in str(whole[1]), whole
    # byte by byte, and in blocks of 50 (a field of a megabyte: blocks of 50 and 4 KiB)
    for block in (1, 50) if len(text) < 100_000 else (50, 4096):
        assert _read(f, block, monkeypatch, **kw) == whole, block


@pytest.mark.parametrize(
    "bad,words",
    [
        ("-2.5", "line 4002 is negative (-2.5 µs)"),
        ("nan", "line 4002 is nan (1 such values)"),
        ("", "has 1 missing value(s), the first on line 4002"),
        ("oops", "line 4002: 'oops' is not a number"),
    ],
)
def test_a_bad_value_in_the_last_block_is_refused_and_nothing_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str, words: str
) -> None:
    f = tmp_path / "late.csv"
    df = _latencies(4000).select("open_us", "read_ns")
    text = df.write_csv() + f"{bad},800\n"
    f.write_text(text)
    monkeypatch.setattr(csvread, "BLOCK", 512)  # some 20 rows a block: 200 blocks
    store = tmp_path / "store"
    with pytest.raises(BadInput) as e:
        import_csv(f, store=store)
    assert words in e.value.message and len(e.value.message.splitlines()) == 1
    assert e.value.message == _read(f, WHOLE, monkeypatch)[1]
    assert runs_in(store) == []
    assert not list((store / "runs").glob(".partial-*")) if (store / "runs").exists() else True


def test_the_kept_samples_are_the_file_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Picosecond ticks of every value, through blocks, the sample file and back."""
    f = tmp_path / "v.csv"
    df = _latencies(2500)
    df.write_csv(f)
    monkeypatch.setattr(csvread, "BLOCK", 333)
    run, notes = import_csv(f, store=tmp_path / "s")
    back = Run(run.dir)
    np.testing.assert_allclose(back.values("open"), df["open_us"].to_numpy() * 1e3, rtol=1e-12)
    np.testing.assert_array_equal(back.values("read"), df["read_ns"].to_numpy().astype(float))
    assert any("label" in n for n in notes) and any("iteration" in n for n in notes)
