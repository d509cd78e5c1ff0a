"""latscope report: one self-contained HTML file (no network references), Markdown with image
files, the full terminal summary, and the HTML opened in a real headless Chromium."""

from __future__ import annotations

import base64
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from conftest import CLI
from latscope.store import Store
from synth import lognormal, make_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PNG = b"\x89PNG\r\n\x1a\n"
# src= / href= / url() / @import pointing at the network
REMOTE = re.compile(
    r"""(?:\b(?:src|href|srcset|poster|data)\s*=\s*["']?\s*(?:https?:)?//)"""
    r"""|(?:url\(\s*["']?\s*(?:https?:)?//)|(?:@import)""",
    re.I,
)


def assert_self_contained(text: str) -> None:
    assert not REMOTE.search(text), REMOTE.search(text)
    assert "<script" not in text.lower()
    assert "<link" not in text.lower()
    for m in re.finditer(r'<img src="([^"]*)" width="(\d+)" height="(\d+)"', text):
        assert m.group(1).startswith("data:image/png;base64,"), m.group(1)[:60]
        png = base64.b64decode(m.group(1).split(",", 1)[1])
        assert png.startswith(PNG)
        # twice the pixels it is shown at (IHDR: width and height at bytes 16-24): sharp on
        # a high-density screen
        wide, high = struct.unpack(">II", png[16:24])
        assert abs(wide - 2 * int(m.group(2))) <= 1 and abs(high - 2 * int(m.group(3))) <= 1
    assert text.count("<img") == len(re.findall(r'<img src="[^"]*" width="\d+"', text))


