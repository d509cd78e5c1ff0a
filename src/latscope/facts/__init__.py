"""A run's facts: everything a view shows of one run, computed once, when the run is kept, and
stored beside its samples as facts.json (docs/store.md, "A run's facts").

The facts hold the catalogue's entry of each column as it was when the run was kept (its
latency and label, a derived column's formula), the clock (its step and read cost, in one
line), the summary (the figures of `summary.STATS` and the median's one interval, per column),
the findings (warnings and notes, each worded once, with the column it concerns and a key
saying what kind it is), the catalogue's display lines filled from the header, and the lines
that say where and how the run was measured.  `latscope show`, `latscope run`, the reports and
the API render them; none asks the probe's catalogue or computes a statistic again.

- `kept(d)`: a run directory's facts when they are current (`SCHEMA`), else None: light, it
  imports neither numpy nor the statistics.
- `build_facts(run)` (build.py): the facts of a `Run`, from its samples and header.
- `put(d, facts)`: facts.json written into a kept run's directory, where the store allows.

`Run.facts` (record.py) reads them, or builds them from the samples and keeps them: a run kept by
an older latscope is upgraded on first read, and `latscope store upgrade` does every run at
once.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BadInput
from ..files import read_text
from ..store.meta import NULL, SCALAR, Field, Spec, loads, problem
from ..summary import summary_columns

if TYPE_CHECKING:
    from ..store import Store

#: The file a run's facts are kept in, beside run.json and samples.lss.
FACTS_FILE = "facts.json"
#: The version of the facts' layout: facts of another version are built again when read.
SCHEMA = 5  # 3: mount-option notes, at-tick and steal; 4: arms alternated as processes are
# no "one process" run, a derived column may be a difference (ctx's switch); 5: the idle and
# frequency notes of the machine a run was measured on
#: The largest facts.json read: a run's is a few kilobytes (a hundred columns at most).
FACTS_LIMIT = 2 * 2**20

_TEXT = Field((str,))
_OPT_TEXT = Field((str, NULL))
_LINES = Field((list,), items=(str,))
#: A summary row as the views read it: each figure of `summary.summary_columns` a number of
#: its kind (a count a whole number) or null, the interval's method a string or null.
_ROW = Field(
    (dict,),
    items=SCALAR,
    spec={
        "column": Field((str,), required=True),
        **{
            name: Field({"Int64": (int, NULL), "Float64": (float, NULL)}.get(kind, (str, NULL)))
            for name, kind in summary_columns()
        },
    },
)
_FINDING = Field(
    (dict,),
    spec={"level": _TEXT, "key": _TEXT, "column": _OPT_TEXT, "text": _TEXT, "short": _OPT_TEXT},
)

#: What facts.json must hold, of the types the views read (store.meta's checker).
FACTS_SPEC: Spec = {
    "schema": Field((int,), required=True),
    "id": Field((str,), required=True),
    "benchmark": Field((str,), required=True),
    "label": Field((str,), required=True),
    "params_text": Field((str,), required=True),
    "params": Field((list,), required=True, items=(str,)),
    "n": Field((int,), required=True),
    "warmup": Field((int, NULL), required=True),
    "inject_ns": Field((float,), required=True),
    "header_checksummed": Field((bool,), required=True),
    "clock": Field((dict,), required=True, spec={"name": _TEXT, "line": _TEXT}),
    "caveat": Field((str, NULL), required=True),
    "columns": Field(
        (list,),
        required=True,
        each=Field(
            (dict,),
            spec={
                "name": Field((str,), required=True),
                "derived": Field((bool,), required=True),
                "latency_label": Field((str,), required=True),
                "step_ns": Field((float, NULL), required=True),
                "meta": Field((dict,), required=True),
            },
        ),
    ),
    "summary": Field((list,), required=True, each=_ROW),
    "ci_line": Field((str, NULL), required=True),
    "withheld": Field((list,), required=True, items=(str,)),
    "check": Field(
        (dict, NULL),
        required=True,
        spec={"text": _TEXT, "disagree": Field((bool,)), "short": _OPT_TEXT},
    ),
    "display": Field(
        (list,), required=True, each=Field((dict,), spec={"text": _TEXT, "style": _OPT_TEXT})
    ),
    "notes": Field((list,), required=True, each=Field((dict,), spec={"key": _TEXT, "text": _TEXT})),
    "usage": Field((dict, NULL), required=True, spec={"scope": _TEXT, "detail": _TEXT}),
    "workers": Field(
        (dict, NULL),
        required=True,
        spec={
            "count": Field((int,), required=True),
            "columns": Field(
                (list,),
                required=True,
                each=Field(
                    (dict,),
                    spec={
                        "column": _TEXT,
                        "medians_ns": Field((list,), required=True, items=(float, int)),
                        "cv": Field((float, NULL)),
                        "within": Field((float, NULL)),
                        "disagree": Field((bool,), required=True),
                    },
                ),
            ),
        },
    ),
    "findings": Field((list,), required=True, each=_FINDING),
    "measured": _OPT_TEXT,
    "imported": _OPT_TEXT,
    "made_by": _LINES,
}


def latency_of(facts: dict[str, Any], column: str) -> str:
    """A column's latency in words, as the facts keep it ('' for a column they do not
    know)."""
    for c in facts["columns"]:
        if c["name"] == column:
            return str(c["latency_label"])
    return ""


#: The findings the reports say where they belong (with how the run was measured), not with
#: the run's other warnings: the timed loop's usage and the probe's own warnings.
PLACED = frozenset({"timed-loop", "probe"})
#: The analysis's warning code (`stats`) of each finding the facts make from the same
#: function: where the facts say it for a column, a report does not say it again.
ANALYSIS_CODE = {"timer-coarse": "timer_too_coarse", "levels": "levels"}


def warnings_of(facts: dict[str, Any], *, placed: bool = False) -> list[dict[str, Any]]:
    """The run's warnings (findings of level "warning"), in the order `latscope show` says
    them; without those `PLACED` elsewhere unless ``placed``."""
    return [
        w
        for w in facts["findings"]
        if w["level"] == "warning" and (placed or w["key"] not in PLACED)
    ]


def said_codes(facts: dict[str, Any], column: str | None = None) -> set[str]:
    """The analysis's warning codes a finding of the facts already says (of ``column``, or
    of any column when None)."""
    return {
        ANALYSIS_CODE[w["key"]]
        for w in facts["findings"]
        if w["key"] in ANALYSIS_CODE and (column is None or w["column"] == column)
    }


def disagreements(facts: dict[str, Any]) -> list[str]:
    """Every check between two figures of the run that found them apart: the batch figure
    against the per-call median (when it disagrees) and each one-way time against rtt/2. The
    report says them where it opens; the terminal says the batch line always (agreeing or
    not) and these among its warnings."""
    check = facts["check"]
    out = [check["text"]] if check and check.get("disagree") else []
    return out + [w["text"] for w in facts["findings"] if w["key"] == "one-way"]


def plain(v: Any) -> Any:
    """A value as JSON keeps it: numpy scalars as Python numbers, a number that is not
    finite as null, containers element by element."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()  # numpy scalar
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def kept(d: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The facts of the run directory ``d`` when they are there, current (`SCHEMA`) and as
    `FACTS_SPEC` says; None otherwise (none, another version, a damaged or foreign file: they
    are then built again from the samples, `Run.facts`)."""
    p = Path(d) / FACTS_FILE
    if not os.path.lexists(p):
        return None
    try:
        got = loads(read_text(p, "a run's facts (facts.json)", FACTS_LIMIT, follow=False), p)
    except BadInput:
        return None
    if not isinstance(got, dict) or got.get("schema") != SCHEMA:
        return None
    return got if problem(got, FACTS_SPEC) is None else None


def dumps(facts: dict[str, Any]) -> str:
    """facts.json's text: JSON, one key per line, no value that is not JSON."""
    return json.dumps(plain(facts), indent=1, allow_nan=False)


def put(d: Path, facts: dict[str, Any], store: Store | None = None) -> bool:
    """Write facts.json into the kept run directory ``d`` (through the store's checked
    directories: never into one another user could redirect, nor a read-only one); whether
    it was written."""
    from ..store.core import Store as _Store

    st = store if store is not None else _Store(d.parent.parent)
    if d.parent != st.runs_dir or not st.writable():
        return False
    try:
        st.keep_file(d, FACTS_FILE, dumps(facts))
    except (BadInput, OSError):
        return False
    return True
