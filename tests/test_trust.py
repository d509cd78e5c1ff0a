"""latscope trust: the record (atomic, per scenario, validated), what compare learns from it or
from the scenario's history, one-line errors, and (where the probe has --workers and
--inject-ns) a small end-to-end run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from latscope.errors import BadInput
from latscope.measure import trust
from latscope.store import Store
from synth import lognormal, make_run


def test_parse_injections() -> None:
    assert trust.parse_injections("25%,10%") == [0.1, 0.25]
    assert trust.parse_injections("0.05") == [0.05]
    for bad in ("ten", "0%", "-5%", ""):
        with pytest.raises(BadInput):
            trust.parse_injections(bad)


def test_record_roundtrip_and_damaged_records(store: Path) -> None:
    st = Store(store)
    run = make_run(store, {"call": lognormal(100, 1000.0)}, params={"op": "read0"})
    key = trust.key_of_run(run)
    assert "op=read0" in key and "clock=mono_raw" in key
    rec = {"format": trust.FORMAT, "key": key, "pairs": 3, "columns": {"call": {}}}
    p = trust.write_record(st, rec)
    assert p.parent == store / "trust" and p.name.startswith("synthetic-")
    assert trust.read_record(st, key) == rec
    assert not list(p.parent.glob(".*tmp*"))  # nothing half-written left behind
    p.write_text("{not json")
    assert trust.read_record(st, key) is None
    p.write_text(json.dumps({**rec, "key": "another"}))
    assert trust.read_record(st, key) is None
    # a record without figures for the column: nothing known
    p.write_text(json.dumps(rec))
    assert trust.known_variation(st, run, "call") is None


def test_history_gives_the_variation_between_processes(store: Path) -> None:
    st = Store(store)
    rng = np.random.default_rng(9)
    params = {"op": "getppid"}
    ids = []
    for f in (0.9, 1.0, 1.1):  # runs differ by 10% beyond what their workers show
        meds = 1000.0 * f * np.exp(0.02 * rng.standard_normal(5))
        x = np.concatenate([m * np.exp(0.2 * rng.standard_normal(400)) for m in meds])
        ids.append(make_run(store, {"call": x}, segments=[400] * 5, params=params).id)
    single = make_run(store, {"call": lognormal(2000, 1000.0)}, params=params)
    v = trust.known_variation(st, single, "call")
    assert v is not None and "history: 3 earlier runs" in v.source
    assert 0.005 < v.process_cv < 0.06  # about the 2% between workers
    # the runs' own spread (CV 10%) sets the noise threshold: 1.96 * sqrt(2) * 0.1 = 0.28
    assert v.noise is not None and 0.2 < v.noise < 0.36 and "vary by" in v.source
    # the runs being compared are no history of themselves: two left, too few for the noise
    v2 = trust.known_variation(st, single, "call", exclude=ids[:1])
    assert v2 is not None and v2.noise is None and "history: 2 earlier runs" in v2.source
    other = make_run(store, {"call": lognormal(2000, 1000.0)}, params={"op": "read0"})
    assert trust.known_variation(st, other, "call") is None  # another scenario


def _aa_false_rate(medians_of: object, gate: float, rng: np.random.Generator) -> float:
    """How often two fresh runs differ by more than ``gate`` (the share of A/A pairs a
    comparison gated by it would call different)."""
    a, b = medians_of(20_000, rng), medians_of(20_000, rng)  # type: ignore[operator]
    return float(np.mean(np.maximum(a / b, b / a) - 1 > gate))


def _two_levels(n: int, rng: np.random.Generator) -> np.ndarray:
    """Run medians of a host in two states: 90% of runs at 220 ns, 10% at 300 (1.36x),
    each with 1% jitter."""
    level = np.where(rng.random(n) < 0.9, 220.0, 300.0)
    return level * np.exp(0.01 * rng.standard_normal(n))


def test_the_aa_range_holds_95_percent_of_pairs_where_the_host_has_two_states() -> None:
    """Two states, a history of 20 runs with 2 in the slow one: the CV is small, so the
    normal model's range is exceeded by the 18% of pairs that straddle the states; the
    range read off the history's pairs holds about 95% of fresh A/A pairs (averaged over 20
    histories: one history of 20 runs is itself a sample)."""
    from latscope.measure.variation import AA_RANGE, _cv, aa_range

    rng = np.random.default_rng(4)
    normal_false, false = [], []
    for _ in range(20):
        hist = np.r_[np.full(18, 220.0), np.full(2, 300.0)]
        hist = hist * np.exp(0.01 * rng.standard_normal(20))
        normal, got = AA_RANGE * _cv(hist), aa_range(hist)
        assert got is not None and got > normal
        normal_false.append(_aa_false_rate(_two_levels, normal, rng))
        false.append(_aa_false_rate(_two_levels, got, rng))
    assert np.mean(normal_false) > 0.12  # the normal model's promise fails
    assert np.mean(false) < 0.06


def test_the_aa_range_keeps_the_normal_model_where_it_holds() -> None:
    """Log-normal run medians (CV 5%): the range is never below the normal model's, and
    fresh A/A pairs exceed it about 5% of the time (averaged over 20 histories of 20 runs);
    with fewer than 8 runs only the normal model is used, and fewer than 3 give none."""
    from latscope.measure.variation import AA_RANGE, _cv, aa_range

    def lognormal_runs(n: int, rng: np.random.Generator) -> np.ndarray:
        return 1000.0 * np.exp(0.05 * rng.standard_normal(n))

    rng = np.random.default_rng(5)
    false = []
    for _ in range(20):
        hist = lognormal_runs(20, rng)
        got = aa_range(hist)
        assert got is not None and got >= AA_RANGE * _cv(hist)
        false.append(_aa_false_rate(lognormal_runs, got, rng))
    assert 0.02 < np.mean(false) < 0.09
    few = hist[:5]
    assert aa_range(few) == pytest.approx(AA_RANGE * _cv(few))
    assert aa_range(hist[:2]) is None


def test_trust_errors_are_one_line(cli) -> None:
    for args, words in (
        (("trust", "syscall", "--pairs", "1"), "--pairs 1"),
        (("trust", "syscall", "--inject", "ten"), "--inject"),
        (("trust", "nosuchbench"), "unknown benchmark"),
    ):
        r = cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and words in lines[0] and "Traceback" not in r.stderr


def test_trust_end_to_end(cli, store: Path) -> None:
    # the shortest runs 'ab' accepts (0.2 s each): what is asserted is the record's shape and
    # the table's words, which do not depend on how many rounds the runs hold
    r = cli("trust", "syscall", "--pairs", "2", "--inject", "50%", "--time", "0.2")
    assert r.returncode == 0, r.stderr
    for w in ("A/A: faster", "or slower", "resolves", "+50%", "kept in"):
        assert w in r.stdout, w
    (p,) = (store / "trust").glob("*.json")
    rec = json.loads(p.read_text())
    # a reference, then per round one A/A ab and one per injected size
    assert rec["method"] == "ab" and rec["pairs"] == 2 and len(rec["runs"]) == 1 + 2 * 2
    col = rec["columns"]["call"]
    assert col["aa_pairs"] == 2 and col["injected"][0]["pairs"] == 2
    assert col["injected"][0]["slower"] + col["injected"][0]["faster"] <= 2
    assert col["run_cv"] is not None and col["median_ns"] > 0
    # every run it made is an interleaved run of two arms, the second with the delay or none
    runs = sorted((store / "runs").iterdir())
    assert len(runs) == len(rec["runs"])
    for d in runs:
        meta = json.loads((d / "run.json").read_text())
        assert meta["tags"]["ab"] is True and meta["tags"]["trust"] == rec["trust_group"]


def test_trust_counts_no_injected_truth_in_a_column_without_the_wait(cli, store: Path) -> None:
    """In ping-pong the injected wait is the responder's late answer: rtt holds it, oneway
    does not (its header column says so), so oneway's injected comparisons are not counted.
    The runs are the shortest 'ab' accepts (0.2 s): which columns hold the wait is the
    header's, whatever the runs measured."""
    args = ("trust", "pipe", "-p", "cpus=0,0", "--pairs", "2", "--inject", "50%", "--time", "0.2")
    r = cli(*args, "--json")  # the record alone on stdout, as kept; the table on stderr
    assert r.returncode == 0, r.stderr
    assert "the wait is not in this column" in r.stderr
    (p,) = (store / "trust").glob("*.json")
    assert json.loads(r.stdout) == json.loads(p.read_text())
    cols = json.loads(p.read_text())["columns"]
    assert cols["rtt"]["holds_inject"] is True and cols["rtt"]["injected"][0]["pairs"] == 2
    assert cols["oneway"]["holds_inject"] is False and cols["oneway"]["injected"] == []
    assert cols["oneway"]["smallest_detected"] is None and cols["oneway"]["aa_pairs"] == 2
