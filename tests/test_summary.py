"""One table of summary figures (summary.STATS) behind every view: a tail percentile withheld
in one view is withheld in all, and a given figure has the same value everywhere; the store's
summary.parquet schema follows the table; old summary files are still read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pytest
from rich.console import Console

from latscope.measure.runner import LabStore as Store
from latscope.report.text import print_run
from latscope.stats import MIN_BEYOND
from latscope.store import summary_frame
from latscope.summary import STATS, summary_columns
from latscope.units import fmt, fmt_bare, pick_unit
from synth import lognormal, make_run


def _rendered(run) -> str:  # noqa: ANN001
    buf = io.StringIO()
    print_run(Console(file=buf, width=250, color_system=None), run)
    return buf.getvalue()


def test_a_withheld_tail_is_withheld_in_every_view(cli, store: Path, tmp_path: Path) -> None:
    x = lognormal(2000, 100.0, seed=3)
    run = make_run(store, {"call": x})
    raw_p999 = float(pl.Series(x).quantile(0.999, interpolation="linear"))
    above = int((x > raw_p999).sum())
    assert above < MIN_BEYOND  # the premise: p99.9 has too few samples above it
    p99 = float(run.summary()["p99_ns"][0])
    unit = ("ns", 1.0)
    p99_txt, p999_txt = fmt_bare(p99, unit), fmt_bare(raw_p999, unit)
    assert p999_txt not in (fmt_bare(float(x.max()), unit), p99_txt)

    row = run.summary().row(0, named=True)
    assert row["p999_ns"] is None and row["p999_n_beyond"] == above
    assert row["p99_ns"] is not None and row["p99_n_beyond"] >= MIN_BEYOND

    views = {"run table": _rendered(run)}
    for name, args in (
        ("ls", ("ls",)),
        ("show", ("show", run.id)),
        ("show --full", ("show", run.id, "--full")),
        ("history p99.9", ("history", "synthetic", "--stat", "p99.9")),
    ):
        r = cli(*args)
        assert r.returncode == 0, (name, r.stderr)
        views[name] = r.stdout
    md = tmp_path / "md"
    r = cli("report", run.id, "--md", str(md), "--no-figures", "--quiet")
    assert r.returncode == 0, r.stderr
    views["report"] = (md / "report.md").read_text()

    for name, out in views.items():
        assert "p99.9" in out, name
        assert p999_txt not in out, f"{name} prints the withheld p99.9 ({p999_txt})"
        assert "—" in out, name
    for name in ("show --full", "history p99.9"):
        assert f"only {above} samples lie above p99.9" in views[name], name
    for name in ("ls", "run table", "show"):  # the brief views: that it is withheld
        assert "withheld" in views[name], name
    md_row = next(ln for ln in views["report"].splitlines() if ln.startswith("| p99.9 |"))
    assert md_row.split("|")[2].strip() == "—"

    # p99 is given, with the same value, everywhere
    h = cli("history", "synthetic", "--stat", "p99")
    assert h.returncode == 0, h.stderr
    views["history p99"] = h.stdout
    for name, out in views.items():
        if name != "history p99.9":
            assert p99_txt in out, (name, p99_txt)
    j = json.loads(cli("history", "synthetic", "--stat", "p99.9", "--json").stdout)
    assert j["rows"][0]["value"] is None and "withheld" in j["rows"][0]["withheld"]
    ls = json.loads(cli("ls", "--json").stdout)["runs"][0]
    assert ls["p999_ns"] is None and ls["p99_ns"] == row["p99_ns"]


def test_parquet_schema_follows_the_table(store: Path) -> None:
    run = make_run(store, {"call": lognormal(300, 100.0), "other": lognormal(300, 50.0)})
    st = Store(store)
    (stored,) = st.scan().runs
    df = pl.read_parquet(st.ensure_summary(stored))
    for s in STATS:
        assert s.column in df.columns, s.key
        if s.tail:
            assert df.schema[s.beyond_column] == pl.Int64
            assert df.schema[s.column] == pl.Float64
    # every figure column of the run's summary, in the table's order, and nothing else
    figures = [c for c, _ in summary_columns()]
    assert [c for c in df.columns if c in figures] == figures
    assert run.summary().columns == ["run_id", "benchmark", "params", "column", *figures]
    # n=300: p99.9 and p99 withheld (null) with their counts; p95 given
    row = df.row(0, named=True)
    assert row["p999_ns"] is None and row["p99_ns"] is None and row["p95_ns"] is not None
    assert row["p99_n_beyond"] < MIN_BEYOND <= row["p95_n_beyond"]
    # a frame for a run whose every row withholds a figure keeps its type
    frame = summary_frame({"id": "x"}, run.summary())
    assert frame.schema["p999_ns"] == pl.Float64


def test_an_old_summary_file_is_recomputed_or_read(cli, store: Path) -> None:
    run = make_run(store, {"call": lognormal(2000, 100.0, seed=3)})
    st = Store(store)
    (stored,) = st.scan().runs
    target = st.ensure_summary(stored)
    new = pl.read_parquet(target)
    old = new.drop([c for c in new.columns if c.endswith("_n_beyond")]).with_columns(
        pl.lit(1, pl.Int32).alias("schema_version"),
        pl.lit(123.0).alias("p999_ns"),  # what version 1 stored: the raw number
    )
    old.write_parquet(target)
    r = cli("ls")
    assert r.returncode == 0 and run.id in r.stdout, r.stderr
    assert "p999_n_beyond" in pl.read_parquet(target).columns  # recomputed from the samples
    # where it cannot be recomputed (a sample damaged), it is read as it is, the tail withheld
    old.write_parquet(target)
    lss = stored.dir / "samples.lss"
    data = bytearray(lss.read_bytes())
    data[len(data) // 2] ^= 0xFF
    lss.write_bytes(bytes(data))
    rows = st.summaries([stored], [])
    assert rows and rows[0]["p50_ns"] == new["p50_ns"][0]
    h = cli("history", "synthetic", "--stat", "p99.9", "--json")
    assert h.returncode == 0, h.stderr
    got = json.loads(h.stdout)["rows"][0]
    assert got["value"] is None and "older latscope" in got["withheld"]


def _pingpong_header(rusage: list[dict[str, dict[str, int]]], n: int) -> dict[str, object]:
    k = n // len(rusage)
    return {
        "benchmark": "pipe",
        "columns": [
            {"name": "t_start", "unit": "ticks", "kind": "time"},
            {
                "name": "rtt",
                "unit": "ticks",
                "kind": "duration",
                "latency": "round_trip",
                "context_switches": 2,
                "description": "round trip",
            },
        ],
        "workers": [
            {"n": k, "warmup": 10, "pid": 100 + i, "timed_rusage": ru}
            for i, ru in enumerate(rusage)
        ],
    }


def _ru(minflt: int = 0, nvcsw: int = 0, nivcsw: int = 0) -> dict[str, int]:
    return {"minflt": minflt, "majflt": 0, "nvcsw": nvcsw, "nivcsw": nivcsw}


def test_page_faults_under_emulation_are_named_the_emulators_without_advice() -> None:
    from latscope.facts.wording import timed_usage

    n = 1000
    ru = {"initiator": _ru(minflt=2, nvcsw=n), "responder": _ru(nvcsw=n)}  # 2 switches each
    header = _pingpong_header([ru], n)
    plain = timed_usage(header)
    assert plain is not None and "please report it" in plain.notes[0]
    emulated = {"emulated": True, "emulator": "qemu-user", "evidence": "x", "built_for": "aarch64"}
    header["env"] = {"schema": 2, "emulation": emulated}
    u = timed_usage(header)
    assert u is not None and len(u.notes) == 1
    assert (
        "initiator: 2 page faults inside the timed loop under emulation (qemu-user)" in u.notes[0]
    )
    assert "emulator's own" in u.notes[0]
    assert "--warmup" not in u.notes[0] and "please report" not in u.notes[0]


def test_timed_rusage_in_show_and_report(cli, store: Path, tmp_path: Path) -> None:
    from latscope.facts.wording import timed_usage

    n = 1000
    # two workers of 500 round trips: 3 page faults in the initiator's timed loop, and
    # 2.5 switches per round trip where the mechanism needs 2
    rusage = [
        {"initiator": _ru(minflt=3, nvcsw=500, nivcsw=100), "responder": _ru(nvcsw=500)},
        {"initiator": _ru(nvcsw=500, nivcsw=150), "responder": _ru(nvcsw=500)},
    ]
    run = make_run(store, {"rtt": lognormal(n, 5000.0)}, header=_pingpong_header(rusage, n))
    u = timed_usage(run.meta)
    assert u is not None and u.workers == 2 and u.iterations == n
    by_role = {r.role: r for r in u.roles}
    assert by_role["initiator"].faults == 3 and by_role["initiator"].switches == 1250
    assert by_role["responder"].switches == 1000
    assert len(u.notes) == 2
    assert "initiator: 3 page faults" in u.notes[0]
    assert "2.25 context switches per round trip against 2" in u.notes[1]

    s = cli("show", run.id, "--full")
    assert s.returncode == 0, s.stderr
    out = " ".join(s.stdout.split())
    assert "timed loop (2 workers, 1,000 iterations)" in out
    assert "initiator: 3 page faults (3 minor, 0 major; 0.003 per iteration)" in out
    assert "responder: no page faults, 1,000 context switches" in out
    assert "warning: initiator: 3 page faults inside the timed loop" in out
    assert "switched out for other work" in out

    md = tmp_path / "md"
    r = cli("report", run.id, "--md", str(md), "--no-figures", "--quiet")
    assert r.returncode == 0, r.stderr
    text = " ".join((md / "report.md").read_text().split())
    assert "| timed loop | 2 workers, 1,000 iterations — initiator: 3 page faults" in text
    assert "3 page faults inside the timed loop" in text and "switched out for other" in text
    # two workers: the interval of the median is the between-worker one in both views
    row = run.summary().row(0, named=True)
    unit = pick_unit([row["p50_ns"]])
    lo, hi = row["p50_ci_low_ns"], row["p50_ci_high_ns"]
    assert f"{fmt_bare(lo, unit)}–{fmt_bare(hi, unit)}" in out
    assert f"{fmt(lo, unit)} – {fmt(hi, unit)}" in text and row["ci_method"] in text


def test_timed_rusage_as_the_benchmark_implies_or_absent(store: Path) -> None:
    from latscope.facts.wording import timed_usage

    n = 1000
    fewer = [{"initiator": _ru(nvcsw=300), "responder": _ru(nvcsw=300)}]
    run = make_run(store, {"rtt": lognormal(n, 5000.0)}, header=_pingpong_header(fewer, n))
    u = timed_usage(run.meta)
    assert u is not None and len(u.notes) == 1 and "already there" in u.notes[0]
    calm = [{"initiator": _ru(nvcsw=1000), "responder": _ru(nvcsw=1001)}]
    run = make_run(store, {"rtt": lognormal(n, 5000.0)}, header=_pingpong_header(calm, n))
    u = timed_usage(run.meta)
    assert u is not None and u.notes == ()
    # a syscall run: faults are noted, switches (the tick's preemptions) are only shown
    sysc = {
        "benchmark": "syscall",
        "workers": [{"n": n, "warmup": 0, "pid": 1, "timed_rusage": {"main": _ru(1, 0, 7)}}],
    }
    run = make_run(store, {"call": lognormal(n, 100.0)}, bench="syscall", header=sysc)
    u = timed_usage(run.meta)
    assert u is not None and len(u.notes) == 1 and "main: 1 page fault inside" in u.notes[0]
    assert "7 context switches (0 voluntary, 7 involuntary; 0.007 per iteration)" in u.line
    # older files (no workers) and hostile values: nothing, never an error
    assert timed_usage(make_run(store, {"call": lognormal(n, 100.0)}).meta) is None
    assert timed_usage({"workers": [{"n": "x", "timed_rusage": {"main": "bad"}}]}) is None
    assert timed_usage({"workers": [{"timed_rusage": {"main": {"minflt": -3}}}], "n": 5})


def test_run_table_fits_80_columns_without_cutting_a_number(store: Path) -> None:
    """At 80 columns the run table keeps n, p50 with its interval, p99, p99.9 and max whole
    (no '…'), every line fits, and it says where the other figures are; at 200 columns every
    figure is there."""
    run = make_run(
        store,
        {"rtt": lognormal(20_000, 123_456.0, seed=1), "oneway": lognormal(20_000, 61_000.0)},
    )
    for details in (False, True):  # the brief view and the full one
        out = io.StringIO()
        print_run(Console(file=out, width=80, color_system=None), run, details=details)
        lines = out.getvalue().splitlines()
        assert all(len(line) <= 80 for line in lines)
        head = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["column"])
        table = lines[head : head + 3]  # the heading and the two columns' rows
        assert "…" not in "".join(table)
        for label in ("p50", "95% CI of p50", "p99", "p99.9", "max"):
            assert label in table[0], label
        assert "mean" not in table[0]  # not a column at 80
    assert "min, mean, std and p95" in " ".join(" ".join(lines).split())
    wide = io.StringIO()
    print_run(Console(file=wide, width=200, color_system=None), run, details=True)
    header = next(ln for ln in wide.getvalue().splitlines() if "p99.9" in ln)
    for label in ("min", "mean", "std", "p95", "latency"):
        assert label in header, label


def test_a_runs_median_interval_stays_within_its_workers_when_they_sit_at_two_levels() -> None:
    """Workers at two levels (351 and 591 ns, as a real py_spin run): the headline interval is
    the t interval over the worker medians, never widened to the extreme samples by a pooled
    interval whose effective sample size collapsed on the level shifts."""
    import numpy as np

    from latscope.summary import P50_CI_HIGH, P50_CI_LOW, column_summary

    rng = np.random.default_rng(11)
    levels = [351.0, 351.0, 465.0, 561.0, 581.0, 591.0, 591.0, 400.0, 561.0, 361.0]
    parts = [lv * np.exp(rng.normal(0.0, 0.1, 200)) for lv in levels]
    parts[3][50] = 47_580.0  # one slow sample, as the real run had
    x = np.concatenate(parts)
    row = column_summary(x, step_ns=9.0, segments=[200] * 10)
    meds = [float(np.median(p)) for p in parts]
    assert min(meds) * 0.97 <= row[P50_CI_LOW] < row["p50_ns"] < row[P50_CI_HIGH]
    assert row[P50_CI_HIGH] <= max(meds) * 1.03
    assert "worker medians" in row["ci_method"]


def test_a_within_run_interval_that_bounds_nothing_never_widens_the_headline() -> None:
    """Nine steady workers and one that shifts level half-way, with one far sample (a ctx
    run's shape): within the workers there are too few stretches between level shifts for
    their pooled interval to bound anything (it reaches the samples' extremes); it must not
    become the floor of the headline interval, which the ten worker medians do bound."""
    import numpy as np

    from latscope.summary import P50_CI_HIGH, P50_CI_LOW, column_summary

    rng = np.random.default_rng(1)
    parts = [4000.0 * np.exp(rng.normal(0.0, 0.05, 500)) for _ in range(9)]
    parts.append(np.r_[4000.0 * np.exp(rng.normal(0, 0.05, 250)), 6000.0 * np.ones(250)])
    parts[1][123] = 300_000.0
    row = column_summary(np.concatenate(parts), segments=[500] * 10)
    meds = [float(np.median(p)) for p in parts]
    assert min(meds) <= row[P50_CI_LOW] < row["p50_ns"] < row[P50_CI_HIGH] <= max(meds)
    assert row[P50_CI_HIGH] < 6000.0


def test_a_column_given_up_to_the_summary_gives_the_same_figures() -> None:
    """`column_summary(..., overwrite=True)` (a run's summary: the column read for it alone)
    aligns the workers in the column's own memory: the same figures, bit for bit, as the
    samples aligned in a new array; the column then holds the aligned samples."""
    import numpy as np

    from latscope.stats.between import aligned, segment_medians
    from latscope.summary import column_summary

    rng = np.random.default_rng(5)
    x = np.concatenate([lv * np.exp(rng.normal(0, 0.2, 700)) for lv in (900.0, 1100.0, 950.0)])
    x[rng.integers(0, x.size, 9)] *= 40.0
    for segments in ([700] * 3, [1000, 1100], None, [5, 5]):  # the last adds up to nothing
        kept = x.copy()
        want = column_summary(kept, step_ns=0.5, segments=segments)
        assert np.array_equal(kept, x)  # not asked to: x left as it was
        given = x.copy()
        assert column_summary(given, step_ns=0.5, segments=segments, overwrite=True) == want
        assert np.array_equal(given, aligned(x, segments, 0.5))
    meds = segment_medians(x, [700] * 3, 0.5).medians
    a = x.copy()
    assert aligned(a, [700] * 3, 0.5, medians=meds, in_place=True) is a
    assert np.array_equal(a, aligned(x, [700] * 3, 0.5))


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (999.98, "1.000 µs"),  # a clock step under qemu once read "1000.0 ns"
        (999.4, "999.4 ns"),
        (9.9996, "10.00 ns"),  # four figures after rounding, not "10.000"
        (99.996, "100.0 ns"),
        (999_999.0, "1.000 ms"),
        (999_940.0, "999.9 µs"),
        (123.45, "123.5 ns"),
        (0.0, "0 ns"),
    ],
)
def test_a_value_reads_in_four_figures_in_the_unit_its_rounding_reaches(ns, text) -> None:
    assert fmt(ns) == text
    assert pick_unit([ns])[0] == text.split()[1]


def test_withheld_figures_of_several_columns_are_one_line_per_reason() -> None:
    from latscope.summary import withheld_notes

    # four columns of 5,000 samples: p99.9 withheld for each, for the same reason
    row = {"n": 5000, "p999_ns": None, "p999_n_beyond": 5, "p99_ns": 10.0, "p99_n_beyond": 50}
    rows = [(c, row) for c in ("open", "write", "read", "close")]
    notes = [n for n in withheld_notes(rows) if "p99.9" in n]
    assert len(notes) == 1, notes
    assert notes[0].startswith("open, write, read, close p99.9 — withheld: only 5 samples")
    # a different count is a different reason: its own line
    other = {**row, "p999_n_beyond": 3}
    assert len([n for n in withheld_notes([*rows, ("rtt", other)]) if "p99.9" in n]) == 2


def test_the_interval_line_names_the_between_worker_method_in_words() -> None:
    from latscope.facts.wording import family_words as _family_words

    # it read "95% CI of p50 by between runs: t interval over 10 worker medians: rtt (...)"
    got = _family_words("between runs: t interval over 10 worker medians")
    assert got == "a t interval over the 10 worker medians"
    assert _family_words("batch shares") == "batch shares"


def test_a_rare_count_per_iteration_reads_as_one_per_so_many() -> None:
    from latscope.facts.wording import _per_iter

    assert _per_iter(1, 20_000) == "1 per 20,000 iterations"  # it read "5e-05 per iteration"
    assert _per_iter(16, 10_000) == "0.0016 per iteration"
    assert _per_iter(10_000, 10_000) == "1 per iteration"
    assert _per_iter(0, 100) == "0 per iteration" and _per_iter(3, 0) == ""


def test_a_run_with_an_injected_delay_says_so_in_show_and_the_report(
    cli, store: Path, tmp_path: Path
) -> None:
    # before, only 'latscope run' said it: show and the report read as the benchmark's figures
    run = make_run(store, {"call": lognormal(500, 1000.0)}, header={"inject_ns": 50})
    assert run.inject_ns == 50
    out = " ".join(cli("show", run.id).stdout.split())
    assert "injected: a known delay of 50 ns was added to every timed region" in out
    md = tmp_path / "md"
    assert cli("report", run.id, "--md", str(md), "--no-figures", "--quiet").returncode == 0
    text = (md / "report.md").read_text()
    assert "| injected delay | a known delay of 50 ns was added to every timed region" in text
    glance = text.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    assert "(`injected`): a known delay of 50 ns" in glance
    plain = make_run(store, {"call": lognormal(500, 1000.0)})
    assert "injected" not in cli("show", plain.id).stdout


def test_a_run_too_big_for_this_machine_is_refused_before_it_runs(cli, store: Path) -> None:
    """-n that the lab could not analyse in the memory this process may use: one line, exit 2,
    naming the largest n that fits, and nothing made."""
    from latscope.errors import BadInput
    from latscope.measure.runner import ANALYSIS_BYTES, fits_in_memory

    per = ANALYSIS_BYTES + 16  # the column analysed and the start times, whatever the columns
    fits_in_memory(1_000_000, available=per * 1_000_000)  # fits exactly
    with pytest.raises(BadInput) as e:
        fits_in_memory(1_000_001, available=per * 1_000_000)
    assert "use at most -n 1,000,000" in e.value.message
    # a real refusal: RLIMIT_AS of a child process set far below what 50 million samples need
    import resource
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))

    r = subprocess.run(
        [sys.executable, "-m", "latscope.cli", "run", "syscall", "-n", "50000000",
         "--store", str(store)],
        capture_output=True, text=True, timeout=120, preexec_fn=limit,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "needs about" in lines[0] and "RLIMIT_AS" in lines[0], r.stderr
    assert not (store / "runs").exists() or not any((store / "runs").iterdir())
