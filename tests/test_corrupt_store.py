"""A damaged store: each file kind of a run (run.json, summary.parquet, samples.lss, the run's
directory itself, a partial run's owner.json) damaged in each way (`CASES`: a table of kinds
x damages), then every store command run on it. The undamaged runs keep working; the damaged
one is one line (skipped by a scan, or one error naming it, exit 2), never a traceback or a
hang; `rm` removes it, and a link it removes as the link, never what it points to.

The cases of one kind share a store (`Group`): each damages a run of its own (a copy of one
run's files under an id of its own, in the summary table as `ls` puts a run it finds), so a
store of that kind holds every damage of it at once, beside the two undamaged runs. `ls`,
`ls --json`, `history`, the undamaged runs' commands and the last `ls` run once on it; each
damaged run gets its own commands and `rm`; each case then asserts of its run what it
asserted when it had a store of its own (one line about it, or listed; its commands;
removed, the others intact; nothing said after). The damages around it make the check
stronger: one that spilled onto another run would show.

`test_the_table_of_damages` prints how many cases the table holds (pytest -s)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pytest

from conftest import CLI
from latscope.store.index import SUMMARY_LIMIT
from latscope.store.meta import OWNER_LIMIT, RUN_LIMIT
from synth import lognormal, make_run

# ------------------------------------------------------------------------------- the store


@dataclass
class Store:
    root: Path
    good: list[str]  # two undamaged runs
    victim: str  # the run that is damaged (a kind's store: the first of its damaged runs)

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    def dir(self, rid: str) -> Path:
        return self.runs / rid


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Store:
    root = tmp_path_factory.mktemp("template") / "store"
    ids = [
        make_run(
            root,
            {"call": lognormal(300, 100.0, seed=i)},
            bench="syscall",
            params={"op": "getppid"},
            created_utc=f"2026-01-01T00:00:0{i}Z",
        ).id
        for i in range(3)
    ]
    return Store(root, ids[:2], ids[2])


@pytest.fixture()
def damaged(template: Store, store: Path) -> Store:
    """A copy of the template store at the test's store (LATSCOPE_STORE)."""
    shutil.copytree(template.root, store, symlinks=True)
    return Store(store, template.good, template.victim)


# ------------------------------------------------------------------------------- damages

Damage = Callable[[Store, Path], None]


def _write(data: bytes | str) -> Damage:
    def f(s: Store, p: Path) -> None:
        p.unlink()
        p.write_bytes(data.encode() if isinstance(data, str) else data)

    return f


def _sparse(size: int) -> Damage:
    def f(s: Store, p: Path) -> None:
        p.unlink()
        with open(p, "wb") as fh:
            fh.truncate(size)

    return f


