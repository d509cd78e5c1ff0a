"""The summary table (docs/store.md, "The summary table"): runs' rows in Hive-partitioned
Parquet, read by `ls` and `history` and by other tools as they are; runs of several hosts
(`--host`, grouping by host); a store in the older layout (no table) indexed once; a damaged
part file one line; links planted in the table's path never followed.  Counts and structure
only."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from conftest import CLI
from latscope.store import Store
from latscope.store.table import COMPACT_AT, TABLE_DIR
from synth import lognormal, make_run


def _run(store: Path, bench: str, month: str, i: int, host: str | None = None) -> str:
    return make_run(
        store,
        {"call": lognormal(200, 500.0 + i, seed=i)},
        bench=bench,
        params={"op": "x"},
        created_utc=f"{month}-0{1 + i % 9}T00:00:0{i % 10}Z",
        host=host,
    ).id


def _parts(store: Path) -> list[Path]:
    return sorted((store / TABLE_DIR).glob("*/*/*.parquet"))


def _table(store: Path) -> pl.DataFrame:
    """The table as another tool reads it: every part file, partition keys from the paths."""
    return pl.read_parquet(str(store / TABLE_DIR / "**/*.parquet"), hive_partitioning=True)


# ------------------------------------------------------------------------------ the layout


def test_the_table_is_partitioned_by_benchmark_and_month(store: Path) -> None:
    ids = [_run(store, "syscall", "2026-01", i) for i in range(3)]
    ids += [_run(store, "pipe", "2026-02", i) for i in range(2)]
    dirs = sorted(p.parent.relative_to(store / TABLE_DIR).as_posix() for p in _parts(store))
    assert sorted(set(dirs)) == ["benchmark=pipe/month=2026-02", "benchmark=syscall/month=2026-01"]
    for p in _parts(store):  # the partition keys are in the paths, never in the files
        cols = pl.read_parquet_schema(p)
        assert "benchmark" not in cols and "month" not in cols
        assert {"run_id", "host", "p50_ns", "fingerprint", "indexed_utc"} <= set(cols)
    df = _table(store)
    assert sorted(df["run_id"].unique().to_list()) == sorted(ids)
    counts = dict(df.group_by("benchmark").len().iter_rows())
    assert counts == {"syscall": 3, "pipe": 2}  # one timed column: one row a run
    assert df["created_utc"].dtype == pl.Datetime("us", "UTC")


def test_duckdb_reads_the_partitioned_files(store: Path) -> None:
    duckdb = pytest.importorskip("duckdb", reason="DuckDB is not installed")
    for i in range(3):
        _run(store, "syscall", "2026-01", i, host="a")
    _run(store, "futex", "2026-03", 0, host="b")
    rows = duckdb.sql(
        "SELECT benchmark, month, host, count(*) FROM read_parquet("
        f"'{store}/{TABLE_DIR}/*/*/*.parquet', hive_partitioning=true) GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert rows == [("futex", "2026-03", "b", 1), ("syscall", "2026-01", "a", 3)]


def test_appends_are_compacted_and_each_run_is_read_once(store: Path, cli) -> None:
    ids = [_run(store, "syscall", "2026-01", i) for i in range(COMPACT_AT * 3)]
    parts = _parts(store)
    assert 1 <= len(parts) <= COMPACT_AT
    assert not [p for p in (store / TABLE_DIR).rglob(".*")]  # no temporary, no claim left
    assert sorted(_table(store)["run_id"].to_list()) == sorted(ids)
    shutil.copy(parts[0], parts[0].with_name("part-0-copy.parquet"))  # a run written twice
    out = json.loads(cli("ls", "--json").stdout)
    assert sorted(r["id"] for r in out["runs"]) == sorted(ids)


def test_rm_drops_the_runs_rows(store: Path, cli) -> None:
    a, b = (_run(store, "syscall", "2026-01", i) for i in range(2))
    assert cli("rm", a).returncode == 0
    assert _table(store)["run_id"].to_list() == [b]


# ------------------------------------------------------------------------------ hosts


@pytest.fixture(scope="module")
def host_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[CLI, dict[str, list[str]]]:
    """Four runs of hosts a and b, made once: the tests below only read them."""
    store = tmp_path_factory.mktemp("hosts") / "store"
    out: dict[str, list[str]] = {"a": [], "b": []}
    for i in range(4):
        host = "a" if i % 2 == 0 else "b"
        out[host].append(_run(store, "syscall", "2026-01", i, host=host))
    return CLI(store), out


def test_ls_filters_and_groups_by_host(host_store: tuple[CLI, dict[str, list[str]]]) -> None:
    cli, hosts = host_store
    r = cli("ls", "--host", "b")
    assert r.returncode == 0, r.stderr
    assert all(rid in r.stdout for rid in hosts["b"])
    assert not any(rid in r.stdout for rid in hosts["a"])
    assert "2 runs" in r.stdout
    r = cli("ls")
    assert r.stdout.count("runs of host") == 2 and "on 2 hosts" in r.stdout
    first_b = r.stdout.index("runs of host b")
    assert all(r.stdout.index(rid) < first_b for rid in hosts["a"])
    out = json.loads(cli("ls", "--json").stdout)
    assert out["hosts"] == ["a", "b"]
    assert {r["id"]: r["host"] for r in out["runs"]} == {
        rid: h for h, ids in hosts.items() for rid in ids
    }
    r = cli("ls", "--host", "c")
    assert r.returncode == 0 and "0 runs" in r.stdout and "hosts: a, b" in r.stdout


def test_history_filters_and_groups_by_host(host_store: tuple[CLI, dict[str, list[str]]]) -> None:
    cli, hosts = host_store
    r = cli("history", "syscall", "--host", "a")
    assert r.returncode == 0, r.stderr
    assert all(rid in r.stdout for rid in hosts["a"])
    assert not any(rid in r.stdout for rid in hosts["b"])
    r = cli("history", "syscall")
    assert r.stdout.count("syscall call on ") == 2
    j = json.loads(cli("history", "syscall", "--json").stdout)
    assert sorted({row["host"] for row in j["rows"]}) == ["a", "b"]
    r = cli("history", "syscall", "--host", "c")
    assert r.returncode == 2 and "from: a, b" in r.stderr


def test_show_and_compare_across_hosts(host_store: tuple[CLI, dict[str, list[str]]]) -> None:
    cli, hosts = host_store
    r = cli("show", "last", "--host", "a")
    assert r.returncode == 0, r.stderr
    assert hosts["a"][-1] in r.stdout and "host a" in r.stdout
    r = cli("show", hosts["b"][0], "--host", "a")
    assert r.returncode == 2 and "of host b, not a" in r.stderr
    r = cli("compare", hosts["a"][0], hosts["b"][0])
    assert r.returncode == 0, r.stderr
    assert "different hosts" in r.stdout
    r = cli("compare", hosts["a"][0], hosts["a"][1])
    assert r.returncode == 0 and "different hosts" not in r.stdout


def test_the_host_is_the_measuring_hosts_name_without_a_tag(store: Path) -> None:
    rid = make_run(store, {"call": lognormal(100, 500.0)}, run_env={"hostname": "lab1"}).id
    meta = json.loads((store / "runs" / rid / "run.json").read_text())
    assert "host" not in meta
    assert _table(store)["host"].to_list() == ["lab1"]
    tagged = _run(store, "syscall", "2026-01", 1, host="far")
    assert json.loads((store / "runs" / tagged / "run.json").read_text())["host"] == "far"


def test_transaction_takes_a_host_tag(store: Path) -> None:
    st = Store(store)
    with st.transaction("syscall", host="node-7") as t:
        assert t.host == "node-7"


# ------------------------------------------------------------------------------ older stores


def test_a_store_without_a_table_is_indexed_once(store: Path, cli) -> None:
    ids = [_run(store, "syscall", "2026-01", i) for i in range(3)]
    shutil.rmtree(store / TABLE_DIR)  # the layout of an older latscope
    r = cli("ls")
    assert r.returncode == 0, r.stderr
    assert all(rid in r.stdout for rid in ids)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "indexed 3 runs" in lines[0]
    assert sorted(_table(store)["run_id"].to_list()) == sorted(ids)
    r = cli("ls")
    assert r.returncode == 0 and not r.stderr.strip()


def test_a_run_changed_since_it_was_indexed_is_read_again(store: Path, cli) -> None:
    a, b = (_run(store, "syscall", "2026-01", i) for i in range(2))
    meta_path = store / "runs" / b / "run.json"
    meta = json.loads(meta_path.read_text())
    meta["tags"] = {"suite": "later"}
    meta_path.write_text(json.dumps(meta))
    r = cli("ls", "--suite", "later")
    assert b in r.stdout and a not in r.stdout
    assert len(_table(store).filter(pl.col("run_id") == b)) == 1  # one set of rows a run
    meta_path.write_text("{not json")
    r = cli("ls")
    assert r.returncode == 0 and b not in r.stdout and a in r.stdout
    assert len([ln for ln in r.stderr.splitlines() if b in ln and "skipped" in ln]) == 1


# ------------------------------------------------------------------------------ damage


@pytest.mark.parametrize(
    "damage", ["garbage", "empty", "truncated", "a directory", "a FIFO", "no run_id"]
)
def test_a_damaged_part_file_is_one_line(store: Path, cli, damage: str) -> None:
    ids = [_run(store, "syscall", "2026-01", i) for i in range(3)]
    part = _parts(store)[0]
    if damage == "garbage":
        part.write_bytes(b"not parquet at all")
    elif damage == "empty":
        part.write_bytes(b"")
    elif damage == "truncated":
        part.write_bytes(part.read_bytes()[:100])
    elif damage == "a directory":
        part.unlink()
        part.mkdir()
    elif damage == "a FIFO":
        part.unlink()
        os.mkfifo(part)
    else:
        pl.read_parquet(part).drop("run_id").write_parquet(part)
    for args in (["ls"], ["ls", "--json"], ["history", "syscall"]):
        r = cli(*args)
        assert r.returncode == 0, (args, r.stderr)
        assert "Traceback" not in r.stderr
        assert all(rid in r.stdout for rid in ids)
        about = [ln for ln in r.stderr.splitlines() if part.name in ln]
        assert len(about) <= 1
    r = cli("ls")
    if damage == "a directory":  # not removed: said each time
        assert len([ln for ln in r.stderr.splitlines() if part.name in ln]) == 1
    else:  # the runs were indexed again, the damaged file compacted away
        assert not r.stderr.strip() and not os.path.lexists(part)
        assert sorted(_table(store)["run_id"].to_list()) == sorted(ids)


def test_a_damaged_part_file_is_named_with_its_reason(store: Path, cli) -> None:
    _run(store, "syscall", "2026-01", 0)
    part = _parts(store)[0]
    part.write_bytes(b"not parquet at all")
    r = cli("ls")
    line = [ln for ln in r.stderr.splitlines() if part.name in ln]
    assert len(line) == 1 and "not a readable parquet file" in line[0]


@pytest.mark.parametrize("where", ["table", "partition"])
def test_a_link_in_the_tables_path_is_never_followed(
    store: Path, cli, tmp_path: Path, where: str
) -> None:
    first = _run(store, "syscall", "2026-01", 0)
    victim = tmp_path / "victim"
    victim.mkdir()
    top = store / TABLE_DIR
    if where == "table":
        shutil.rmtree(top)
        top.symlink_to(victim)
    else:
        shutil.rmtree(top / "benchmark=syscall")
        (top / "benchmark=syscall").symlink_to(victim)
    second = _run(store, "syscall", "2026-01", 1)  # its rows cannot be written: no error
    r = cli("ls")
    assert r.returncode == 0, r.stderr
    assert first in r.stdout and second in r.stdout  # read from their directories
    assert [ln for ln in r.stderr.splitlines() if "symbolic link" in ln]
    assert os.listdir(victim) == []


def test_history_notes_environment_differences_within_a_host(store: Path, cli) -> None:
    def run(i: int, host: str, kernel: str) -> str:
        env = {"hostname": host, "kernel": {"release": kernel}}
        return make_run(
            store, {"call": lognormal(100, 500.0, seed=i)}, bench="syscall", run_env=env
        ).id

    run(0, "a", "6.1.0")
    run(1, "b", "6.8.0")  # another host, another kernel: no note
    r = cli("history", "syscall")
    assert r.returncode == 0, r.stderr
    assert "Different kernel" not in r.stdout
    changed = run(2, "a", "6.9.0")  # the same host, a new kernel: a note
    r = cli("history", "syscall")
    notes = [ln for ln in r.stdout.splitlines() if "Different kernel" in ln]
    assert len(notes) == 1 and changed in notes[0]
    assert "Different kernel" in cli("history", "syscall", "--host", "a").stdout
    assert "Different kernel" not in cli("history", "syscall", "--host", "b").stdout


# ------------------------------------------------------------------------------ the cache


def _no_part_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from latscope.store import table

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("a part file was read: the cache was not used")

    monkeypatch.setattr(table, "_read_part", refuse)


def test_ls_reads_the_rows_cache_until_a_part_file_changes(
    store: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A complete read of the table is kept beside it (never in it: a tool reading
    summary/**/*.parquet reads the table alone); the next ls and history read that file and
    no part file, until a run is added, when the table is read again."""
    from latscope.store.rowcache import CACHE_FILE

    ids = [_run(store, b, "2026-01", i) for i, b in enumerate(("syscall", "pipe", "syscall"))]
    first = cli("ls")
    assert (store / CACHE_FILE).is_file()
    assert not list((store / TABLE_DIR).rglob(".*"))
    with monkeypatch.context() as m:
        _no_part_read(m)
        again = cli("ls")
        assert again.returncode == 0 and again.stdout == first.stdout, again.stderr
        hist = cli("history", "syscall")
        assert hist.returncode == 0, hist.stderr
        assert ids[0] in hist.stdout and ids[2] in hist.stdout and ids[1] not in hist.stdout
    added = _run(store, "pipe", "2026-02", 5)
    r = cli("ls")
    assert added in r.stdout and all(rid in r.stdout for rid in ids)
    with monkeypatch.context() as m:  # the cache was written again, with the new run
        _no_part_read(m)
        assert added in cli("ls").stdout


