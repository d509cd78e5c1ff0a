"""A suite's [[claim]]s: what its scenarios should show, checked on its own figures (holds,
contradicted, inconclusive, not measured), on synthetic rows whose intervals are known, and
in a real suite run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from latscope import scenarios
from latscope.errors import BadInput
from latscope.stats.between import Between, Rep
from latscope.suite import claims
from latscope.suite.comparison import Row


def _row(scenario: str, column: str, med: float, lo: float, hi: float) -> Row:
    b = Between(
        column, (Rep("r1", med, lo, hi),), med, med, med, 0.0, None, None, (lo, hi), med, "t", None
    )
    return Row(scenario, "syscall", column, b)


def _suite(tmp_path: Path, claim_toml: str) -> scenarios.Suite:
    text = (
        'name = "t"\n'
        '[[scenario]]\nname = "a"\nbenchmark = "syscall"\n'
        '[[scenario]]\nname = "b"\nbenchmark = "syscall"\nparams = { op = "read0" }\n' + claim_toml
    )
    p = tmp_path / "t.toml"
    p.write_text(text)
    return scenarios.parse(p)


ROWS = [_row("a", "call", 100.0, 90.0, 110.0), _row("b", "call", 300.0, 280.0, 320.0)]


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ('figure = "a:call"\nbelow = "200 ns"', "holds"),
        ('figure = "a:call"\nbelow = "95 ns"', "inconclusive"),
        ('figure = "a:call"\nbelow = "80 ns"', "contradicted"),
        ('figure = "a:call"\nabove = "0.08 us"', "holds"),
        ('figure = "a:call"\nabove = "1 ms"', "contradicted"),
        ('figure = "a:call"\nwithin = ["50 ns", "150 ns"]', "holds"),
        ('figure = "a:call"\nwithin = ["100 ns", "150 ns"]', "inconclusive"),
        ('figure = "a:call"\nwithin = ["1 us", "2 us"]', "contradicted"),
        # b / a: 3 [280/110 = 2.55, 320/90 = 3.56]: conservative
        ('figure = "b:call"\nvs = "a:call"\nabove = 2.5', "holds"),
        ('figure = "b:call"\nvs = "a:call"\nabove = 3.0', "inconclusive"),
        ('figure = "b:call"\nvs = "a:call"\nbelow = 2.0', "contradicted"),
        ('figure = "b:call"\nvs = "a:call"\ndiffers = 0.05', "holds"),
        ('figure = "a:call"\nvs = "a:call"\ndiffers = 0.5', "contradicted"),  # 0.82-1.22
        ('figure = "a:call"\nvs = "a:call"\ndiffers = 0.1', "inconclusive"),
        ('figure = "a:rtt"\nbelow = "1 s"', "not measured"),
    ],
)
def test_a_claim_holds_only_where_its_whole_interval_says_so(
    tmp_path: Path, claim: str, verdict: str
) -> None:
    s = _suite(tmp_path, f'[[claim]]\nreport = "9"\nsays = "x"\n{claim}\n')
    (v,) = claims.check(claims.parse(s), ROWS)
    assert v.verdict == verdict, v
    d = v.to_dict()
    assert d["verdict"] == verdict and d["report"] == "9"
    if verdict != "not measured":
        assert d["interval"][0] <= d["estimate"] <= d["interval"][1]
    else:
        assert "a:rtt not measured here" in v.figures()


def test_a_ratios_interval_is_the_conservative_one() -> None:
    c = claims.Claim("x", ("b", "call"), "above", (1.0, 1.0), ("a", "call"))
    (v,) = claims.check([c], ROWS)
    assert v.estimate == pytest.approx(3.0)
    assert (v.low, v.high) == (pytest.approx(280 / 110), pytest.approx(320 / 90))
    assert v.figures() == "3x [2.55–3.56] †" and not v.paired


def _reps_row(scenario: str, column: str, meds: list[float]) -> Row:
    import numpy as np

    reps = tuple(Rep(f"r{k}", m, m * 0.5, m * 2.0) for k, m in enumerate(meds))
    g = float(np.exp(np.mean(np.log(meds))))
    b = Between(column, reps, float(np.median(meds)), min(meds), max(meds), 0.0, None, None,
                (min(meds) * 0.5, max(meds) * 2.0), g, "t", None)  # fmt: skip
    return Row(scenario, "syscall", column, b)


def test_a_ratio_of_figures_measured_side_by_side_is_paired_by_repetition() -> None:
    """Three repetitions whose levels swing together (rounds of a busy host): each round's
    ratio is 2.9-3.1, though each figure's own interval spans 4x; paired, the claim holds."""
    a = _reps_row("a", "call", [100.0, 200.0, 400.0])
    b = _reps_row("b", "call", [300.0, 620.0, 1160.0])
    c = claims.Claim("x", ("b", "call"), "above", (2.5, 2.5), ("a", "call"))
    (v,) = claims.check([c], [a, b])
    assert v.paired and v.verdict == "holds"
    assert 2.5 < v.low < v.estimate < v.high < 3.5
    assert "†" not in v.figures()
    # unpaired (another count of repetitions): the conservative interval, inconclusive here
    b2 = _reps_row("b", "call", [300.0, 620.0])
    (v2,) = claims.check([c], [a, b2])
    assert not v2.paired and v2.verdict == "inconclusive" and v2.figures().endswith("†")


