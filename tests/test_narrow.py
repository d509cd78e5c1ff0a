"""Every terminal view fits 80 columns without cutting a number: columns that matter stay
whole, the rest are left out (and the command says where they are), text wraps."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from conftest import CLI
from latscope.tables import Column, fit
from synth import lognormal, make_run, make_suite_run

WIDTH = 80
NARROW = {"COLUMNS": str(WIDTH)}


def _render(renderable: object, width: int = WIDTH) -> str:
    c = Console(width=width, record=True, file=open("/dev/null", "w"), highlight=False)
    c.print(renderable)
    return c.export_text()


def _fits(text: str, width: int = WIDTH) -> None:
    long = [ln for ln in text.splitlines() if len(ln.rstrip()) > width]
    assert not long, f"{len(long)} lines wider than {width}: {long[:2]}"
    assert "…" not in text, "a cell was cut"


# ------------------------------------------------------------------------------ tables.fit


def _wide_table() -> tuple[list[Column], list[list[str]]]:
    cols = [
        Column("name"),
        Column("n", justify="right"),
        Column("p50", justify="right"),
        Column("interval", justify="right", drop=1),
        Column("extra one", justify="right", drop=3),
        Column("extra two", justify="right", drop=2),
        Column("note", wrap=True),
    ]
    rows = [
        ["alpha", "123,456", "6.306", "6.215–7.476", "1234567890", "9876543210", "a b c d e"],
        ["beta", "7", "14.84", "14.55–15.70", "1111111111", "2222222222", "longer note here"],
    ]
    return cols, rows


def test_fit_leaves_out_columns_by_rank_and_never_cuts_a_number() -> None:
    cols, rows = _wide_table()
    con = Console(width=50, file=open("/dev/null", "w"))
    t, left = fit(con, cols, rows)
    assert left == ["extra one", "extra two"]  # rank 3, then rank 2; rank 1 still fits
    out = _render(t, 50)
    _fits(out, 50)
    for r in rows:
        for cell in r[:4]:
            assert cell in out  # every number shown whole, on one line


def test_fit_wide_keeps_every_column() -> None:
    cols, rows = _wide_table()
    con = Console(width=50, file=open("/dev/null", "w"))
    t, left = fit(con, cols, rows, wide=True)
    assert left == [] and len(t.columns) == len(cols)


def test_fit_without_ranks_wraps_rather_than_cuts() -> None:
    cols = [Column(h, justify="right") for h in ("a", "b", "c", "d")]
    rows = [["6.215 µs – 7.476 µs"] * 4]
    con = Console(width=40, file=open("/dev/null", "w"))
    t, left = fit(con, cols, rows)
    out = _render(t, 40)
    assert left == []
    _fits(out, 40)
    assert out.count("6.215") == 4 and out.count("7.476") == 4  # wrapped at spaces, not cut


# ----------------------------------------------------------------------- the CLI at 80


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[CLI, list[str]]:
    """Two runs of two columns in a store of their own, and the CLI on it: made once for the
    views below, which only read them (each made them for itself, and summarising the
    48,000 samples as they are kept was most of what these tests cost)."""
    store = tmp_path_factory.mktemp("narrow") / "store"
    a = make_run(
        store,
        {"rtt": lognormal(12_000, 6306.0, seed=1), "oneway": lognormal(12_000, 3200.0, seed=2)},
        bench="pipe",
        params={"mode": "processes", "cpus": "0,0", "size": 8},
        segments=[1200] * 10,
    )
    b = make_run(
        store,
        {"rtt": lognormal(12_000, 14840.0, seed=3), "oneway": lognormal(12_000, 7400.0, seed=4)},
        bench="pipe",
        params={"mode": "processes", "cpus": "0,1", "size": 8},
        segments=[1200] * 10,
        created_utc="2026-01-01T00:00:02Z",
    )
    return CLI(store), [a.id, b.id]


@pytest.mark.parametrize(
    "args",
    [("ls",), ("history", "pipe"), ("history", "pipe", "--stat", "p99"), ("show", "last")],
)
def test_views_fit_80_columns(two_runs: tuple[CLI, list[str]], args: tuple[str, ...]) -> None:
    cli, _ = two_runs
    r = cli(*args, env=NARROW)
    assert r.returncode == 0, r.stderr
    _fits(r.stdout)
    assert "12000" in r.stdout or "12,000" in r.stdout  # n whole (it once read "1200")


def test_ls_names_what_it_left_out_and_wide_shows_it(two_runs: tuple[CLI, list[str]]) -> None:
    cli, _ = two_runs
    r = cli("ls", env=NARROW)
    out = " ".join(r.stdout.split())
    assert "2026-01-01 00:00:02" not in out
    assert "created (UTC), benchmark" in out and "'latscope ls --wide'" in out
    wide = cli("ls", "--wide", env=NARROW)
    assert "created (UTC)" in wide.stdout and "2026-01-01 00:00:02" in wide.stdout


def test_compare_fits_80_columns(two_runs: tuple[CLI, list[str]]) -> None:
    cli, ids = two_runs
    r = cli("compare", *ids, env=NARROW)
    assert r.returncode == 0, r.stderr
    _fits(r.stdout)
    assert "left out at this width:" in r.stdout
    # the column's name on its own line (or in its own column where the table fits), then
    # the run's row: ratios to three significant figures, whole
    ratio = re.search(r"rtt\s.*? (\d\.\d\d) \((\d\.\d\d)–(\d\.\d\d)\)", r.stdout, re.S)
    assert ratio, r.stdout
    assert 2.2 < float(ratio.group(1)) < 2.5


def test_show_full_fits_80_columns(two_runs: tuple[CLI, list[str]]) -> None:
    cli, _ = two_runs
    r = cli("show", "last", "--full", env=NARROW)
    assert r.returncode == 0, r.stderr
    long = [ln for ln in r.stdout.splitlines() if len(ln.rstrip()) > WIDTH]
    assert not long, long[:2]
    # the summary table keeps its statistic names and values (once squeezed to nothing)
    assert re.search(r"p50 \(median\)\s+\d+\.\d+ µs", r.stdout), r.stdout


def test_matrix_table_fits_80_columns() -> None:
    from latscope.matrix.ipc import Cell, matrix_table

    cells = []
    for i, mech in enumerate(["pipe", "unix_stream", "sysv_sem", "spin", "zmq_pair_ipc"]):
        for mode in ("threads", "processes"):
            for cpus, f in (("0,0", 1.0), ("0,1", 2.0)):
                med = 100.0 * (i + 1) * f * (30 if mech != "spin" else 1)
                cells.append(Cell(mech, mode, cpus, p50_ns=med, p99_ns=med * 3.3))
    con = Console(width=WIDTH, file=open("/dev/null", "w"))
    t, problems = matrix_table(con, cells)
    out = _render(t)
    _fits(out)
    assert problems == []
    assert "(µs)" in out  # one unit per column, in its heading
    assert "unix_stream" in out and "zmq_pair_ipc" in out


def test_runtime_matrix_table_fits_80_columns() -> None:
    from latscope.matrix.ipc import Cell
    from latscope.matrix.runtime import Pair, runtime_table

    pairs = []
    for py, c in (
        ("py_asyncio_queue", None),
        ("py_spinlock", "spin"),
        ("py_mp_pipe", "socketpair"),
    ):
        for mode in ("threads", "processes", "tasks"):
            for cpus, f in (("0,0", 1.0), ("0,1", 0.01)):
                pc = Cell(py, mode, cpus, p50_ns=48_000_000.0 * f)
                cc = Cell(c, mode, cpus, p50_ns=181.3 * f) if c else None
                pairs.append(Pair(pc, cc))
    con = Console(width=WIDTH, file=open("/dev/null", "w"))
    t, problems = runtime_table(con, pairs)
    out = _render(t)
    _fits(out)
    assert problems == []
    assert "py_asyncio_queue" in out and "processes" in out and "264,755" in out
    assert "48.00 ms" in out and "181.3 ns" in out  # each figure with its own unit


def test_suite_comparison_fits_80_columns(store: Path) -> None:
    from latscope.suite import compare_rows, comparison_table

    spread = [0.95, 1.0, 1.05]
    sr = make_suite_run(
        store,
        {"pipe-same-cpu": [1000.0 * f for f in spread], "pipe-two-cpus": [2500.0] * 3},
    )
    rows = compare_rows(sr)
    con = Console(width=WIDTH, file=open("/dev/null", "w"))
    t, left = comparison_table(con, rows, title="suite synthetic")
    out = _render(t)
    _fits(out)
    assert left  # something had to go at 80 columns, and the caller can say what
    assert re.search(r"2\.\d\d \[\d\.\d\d–\d\.\d\d\]", out), out


def test_long_scenario_names_stand_whole_above_their_rows_not_folded(store: Path) -> None:
    from latscope.suite import compare_rows, comparison_table
    from latscope.tables import Grouped

    # before, suite seeds at 80 columns folded them into 7 characters: 'r000-or/wc-warm/-ext4'
    names = ["r000-orwc-cold-fadvise-ext4", "r002-py-zmq-pubsub-processes"]
    sr = make_suite_run(store, {names[0]: [1000.0, 1050.0, 980.0], names[1]: [2500.0] * 3})
    con = Console(width=WIDTH, file=open("/dev/null", "w"))
    t, left = comparison_table(con, compare_rows(sr), title="suite synthetic")
    assert isinstance(t, Grouped)
    out = _render(t)
    _fits(out)
    lines = out.splitlines()
    for name in names:
        [at] = [i for i, ln in enumerate(lines) if ln.strip() == name]  # a line of its own
        assert lines[at + 1].startswith("   call"), out  # its rows follow, indented under it
    # the columns line up across groups, and the numbers are whole
    rows = [ln for ln in lines if ln.startswith("   call")]
    assert len(rows) == 2 and len({r.index(" 3 ") for r in rows}) == 1, out  # the R column
    assert re.search(r"2\.\d\d \[\d\.\d\d–\d\.\d\d\]", out), out
    assert "within-run CI" in left or not left  # a heading left out reads as one phrase


def test_a_suite_table_that_fits_keeps_its_scenario_column(store: Path) -> None:
    from rich.table import Table

    from latscope.suite import compare_rows, comparison_table

    sr = make_suite_run(store, {"a": [1000.0] * 3, "b": [1100.0, 1090.0, 1120.0]})
    t, left = comparison_table(Console(width=200, file=open("/dev/null", "w")), compare_rows(sr))
    assert isinstance(t, Table) and not left
    out = _render(t, 200)
    assert re.search(r"^ b +call", out, flags=re.M), out


# ----------------------------------------------------------------------------- help pages

COMMANDS = [
    "list", "clocks", "run", "explain", "trust", "quick", "ab", "show", "export", "ls", "store",
    "rm",
    "history",
    "suite", "env", "report", "compare", "import", "plot", "matrix", "fleet", "completion",
]  # fmt: skip


def test_every_command_is_listed_here(cli) -> None:
    r = cli("--help", env=NARROW)
    listed = re.findall(r"^    (\w+)\s", r.stdout, flags=re.M)
    assert sorted(listed) == sorted(COMMANDS)


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_fits_80_columns_with_a_description_and_examples(cli, command: str) -> None:
    r = cli(*([command] if command else []), "--help", env=NARROW)
    assert r.returncode == 0, r.stderr
    long = [ln for ln in r.stdout.splitlines() if len(ln) > WIDTH]
    assert not long, long
    head, _, rest = r.stdout.partition("\n\n")
    description = rest.split("\n\n")[0]
    assert not description.startswith(("positional", "options")), "no description"
    assert len(description.split()) >= 8
    assert re.search(r"^  latscope ", r.stdout, flags=re.M), "no example"
