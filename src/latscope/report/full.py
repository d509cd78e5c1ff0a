"""The full analysis of one or more runs, as a document (``document.py``) written as one
self-contained HTML file (``latscope report RUN... --html FILE``), as Markdown with image
files (``--md DIR``), or printed in the terminal (``latscope show RUN --full``).

Per run: what was measured and how (benchmark, parameters, the environment, the clock's
read cost and step), then per column the summary table (percentiles p1 ... p99.99 with the
number of samples beyond each and "—" where too few, mean, std, MAD, IQR, CV, geometric mean;
every confidence interval with its method and the effective sample size), the serial
dependence, the shifted log-normal fit and its goodness of fit, the outliers by class and the
spikes with their period, drift (change points and trend), every warning (each says what to
do), and the figures. With several runs, a comparison with the first run (the baseline):
ratios of medians and p99s with intervals, p-values, verdicts, and figures grouped by run.

Files are written atomically (`files.atomic_write`): a reader never sees one half-written.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..errors import BadInput
from ..files import write_text
from ..units import fmt
from .document import (
    Alert,
    Block,
    Cell,
    Document,
    Heading,
    Image,
    Progress,
    Table,
    render_html,
    render_markdown,
    slug,
)
from .text import unique_labels

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..runs import Run
from .run import RunAnalysis, _two, analyse, run_blocks


def comparison_section(
    analyses: Sequence[RunAnalysis], *, noise: float, seed: int, figures: bool = True
) -> list[Block]:
    from .. import plots
    from . import compare

    runs = [a.run for a in analyses]
    labels = [a.label for a in analyses]
    out: list[Block] = [
        Heading(f"Comparison with the baseline {labels[0]}", 2, "comparison"),
    ]
    try:
        common, rows = compare.compare_runs(runs, noise=noise, seed=seed)
    except BadInput as e:
        out.append(Alert(f"No comparison: {e.message}", code="comparison"))
        return out
    out += compare.comparison_blocks(runs, rows, labels)
    if not figures:
        return out
    series = []
    for a in analyses:
        for c in common:
            ca = a.columns.get(c)
            ci = (ca.intervals.median.low, ca.intervals.median.high) if ca else None
            series.append(plots.Series(a.label, c, a.run.values(c), ci))

    def scen() -> Figure:
        return plots.scenarios(series)

    out.append(
        Image(
            "comparison-scenarios",
            "Runs side by side, one panel per column: box plots on a log axis, under each box "
            "the median with its 95% confidence interval",
            scen,
        )
    )
    if any(r.result is not None for r in rows):
        out.append(
            Image(
                "comparison-shift",
                "Shift of the deciles of each run against the baseline; inside the grey wedge "
                "the difference is within the noise threshold",
                lambda: compare.shift_figure(runs, rows),
            )
        )
    for c in common[:4]:
        groups = {a.label: a.run.values(c) for a in analyses}

        def dist(groups: dict[str, Any] = groups, c: str = c) -> Figure:
            return _two(
                lambda ax: plots.ecdf(groups, ax=ax),
                lambda ax: plots.tail(groups, ax=ax),
                f"{c} — all runs",
            )

        out.append(
            Image(
                f"comparison-{slug(c)}-ecdf",
                f"{c}: empirical CDFs (left) and tails (right) of all runs",
                dist,
            )
        )
    return out


def build(
    runs: Sequence[Run],
    *,
    figures: bool = True,
    noise: float = 0.02,
    seed: int = 0,
    level: float = 0.95,
    progress: Progress | None = None,
) -> Document:
    """The report of ``runs`` as a document; the first run is the comparison baseline."""
    if not runs:
        raise BadInput("no runs to report on")
    labels = unique_labels(list(runs))
    analyses = [
        analyse(r, lab, seed=seed, level=level, progress=progress)
        for r, lab in zip(runs, labels, strict=True)
    ]
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    title = (
        f"latscope report — {labels[0]}"
        if len(runs) == 1
        else f"latscope report — {len(runs)} runs"
    )
    doc = Document(title, f"generated {now} by latscope {__version__}")
    if len(runs) > 1:
        rows: list[list[str | Cell]] = []
        for a in analyses:
            r = a.run
            meds = []
            for c in r.all_columns:
                ca = a.columns.get(c)
                if ca is not None:
                    meds.append(f"{c} {fmt(ca.summary.median)}")
            rows.append([a.label, r.id, r.benchmark, f"{r.n:,}", ", ".join(meds)])
        doc.add(
            Table(
                "Runs in this report (the first is the baseline)",
                ["run", "id", "benchmark", "n", "medians"],
                rows,
                align="lllrl",
            )
        )
    for i, a in enumerate(analyses):
        doc.extend(run_blocks(a, figures=figures, anchor=f"run-{i + 1}"))
    if len(runs) > 1:
        doc.extend(comparison_section(analyses, noise=noise, seed=seed, figures=figures))
    return doc


# ------------------------------------------------------------------------------ writing


def check_target(p: Path, directory: bool = False) -> None:
    """Refuse, before any work, a target that cannot be written."""
    if directory:
        if p.exists() and not p.is_dir():
            raise BadInput(f"{p} exists and is not a directory")
    elif p.is_dir():
        raise BadInput(f"{p} is a directory; give a file name")
    if not p.parent.is_dir():
        raise BadInput(f"{p.parent} does not exist")


def write_html(
    doc: Document, path: str | os.PathLike[str], progress: Progress | None = None
) -> Path:
    """Write the document as one self-contained HTML file, atomically (`files.write_text`)."""
    p = Path(path)
    check_target(p)
    text = render_html(doc, progress=progress)
    try:
        write_text(p, text)
    except OSError as e:
        raise BadInput(f"cannot write {p}: {e.strerror}") from None
    return p


def write_markdown(
    doc: Document, directory: str | os.PathLike[str], progress: Progress | None = None
) -> Path:
    """Write ``DIR/report.md`` and its PNG figures into ``DIR`` (created if missing; the
    parent must exist). Every file is written atomically (`files.write_text`)."""
    d = Path(directory)
    check_target(d, directory=True)
    created = not d.exists()
    try:
        d.mkdir(exist_ok=True)
        text, _images = render_markdown(doc, d, progress=progress)
        target = write_text(d / "report.md", text)
    except OSError as e:
        if created:
            shutil.rmtree(d, ignore_errors=True)
        raise BadInput(f"cannot write {d}: {e.strerror}") from None
    except BaseException:
        if created:
            shutil.rmtree(d, ignore_errors=True)
        raise
    return target
