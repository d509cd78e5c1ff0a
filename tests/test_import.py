"""Importing CSVs measured by other programs (like the lab reports'), writing sample files, and
the imported run going through show, export and report like any other run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from latscope import samples
from latscope.errors import BadInput
from latscope.measure import importer
from latscope.measure.importer import import_csv, read_csv, split_unit
from latscope.record import Run
from latscope.store import Store


def one_error_line(r: subprocess.CompletedProcess[str], words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("latscope: error: ")
    assert words in lines[0], lines[0]
    assert "Traceback" not in r.stderr + r.stdout


def runs_in(store: Path) -> list[dict]:
    return Store(store).list_meta()


# ---------------------------------------------------------------------------- samples.write


def test_write_round_trips_through_the_loader(tmp_path: Path) -> None:
    header = {
        "benchmark": "x",
        "clock": {"name": "c", "ns_per_tick": 0.5},
        "columns": [
            {"name": "t_start", "kind": "time"},
            {"name": "a", "kind": "duration"},
        ],
    }
    t = np.arange(5, dtype=np.int64) * 100
    a = np.array([3, 1, 4, 1, 5], dtype=np.int64)
    p = samples.write(tmp_path / "s.lss", header, {"t_start": t, "a": a})
    f = samples.load(p)
    assert f.header["n"] == 5 and f.header["format_version"] == 2 and f.version == 2
    assert f.duration_columns == ["a"]
    np.testing.assert_array_equal(f.ticks["a"], a)
    np.testing.assert_allclose(f.ns("a"), a * 0.5)
    assert list(tmp_path.iterdir()) == [p]  # no temporary file left
    with pytest.raises(BadInput, match="exists"):
        samples.write(p, header, {"t_start": t, "a": a})
    raw = p.read_bytes()
    (tmp_path / "cut.lss").write_bytes(raw[:-10])
    with pytest.raises(BadInput, match="truncated"):
        samples.load(tmp_path / "cut.lss")
    with pytest.raises(ValueError):
        samples.write(tmp_path / "f.lss", header, {"t_start": t, "a": a.astype(float)})


# ---------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "header,name,unit",
    [
        ("open_us", "open", "µs"),
        ("open_µs", "open", "µs"),
        ("read_ns", "read", "ns"),
        ("Write (ms)", "Write", "ms"),
        ("close [us]", "close", "µs"),
        ("t_s", "t", "s"),
        ("Open", "Open", None),
        ("status", "status", None),
    ],
)
def test_units_in_headers(header: str, name: str, unit: str | None) -> None:
    n, u = split_unit(header)
    assert n == name
    assert (u[0] if u else None) == unit


def test_report_001_style_integer_microseconds(tmp_path: Path, store: Path) -> None:
    # iteration,open_us,write_us,read_us,close_us (QueryPerformanceCounter in µs)
    f = tmp_path / "win.csv"
    f.write_text(
        "iteration,open_us,write_us,read_us,close_us\n"
        + "".join(f"{i},{550 + i % 7},{28 + i % 3},{9 + i % 2},{46 + i % 5}\n" for i in range(500))
    )
    run, notes = import_csv(f, store=store)
    assert run.benchmark == "imported" and run.n == 500
    assert run.columns == ["open", "write", "read", "close"]
    assert any("iteration" in n and "skipped" in n for n in notes)
    np.testing.assert_allclose(run.values("open")[:3], [550_000.0, 551_000.0, 552_000.0])
    clk = run.clock
    assert clk["overhead_ns"] is None and clk["ns_per_tick"] == 0.001
    assert clk["resolution_ns"] == pytest.approx(1000.0) and clk["resolution_guessed"]
    assert run.meta["params"] == {"file": "win.csv", "unit": "µs"}
    assert not run.has_times
    assert run.samples["t_start_s"].null_count() == 500


def test_report_000_style_float_microseconds_with_unit_flag(tmp_path: Path, store: Path) -> None:
    f = tmp_path / "native.csv"
    f.write_text(
        "Open,Write,Read,Close\n124.88,5.70,0.86,12.76\n86.08,4.73,0.69,10.81\n"
        "125.01,5.71,0.85,12.70\n"
    )
    with pytest.raises(BadInput, match="pass --unit"):
        read_csv(f)
    run, _ = import_csv(f, unit="us", name="Linux native cached", store=store)
    assert run.columns == ["open", "write", "read", "close"]
    # fractional microseconds survive exactly (picosecond ticks)
    assert run._file.ticks["read"].tolist() == [860_000, 690_000, 850_000]
    np.testing.assert_allclose(run.values("open"), [124_880.0, 86_080.0, 125_010.0], rtol=1e-12)
    assert run.clock["resolution_ns"] == pytest.approx(10.0)  # 0.01 µs steps
    assert run.meta["run"]["tags"]["name"] == "Linux native cached"


def test_mixed_units_semicolons_decimal_comma_and_times(tmp_path: Path, store: Path) -> None:
    f = tmp_path / "pp.csv"
    f.write_text(
        "idx;t (s);rtt (ns);oneway_us\n0;0,000000;4300;2,1\n1;0,000010;4400;2,2\n"
        "2;0,000020;4350;2,15\n"
    )
    run, notes = import_csv(f, store=store)
    assert run.columns == ["rtt", "oneway"]
    assert "rtt/2" in run.derived_columns
    np.testing.assert_allclose(run.values("rtt"), [4300, 4400, 4350])
    np.testing.assert_allclose(run.values("oneway"), [2100, 2200, 2150])
    assert run.has_times
    np.testing.assert_allclose(run.times_s(), [0.0, 1e-5, 2e-5])
    assert any("start time" in n for n in notes)
    assert run.meta["params"]["unit"] == "rtt=ns, oneway=µs"


def test_label_column_is_skipped_with_a_note(tmp_path: Path, store: Path) -> None:
    f = tmp_path / "l.csv"
    f.write_text("scenario,open_ns\ncached,100\ncached,110\ncold,300\n")
    run, notes = import_csv(f, store=store)
    assert run.columns == ["open"]
    assert any("scenario" in n and "not numeric" in n for n in notes)


def test_own_export_imports_back(tmp_path: Path, store: Path) -> None:
    f = tmp_path / "e.csv"
    pl.DataFrame(
        {"iteration": [0, 1, 2], "t_start_s": [0.0, 1e-6, 2e-6], "call_ns": [50.5, 51.0, 49.25]}
    ).write_csv(f)
    run, _ = import_csv(f, store=store)
    assert run.columns == ["call"] and run.has_times
    np.testing.assert_allclose(run.values("call"), [50.5, 51.0, 49.25])


# ---------------------------------------------------------------------------- bad input


BAD = [
    ("empty.csv", "", (), "the file is empty"),
    ("blank.csv", "\n\n", (), "the file is empty"),
    ("header.csv", "open_us,read_us\n", (), "a header but no rows"),
    ("labels.csv", "name,label\nx,y\nz,w\n", (), "no numeric columns"),
    ("nounit.csv", "Open,Write\n1,2\n3,4\n", (), "pass --unit"),
    ("nan.csv", "open_us\n1\nNaN\n3\n", (), "line 3 is nan"),
    ("inf.csv", "open_us\n1\ninf\n3\n", (), "line 3 is inf"),
    ("neg.csv", "open_us\n1\n-2\n3\n", (), "negative"),
    ("missing.csv", "open_us,read_us\n1,\n2,3\n", (), "missing value"),
    ("text.csv", "open_us\n1\nN/A\n3\n4\n", (), "'N/A' is not a number"),
    ("conflict.csv", "open_us\n1\n2\n", ("--unit", "ns"), "says µs in its header"),
    ("badunit.csv", "open\n1\n2\n", ("--unit", "parsec"), "--unit parsec"),
    ("back.csv", "t_s,open_us\n0.2,1\n0.1,2\n", (), "goes backwards"),
    ("onlyindex.csv", "iteration\n0\n1\n2\n", (), "no columns of latencies"),
    ("notime.csv", "open_us\n1\n2\n", ("--time-column", "t"), "--time-column t"),
    ("ragged.csv", "open_us,read_us\n1,2\n3,4,5\n", (), "not a readable CSV file"),
    ("short.csv", "open_us,read_us\n1,2\n3\n", (), "missing value"),
    ("minusinf.csv", "open_us\n1\n-inf\n", (), "line 3 is -inf"),
    ("nanword.csv", "open_us\n1\nnan\n2\n", (), "line 3 is nan"),
    ("e400.csv", "open_us\n1\n1e400\n", (), "line 3: '1e400' is too large for a number"),
    ("enormous.csv", "open_us\n1\n" + "9" * 30 + "\n", (), "too large for µs"),
    (
        "digits.csv",
        "open_us\n1\n" + "9" * 400 + "\n",
        (),
        "'9999999999999999999999999999999999999999…' is too large",
    ),
    ("negzero.csv", "t_s,open_us\n0,1\n-1e-9,2\n", (), "goes backwards"),
    ("parsec.csv", "open_parsec\n5\n3\n", (), "no unit for column open_parsec"),
    ("twice.csv", "open_us,open_us\n1,2\n", (), "column 'open_us' appears twice"),
    ("longname.csv", "o" * 200 + "_us\n1\n", (), "longer than 128 characters"),
    (
        "wide.csv",
        ",".join(f"c{i}_us" for i in range(300)) + "\n" + "1," * 299 + "1\n",
        (),
        "300 columns; at most 256",
    ),  # fmt: skip
    (
        "latencies.csv",
        ",".join(f"c{i}_us" for i in range(70)) + "\n" + "1," * 69 + "1\n",
        (),
        "more than 63 columns of latencies",
    ),  # fmt: skip
    ("nul.csv", "open_us\n1\x002\n", (), "NUL bytes"),
    ("hugefield.csv", "open_us\n1\n2\n" + "x" * 1_000_000 + "\n", (), "'xxxxxxxxxx"),
    ("control.csv", "a\x1b[31m_us\n1\nx\n2\n", (), "'a\\x1b[31m_us' line 3"),
    ("separator.csv", "open_us\n1\n2\u20283\n4\n", (), "'2\\u20283' is not a number"),
    ("onlyblank.csv", "\n \n\t\n", (), "the file is empty"),
    ("bomonly.csv", "\ufeff", (), "the file is empty"),
]


@pytest.mark.parametrize("name,text,extra,words", BAD, ids=[b[0] for b in BAD])
def test_bad_csv_one_line_nothing_stored(
    cli, store: Path, tmp_path: Path, name: str, text: str, extra: tuple[str, ...], words: str
) -> None:
    f = tmp_path / name
    f.write_text(text)
    r = cli("import", str(f), *extra)
    one_error_line(r, words)
    assert runs_in(store) == []
    partial = list((store / "runs").glob(".partial-*")) if (store / "runs").exists() else []
    assert partial == []


def test_missing_and_binary_files(cli, store: Path, tmp_path: Path) -> None:
    one_error_line(cli("import", str(tmp_path / "nope.csv")), "no such file")
    (tmp_path / "bin.csv").write_bytes(b"\x00\x01\x02\xff\xfe")
    one_error_line(cli("import", str(tmp_path / "bin.csv")), "not a text file")
    one_error_line(cli("import", str(tmp_path)), "is a directory")
    (tmp_path / "bad.csv").write_bytes(b"open_us\n1\n\x81\x8d\xff\n")  # neither UTF-8 nor 1252
    one_error_line(cli("import", str(tmp_path / "bad.csv")), "not a text file")
    (tmp_path / "u16.csv").write_bytes("open_us\n1\n".encode("utf-16-le"))  # no BOM: NULs
    one_error_line(cli("import", str(tmp_path / "u16.csv")), "not a text file")
    assert runs_in(store) == []


def test_not_a_regular_file_or_too_large(
    cli, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO would hang the reader, /dev/zero never ends (it was a MemoryError): both are
    refused before a byte is read, as is a file above importer.CSV_LIMIT."""
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    for p in (str(fifo), "/dev/zero", "/dev/urandom"):
        one_error_line(cli("import", p, timeout=30), "not a regular file")
    f = tmp_path / "big.csv"
    f.write_text("open_us\n" + "1\n" * 600)
    monkeypatch.setattr(importer, "CSV_LIMIT", 1000)
    one_error_line(cli("import", str(f)), "larger than a CSV file may be (1000 bytes)")
    assert runs_in(store) == []


