"""LaTeX for lab reports (``latscope report RUN... --latex DIR``, ``latscope suite ...
--latex DIR``): per run, per comparison and per suite a ``.tex`` fragment that a document
``\\input``s, with its figures as PDF files beside it, and ``DIR/example.tex``, a standalone
document that inputs every fragment (compile it to see them; copy its preamble).

Figures are drawn at the size they are placed (`plots.printed`: the text width of a 10 pt
article, panels of a row stacked), so that their text is 9-11 pt beside a 10 pt body.

A fragment is floats only, no sectioning and no preamble: booktabs tables (the setup, the
summary figures, the comparison) and one figure environment per plot, each with a caption
and a label. It takes its content from the report's document blocks (document.py), so its
figures, intervals, units and withheld percentiles ("—") are those of the HTML report:

- a run: two fragments. ``<run>.tex``, the answer for a lab report: the run table (the
  figures of `summary.STATS` per column, as ``latscope show`` gives them, with the interval
  of the median; how it was measured and the warnings in its notes), each column's
  histogram of every sample (log axes: the tail is the point) and the box plots of the
  columns. ``<run>-more.tex``, its full analysis: the setup
  (what was measured, the clock, the environment), per column the report's summary table
  with the column's warnings as notes, and the other figures;
- a comparison of runs: the comparison table with its sentences, and its figures;
- a suite: the suite and its scenarios, the comparison of the scenarios, and its figures.

The rest of the analysis (serial dependence, the fit, outliers, drift) stays in the HTML
report. Every piece of text is escaped (`tex.escape`): the fragment compiles whatever the run's
parameters, names or notes contain. It needs the packages graphicx and booktabs, and LaTeX
2019-10 or newer (``\\CurrentFilePath`` finds the figures beside the fragment wherever it is
input from). ``\\latscopeflush`` (default ``\\clearpage``) follows each group of at most a
few floats, so that LaTeX never holds too many unplaced floats; define it before the
``\\input`` to change that. Every file is written atomically (`files.write_text`,
`plots.save`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInput
from ..files import check_directory, write_text
from ..units import fmt_bare, pick_unit
from .document import (
    Alert,
    Block,
    Cell,
    CellLike,
    Document,
    Heading,
    Image,
    KeyValues,
    Progress,
    Table,
    Text,
    slug,
)
from .fragment import PACKAGES, Fragment, _key_values, _tabular
from .tex import escape, label

if TYPE_CHECKING:
    from .run import RunAnalysis

EXAMPLE = "example.tex"


def _table(frag: Fragment, t: Table, key: str, suffix: str = "") -> None:
    body, notes = _tabular(t.headers, t.rows, t.align, t.small)
    frag.table(
        label(key, t.title or "table"),
        (t.title or "") + suffix,
        body,
        [*notes, t.note] if t.note else notes,
    )


def _kv_table(frag: Fragment, kv: KeyValues, key: str, suffix: str = "") -> None:
    body, notes = _key_values(kv)
    frag.table(label(key, kv.title or "table"), (kv.title or "") + suffix, body, notes)


def _alert(b: Alert) -> str:
    return f"{'Warning' if b.severity == 'warning' else 'Note'}: {b.message}"


def _blocks(frag: Fragment, blocks: Sequence[Block], key: str) -> None:
    """Tables, figures and notes (alerts and sentences) of ``blocks``; a heading ends a
    group of floats; each key-value block becomes a table."""
    for b in blocks:
        if isinstance(b, Heading):
            frag.end_group()
        elif isinstance(b, Table):
            _table(frag, b, key)
        elif isinstance(b, KeyValues):
            _kv_table(frag, b, key)
        elif isinstance(b, Image):
            frag.figure(b)
        elif isinstance(b, Alert):
            frag.note(_alert(b))
        elif isinstance(b, Text):
            frag.note(b.text)
    frag.end_group()


def _run_table(ra: RunAnalysis) -> list[str]:
    """The run table: the figures of `summary.STATS` per column (that of ``latscope show``
    in a wide terminal), with the interval of the median, in each column's unit."""
    from ..summary import P50_CI_HIGH, P50_CI_LABEL, P50_CI_LOW, STATS, value

    run = ra.run
    figures = [s for s in STATS if s.kind != "number"]
    headers: list[CellLike] = ["column"]
    for s in figures:
        headers += [s.label, "unit"] if s.kind == "count" else [s.label]
        if s.key == "p50":
            headers.append(P50_CI_LABEL)
    rows: list[list[CellLike]] = []
    for row in run.summary().iter_rows(named=True):
        unit = pick_unit([row["p50_ns"]])
        cells: list[CellLike] = [row["column"]]
        for s in figures:
            v = value(row, s)
            if s.kind == "count":
                cells += [f"{row[s.column]:,}", unit[0]]
                continue
            cells.append(Cell(fmt_bare(v, unit), "bold" if s.key == "p50" else ""))
            if s.key == "p50":
                lo, hi = row[P50_CI_LOW], row[P50_CI_HIGH]
                cells.append(
                    "—"
                    if lo is None or hi is None
                    else f"{fmt_bare(lo, unit)}–{fmt_bare(hi, unit)}"
                )
        rows.append(cells)
    align = "l" + "r" * (len(headers) - 1)
    return _tabular(headers, rows, align)[0]