def _fifo(s: Store, p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink()
    os.mkfifo(p)


def _link_to_good(s: Store, p: Path) -> None:
    target = s.dir(s.good[0]) / p.name
    p.unlink()
    p.symlink_to(target)


def _dangling(s: Store, p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink()
    p.symlink_to(s.root / "nowhere")


def _directory(s: Store, p: Path) -> None:
    p.unlink()
    p.mkdir()
    (p / "x").write_text("x")


def _missing(s: Store, p: Path) -> None:
    p.unlink()


def _meta(change: Callable[[dict], None]) -> Damage:
    """run.json with a field changed (removed, of a wrong type)."""

    def f(s: Store, p: Path) -> None:
        meta = json.loads(p.read_text())
        change(meta)
        p.write_text(json.dumps(meta))

    return f


def _set(key: str, value: object) -> Damage:
    return _meta(lambda m: m.__setitem__(key, value))


def _drop(key: str) -> Damage:
    return _meta(lambda m: m.pop(key))


def _frame(change: Callable[[pl.DataFrame, Store], pl.DataFrame]) -> Damage:
    """summary.parquet rewritten with a change (a column of a wrong type, missing, ...)."""

    def f(s: Store, p: Path) -> None:
        df = change(pl.read_parquet(p), s)
        p.unlink()
        df.write_parquet(p)

    return f


def _truncate(s: Store, p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


def _flip(s: Store, p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x10
    p.write_bytes(bytes(data))


def _copy_from_good(s: Store, p: Path) -> None:
    shutil.copyfile(s.dir(s.good[0]) / p.name, p)


def _entry(make: Callable[[Store, Path], None]) -> Damage:
    """The run's directory replaced: by a file, a link, a FIFO, an empty directory."""

    def f(s: Store, p: Path) -> None:
        shutil.rmtree(p)
        make(s, p)

    return f


def _owner(data: bytes | str | None, kind: str = "file") -> Callable[[Store, str], Path]:
    """A partial run (killed long ago, its id ``rid``) whose owner.json is damaged; returns its
    directory."""

    def f(s: Store, rid: str) -> Path:
        d = s.runs / f".partial-{rid}"
        d.mkdir()
        o = d / "owner.json"
        if kind == "fifo":
            os.mkfifo(o)
        elif kind == "link":
            o.symlink_to(s.dir(s.good[0]) / "run.json")
        elif kind == "sparse":
            with open(o, "wb") as fh:
                fh.truncate(OWNER_LIMIT + 1)
        else:
            assert data is not None
            o.write_bytes(data.encode() if isinstance(data, str) else data)
        old = time.time() - 7200
        os.utime(d, (old, old))
        return d

    return f


@dataclass
class Case:
    kind: str  # run.json, summary.parquet, samples.lss, entry, owner.json
    damage: str
    apply: Damage | None = None  # on the victim's file (the run directory for "entry")
    partial: Callable[[Store, str], Path] | None = None  # owner.json: makes a partial run
    # skipped: the victim is one skipped line and one error per command that names it;
    # rebuilt: summary.parquet rebuilt from the samples, the victim listed;
    # unlisted: ls and history skip it (summary cannot be rebuilt) but it loads;
    # unloadable: listed (scan reads no sample), loading it is one error
    expect: str = "skipped"

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.damage}"


def _frame_case(damage: str, change: Callable[[pl.DataFrame, Store], pl.DataFrame]) -> Case:
    return Case("summary.parquet", damage, _frame(change), expect="rebuilt")


CASES: list[Case] = [
    # run.json: what it holds
    Case("run.json", "not JSON", _write('{"id": "x", "created')),
    Case("run.json", "not UTF-8", _write(b'{"id": "\xff\xfe"}')),
    Case("run.json", "empty", _write("")),
    Case("run.json", "huge", _sparse(RUN_LIMIT + 1)),
    Case("run.json", "a JSON list", _write("[1, 2, 3]")),
    Case("run.json", "a JSON string", _write('"run"')),
    Case("run.json", "nested 100000 deep", _write("[" * 100_000 + "]" * 100_000)),
    Case("run.json", "a 5000-digit number", _write('{"id": ' + "9" * 5000 + "}")),
    Case("run.json", "no id", _drop("id")),
    Case("run.json", "no benchmark", _drop("benchmark")),
    Case("run.json", "no created_utc", _drop("created_utc")),
    Case("run.json", "id a number", _set("id", 42)),
    Case("run.json", "id of another run", _set("id", "20250101-000000-syscall-0000")),
    Case("run.json", "created_utc a list", _set("created_utc", [2026])),
    Case("run.json", "created_utc not a time", _set("created_utc", "yesterday")),
    Case("run.json", "benchmark an object", _set("benchmark", {"name": "syscall"})),
    Case("run.json", "params a list", _set("params", ["op", "getppid"])),
    Case("run.json", "params holding an object", _set("params", {"op": {"x": 1}})),
    Case("run.json", "params_given a number", _set("params_given", 7)),
    Case("run.json", "tags a string", _set("tags", "suite")),
    Case("run.json", "tags holding a list", _set("tags", {"suite": ["a"]})),
    Case("run.json", "env a string", _set("env", "linux")),
    Case("run.json", "probe_warnings numbers", _set("probe_warnings", [1, 2])),
    Case("run.json", "status an object", _set("status", {"ok": True})),
    Case("run.json", "clock a list", _set("clock", ["tsc"])),
    Case("run.json", "latscope_version true", _set("latscope_version", True)),
    # run.json: the environment it holds, read by show --full, report and compare
    Case("run.json", "env.cpu a string", _set("env", {"cpu": "x86"})),
    Case("run.json", "env.cpu.online strings", _set("env", {"cpu": {"online": ["0-1"]}})),
    Case("run.json", "env.kernel a number", _set("env", {"kernel": 6})),
    Case("run.json", "env.load without 1m", _set("env", {"load": {"5m": 0.1}})),
    Case("run.json", "env.cpufreq.per_cpu lists", _set("env", {"cpufreq": {"per_cpu": {"0": []}}})),
    Case("run.json", "env.mitigations numbers", _set("env", {"mitigations": {"mds": 1}})),
    Case("run.json", "env.cpuidle.states strings", _set("env", {"cpuidle": {"states": ["C6"]}})),
    Case("run.json", "env.hostname an object", _set("env", {"hostname": {"a": 1}})),
    # run.json: what it is
    Case("run.json", "a FIFO", _fifo),
    Case("run.json", "a link to another run's", _link_to_good),
    Case("run.json", "a dangling link", _dangling),
    Case("run.json", "a directory", _directory),
    Case("run.json", "missing", _missing, expect="unlisted"),  # its samples still load
    # summary.parquet: a cache of the samples' figures, rebuilt from them
    Case("summary.parquet", "not parquet", _write("not parquet at all"), expect="rebuilt"),
    Case("summary.parquet", "truncated", _truncate, expect="rebuilt"),
    Case("summary.parquet", "empty", _write(""), expect="rebuilt"),
    Case("summary.parquet", "huge", _sparse(SUMMARY_LIMIT + 1), expect="rebuilt"),
    Case("summary.parquet", "a FIFO", _fifo, expect="rebuilt"),
    Case("summary.parquet", "a link to another run's", _link_to_good, expect="rebuilt"),
    Case("summary.parquet", "another run's copied", _copy_from_good, expect="rebuilt"),
    Case("summary.parquet", "missing", _missing, expect="rebuilt"),
    Case("summary.parquet", "a directory", _directory, expect="unlisted"),
    _frame_case("n a string", lambda df, s: df.with_columns(pl.col("n").cast(pl.Utf8))),
    _frame_case("p50 a string", lambda df, s: df.with_columns(pl.lit("fast").alias("p50_ns"))),
    _frame_case("no run_id", lambda df, s: df.drop("run_id")),
    _frame_case("no column", lambda df, s: df.drop("column")),
    _frame_case(
        "column_index a string", lambda df, s: df.with_columns(pl.col("column_index").cast(str))
    ),
    _frame_case(
        "created_utc a string", lambda df, s: df.with_columns(pl.col("created_utc").cast(str))
    ),
    _frame_case("no rows", lambda df, s: df.head(0)),
    _frame_case(
        "run_id null", lambda df, s: df.with_columns(pl.lit(None, pl.Utf8).alias("run_id"))
    ),
    _frame_case("params not JSON", lambda df, s: df.with_columns(pl.lit("{oops").alias("params"))),
    _frame_case("params a JSON list", lambda df, s: df.with_columns(pl.lit("[1]").alias("params"))),
    _frame_case(
        "created_utc null",
        lambda df, s: df.with_columns(pl.lit(None, pl.Datetime("us", "UTC")).alias("created_utc")),
    ),
    # samples.lss
    Case("samples.lss", "missing", _missing),
    Case("samples.lss", "truncated", _truncate),
    Case("samples.lss", "garbage", _write("not a sample file\n")),
    Case("samples.lss", "empty", _write("")),
    Case("samples.lss", "huge", _sparse(200 * 2**20)),
    Case("samples.lss", "a FIFO", _fifo),
    Case("samples.lss", "a link to another run's", _link_to_good),
    Case("samples.lss", "a directory", _directory),
    Case("samples.lss", "a bit flipped in the samples", _flip, expect="unloadable"),
    # the run's directory itself
    Case("entry", "a file", _entry(lambda s, p: p.write_text("not a run"))),
    Case("entry", "a link to another run", _entry(lambda s, p: p.symlink_to(s.dir(s.good[0])))),
    Case("entry", "a dangling link", _entry(lambda s, p: p.symlink_to(s.root / "nowhere"))),
    Case("entry", "a FIFO", _entry(lambda s, p: os.mkfifo(p))),
    Case("entry", "an empty directory", _entry(lambda s, p: p.mkdir())),
    # a partial run's owner.json
    Case("owner.json", "garbage", partial=_owner(b"\x00\xffgarbage")),
    Case("owner.json", "a JSON list", partial=_owner("[1, 2]")),
    Case("owner.json", "pid a string", partial=_owner('{"pid": "me"}')),
    Case("owner.json", "pid negative", partial=_owner('{"pid": -5}')),
    Case("owner.json", "pid huge", partial=_owner('{"pid": 99999999999999999999999}')),
    Case("owner.json", "started_utc an object", partial=_owner('{"pid": 1, "started_utc": {}}')),
    Case("owner.json", "host a list", partial=_owner('{"pid": 1, "host": ["a"]}')),
    Case("owner.json", "nested deep", partial=_owner("[" * 100_000 + "]" * 100_000)),
    Case("owner.json", "a FIFO", partial=_owner(None, "fifo")),
    Case("owner.json", "a link", partial=_owner(None, "link")),
    Case("owner.json", "huge", partial=_owner(None, "sparse")),
]

#: The commands each case runs (the store's, and those that load runs from it).
COMMANDS = ("ls", "ls --json", "history", "show", "export", "compare", "report", "rm", "ls after")

_FIRST_OF_KIND = {c.kind: c.id for c in reversed(CASES)}


def _target(s: Store, rid: str, case: Case) -> Path:
    d = s.dir(rid)
    return d if case.kind == "entry" else d / case.kind


# ------------------------------------------------------------------------------- a kind's store


def _copies(root: Path, rid: str, k: int) -> list[str]:
    """``k`` more runs of ``rid``'s files in the store at ``root``, each under an id of its own
    (run.json's id and summary.parquet's run_id), their rows then written to the summary table
    as `ls` writes those of runs it finds (`catalog`): a run kept by its commit, one copied in."""
    from latscope.store import Store as Kept
    from latscope.store.catalog import catalog
    from latscope.store.index import parquet_bytes

    runs = root / "runs"
    meta = json.loads((runs / rid / "run.json").read_text())
    summary = pl.read_parquet(runs / rid / "summary.parquet")
    out = []
    for i in range(k):
        new = f"20260101-000000-{meta['benchmark']}-{i:04x}"  # as long as rid: no id holds another
        d = runs / new
        d.mkdir()
        shutil.copyfile(runs / rid / "samples.lss", d / "samples.lss")
        (d / "summary.parquet").write_bytes(
            parquet_bytes(summary.with_columns(pl.lit(new, pl.Utf8).alias("run_id")))
        )
        (d / "run.json").write_text(json.dumps({**meta, "id": new}, indent=1))
        out.append(new)
    assert set(out) <= set(catalog(Kept(root)).rows["run_id"].to_list())
    return out


@dataclass
class Damaged:
    """One case in its kind's store: the run it damaged (owner.json: the intact run beside
    the partial run it made), what that run's commands gave, and what its `rm` left."""

    case: Case
    rid: str
    partial: Path | None = None
    out: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    written: dict[str, bool] = field(default_factory=dict)  # a refused command's output made
    rm: subprocess.CompletedProcess[str] | None = None
    gone: bool = False  # its entry (or its partial run) no longer there after rm
    removing: list[str] = field(default_factory=list)  # .removing-* entries after rm
    intact: bool = False  # the undamaged runs' run.json and samples.lss after rm


@dataclass
class Group:
    """A kind's store (`Store`: the two undamaged runs), every case of the kind damaged in it,
    and what the store's commands gave: once for the store, and per case (`Damaged`)."""

    store: Store
    cases: dict[str, Damaged]
    ls: subprocess.CompletedProcess[str]
    ls_json: subprocess.CompletedProcess[str]
    history: subprocess.CompletedProcess[str]
    good: dict[str, subprocess.CompletedProcess[str]]
    after: subprocess.CompletedProcess[str]


def _group(kind: str, template: Store, base: Path) -> Group:
    cases = [c for c in CASES if c.kind == kind]
    # the kind's runs in a copy of the template (a damaged run of its own per case; one intact
    # run beside the partial runs for owner.json), then that store copied: every run's rows
    # in the copy's table are stale (other inodes), as in a store copied or restored
    made = base / "made"
    shutil.copytree(template.root, made, symlinks=True)
    damaged = [template.victim]
    if kind != "owner.json":
        damaged += _copies(made, template.victim, len(cases) - 1)
    root = base / "store"
    shutil.copytree(made, root, symlinks=True)
    s = Store(root, template.good, template.victim)
    cli = CLI(root)
    g, v0 = s.good, template.victim
    ds: dict[str, Damaged] = {}
    for i, case in enumerate(cases):
        if case.partial is not None:
            d = Damaged(case, v0, partial=case.partial(s, f"20250101-0000{i:02d}-syscall-beef"))
        else:
            assert case.apply is not None
            d = Damaged(case, damaged[i])
            case.apply(s, _target(s, d.rid, case))
        ds[case.id] = d
    ls, ls_json, history = cli("ls"), cli("ls", "--json"), cli("history", "syscall")
    # the damaged runs by name: the command works, or one line names what is wrong
    for i, d in enumerate(ds.values()):
        if d.partial is not None:
            continue  # the victim is intact; the partial run is no run to show
        csv, html = base / f"v{i}.csv", base / f"v{i}.html"
        for what, args in (
            ("show", ["show", d.rid]),
            ("export", ["export", d.rid, "--csv", str(csv)]),
            ("compare", ["compare", g[0], d.rid]),
            ("report", ["report", d.rid, "--html", str(html), "--no-figures", "--quiet"]),
        ):
            if (
                _loads(d.case)
                and what in ("compare", "report")
                and d.case.id != _FIRST_OF_KIND[kind]
            ):
                continue  # these read what the undamaged runs' commands read (below)
            d.out[what] = cli(*args)
            d.written[what] = csv.exists() or html.exists()
    # the undamaged runs: every command
    good = {
        "show": cli("show", g[0]),
        "export": cli("export", g[0], "--csv", str(base / "g.csv")),
        "compare": cli("compare", g[0], g[1]),
        "report": cli("report", g[0], "--html", str(base / "g.html"), "--no-figures", "--quiet"),
    }
    # rm: each damaged run is removed (a link as the link); the others stay
    swept = cli("rm", "--partial") if kind == "owner.json" else None
    for d in ds.values():
        d.rm = swept if d.partial is not None else cli("rm", d.rid)
        d.gone = not os.path.lexists(d.partial if d.partial is not None else s.dir(d.rid))
        d.removing = [p.name for p in s.runs.iterdir() if p.name.startswith(".removing-")]
        d.intact = all(
            (s.dir(rid) / "run.json").is_file() and (s.dir(rid) / "samples.lss").is_file()
            for rid in g
        )
    return Group(s, ds, ls, ls_json, history, good, cli("ls"))


@pytest.fixture(scope="module")
def groups(template: Store, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Group]:
    """A kind's `Group`, made (and its commands run) once, when a case of the kind asks."""
    made: dict[str, Group] = {}

    def get(kind: str) -> Group:
        if kind not in made:
            made[kind] = _group(kind, template, tmp_path_factory.mktemp("group"))
        return made[kind]

    return get


def _loads(case: Case) -> bool:
    return case.expect in ("rebuilt", "unlisted") or case.partial is not None


# ------------------------------------------------------------------------------- checks


def _clean(r, what: str) -> None:
    assert "Traceback" not in r.stderr and "Error:" not in r.stderr.replace("error:", ""), (
        what,
        r.stderr,
    )
    r.stdout.encode("utf-8")  # no lone surrogate, no undecodable byte
    r.stderr.encode("utf-8")


def _one_error(r, what: str) -> str:
    _clean(r, what)
    assert r.returncode == 2, (what, r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("latscope: error: "), (what, r.stderr)
    return lines[0]


def _ok(r, what: str) -> None:
    _clean(r, what)
    assert r.returncode == 0, (what, r.returncode, r.stdout, r.stderr)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_command_on_a_damaged_store(groups: Callable[[str], Group], case: Case) -> None:
    grp = groups(case.kind)
    d = grp.cases[case.id]
    partial = d.partial
    v, g = d.rid, grp.store.good
    listed = case.expect in ("rebuilt", "unloadable") or partial is not None
    loads = _loads(case)

    r = grp.ls
    _ok(r, "ls")
    for rid in g:
        assert rid in r.stdout
    about = [ln for ln in r.stderr.splitlines() if v in ln]
    if listed:
        assert v in r.stdout and not about, r.stderr
    else:
        assert v not in r.stdout
        assert len(about) == 1 and "skipped" in about[0], r.stderr
    if partial is not None:
        assert "partial" in r.stdout

    j = grp.ls_json
    _ok(j, "ls --json")
    out = json.loads(j.stdout)
    ids = {x["id"] for x in out["runs"]}
    assert set(g) <= ids and (v in ids) == listed
    if not listed:
        assert [x for x in out["skipped"] if v in x["path"]]

    h = grp.history
    _ok(h, "history")
    assert all(rid in h.stdout for rid in g) and (v in h.stdout) == listed

    # the damaged run by name: the command works, or one line names what is wrong
    if partial is None:
        want = ["show", "export"]
        if not loads or case.id == _FIRST_OF_KIND[case.kind]:
            want += ["compare", "report"]
        assert list(d.out) == want
    for what, r in d.out.items():
        if loads:
            _ok(r, what)
        else:
            _one_error(r, what)
            assert not d.written[what], what

    # the undamaged runs: every command
    for what, r in grp.good.items():
        _ok(r, f"{what} good")

    # rm: the damaged run is removed (a link as the link); the others stay
    r = d.rm
    assert r is not None
    if partial is not None:
        _ok(r, "rm --partial")
        assert partial.name in r.stdout and d.gone
    else:
        _ok(r, "rm")
        assert f"removed {v}" in r.stdout
        assert d.gone
    assert not d.removing and d.intact
    r = grp.after
    _ok(r, "ls after")
    assert not r.stderr.strip() and all(rid in r.stdout for rid in g)


def test_the_table_of_damages() -> None:
    kinds: dict[str, int] = {}
    for c in CASES:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    assert len({c.id for c in CASES}) == len(CASES)
    assert set(kinds) == {"run.json", "summary.parquet", "samples.lss", "entry", "owner.json"}
    print(
        f"\ncorrupted-store cases: {len(CASES)} ("
        + ", ".join(f"{k} {n}" for k, n in kinds.items())
        + f"), each through {len(COMMANDS)} commands ({', '.join(COMMANDS)})"
    )


# ------------------------------------------------------------------------------- the store path


def test_a_store_path_that_is_a_file_is_one_line(cli, tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("not a store")
    for args in (["ls"], ["ls", "--json"], ["history", "syscall"], ["show", "last"], ["rm", "x"]):
        line = _one_error(cli(*args, "--store", str(f)), " ".join(args))
        assert "not a directory" in line


def test_a_directory_that_is_no_store_is_one_line(cli, tmp_path: Path) -> None:
    d = tmp_path / "home"
    d.mkdir()
    (d / "thesis.tex").write_text("x")
    line = _one_error(cli("ls", "--store", str(d)), "ls")
    assert "not a latscope store" in line
    (d / "runs").write_text("x")  # runs/ that is a file
    line = _one_error(cli("ls", "--store", str(d)), "ls")
    assert "not a directory" in line


def test_a_store_not_made_yet_has_no_runs(cli, tmp_path: Path) -> None:
    r = cli("ls", "--store", str(tmp_path / "new"))
    _ok(r, "ls")
    assert "0 runs" in r.stdout and "no store at" in r.stdout
    assert not (tmp_path / "new").exists()  # reading creates nothing
    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("ls", "--store", str(empty))
    _ok(r, "ls")
    assert "0 runs" in r.stdout
    j = cli("ls", "--json", "--store", str(tmp_path / "new"))
    _ok(j, "ls --json")
    assert json.loads(j.stdout)["runs"] == []


def test_rm_of_a_link_removes_the_link_only(cli, damaged: Store) -> None:
    """An older latscope renamed a run that was a link to .removing-* and could not delete
    it; rm removes the link now, and rm --partial such a leftover, never the target."""
    s = damaged
    link = s.runs / "20250101-000000-syscall-link"
    link.symlink_to(s.dir(s.good[0]))
    show = cli("show", link.name)
    assert "a symbolic link" in _one_error(show, "show")
    r = cli("rm", link.name)
    _ok(r, "rm")
    assert not os.path.lexists(link) and s.dir(s.good[0]).is_dir()
    left = s.runs / ".removing-20250101-000000-syscall-link-ab12"
    left.symlink_to(s.dir(s.good[1]))
    r = cli("rm", "--partial")
    _ok(r, "rm --partial")
    assert left.name in r.stdout and not os.path.lexists(left)
    assert (s.dir(s.good[1]) / "run.json").is_file()
