"""The suite's report links each scenario's full analysis as a page of its own, and a hostile
scenario name stays text in every format (HTML, Markdown rendered by a CommonMark renderer)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from latscope import report
from latscope.errors import BadInput
from latscope.suite import compare_rows, document
from synth import make_suite_run

NASTY = ("<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "[x](javascript:alert(3))")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[Any]]:
    """A suite run whose scenario names are hostile (`NASTY`), and its comparison rows: made
    once for the two tests that write its reports (each made both for itself)."""
    store = tmp_path_factory.mktemp("pages") / "store"
    sr = make_suite_run(
        store, {NASTY[0]: [1000.0, 1010.0], NASTY[1]: [1200.0, 1190.0], NASTY[2]: [990.0]}
    )
    return sr, compare_rows(sr)


def test_each_scenario_is_a_page_linked_from_the_suite_report(hostile, tmp_path: Path):
    """The report holds no run's full analysis: it links one page per scenario, in
    ``<report>-runs/`` beside it, each self-contained and holding its run's tables (the
    representative repetition, the others named); a link planted at that folder is never
    followed, and pages that exist are replaced only with force."""
    sr, rows = hostile
    doc = document(sr, rows, figures=False, pages_dir="rep-runs")
    html = tmp_path / "rep.html"
    report.write_html(doc, html)
    text = html.read_text()
    hrefs = re.findall(r'<a href="(rep-runs/[^"]+)">', text)
    assert len(hrefs) == 3
    for h in hrefs:
        page = (tmp_path / h).read_text()
        assert page.startswith("<!DOCTYPE html>") and "<script" not in page.lower()
        assert "Summary of call" in page
    assert sorted(os.listdir(tmp_path / "rep-runs")) == sorted(h.split("/")[1] for h in hrefs)
    assert "the full analysis of run" not in text  # nothing inlined
    first = (tmp_path / hrefs[0]).read_text()
    assert "other repetitions:" in first
    # written again: refused without force, then replaced
    with pytest.raises(BadInput, match="exists"):
        report.write_html(doc, tmp_path / "again.html")
    assert not (tmp_path / "again.html").exists()
    report.write_html(doc, html, force=True)
    # a link planted where the pages go: refused, its target untouched
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "b-runs").symlink_to(target)
    with pytest.raises(BadInput, match="symbolic link"):
        report.write_html(
            document(sr, rows, figures=False, pages_dir="b-runs"), tmp_path / "b.html"
        )
    assert list(target.iterdir()) == [] and not (tmp_path / "b.html").exists()


def test_hostile_scenario_names_stay_text(hostile, tmp_path: Path):
    """Scenario names holding a script, an image with a handler and a javascript: link are
    shown as text in the HTML report and in the Markdown one, also once a CommonMark renderer
    has turned the Markdown into HTML (as a forge or an editor would)."""
    from markdown_it import MarkdownIt

    sr, rows = hostile
    doc = document(sr, rows, figures=False)
    html = tmp_path / "r.html"
    report.write_html(doc, html)
    md_dir = tmp_path / "md"
    report.write_markdown(doc, md_dir)
    md = (md_dir / "report.md").read_text()
    rendered = MarkdownIt("commonmark").render(md)
    for text in (html.read_text(), rendered, *(p.read_text() for p in (tmp_path).glob("*/*.html"))):
        low = text.lower()
        assert "<script" not in low and "<img src=x" not in low
        assert 'href="javascript:' not in low
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered  # shown, as text
    assert "alert(3)" in rendered


def test_a_suite_report_opens_with_its_comparison_in_chromium(store: Path, tmp_path: Path):
    """At 1280 px wide, a suite's report (three scenarios, drawn with its figures) opens with
    its comparison table and first figure on the first screen, is at most 25,000 px tall, and
    nothing is wider than the page; its pages load."""
    from test_report import CHROMIUM, _page_loads, layout

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (scripts/system-deps test installs it)")
    sr = make_suite_run(store, {"a": [1000.0, 1010.0], "b": [1200.0, 1190.0], "c": [990.0]})
    doc = document(sr, compare_rows(sr), figures=True, pages_dir="s-runs")
    html = tmp_path / "s.html"
    report.write_html(doc, html)
    (height, width, first, _folds), dom = layout(html, tmp_path)
    assert height <= 25_000 and width <= 1280, (height, width)
    assert 0 < first < 1000, first
    assert dom.index("Comparison") < dom.index("<img")
    page = next((tmp_path / "s-runs").iterdir())
    assert "Summary of call" in _page_loads(page, tmp_path / "profile2")
