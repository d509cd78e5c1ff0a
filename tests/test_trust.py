"""latscope trust: the record (atomic, per scenario, validated), what compare learns from it or
from the scenario's history, one-line errors, and (where the probe has --workers and
--inject-ns) a small end-to-end run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from latscope import trust
from latscope.errors import BadInput
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
    r = cli("trust", "syscall", "-n", "1200", "--pairs", "2", "--inject", "50%")
    assert r.returncode == 0, r.stderr
    for w in ("between runs: CV", "A/A false", "+50%", "kept in"):
        assert w in r.stdout, w
    (p,) = (store / "trust").glob("*.json")
    rec = json.loads(p.read_text())
    assert rec["pairs"] == 2 and rec["workers"] == 6 and len(rec["runs"]) == 1 + 2 * 3
    col = rec["columns"]["call"]
    assert col["aa_pairs"] == 2 and col["injected"][0]["pairs"] == 2
    assert col["run_cv"] is not None and col["noise"] > 0
