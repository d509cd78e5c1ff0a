"""What a suite's scenarios should show, checked on its own data (docs/suites.md, "Claims").

A scenario file's ``[[claim]]`` names a figure — the median of one column of one scenario,
with its interval over the repetitions (the comparison's row) — and holds it against a bound
(``below``, ``above``, ``within``: durations such as ``"1 us"``) or, with ``vs``, against
another figure: their ratio (``below``, ``above``, ``within`` as plain numbers) or whether
they differ at all (``differs = 0.05``: by more than 5% either way). Each gets a verdict:

* **holds**: the figure's whole interval satisfies the claim;
* **contradicted**: its whole interval satisfies the opposite;
* **inconclusive**: the interval straddles the bound (more repetitions, or longer runs);
* **not measured**: a scenario it needs did not run here (skipped, failed, optional).

A ratio's interval comes from the repetitions paired in time (the same run for two columns of
one scenario, the same round of the suite for two scenarios: a t interval over the paired
ratios); with too few repetitions for that, it is the conservative one from the two intervals
(low over the other's high, high over the other's low).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..units import fmt, shown

if TYPE_CHECKING:
    from rich.console import Console

    from ..scenarios import Suite
    from .comparison import Row

KEYS = {"report", "says", "figure", "vs", "below", "above", "within", "differs"}
TESTS = ("below", "above", "within", "differs")
_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ns|us|µs|ms|s)\s*$")


@dataclass(frozen=True)
class Claim:
    says: str
    figure: tuple[str, str]  # scenario, column
    test: str  # below, above, within, differs
    bound: tuple[float, float]  # (x, x) for below/above; (low, high) for within; (d, d)
    vs: tuple[str, str] | None = None
    report: str | None = None

    @property
    def ratio(self) -> bool:
        return self.vs is not None


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    verdict: str  # holds, contradicted, inconclusive, not measured
    estimate: float | None = None  # the median (ns) or the ratio
    low: float | None = None
    high: float | None = None
    why: str | None = None  # not measured: what is missing
    paired: bool = False  # a ratio from repetitions paired in time (else the conservative one)

    def figures(self) -> str:
        """The figure as a reader checks it: '1.875 µs [1.80–1.95]' or '0.25x [0.20–0.31]'."""
        if self.estimate is None:
            return self.why or "—"
        if self.claim.ratio:
            dagger = "" if self.paired else " †"
            return f"{self.estimate:.3g}x [{self.low:.3g}–{self.high:.3g}]{dagger}"
        return f"{fmt(self.estimate)} [{fmt(self.low)}–{fmt(self.high)}]"

    def to_dict(self) -> dict[str, Any]:
        c = self.claim
        return {
            "report": c.report,
            "says": c.says,
            "figure": ":".join(c.figure),
            "vs": ":".join(c.vs) if c.vs else None,
            "test": c.test,
            "bound": list(c.bound) if c.test == "within" else c.bound[0],
            "verdict": self.verdict,
            "estimate": self.estimate,
            "interval": [self.low, self.high] if self.estimate is not None else None,
            "why": self.why,
            "paired": self.paired,
        }


def _ref(err: Any, where: str, key: str, v: Any, names: set[str]) -> tuple[str, str]:
    if not isinstance(v, str) or v.count(":") < 1:
        raise err(where, f"{key} = {shown(repr(v))}: write 'SCENARIO:COLUMN'")
    sc, col = v.rsplit(":", 1)
    if sc not in names:
        raise err(where, f"{key} = '{shown(v)}': no scenario '{shown(sc)}' in this suite")
    if not col:
        raise err(where, f"{key} = '{shown(v)}': name the column after the colon")
    return sc, col


def _value(err: Any, where: str, key: str, v: Any, ratio: bool) -> float:
    if ratio:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise err(where, f"{key} = {shown(repr(v))}: a ratio is a positive number")
        return float(v)
    m = _DURATION.match(v) if isinstance(v, str) else None
    if m is None:
        raise err(where, f"{key} = {shown(repr(v))}: give a duration with its unit, e.g. '1 us'")
    return float(m[1]) * _UNITS[m[2]]


def parse(suite: Suite) -> list[Claim]:
    """The suite's ``[[claim]]`` entries, checked against its scenarios (their names after
    the matrix, and those skipped here): one BadInput line on the first problem."""
    from ..scenarios import _Err

    err = _Err(suite.path)
    names = {s.name for s in suite.scenarios} | {k.name for k in suite.skipped}
    out: list[Claim] = []
    for i, d in enumerate(suite.claims):
        where = f"claim {i + 1}"
        if not isinstance(d, dict):
            raise err(where, "write claims as [[claim]] tables")
        unknown = set(d) - KEYS
        if unknown:
            raise err(
                where, f"unknown key '{sorted(unknown)[0]}' (known: {', '.join(sorted(KEYS))})"
            )
        says = d.get("says")
        if not isinstance(says, str) or not says.strip():
            raise err(where, "says: what the claim is, in words")
        report = d.get("report")
        if report is not None and not isinstance(report, str):
            raise err(where, "report: a string, e.g. '001'")
        figure = _ref(err, where, "figure", d.get("figure"), names)
        vs = _ref(err, where, "vs", d["vs"], names) if "vs" in d else None
        tests = [t for t in TESTS if t in d]
        if len(tests) != 1:
            raise err(where, "give exactly one of below, above, within, differs")
        test = tests[0]
        if test == "differs":
            if vs is None:
                raise err(where, "differs compares two figures: give vs too")
            dv = d["differs"]
            if isinstance(dv, bool) or not isinstance(dv, (int, float)) or not 0 < dv < 1:
                raise err(where, "differs = the smallest change that counts, e.g. 0.05 (5%)")
            bound = (float(dv), float(dv))
        elif test == "within":
            w = d["within"]
            if not isinstance(w, list) or len(w) != 2:
                raise err(where, "within = [LOW, HIGH]")
            lo, hi = (_value(err, where, "within", x, vs is not None) for x in w)
            if not lo < hi:
                raise err(where, "within = [LOW, HIGH]: LOW below HIGH")
            bound = (lo, hi)
        else:
            x = _value(err, where, test, d[test], vs is not None)
            bound = (x, x)
        out.append(Claim(says.strip(), figure, test, bound, vs, report))
    return out


def _figure(
    rows: dict[tuple[str, str], Row], ref: tuple[str, str]
) -> tuple[float, float, float] | str:
    """(median, low, high) of a scenario's column, or what is missing."""
    r = rows.get(ref)
    if r is None:
        return f"{ref[0]}:{ref[1]} not measured here"
    b = r.between
    if b.interval is not None:
        lo, hi = b.interval
    elif b.reps and b.reps[0].low is not None and b.reps[0].high is not None:
        lo, hi = b.reps[0].low, b.reps[0].high
    else:
        return f"{ref[0]}:{ref[1]} has no interval"
    return (
        b.median_of_medians,
        float(min(lo, b.median_of_medians)),
        float(max(hi, b.median_of_medians)),
    )