def _run_notes(ra: RunAnalysis) -> list[str]:
    from ..facts import latency_of
    from ..summary import WITHHELD_LEGEND, withheld_notes

    run = ra.run
    summ = list(run.summary().iter_rows(named=True))
    out = [
        "Latency: "
        + "; ".join(f"{r['column']}: {latency_of(run.facts, r['column'])}" for r in summ)
        + "."
    ]
    withheld = withheld_notes([(r["column"], r) for r in summ])
    if withheld:
        out.append(f"{WITHHELD_LEGEND}: " + "; ".join(withheld) + ".")
    methods = [
        f"{r['column']}: {r['ci_method']} (ESS {r['ess']:,.0f} of {r['n']:,})"
        for r in summ
        if r["ci_method"] and r["column"] not in run.derived_columns
    ]
    if methods:
        out.append(
            "Values in the unit of each row. 95% CI of p50 (the median) by "
            + "; ".join(methods)
            + ". ESS: effective sample size after autocorrelation."
        )
    return out


def run_fragments(ra: RunAnalysis, figures: bool = True) -> list[Fragment]:
    """A run's two fragments from its report blocks (report/run.py, module docs): the answer,
    a few pages for a lab report (the summary table with how it was measured in its notes,
    each column's histogram, the run's box plots), and ``<run>-more``, the full analysis
    (what was measured, the clock, the environment, each column's summary and its other
    figures)."""
    from .run import run_blocks, tail_histogram

    run = ra.run
    name = slug(run.id).replace(".", "-")
    frag = Fragment(name, f"latscope run {run.id}: {ra.label}", run.id)
    more = Fragment(
        f"{name}-more", f"latscope run {run.id}: {ra.label}, the full analysis", run.id, full=True
    )
    key = run.id
    blocks = run_blocks(ra, figures=figures)
    first_col = next(
        (i for i, b in enumerate(blocks) if isinstance(b, Heading) and b.level >= 3), len(blocks)
    )
    # the run's section ends with how it was measured (run_blocks)
    how = next(
        (
            i
            for i, b in enumerate(blocks)
            if isinstance(b, Heading) and (b.anchor or "").endswith("-how")
        ),
        len(blocks),
    )
    # the answer: the run table, how it was measured in a sentence, the warnings
    f = run.facts
    measured = (
        f"Measured: {f['benchmark']} {f['params_text']}, {f['n']:,} iterations"
        + (f" after {f['warmup']:,} warm-up" if f["warmup"] is not None else "")
        + f"; clock {f['clock']['name']} ({f['clock']['line']})"
        + (f"; {f['measured']}" if f.get("measured") else "")
        + f". The full analysis is in {more.name}.tex (\\input it where it belongs)."
    )
    notes = [*_run_notes(ra), measured]
    for b in blocks[:first_col] + blocks[how + 1 :]:
        if isinstance(b, Alert):
            notes.append(_alert(b))
    frag.table(label(key, "summary"), f"Summary of {ra.label}", _run_table(ra), notes)
    frag.end_group()
    # the setup in full
    for b in blocks[:first_col] + blocks[how + 1 :]:
        if isinstance(b, KeyValues):
            _kv_table(more, b, key, f" — {ra.label}")
        elif isinstance(b, Text) and b.tone == "note":
            more.note(b.text)
    more.end_group()
    # per column: its histogram of every sample in the answer; its summary, warnings, notes
    # and other figures in the full analysis
    if figures:  # (a derived column such as rtt/2 has its source's figures)
        for col in ra.columns:
            if col not in run.derived_columns:
                frag.figure(tail_histogram(ra, col))
    for b in blocks[first_col:how]:
        if isinstance(b, Heading):
            more.end_group()
        elif isinstance(b, Table) and b.title.startswith("Summary of "):
            _table(more, b, key, f" — {ra.label}")
        elif isinstance(b, Image):
            (frag if b.key.endswith("-box") else more).figure(b)
        elif isinstance(b, Alert):
            more.note(_alert(b))
        elif isinstance(b, Text) and b.tone == "note":
            more.note(b.text)
    frag.end_group()
    more.end_group()
    return [frag, more]


