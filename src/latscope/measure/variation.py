"""What is known about the variation between runs of a scenario: the records ``latscope
trust`` keeps (trust.py), else the scenario's history in the store. ``latscope compare`` and
suites read it through ``known_variation``.

A *scenario* is a benchmark with its (resolved) parameters and clock; its key is
``scenario_key``. A trust record holds, per column, ``run_cv`` (the between-run variation),
``process_cv`` (between single processes) and ``noise`` (``aa_range``: the range within which
95% of A/A ratios of two runs fall); see trust.py for how they are measured.

The record is kept as ``STORE/trust/<benchmark>-<hash of the key>.json`` (written atomically).
Without a record, ``known_variation`` falls back to the history of the scenario: the runs in
the store with the same key, several worker processes and no injection (the last
``HISTORY_RUNS``, leaving out the runs being compared), whose worker-median CVs give
``process_cv`` and, with at least ``HISTORY_RUNS_FOR_NOISE`` of them, whose typical medians
give ``noise`` (``aa_range``: as above, or wider where their pairs' ratios are heavier-tailed
than a normal model). Workers run one after another within a second or two, so they
can share a state of the host that the next run no longer finds: the spread of separate runs
is the between-run variation a comparison of two runs must clear.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import BadInput
from ..record import Run
from ..stats.dist import norm_ppf
from ..store.meta import NULL, RUN_LIMIT, Field, Spec, read_json

if TYPE_CHECKING:
    from ..store import Store

FORMAT = "latscope-trust"
FORMAT_VERSION = 1
TRUST_DIR = "trust"
HISTORY_RUNS = 20
#: Earlier runs of a scenario needed before their spread sets compare's noise threshold.
HISTORY_RUNS_FOR_NOISE = 3
#: The A/A range of two runs' ratio under a normal model: z(0.975) * sqrt(2) coefficients
#: of variation (`aa_range`).
AA_RANGE = float(norm_ppf(0.975)) * math.sqrt(2.0)
#: Runs from which `aa_range` also reads the range off their pairs' ratios (28 pairs).
EMPIRICAL_RUNS = 8
#: The percentile of the pairs' ratios it reads: the 95% range with a margin for a history of
#: 20 runs, whose 95th percentile misses the true one by a third either way (bench/aa_ab.py).
EMPIRICAL_PERCENTILE = 97.5


def scenario_key(benchmark: str, params: Mapping[str, Any] | None, clock: str | None) -> str:
    """The key of a scenario: benchmark, resolved parameters (sorted) and clock."""
    p = " ".join(f"{k}={v}" for k, v in sorted((params or {}).items()))
    return f"{benchmark} {p} clock={clock or '?'}".replace("  ", " ")


def key_of_run(run: Run) -> str:
    return scenario_key(run.benchmark, run.meta.get("params"), run.clock.get("name"))


def record_path(store: Store, key: str) -> Path:
    bench = "".join(c if c.isalnum() or c in "_-" else "_" for c in key.split(" ", 1)[0])
    h = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return store.root / TRUST_DIR / f"{bench}-{h}.json"


#: A trust record's fields the lab reads (store.meta checks them before use).
RECORD_SPEC: Spec = {
    "format": Field((str,), required=True),
    "key": Field((str,), required=True),
    "created_utc": Field((str, NULL)),
    "pairs": Field((int, NULL)),
    "columns": Field((dict,), required=True, items=(dict,)),
}


def read_record(store: Store, key: str) -> dict[str, Any] | None:
    """The trust record of a scenario, or None (absent, damaged or of another scenario)."""
    try:
        rec = read_json(record_path(store, key), "a trust record", RECORD_SPEC, RUN_LIMIT)
    except BadInput:
        return None
    if rec["format"] != FORMAT or rec["key"] != key:
        return None
    return rec


def write_record(store: Store, rec: dict[str, Any]) -> Path:
    p = record_path(store, rec["key"])
    try:
        store.write_text(TRUST_DIR, p.name, json.dumps(rec, indent=1))
    except OSError as e:
        raise BadInput(f"cannot write the trust record {p}: {e.strerror}") from None
    return p


# ------------------------------------------------------------------------------- variation


@dataclass(frozen=True)
class Variation:
    """What is known about the variation between runs of a scenario, for one column."""

    process_cv: float | None  # CV of single-process medians
    noise: float | None  # A/A range of two runs' ratio (trust record only)
    source: str  # where it comes from, for the user


def aa_range(medians: Sequence[float]) -> float | None:
    """The range within which 95% of the A/A ratios of two runs fall, from the typical
    medians of separate runs of one scenario: ``AA_RANGE`` coefficients of variation (a
    normal model of the run medians), or, from ``EMPIRICAL_RUNS`` runs on, the
    ``EMPIRICAL_PERCENTILE`` percentile of ``max(a/b, b/a) - 1`` over every pair of them
    where that is wider. A host
    that moves between states (a virtual CPU that runs on one physical core, then on a
    shared one, for seconds at a time) puts most runs at one level and a few 1.3x above:
    their CV is small, but the pairs across the two levels, 5% or more of all pairs, differ
    by 30%; the normal model then promises a range that A/A pairs exceed far more than 5% of
    the time, and a comparison gated by it calls identical runs different. None for fewer
    than ``HISTORY_RUNS_FOR_NOISE`` medians."""
    a = np.asarray([v for v in medians if v > 0 and math.isfinite(v)], dtype=float)
    if a.size < HISTORY_RUNS_FOR_NOISE:
        return None
    cv = _cv(a)
    out = AA_RANGE * cv if cv is not None else 0.0
    if a.size >= EMPIRICAL_RUNS:
        i, j = np.triu_indices(a.size, 1)
        r = a[j] / a[i]
        out = max(out, float(np.percentile(np.maximum(r, 1 / r) - 1, EMPIRICAL_PERCENTILE)))
    return out


def _cv(x: Sequence[float]) -> float | None:
    a = np.asarray([v for v in x if v > 0], dtype=float)
    if a.size < 2:
        return None
    return float(a.std(ddof=1) / a.mean())


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 else None


def known_variation(
    store: Store | None,
    run: Run,
    column: str,
    exclude: Sequence[str] = (),
    until: str | None = None,
) -> Variation | None:
    """The trust record's figures for the run's scenario, else its history (module docs),
    leaving out the runs in ``exclude`` (those being compared) and ``run`` itself, and
    injected runs. ``until``: a creation time (run.json's ``created_utc``); a trust record
    made after it and runs kept after it are left out, so that a comparison of runs made by
    then gives the same verdict whatever is kept later."""
    if store is None or run.imported:
        return None
    key = key_of_run(run)
    rec = read_record(store, key)
    if rec is not None and until is not None and str(rec.get("created_utc") or "") > until:
        rec = None  # made after the runs compared: not what was known of them
    col = (rec or {}).get("columns", {}).get(column)
    if isinstance(col, dict) and _num(col.get("process_cv")) is not None:
        return Variation(
            _num(col.get("process_cv")),
            _num(col.get("noise")),
            f"latscope trust of {(rec.get('created_utc') or '?')[:10]} ({rec.get('pairs')} pairs)",
        )
    return _from_history(store, key, column, {*exclude, run.id}, until)


def _from_history(
    store: Store, key: str, column: str, exclude: set[str], until: str | None = None
) -> Variation | None:
    from ..stats.between import segment_medians, typical_median

    try:
        kept = store.list_meta()
    except BadInput:  # a store path that is no store: no history
        return None
    metas = [
        m
        for m in kept
        if m.get("id") not in exclude
        and (until is None or str(m.get("created_utc") or "") <= until)
        and not (m.get("tags") or {}).get("ab")
        and scenario_key(m.get("benchmark", "?"), m.get("params"), m.get("clock")) == key
    ][-HISTORY_RUNS:]
    cvs = []
    typical = []
    for m in metas:
        try:
            run = Run(store.runs_dir / m["id"])
            if len(run.segments) < 2 or run.inject_ns or column not in run.all_columns:
                continue
            x, step = run.values(column), run.column_step_ns(column)
            cv = _cv(segment_medians(x, run.segments, step).medians)
            med = typical_median(x, run.segments, step)
        except Exception:  # a damaged run in the history is skipped, never fatal
            continue
        if cv is not None:
            cvs.append(cv)
            typical.append(med)
    if len(cvs) < 2:
        return None
    run_cv = _cv(typical) if len(typical) >= HISTORY_RUNS_FOR_NOISE else None
    noise = aa_range(typical)
    src = f"history: {len(cvs)} earlier runs of this scenario"
    if run_cv is not None and noise is not None:
        src += (
            f", whose medians vary by {100 * run_cv:.2g}% (CV); two of them differ by up to "
            f"±{100 * noise:.2g}% (A/A range)"
        )
    return Variation(float(np.median(cvs)), noise, src)