@pytest.fixture(scope="module")
def figures_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one HTML report drawn with its figures (the others are tables only: figures are
    most of a report's time): two synthetic runs of two columns, the second compared with the
    first. Its content is checked below, its images in a browser."""
    d = tmp_path_factory.mktemp("figures")
    store = d / "store"
    rng = np.random.default_rng(0)
    spiky = lognormal(4000, 1000.0, seed=1)
    spiky[::50] *= 30.0
    a = make_run(store, {"open": spiky, "read": lognormal(4000, 90.0, seed=2)})
    b = make_run(
        store,
        {
            "open": 1.2 * lognormal(4000, 1000.0, seed=3),
            "read": rng.lognormal(np.log(90.0), 0.3, 4000),
        },
    )
    out = d / "r.html"
    r = CLI(store)("report", a.id, b.id, "--html", str(out))
    assert r.returncode == 0, r.stderr
    return out


def test_html_report_of_two_runs(figures_report: Path) -> None:
    text = figures_report.read_text()
    assert_self_contained(text)
    for word in (
        "Summary of open",
        "p99.99",  # shown as — with 4,000 samples
        "samples beyond",
        "CI method",
        "ESS",
        "geometric mean",
        "MAD",
        "IQR",
        "CV (std / mean)",
        "Kolmogorov–Smirnov D",
        "Outliers by class",
        "period of the spikes",
        "Drift",
        "Clock",
        "overhead",
        "step",
        "Environment",
        "Comparison with the baseline",
        "ratio of medians",
        "Mann–Whitney p",
        "slower",
    ):
        assert word in text, word
    assert text.count("<table") >= 20
    assert text.count("<img") >= 10
    assert 'class="alert' in text  # the spikes and the tail give warnings
    assert not list(figures_report.parent.glob(".*tmp*"))


def test_markdown_report(cli, store: Path, tmp_path: Path) -> None:
    a = make_run(store, {"call": lognormal(2000, 500.0)})
    d = tmp_path / "md"
    r = cli("report", a.id, "--md", str(d))
    assert r.returncode == 0, r.stderr
    md = (d / "report.md").read_text()
    assert "| p50 (median) |" in md and "## Run" in md
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert len(links) >= 5
    for link in links:
        assert (d / link).read_bytes().startswith(PNG)
    assert not [p for p in d.iterdir() if ".tmp" in p.name]


def test_report_bad_input(cli, store: Path, tmp_path: Path) -> None:
    a = make_run(store, {"call": lognormal(100, 500.0)})
    for args, words in (
        ((a.id,), "--html FILE"),
        ((a.id, "--html", str(tmp_path / "no" / "x.html")), "does not exist"),
        ((a.id, "--html", str(tmp_path)), "is a directory"),
        (("no-such-run", "--html", str(tmp_path / "x.html")), "no run"),
    ):
        r = cli("report", *args)
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], r.stderr
    assert not (tmp_path / "x.html").exists()


def test_show_full(cli, store: Path) -> None:
    a = make_run(store, {"call": lognormal(3000, 500.0)})
    r = cli("show", a.id, "--full")
    assert r.returncode == 0, r.stderr
    for word in ("Summary of call", "Serial dependence", "Distribution", "Spikes", "Drift", "ESS"):
        assert word in r.stdout, word
    plain = cli("show", a.id)
    assert plain.returncode == 0 and "Summary of call" not in plain.stdout


# ------------------------------------------------------------------------------ browser


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )


IMAGE_PROBE = """<script>
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute("data-images", ok + "/" + imgs.length);
});
</script></body>"""


def _pipe_run(cli, store: Path) -> str:
    r = cli("run", "pipe", "-n", "3000", "--quiet")
    assert r.returncode == 0, r.stderr
    return Store(store).list_meta()[-1]["id"]


def _imported_run(cli, store: Path, tmp_path: Path) -> str:
    rng = np.random.default_rng(7)
    f = tmp_path / "win.csv"
    rows = [
        f"{i},{int(rng.lognormal(6.3, 0.3))},{int(rng.lognormal(2.2, 0.2))}" for i in range(3000)
    ]
    f.write_text("iteration,open_us,read_us\n" + "\n".join(rows) + "\n")
    r = cli("import", str(f), "--quiet")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def _page_loads(html: Path, profile: Path, shot: Path | None = None) -> str:
    """The page as it is, in Chromium: it loads with no console messages at all (it has no
    scripts); returns its DOM. With ``shot``, the same Chromium also renders it: a
    screenshot at 1280 x 2000 (`_rendered`)."""
    view = ["--hide-scrollbars", "--window-size=1280,2000", f"--screenshot={shot}"] if shot else []
    dom = _chromium([*view, "--dump-dom", html.as_uri()], profile)
    _loaded(dom)
    if shot:
        _rendered(shot)
    return dom.stdout


def _loaded(dom: subprocess.CompletedProcess[str]) -> None:
    """Chromium loaded the page with no console messages at all."""
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Uncaught" not in dom.stderr and "CONSOLE" not in dom.stderr, dom.stderr[-2000:]


def _rendered(shot: Path) -> None:
    """It renders: a screenshot."""
    assert shot.read_bytes().startswith(PNG) and shot.stat().st_size > 20_000


needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (scripts/system-deps test installs it)"
)


@needs_chromium
@pytest.mark.parametrize("source", ["pipe", "imported"])
def test_report_in_headless_chromium(cli, store: Path, tmp_path: Path, source: str) -> None:
    """A real run's report and an imported run's (tables only) in a real browser."""
    rid = _pipe_run(cli, store) if source == "pipe" else _imported_run(cli, store, tmp_path)
    html = tmp_path / f"{source}.html"
    r = cli("report", rid, "--html", str(html), "--no-figures")
    assert r.returncode == 0, r.stderr
    assert_self_contained(html.read_text())
    dom = _page_loads(html, tmp_path / "profile", tmp_path / f"{source}.png")
    assert dom.count("<table") >= 8, dom.count("<table")
    assert "Summary of" in dom and "Clock" in dom


LAYOUT_PROBE = """<script>
window.addEventListener("load", function () {
  var d = document.documentElement, imgs = document.images, first = -1;
  for (var i = 0; i < imgs.length; i++) {
    var r = imgs[i].getBoundingClientRect();
    if (r.height > 0) { first = Math.round(r.top + window.scrollY); break; }
  }
  var folds = document.querySelectorAll("details.fold").length;
  document.body.setAttribute("data-layout",
    d.scrollHeight + "/" + d.scrollWidth + "/" + first + "/" + folds);
});
</script></body>"""


def _layout_of(dom: str) -> tuple[int, int, int, int]:
    """What `LAYOUT_PROBE` found: the page's height and width, where its first figure starts
    (px) and how many folds it has."""
    m = re.search(r'data-layout="(\d+)/(\d+)/(-?\d+)/(\d+)"', dom)
    assert m, dom[:500]
    h, w, first, folds = (int(g) for g in m.groups())
    return h, w, first, folds


def layout(html: Path, tmp_path: Path) -> tuple[tuple[int, int, int, int], str]:
    """The page in Chromium at 1280 px wide: its height, its width, where its first figure
    starts (px) and how many folds it has; and its DOM."""
    probe = tmp_path / f"{html.stem}-layout-probe.html"
    probe.write_text(html.read_text().replace("</body>", LAYOUT_PROBE, 1))
    dom = _chromium(
        ["--window-size=1280,1000", "--virtual-time-budget=10000", "--dump-dom", probe.as_uri()],
        tmp_path / f"{html.stem}-profile",
    )
    return _layout_of(dom.stdout), dom.stdout


class Opened(NamedTuple):
    """A page Chromium loaded: its DOM dumped (with stderr and status), and a screenshot."""

    dom: subprocess.CompletedProcess[str]
    shot: Path


@pytest.fixture(scope="module")
def figures_in_chromium(figures_report: Path, tmp_path_factory: pytest.TempPathFactory) -> Opened:
    """The report drawn with its figures, opened once in Chromium for the tests below (each
    started it for itself, three times in all): a copy with two small scripts that note on
    load how many of its images decoded (`IMAGE_PROBE`) and its layout at 1280 px wide
    (`LAYOUT_PROBE`), its DOM dumped and a screenshot taken (``figures.png`` beside it). The
    scripts only set attributes: a console message of the page as it is shows here too."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (scripts/system-deps test installs it)")
    d = tmp_path_factory.mktemp("chromium")
    probe = d / "figures-probe.html"
    text = figures_report.read_text().replace("</body>", IMAGE_PROBE, 1)
    probe.write_text(text.replace("</body>", LAYOUT_PROBE, 1))
    shot = d / "figures.png"
    view = ["--window-size=1280,1000", "--virtual-time-budget=10000"]  # as `layout` opens it
    dom = _chromium([*view, f"--screenshot={shot}", "--dump-dom", probe.as_uri()], d / "profile")
    return Opened(dom, shot)