def report_fragments(
    analyses: Sequence[RunAnalysis], *, noise: float, seed: int, figures: bool = True
) -> list[Fragment]:
    """The fragments of ``latscope report``: one per run, and with several runs one for
    their comparison with the first."""
    from .document import Image
    from .full import compare_analyses, comparison_section, scenarios_image

    frags = [f for a in analyses for f in run_fragments(a, figures)]
    if len(analyses) > 1:
        base = analyses[0].run.id
        frag = Fragment(
            "comparison",
            f"latscope comparison of {len(analyses)} runs with the baseline {analyses[0].label}",
            ", ".join(a.run.id for a in analyses),
        )
        compared = compare_analyses(analyses, noise=noise, seed=seed)
        blocks = comparison_section(analyses, compared, figures=figures)
        if figures and not isinstance(compared, BadInput):  # the report has it at the top
            at = next((i for i, b in enumerate(blocks) if isinstance(b, Image)), len(blocks))
            blocks.insert(at, scenarios_image(analyses, compared[0]))
        _blocks(frag, blocks, f"comparison-{base}")
        frags.append(frag)
    return frags


#: Sections of the suite's report left out of its fragment: the order of the runs, and the
#: scenarios in detail (each is a run: ``latscope report RUN --latex DIR`` gives it).
SUITE_LEFT_OUT = ("order", "details", "scenario-")


def suite_fragment(doc: Document, suite_run: str) -> Fragment:
    """A suite's fragment from its report (suite/report.py): the suite and its scenarios,
    the comparison of the scenarios and its figures."""
    frag = Fragment(slug(suite_run).replace(".", "-"), doc.title, f"suite run {suite_run}")
    section = ""
    kept: list[Block] = []
    for b in doc.blocks:
        if isinstance(b, Heading) and b.level <= 2:
            section = b.anchor or ""
        if not section.startswith(SUITE_LEFT_OUT):
            kept.append(b)
    _blocks(frag, kept, suite_run)
    return frag


# ------------------------------------------------------------------------------ writing


