"""latscope report --latex and the suite's LaTeX fragment: escaping, and documents that input
the fragments compiled with pdfLaTeX (tables, figures, labels, the page count)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import CLI
from latscope.report import latex
from synth import lognormal, make_run, make_suite_run

PDFLATEX = shutil.which("pdflatex")
#: run parameters that hold every character LaTeX treats specially, and some it has no glyph for
NASTY = r"/tmp/a_b 50% & #1 $x {y} ~^\ <z>|[w] \"q\" café --force"


def test_escape_sets_every_special_character_as_text() -> None:
    e = latex.escape
    assert e(r"_ % & # { } ~ ^ \\") == (
        r"\_ \% \& \# \{ \} \textasciitilde{} \textasciicircum{} \textbackslash{}\textbackslash{}"
    )
    assert e("$5") == r"\ensuremath{\$}5"
    assert e("[x]") == "{[}x{]}"  # never an optional argument after \\
    assert e("<|>") == r"\textless{}\textbar{}\textgreater{}"
    assert e("--noise") == "-{}-noise"  # two hyphens, not an en dash
    assert e("4.2 µs – 5 µs") == r"4.2 \latscopemu{}s -- 5 \latscopemu{}s"
    assert e("≥ ± × τ Σ") == (
        r"\ensuremath{\geq} \ensuremath{\pm} \ensuremath{\times} \ensuremath{\tau} "
        r"\ensuremath{\Sigma}"
    )
    assert e("café naïve") == r"caf\'{e} na\"{\i}ve"
    assert e("中") == "?"  # no pdfLaTeX glyph: a stand-in, never a compile error
    assert e("a\nb\tc") == "a b c"
    assert e("/a,b=c", breaks=True) == r"/\allowbreak{}a,\allowbreak{}b=\allowbreak{}c"
    assert latex.label("x y", "rtt/2") == "latscope:x-y:rtt-2"
    # nothing special is left bare
    raw = e(NASTY)
    assert not re.search(r"(?<!\\)[%&#_]", raw)
    assert not re.search(r"(?<![\\{])\$", raw.replace(r"\ensuremath{\$}", ""))


def _pdflatex(tex: Path) -> str:
    """Compile ``tex`` twice (labels resolve on the second run); its log."""
    assert PDFLATEX is not None
    for _ in range(2):
        r = subprocess.run(
            [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", tex.name],
            cwd=tex.parent,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=300,
        )
        log = tex.with_suffix(".log").read_text(errors="replace")
        assert r.returncode == 0, log[-3000:]
    return log


def _pages(log: str, pdf: Path | None = None) -> int:
    """The page count from pdfTeX's log; with ``pdf`` (written uncompressed), also from its
    page objects, which must agree."""
    m = re.search(r"Output written on \S+ \((\d+) pages?", log)
    assert m, log[-2000:]
    if pdf is not None:
        data = pdf.read_bytes()
        assert data.startswith(b"%PDF-")
        assert len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", data)) == int(m.group(1))
    return int(m.group(1))


def _floats(tex: Path) -> tuple[int, int]:
    text = tex.read_text()
    return text.count(r"\begin{table}"), text.count(r"\begin{figure}")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Two synthetic runs reported with --latex (the first's parameters hold every special
    character), and a synthetic suite's fragment."""
    from latscope import report
    from latscope.suite import compare_rows, document

    d = tmp_path_factory.mktemp("latex")
    store = d / "store"
    a = make_run(store, {"call_1": lognormal(2000, 5000.0, seed=1)}, params={"dir": NASTY})
    b = make_run(store, {"call_1": lognormal(2000, 5600.0, seed=2)})
    r = CLI(store)("report", a.id, b.id, "--latex", str(d / "tex"))
    assert r.returncode == 0, r.stderr
    sr = make_suite_run(store, {"base": [1000.0, 1010.0], "other": [1200.0, 1190.0]})
    frag = report.suite_fragment(document(sr, compare_rows(sr), details=False), sr.suite_run)
    report.write_latex([frag], d / "suite", "suite")
    return {"dir": d, "a": a.id, "b": b.id, "suite": frag.name, "stdout": r.stdout}