@needs_chromium
def test_report_figures_in_headless_chromium(
    figures_report: Path, figures_in_chromium: Opened
) -> None:
    """The report drawn with its figures in a real browser: every image decodes."""
    assert_self_contained(figures_report.read_text())
    _loaded(figures_in_chromium.dom)
    dom = figures_in_chromium.dom.stdout
    n_tables = dom.count("<table")
    n_images = dom.count("<img")
    assert n_tables >= 8 and n_images >= 4, (n_tables, n_images)
    assert "Summary of" in dom and "Clock" in dom
    # every image decodes in the browser (the copy's probe script counted them)
    m = re.search(r'data-images="(\d+)/(\d+)"', dom)
    assert m, dom[:500]
    assert m.group(1) == m.group(2) == str(n_images)
    _rendered(figures_in_chromium.shot)


@needs_chromium
def test_a_comparison_report_is_a_few_screens_its_analysis_folded(
    figures_in_chromium: Opened,
) -> None:
    """At 1280 px wide, the two-run report opens with its comparison and first figure on the
    first screen, is at most 6,000 px tall with each run's full analysis and the comparison
    in full folded (<details>), and nothing is wider than the page."""
    _loaded(figures_in_chromium.dom)
    dom = figures_in_chromium.dom.stdout
    height, width, first, folds = _layout_of(dom)
    assert height <= 6000, height
    assert width <= 1280, width
    assert 0 < first < 1000, first  # the first figure starts on the first screen
    assert folds == 3  # each run's analysis, and the comparison in full
    assert "Summary of" in dom  # folded, not left out


def test_the_report_opens_with_the_answer(store: Path) -> None:
    """The first section says each column's median with its interval, p99 and max, then the
    most serious warnings, then one figure; how it was measured comes after the columns."""
    from latscope.report import build
    from latscope.report.document import Alert, Heading, Image, Text

    two = [lognormal(3000, 1000.0, 0.03, seed=1), lognormal(3000, 1600.0, 0.03, seed=2)]
    x = np.random.default_rng(0).permutation(np.concatenate(two))  # two modes, no drift
    run = make_run(store, {"call": x}, segments=[600] * 10)
    doc = build([run])
    blocks = doc.blocks
    first = next(i for i, b in enumerate(blocks) if isinstance(b, Heading))
    assert blocks[first].text == "At a glance"
    sentence = blocks[first + 1]
    assert isinstance(sentence, Text)
    assert re.match(
        r"call \(.*\): median [\d.]+ µs \(95% CI [\d.]+ µs – [\d.]+ µs\), p99 ", sentence.text
    )
    assert "6,000 samples" in sentence.text
    glance = blocks[
        first : next(i for i, b in enumerate(blocks) if isinstance(b, Heading) and i > first)
    ]
    assert any(isinstance(b, Alert) and b.code == "multimodal" for b in glance)  # two modes
    assert isinstance(next(b for b in blocks if isinstance(b, Image)), Image)
    assert next(b for b in blocks if isinstance(b, Image)).key.endswith("-glance")
    heads = [b.text for b in blocks if isinstance(b, Heading)]
    assert heads.index("At a glance") < heads.index(f"call — {doc.title.split('— ')[1]}")
    assert heads[-1].startswith("How ") and heads[-1].endswith(" was measured")


def test_a_comparison_report_opens_with_the_verdict(store: Path) -> None:
    from latscope.report import build
    from latscope.report.document import Heading, Image, Text

    a = make_run(store, {"call": lognormal(4000, 1000.0, seed=3)}, segments=[400] * 10)
    b = make_run(store, {"call": lognormal(4000, 1500.0, seed=4)}, segments=[400] * 10)
    blocks = build([a, b]).blocks
    first = next(i for i, b in enumerate(blocks) if isinstance(b, Heading))
    verdict = blocks[first + 1]
    assert isinstance(verdict, Text) and "slower" in verdict.text and "CI" in verdict.text
    assert next(b for b in blocks if isinstance(b, Image)).key == "comparison-scenarios"


@pytest.mark.parametrize(
    ("ns_per_tick", "text"),
    [
        (100, "100 (a 10 MHz counter)"),  # QueryPerformanceCounter
        (52.083333, "52.0833 (a 19.2 MHz counter)"),  # a Raspberry Pi's generic timer
        (0.37735849, "0.377358 (a 2.65 GHz counter)"),  # a TSC
        (1, "1"),  # a clock in nanoseconds: no counter
        (None, "not recorded"),
        (0, "not recorded"),
    ],
)
def test_the_clock_section_gives_a_counters_frequency(ns_per_tick, text) -> None:
    from latscope.report.parts import _per_tick

    assert _per_tick(ns_per_tick) == text