@pytest.mark.parametrize(
    "name,raw,columns",
    [
        ("x^2_us first: not a zlib stream", b"x^2_us,b_ns\n1,2\n3,4\n", ["x^2", "b"]),
        ("gzip magic", b"\x1f\x8b_us\n1\n2\n", ["\u2039"]),  # read as Windows-1252
        ("UTF-8 BOM", "\ufeffopen_us\n1\n2\n".encode(), ["open"]),
        ("UTF-16 with its BOM", "open_us\tread_us\n1\t2\n".encode("utf-16"), ["open", "read"]),
        ("Windows-1252", "lat_\xb5s\n1\n2\n".encode("cp1252"), ["lat"]),
        ("CR line ends", b"open_us\r1\r2\r", ["open"]),
        ("CRLF line ends", b"open_us\r\n1\r\n2\r\n", ["open"]),
        ("markup and spaces in names", b"[/x] a_us,b'c_us\n1,2\n", ["_/x__a", "b_c"]),
        ("alike names", b"a_us,A_ns,a (ms)\n1,2,3\n", ["a", "a_2", "a_3"]),
    ],
)
def test_awkward_but_valid_csvs_import(
    store: Path, tmp_path: Path, name: str, raw: bytes, columns: list[str]
) -> None:
    f = tmp_path / "f.csv"
    f.write_bytes(raw)
    run, _ = import_csv(f, store=store)
    assert run.columns == columns
    assert run.n == len(run.values(run.columns[0]))


