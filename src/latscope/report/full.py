"""The full analysis of one or more runs, as a document (``document.py``) written as one
self-contained HTML file (``latscope report RUN... --html FILE``), as Markdown with image
files (``--md DIR``), or printed in the terminal (``latscope show RUN --full``); LaTeX
fragments for a lab report (``--latex DIR``) take their content from it (latex.py).

Per run: what was measured and how (benchmark, parameters, the environment, the clock's
read cost and step), then per column the summary table (percentiles p1 ... p99.99 with the
number of samples beyond each and "—" where too few, mean, std, MAD, IQR, CV, geometric mean;
every confidence interval with its method and the effective sample size), the serial
dependence, the shifted log-normal fit and its goodness of fit, the outliers by class and the
spikes with their period, drift (change points and trend), every warning (each says what to
do), and the figures. With several runs, a comparison with the first run (the baseline):
ratios of medians and p99s with intervals, p-values, verdicts, and figures grouped by run.

Files are written atomically (`files.atomic_write`): a reader never sees one half-written;
a file that exists is replaced only when asked (``force``: ``--force``), a link never followed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..errors import BadInput
from ..files import check_destination, check_directory, output_directory, write_text
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
    folded,
    image_files,
    render_html,
    render_markdown,
    slug,
)
from .glance import glance_blocks
from .text import unique_labels

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..record import Run
from .run import RunAnalysis, _two, analyse, run_blocks

#: The Markdown report's file in its directory.
MARKDOWN_FILE = "report.md"


def scenarios_image(analyses: Sequence[RunAnalysis], common: Sequence[str]) -> Image:
    """The runs side by side, grouped by column (the figure a comparison opens with); its
    columns are read, and matplotlib imported, when it is drawn."""

    def scen() -> Figure:
        from .. import plots

        series = []
        for a in analyses:
            for c in common:
                ca = a.columns.get(c)
                ci = (ca.intervals.median.low, ca.intervals.median.high) if ca else None
                series.append(plots.Series(a.label, c, a.run.values(c), ci))
        return plots.scenarios(series)

    return Image(
        "comparison-scenarios",
        "Runs side by side, one panel per column: box plots on a log axis, under each box "
        "the median with its 95% confidence interval",
        scen,
    )


def compare_analyses(
    analyses: Sequence[RunAnalysis], *, noise: float, seed: int
) -> tuple[list[str], list[Any]] | BadInput:
    """The comparison of the runs with the first (`compare.compare_runs`: the common columns
    and one row per column and run), or why there is none."""
    from . import compare

    try:
        return compare.compare_runs([a.run for a in analyses], noise=noise, seed=seed)
    except BadInput as e:
        return e


def comparison_section(
    analyses: Sequence[RunAnalysis],
    compared: tuple[list[str], list[Any]] | BadInput,
    *,
    figures: bool = True,
) -> list[Block]:
    """The comparison with the baseline: ``compared`` is what `compare.compare_runs` gave
    (common columns and rows), or why it could not compare."""
    from . import compare

    runs = [a.run for a in analyses]
    labels = [a.label for a in analyses]
    out: list[Block] = [
        Heading(f"Comparison with the baseline {labels[0]}", 2, "comparison"),
    ]
    if isinstance(compared, BadInput):
        out.append(Alert(f"No comparison: {compared.message}", code="comparison"))
        return out
    common, rows = compared
    out += compare.comparison_blocks(runs, rows, labels)
    if not figures:
        return out
    from .. import plots  # matplotlib: only for the figures

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

        def dist(c: str = c) -> Figure:
            # each run's column read and sorted when drawn (plots.sorted), not held meanwhile
            groups = {a.label: plots.sorted_samples(a.run.values(c)) for a in analyses}
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


def analyse_runs(
    runs: Sequence[Run],
    *,
    seed: int = 0,
    level: float = 0.95,
    progress: Progress | None = None,
) -> list[RunAnalysis]:
    """The full analysis of each run (`analyse`), labelled so that no two labels are equal;
    one analysis serves every form of the report (HTML, Markdown, LaTeX)."""
    if not runs:
        raise BadInput("no runs to report on")
    labels = unique_labels(list(runs))
    return [
        analyse(r, lab, seed=seed, level=level, progress=progress)
        for r, lab in zip(runs, labels, strict=True)
    ]


def build(
    runs: Sequence[Run],
    *,
    figures: bool = True,
    noise: float = 0.02,
    seed: int = 0,
    level: float = 0.95,
    progress: Progress | None = None,
    analyses: Sequence[RunAnalysis] | None = None,
) -> Document:
    """The report of ``runs`` as a document; the first run is the comparison baseline.
    ``analyses``: those of `analyse_runs` for these runs, when already made."""
    if analyses is None:
        analyses = analyse_runs(runs, seed=seed, level=level, progress=progress)
    labels = [a.label for a in analyses]
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    title = (
        f"latscope report — {labels[0]}"
        if len(runs) == 1
        else f"latscope report — {len(runs)} runs"
    )
    doc = Document(title, f"generated {now} by latscope {__version__}")
    compared: tuple[list[str], list[Any]] | BadInput | None = None
    verdicts: list[str] = []
    figure = None
    if len(runs) > 1:
        from . import compare

        compared = compare_analyses(analyses, noise=noise, seed=seed)
        if not isinstance(compared, BadInput):
            verdicts = [compare.explain(r, labels) for r in compared[1]]
            figure = scenarios_image(analyses, compared[0])
    else:  # an interleaved run: its comparison is the answer
        ab = (runs[0].meta.get("run") or {}).get("ab")
        if isinstance(ab, dict):
            from .ab import ab_sentences

            verdicts = ab_sentences(ab)
    doc.extend(glance_blocks(analyses, verdicts=verdicts, figure=figure, figures=figures))
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
    # the answer above; each run's full analysis and the comparison's detail folded below
    for i, a in enumerate(analyses):
        doc.extend(
            folded(
                f"{a.label}: the full analysis — every column's distribution, intervals, "
                "dependence, outliers and drift, the clock and the machine",
                run_blocks(a, figures=figures, anchor=f"run-{i + 1}"),
            )
        )
    if compared is not None:
        doc.extend(
            folded(
                "The comparison in full: every column, ratios of the medians and of p99, "
                "their intervals and what each verdict rests on",
                comparison_section(analyses, compared, figures=figures),
            )
        )
    return doc


# ------------------------------------------------------------------------------ writing


def check_target(p: Path, directory: bool = False, force: bool = False) -> None:
    """Refuse, before any work, a target that cannot be written (`files.check_destination`,
    `files.check_directory`: an existing file only with ``force``, a link never followed);
    for a directory, its report.md too."""
    if directory:
        check_directory(p, [MARKDOWN_FILE], force)
    else:
        check_destination(p, force)


def write_html(
    doc: Document,
    path: str | os.PathLike[str],
    progress: Progress | None = None,
    force: bool = False,
) -> Path:
    """Write the document as one self-contained HTML file, atomically (`files.write_text`);
    a file that exists is replaced only with ``force``. Its pages (`Document.pages`: each
    self-contained too) go first into the folder ``doc.pages_dir`` beside it
    (`files.output_directory`: a link there is never followed)."""
    p = Path(path)
    check_target(p, force=force)
    if doc.pages:  # first the pages it links to, into their folder beside it
        folder_path = p.parent / doc.pages_dir
        try:
            with output_directory(folder_path) as folder:
                folder.check(doc.pages, force)
                for name, page in doc.pages.items():
                    folder.write_text(name, render_html(page), replace=force)
        except OSError as e:
            raise BadInput(f"cannot write {folder_path}: {e.strerror}") from None
    text = render_html(doc, progress=progress)
    try:
        write_text(p, text, replace=force)
    except OSError as e:
        raise BadInput(f"cannot write {p}: {e.strerror}") from None
    return p


def write_markdown(
    doc: Document,
    directory: str | os.PathLike[str],
    progress: Progress | None = None,
    force: bool = False,
) -> Path:
    """Write ``DIR/report.md`` and its PNG figures into ``DIR`` (created if missing; the
    parent must exist), through the directory held open (`files.output_directory`): a link
    at DIR is never followed, and a file that exists in it (report.md, a figure) is replaced
    only with ``force`` (checked for every file before the first is written). Every file is
    written atomically; when DIR was created here and writing fails, it goes again."""
    d = Path(directory)
    try:
        with output_directory(d) as folder:
            folder.check([MARKDOWN_FILE, *image_files(doc)], force)
            text, _images = render_markdown(
                doc,
                d,
                progress=progress,
                save=lambda name, data: folder.write_bytes(name, data, replace=force),
            )
            return folder.write_text(MARKDOWN_FILE, text, replace=force)
    except OSError as e:
        raise BadInput(f"cannot write {d}: {e.strerror}") from None