def _judge(c: Claim, low: float, high: float) -> str:
    x, y = c.bound
    if c.test == "below":
        return "holds" if high < x else "contradicted" if low > x else "inconclusive"
    if c.test == "above":
        return "holds" if low > x else "contradicted" if high < x else "inconclusive"
    if c.test == "within":
        if x <= low and high <= y:
            return "holds"
        return "contradicted" if high < x or low > y else "inconclusive"
    # differs by more than d either way
    lo_same, hi_same = 1.0 / (1.0 + x), 1.0 + x
    if high < lo_same or low > hi_same:
        return "holds"
    return "contradicted" if lo_same <= low and high <= hi_same else "inconclusive"


def _paired(a: Row, b: Row) -> tuple[float, float, float] | None:
    """The ratio of two figures measured side by side: their repetitions' medians paired by
    repetition (the same run for two columns of one scenario; the same round of the suite
    otherwise), a t interval over the paired ratios (on their logarithms); None with fewer
    than the interval needs, or a repetition missing on either side."""
    from ..stats.between import t_interval

    ra, rb = a.between.reps, b.between.reps
    if len(ra) != len(rb) or any(x.p50 <= 0 for x in (*ra, *rb)):
        return None
    ti = t_interval([x.p50 / y.p50 for x, y in zip(ra, rb, strict=True)])
    return (ti.center, ti.low, ti.high) if ti is not None and ti.log else None


def check(claims: list[Claim], rows: list[Row]) -> list[Verdict]:
    """Each claim's verdict on the suite's rows (one per scenario and column compared)."""
    by = {(r.scenario, r.column): r for r in rows}
    out: list[Verdict] = []
    for c in claims:
        a = _figure(by, c.figure)
        if isinstance(a, str):
            out.append(Verdict(c, "not measured", why=a))
            continue
        if c.vs is None:
            out.append(Verdict(c, _judge(c, a[1], a[2]), *a))
            continue
        b = _figure(by, c.vs)
        if isinstance(b, str):
            out.append(Verdict(c, "not measured", why=b))
            continue
        if b[1] <= 0:
            out.append(Verdict(c, "inconclusive", why=f"{':'.join(c.vs)} reaches 0"))
            continue
        paired = _paired(by[c.figure], by[c.vs])
        est, lo, hi = paired if paired else (a[0] / b[0], a[1] / b[2], a[2] / b[1])
        out.append(Verdict(c, _judge(c, lo, hi), est, lo, hi, paired=paired is not None))
    return out


STYLE = {"holds": "green", "contradicted": "red", "inconclusive": "yellow", "not measured": "dim"}


def print_claims(console: Console, verdicts: list[Verdict]) -> None:
    """The claims with their verdicts and figures, one row each (80 columns: the claim's
    words wrap)."""
    from rich.table import Table

    if not verdicts:
        return
    t = Table(title="what the reports should have found, checked on these runs",
              title_justify="left")  # fmt: skip
    t.add_column("rep", no_wrap=True)
    t.add_column("claim", ratio=1)
    t.add_column("figure [95% CI]", no_wrap=False, max_width=24)
    t.add_column("verdict", no_wrap=True)
    for v in verdicts:
        s = STYLE[v.verdict]
        t.add_row(
            shown(v.claim.report or ""),
            shown(v.claim.says),
            shown(v.figures()),
            f"[{s}]{v.verdict}[/{s}]",
        )
    console.print(t)
    held = sum(v.verdict == "holds" for v in verdicts)
    console.print(
        f"[dim]{held} of {len(verdicts)} claims hold; a ratio's interval: over the repetitions "
        "paired in time (†: the conservative one from the two medians' intervals)[/dim]"
    )