def test_report_latex_writes_fragments_figures_and_an_example(written: dict) -> None:
    d: Path = written["dir"] / "tex"  # type: ignore[operator]
    a, b = written["a"], written["b"]
    names = sorted(p.name for p in d.iterdir())
    assert f"{a}.tex" in names and f"{b}.tex" in names and "comparison.tex" in names
    assert f"{a}-more.tex" in names and f"{b}-more.tex" in names
    assert "example.tex" in names
    assert not [n for n in names if n.startswith(".") or n.endswith(".tmp")]
    # the answer: the summary, how it was measured in its notes, the histogram, the box plots
    frag = (d / f"{a}.tex").read_text()
    for word in (
        r"\usepackage{booktabs}",  # the header names the packages
        r"\toprule",
        r"\midrule",
        r"\bottomrule",
        r"\caption{call\_1: histogram",
        "95\\% CI of p50",
        rf"\label{{latscope:{a}:summary}}",
        "caf\\'{e}",
        f"The full analysis is in {a}-more.tex",
    ):
        assert word in frag, word
    # the full analysis: the setup and each column's summary and other figures
    more = (d / f"{a}-more.tex").read_text()
    for word in (
        "Summary of call",
        "p50 (median)",
        r"samples\\beyond",  # a long header on two lines
        "---",  # a withheld tail percentile, as the report shows it
        "What was measured",
        "Environment",
    ):
        assert word in more, word
    assert "\\documentclass" not in frag and "\\begin{document}" not in frag
    # every figure the fragments name is a PDF beside them
    figure = re.compile(r"\\includegraphics\[[^]]*\]\{\\latscopedir (\S+)\}")
    for tex in d.glob("*.tex"):
        for fig in figure.findall(tex.read_text()):
            assert (d / fig).read_bytes().startswith(b"%PDF-"), fig
    out = str(written["stdout"])
    assert f"wrote {d}/" in out and "15 figures (PDF)" in out


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed (texlive-latex-base)")
def test_a_document_inputting_the_fragments_compiles(written: dict) -> None:
    """A lab report in the parent directory inputs a run's fragment, the comparison and a
    suite's fragment from their own directories (the figures are found beside them). One
    float per page: 1 page of text and one page per table and figure."""
    root: Path = written["dir"]  # type: ignore[assignment]
    a, suite = written["a"], written["suite"]
    run_tex, cmp_tex = root / "tex" / f"{a}.tex", root / "tex" / "comparison.tex"
    suite_tex = root / "suite" / f"{suite}.tex"
    # a run's answer: its summary; the column's histogram of every sample and the box plots;
    # its full analysis: what was measured, clock, environment, the column's summary; the
    # column's two histograms, time series, ECDF and autocorrelation figures
    assert _floats(run_tex) == (1, 2)
    assert _floats(root / "tex" / f"{a}-more.tex") == (4, 4)
    # the comparison table; the runs side by side, the shift of the deciles, the ECDFs
    assert _floats(cmp_tex) == (1, 3)
    # the suite, its scenarios, their comparison; the scenarios side by side
    assert _floats(suite_tex) == (3, 1)
    doc = root / "lab.tex"
    doc.write_text(
        "\n".join(
            [
                r"\documentclass{article}",
                r"\usepackage{graphicx}",
                r"\usepackage{booktabs}",
                r"\pdfobjcompresslevel=0",
                r"\tracinglostchars=1",
                r"\makeatletter",
                r"\def\fps@figure{p}\def\fps@table{p}",
                r"\setlength\@fpsep{\textheight}",
                r"\makeatother",
                r"\renewcommand\floatpagefraction{0.01}",
                r"\begin{document}",
                rf"The median is in Table~\ref{{latscope:{a}:summary}}, the histogram in "
                rf"Figure~\ref{{latscope:{a}-call_1-hist}}.",
                rf"\input{{tex/{a}}}",
                rf"\input{{tex/{a}-more}}",
                r"\input{tex/comparison}",
                rf"\input{{suite/{suite}}}",
                r"\end{document}",
                "",
            ]
        )
    )
    log = _pdflatex(doc)
    for bad in ("undefined", "multiply defined", "Float too large", "Missing character"):
        assert bad not in log, bad
    # no glyph from a bitmap font (such as µ from TS1 in pdfLaTeX's default encoding)
    assert not re.search(r"\.\d+pk>", log.replace("\n", ""))
    # a page of text, then one per float: the answer, the full analysis, the comparison and
    # the suite (the floats counted above)
    assert _pages(log, root / "lab.pdf") == 1 + (1 + 2) + (4 + 4) + (1 + 3) + (3 + 1)


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed (texlive-latex-base)")
def test_the_example_compiles(written: dict) -> None:
    d: Path = written["dir"] / "tex"  # type: ignore[operator]
    log = _pdflatex(d / "example.tex")
    assert "undefined" not in log and "Float too large" not in log
    # two runs' answers (3 floats each) and the comparison (5): a page per few floats
    assert (d / "example.pdf").read_bytes().startswith(b"%PDF-")
    assert 3 <= _pages(log) <= 9


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed (texlive-latex-base)")
def test_one_runs_example_is_at_most_three_pages(cli, store: Path, tmp_path: Path) -> None:
    """One run for a lab report: its answer (the summary with how it was measured, each
    column's histogram, the box plots) in at most 3 pages, every reference resolved; its full
    analysis is a fragment of its own that example.tex names but does not input."""
    a = make_run(store, {"rtt": lognormal(3000, 4000.0, seed=3), "oneway": lognormal(3000, 2000.0)})
    d = tmp_path / "tex"
    r = cli("report", a.id, "--latex", str(d))
    assert r.returncode == 0, r.stderr
    example = (d / "example.tex").read_text()
    assert f"\\input{{{a.id}}}" in example and f"% \\input{{{a.id}-more}}" in example
    log = _pdflatex(d / "example.tex")
    assert "undefined" not in log
    assert _pages(log) <= 3


def test_latex_tables_only_and_bad_targets(cli, store: Path, tmp_path: Path) -> None:
    a = make_run(store, {"call": lognormal(500, 500.0)})
    d = tmp_path / "t"
    r = cli("report", a.id, "--latex", str(d), "--no-figures")
    assert r.returncode == 0, r.stderr
    assert not list(d.glob("*.pdf"))
    assert _floats(d / f"{a.id}.tex") == (1, 0)
    assert _floats(d / f"{a.id}-more.tex") == (4, 0)
    (tmp_path / "file").write_text("x")
    for target, words in (
        (tmp_path / "file", "is not a directory"),
        (tmp_path / "no" / "t", "does not exist"),
    ):
        r = cli("report", a.id, "--latex", str(target))
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], r.stderr