# ---------------------------------------------------------------------------- round trip


def test_imported_run_round_trips(cli, store: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    f = tmp_path / "orwc.csv"
    vals = np.round(rng.lognormal(np.log([125.0, 5.7, 0.86, 12.8]), 0.2, size=(3000, 4)), 2)
    pl.DataFrame(
        {c: vals[:, i] for i, c in enumerate(["Open", "Write", "Read", "Close"])}
    ).write_csv(f)
    r = cli("import", str(f), "--unit", "us", "--name", "ORWC native")
    assert r.returncode == 0, r.stderr
    assert "imported into" in r.stdout
    (meta,) = runs_in(store)
    rid = meta["id"]
    assert "imported" in rid

    s = cli("show", rid, "--full")
    assert s.returncode == 0, s.stderr
    assert "overhead unknown (imported)" in s.stdout and "orwc.csv" in s.stdout
    # another program's one run: no advice to measure in more processes (--repeat)
    brief = cli("show", rid).stdout
    assert "warning: one run of another program: the interval holds no between-run" in brief
    assert "--repeat" not in brief
    for word in ("Summary of open", "Spikes", "Drift", "Imported from", "a guess"):
        assert word in s.stdout, word  # show --full, as above

    out = tmp_path / "back.csv"
    e = cli("export", rid, "--csv", str(out))
    assert e.returncode == 0, e.stderr
    df = pl.read_csv(out)
    assert df.columns == [
        "iteration",
        "t_start_s",
        "worker",
        "open_ns",
        "write_ns",
        "read_ns",
        "close_ns",
    ]
    assert df["t_start_s"].null_count() == df.height == 3000
    np.testing.assert_allclose(df["read_ns"].to_numpy(), vals[:, 2] * 1000, rtol=1e-12)

    html = tmp_path / "r.html"
    rep = cli("report", rid, "--html", str(html), "--no-figures")
    assert rep.returncode == 0, rep.stderr
    text = html.read_text()
    assert "ORWC native" in text and "unknown (imported)" in text and "Summary of read" in text

    run = Run(store / "runs" / rid)
    assert run.meta["source"]["sha256"] and run.meta["source"]["rows"] == 3000


def test_notes_quote_headers_as_text(cli, store: Path, tmp_path: Path) -> None:
    """A skipped column's header is the file's text: printed as it is, never as markup."""
    f = tmp_path / "m.csv"
    f.write_text("label [/dim],open_ns\ncached,100\ncached,110\ncold,300\n")
    r = cli("import", str(f))
    assert r.returncode == 0, r.stderr
    assert "note: column 'label [/dim]' is not numeric (labels): skipped" in r.stdout


def test_the_import_help_states_the_limits() -> None:
    from latscope.cli.analysis import IMPORT_EPILOG

    text = " ".join(IMPORT_EPILOG.split())
    assert f"at most {importer.CSV_LIMIT >> 20} MiB" in text
    assert f"at most {importer.MAX_CSV_COLUMNS} columns and {samples.MAX_ROWS:,} rows" in text
    assert f"headers of at most {importer.MAX_HEADER_CHARS} characters" in text