def _example(frags: Sequence[Fragment], title: str) -> str:
    """A standalone document that inputs every fragment but the runs' full analyses (named
    in a comment), and refers to each one's first table by its label (what a lab report
    does)."""
    full = [f for f in frags if f.full]
    frags = [f for f in frags if not f.full]
    firsts = [f.floats[0] for f in frags if f.floats]
    refs = ", ".join(rf"{f.kind.capitalize()}~\ref{{{f.label}}}" for f in firsts)
    return "\n".join(
        [
            "% A standalone document that inputs the fragments beside it: latexmk -pdf example.tex",
            "% (or pdflatex example.tex twice: the second pass resolves the references)",
            r"\documentclass[a4paper]{article}",
            *[rf"\usepackage{{{p}}}" for p in PACKAGES],
            # floats here where they fit, so that a table follows the heading that introduces
            # it (the fragments name no placement: a document decides)
            r"\makeatletter\def\fps@table{!htbp}\def\fps@figure{!htbp}\makeatother",
            r"\begin{document}",
            rf"\section*{{{escape(title, breaks=True)}}}",
            f"The tables and figures that follow were written by latscope; each fragment starts "
            f"with a summary ({refs})."
            if refs
            else "",
            "",
            *(rf"\input{{{f.name}}}" for f in frags),
            *(
                [
                    "% each run's full analysis (what was measured, the clock, the environment,",
                    "% every column's summary and figures), for an appendix:",
                    *(rf"% \input{{{f.name}}}" for f in full),
                ]
                if full
                else []
            ),
            r"\end{document}",
            "",
        ]
    )


def write_latex(
    frags: Sequence[Fragment],
    directory: str | os.PathLike[str],
    title: str,
    progress: Progress | None = None,
    force: bool = False,
) -> list[Path]:
    """Write every fragment as ``DIR/<name>.tex``, its figures as PDF files beside it, and
    ``DIR/example.tex`` that inputs them all (DIR is created if missing; its parent must
    exist). A file of those names that exists is replaced only with ``force``, checked for
    all of them before the first is written (`files.check_directory`). Returns the fragments'
    paths and that of example.tex, last."""
    from .. import plots

    d = Path(directory)
    names = [f.file for frag in frags for f in frag.images]
    names += [f"{frag.name}.tex" for frag in frags] + [EXAMPLE]
    check_directory(d, names, force)
    created = not d.exists()
    try:
        d.mkdir(exist_ok=True)
        written: list[Path] = []
        for frag in frags:
            for f in frag.images:
                assert f.image is not None
                if progress:
                    progress(f.image.caption)
                with plots.printed():  # drawn at the width they are placed at
                    fig = f.image.make()
                plots.save(fig, d / f.file, replace=force)
            tex = frag.render()
            written.append(write_text(d / f"{frag.name}.tex", tex, replace=force))
        written.append(write_text(d / EXAMPLE, _example(frags, title), replace=force))
    except OSError as e:
        if created:
            shutil.rmtree(d, ignore_errors=True)
        raise BadInput(f"cannot write {d}: {e.strerror}") from None
    except BaseException:
        if created:
            shutil.rmtree(d, ignore_errors=True)
        raise
    return written


def images(frags: Sequence[Fragment]) -> int:
    """How many figures the fragments draw (for a progress bar)."""
    return sum(len(f.images) for f in frags)


def written(paths: Sequence[Path], frags: Sequence[Fragment], what: str) -> str:
    """What `write_latex` wrote, in one line: the fragments, the figures, the example."""
    figs = images(frags)
    tex = ", ".join(p.name for p in paths[:-1])
    pdfs = f" and {figs} figure{'s' if figs != 1 else ''} (PDF)" if figs else ""
    return (
        f"wrote {paths[-1].parent}/: {tex}{pdfs} ({what}); \\input them with graphicx and "
        f"booktabs, as {paths[-1].name} does"
    )


__all__ = [
    "EXAMPLE",
    "PACKAGES",
    "Fragment",
    "escape",
    "images",
    "label",
    "report_fragments",
    "run_fragments",
    "suite_fragment",
    "write_latex",
    "written",
]