@pytest.mark.parametrize(
    ("claim", "says"),
    [
        ('says = "x"\nfigure = "a:call"\nbelow = "1 us"\nsize = 3', "unknown key 'size'"),
        ('figure = "a:call"\nbelow = "1 us"', "says: what the claim is"),
        ('says = "x"\nfigure = "call"\nbelow = "1 us"', "write 'SCENARIO:COLUMN'"),
        ('says = "x"\nfigure = "zz:call"\nbelow = "1 us"', "no scenario 'zz'"),
        ('says = "x"\nfigure = "a:"\nbelow = "1 us"', "name the column"),
        ('says = "x"\nfigure = "a:call"\nbelow = "1 us"\nabove = "1 ns"', "exactly one of"),
        ('says = "x"\nfigure = "a:call"', "exactly one of"),
        ('says = "x"\nfigure = "a:call"\nbelow = 5', "a duration with its unit"),
        ('says = "x"\nfigure = "a:call"\nbelow = "5 parsecs"', "a duration with its unit"),
        ('says = "x"\nfigure = "a:call"\nvs = "b:call"\nbelow = "5 us"', "a positive number"),
        ('says = "x"\nfigure = "a:call"\ndiffers = 0.05', "give vs too"),
        ('says = "x"\nfigure = "a:call"\nvs = "b:call"\ndiffers = 2', "smallest change"),
        ('says = "x"\nfigure = "a:call"\nwithin = ["2 us", "1 us"]', "LOW below HIGH"),
        ('says = "x"\nfigure = "a:call"\nwithin = ["2 us"]', "within = [LOW, HIGH]"),
    ],
)
def test_a_wrong_claim_is_one_line_naming_it(tmp_path: Path, claim: str, says: str) -> None:
    s = _suite(tmp_path, f"[[claim]]\n{claim}\n")
    with pytest.raises(BadInput) as e:
        claims.parse(s)
    assert "claim 1" in e.value.message and says in e.value.message, e.value.message
    assert "\n" not in e.value.message


def test_the_seeds_claims_name_its_scenarios() -> None:
    s = scenarios.load("seeds")
    cs = claims.parse(s)
    assert len(cs) >= 10
    assert {c.report for c in cs} == {"000", "001", "002", "003", "004"}
    # report 004: RTT/2 against the one-way time, inside one scenario
    assert any(c.figure == ("r004-pipe-rtt2", "rtt/2") and c.vs == ("r004-pipe-rtt2", "oneway")
               for c in cs)  # fmt: skip


def test_a_suite_prints_and_keeps_its_claims(cli, store: Path, tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text(
        'name = "c"\nrepeat = 2\n'
        '[[scenario]]\nname = "get"\nbenchmark = "syscall"\nn = 400\n'
        '[[claim]]\nreport = "x"\nsays = "a null call is below a second"\n'
        'figure = "get:call"\nbelow = "1 s"\n'
        '[[claim]]\nsays = "a null call is above a second"\nfigure = "get:call"\n'
        'above = "1 s"\n'
    )
    r = cli("suite", str(p), "--quiet", "--no-figures", "--paired-time", "0")
    assert r.returncode == 0, r.stderr
    assert "checked on these runs" in r.stdout and "1 of 2 claims hold" in r.stdout
    rec = json.loads(next((store / "suites").glob("*.json")).read_text())
    assert [c["verdict"] for c in rec["claims"]] == ["holds", "contradicted"]
    html = next((store / "reports").glob("*.html")).read_text()
    assert "checked on these runs" in html and "a null call is above a second" in html