@pytest.mark.parametrize("damage", ["garbage", "other state", "another layout"])
def test_a_rows_cache_that_cannot_be_trusted_is_replaced(store: Path, cli, damage: str) -> None:
    from latscope.store.rowcache import CACHE_FILE

    ids = [_run(store, "syscall", "2026-01", i) for i in range(3)]
    first = cli("ls")
    cache = store / CACHE_FILE
    if damage == "garbage":
        cache.write_bytes(b"not parquet")
    elif damage == "other state":  # a cache of rows another table held: a run that is gone
        df = pl.read_parquet(cache)
        df.with_columns(pl.lit("0" * 64).alias("_state")).write_parquet(cache)
    else:
        pl.read_parquet(cache).drop("tags").write_parquet(cache)
    r = cli("ls")
    assert r.returncode == 0 and r.stdout == first.stdout and not r.stderr.strip()
    assert all(rid in r.stdout for rid in ids)
    assert pl.read_parquet(cache).schema == pl.read_parquet(cache).schema  # readable again
    assert "tags" in pl.read_parquet(cache).columns


def test_no_rows_cache_while_a_part_file_is_damaged(store: Path, cli) -> None:
    from latscope.store.rowcache import CACHE_FILE

    _run(store, "syscall", "2026-01", 0)
    part = _parts(store)[0]
    part.unlink()
    part.mkdir()  # damage the reader names and cannot mend
    for _ in range(2):
        r = cli("ls")
        assert len([ln for ln in r.stderr.splitlines() if part.name in ln]) == 1
        assert not (store / CACHE_FILE).exists()
