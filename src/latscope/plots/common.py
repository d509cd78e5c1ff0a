"""What every figure shares: the limits that keep big runs fast, colours and sizes, the
display unit, axes helpers, and writing a figure (PNG, SVG or PDF)."""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

from ..errors import BadInput
from ..files import atomic_write
from ..units import pick_unit
from .sorted import percentile
from .ticks import log_ticks

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..stats import LogNormalFit

#: Time series with more samples than this are drawn as a min-max envelope.
MAX_POINTS = 100_000
#: Columns of the min-max envelope.
ENVELOPE_BINS = 2_000
#: At most this many outliers are drawn per box.
MAX_FLIERS = 1_000
#: Violins: KDE on at most this many samples.
VIOLIN_POINTS = 20_000
#: ECDF / tail plots: at most this many points per line.
CURVE_POINTS = 2_000
#: Spikes marked individually in a time series (the largest first).
MAX_SPIKES = 20_000

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
WIDE = (10.0, 3.6)
HALF = (5.0, 3.6)
#: No figure is wider than this (inches): 1,000 px at the 100 dpi of the HTML report, which
#: shows figures at their size in a page at most 1,180 px wide.
MAX_WIDTH = 10.0
#: The smallest text of a figure (points): tick labels, legends, notes. A figure is shown at
#: the size it is drawn (the HTML report) or drawn at the size it is placed (`printed`), so
#: this is the size a reader sees.
SMALL = 9
#: Figures for print (`printed`) are drawn this wide (inches): the text width of a 10 pt
#: LaTeX article (345 pt), where they are placed at ``\linewidth``, so that their text is the
#: size it says beside the 10 pt body.
PRINT_WIDTH = 4.78
#: ... and each row of panels this much shorter than on screen.
PRINT_ROW_SCALE = 0.8

_PRINTED: contextvars.ContextVar[bool] = contextvars.ContextVar("printed", default=False)


def printing() -> bool:
    """Are figures being drawn for print (inside `printed`)?"""
    return _PRINTED.get()


@contextlib.contextmanager
def printed() -> Iterator[None]:
    """Figures made inside are drawn for print: `PRINT_WIDTH` wide, two panels of a row
    stacked (side by side at that width their tick labels would collide)."""
    token = _PRINTED.set(True)
    try:
        yield
    finally:
        _PRINTED.reset(token)


Unit = tuple[str, float]


# ------------------------------------------------------------------------------- helpers


class LaidOutFigure(Figure):
    """A figure laid out (constrained layout) in the draw that renders it.

    With a layout engine, matplotlib's `savefig` draws a figure twice: once with the drawing
    switched off, which lays it out and then passes over every artist, and once to render
    it. Matplotlib sees no layout engine here: each draw lays the figure out first, with the
    renderer it draws with, then renders it; the pass with nothing drawn, an eighth of a
    figure's time, is spared. The pixels are the same (checked for every kind of figure,
    on screen and in print, in PNG, SVG and PDF)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, layout="none", **kwargs)
        self._constrained = ConstrainedLayoutEngine()

    def draw(self, renderer: Any) -> None:
        if not self.get_visible():
            return
        with self._render_lock:
            if self.axes:
                with contextlib.suppress(ValueError):  # as Figure.draw: a window resized
                    self._constrained.execute(self)
            super().draw(renderer)


def new_figure(
    ncols: int = 1,
    nrows: int = 1,
    size: tuple[float, float] | None = None,
    *,
    sharey: bool = False,
    extra_height: float = 0.0,
) -> Figure:
    """A figure on an Agg canvas (no pyplot) with ``nrows x ncols`` Axes, constrained layout.
    ``size``: the width and the height of one row (inches); ``extra_height`` is added once (a
    title or legend for the whole figure). The width is at most `MAX_WIDTH`."""
    w, h = size if size is not None else (WIDE if ncols > 1 else HALF)
    if _PRINTED.get():
        # for print: the width of the page's text, one panel to a row (the order of
        # ``fig.axes`` is the same: row by row)
        w, h = PRINT_WIDTH, h * PRINT_ROW_SCALE
        nrows, ncols = nrows * ncols, 1
    fig = LaidOutFigure(figsize=(min(w, MAX_WIDTH), h * nrows + extra_height))
    FigureCanvasAgg(fig)
    fig.subplots(nrows, ncols, squeeze=False, sharey=sharey)
    return fig


def _axes(ax: Axes | None, size: tuple[float, float] = HALF) -> Axes:
    if ax is not None:
        return ax
    fig = new_figure(size=size)
    return fig.axes[0]


def _fig(ax: Axes) -> Figure:
    fig = ax.figure
    assert isinstance(fig, Figure)
    return fig


def unit_for(*arrays: npt.ArrayLike) -> Unit:
    """The display unit for latencies: the one in which the median of the medians reads
    between 1 and 1000."""
    meds = [float(np.median(np.asarray(a, dtype=np.float64))) for a in arrays if np.size(a)]
    return pick_unit(meds)


def _note(ax: Axes, text: str, loc: str = "upper right") -> None:
    x, ha = (0.98, "right") if "right" in loc else (0.02, "left")
    y, va = (0.97, "top") if "upper" in loc else (0.03, "bottom")
    ax.text(
        x,
        y,
        text,
        transform=ax.transAxes,
        ha=ha,
        va=va,
        fontsize=SMALL,
        bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "#bbbbbb", "alpha": 0.9},
    )


def _level(ax: Axes, y: float, label: str) -> None:
    """A dotted horizontal line at ``y`` (a percentile's level), labelled at the left edge."""
    ax.axhline(y, color="#999999", lw=0.7, ls=":")
    ax.annotate(
        label,
        (0.0, y),
        xycoords=("axes fraction", "data"),
        fontsize=SMALL,
        color="#666666",
        va="bottom",
        xytext=(2, 1),
        textcoords="offset points",
    )


def legend_below(ax: Axes, handles: list[Any], labels: list[str], ncols: int = 1) -> None:
    """The legend under the axes, never over the data nor over the axis label: below the
    ticks (3.5 pt, a pad of 3.5 pt), their labels and the axis label (a line of 1.2 `SMALL`
    each, 4 pt apart) and a little space, 4 `SMALL` below the axes; in print (`printed`) one
    entry to a row (the page is narrow)."""
    from matplotlib.transforms import ScaledTranslation

    fig = ax.figure
    assert isinstance(fig, Figure)
    below = ScaledTranslation(0.0, -4.0 * SMALL / 72.0, fig.dpi_scale_trans)
    ax.legend(
        handles,
        labels,
        fontsize=SMALL,
        loc="upper center" if ncols > 1 and not _PRINTED.get() else "upper left",
        bbox_to_anchor=(0.5, 0.0) if ncols > 1 and not _PRINTED.get() else (0.0, 0.0),
        bbox_transform=ax.transAxes + below,
        borderaxespad=0.0,
        handlelength=1.5,
        ncols=1 if _PRINTED.get() else ncols,
        frameon=False,
        markerscale=3,
    )


def set_title(ax: Axes, what: str, label: str = "") -> None:
    """``what — label``, wrapped to the width of the Axes."""
    import textwrap

    text = f"{what} — {label}" if label else what
    fig = ax.figure
    width_in = fig.get_figwidth() * ax.get_position().width if isinstance(fig, Figure) else 5.0
    chars = max(30, int(width_in * 12))
    ax.set_title("\n".join(textwrap.wrap(text, chars)) or text, fontsize=10)


def _style(ax: Axes) -> None:
    ax.grid(True, which="major", color="#e4e4e4", linewidth=0.7)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(labelsize=SMALL)
    ax.title.set_fontsize(10)
    ax.xaxis.label.set_fontsize(9)
    ax.yaxis.label.set_fontsize(9)
    log_ticks(ax)


def _decimate_sorted(xs: np.ndarray, points: int = CURVE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Indices into sorted data for an ECDF: evenly spaced in probability, plus both ends."""
    n = xs.size
    if n <= points:
        return np.arange(n), xs
    idx = np.unique(np.linspace(0, n - 1, points).astype(np.int64))
    return idx, xs[idx]


def _lognormal_pdf(grid_ns: np.ndarray, fit: LogNormalFit) -> np.ndarray:
    from ..stats.dist import lognorm_pdf

    return lognorm_pdf(grid_ns, fit.sigma, fit.loc, fit.scale)


def _bins(
    v: np.ndarray,
    lo: float,
    hi: float,
    srt: bool = False,
    f: Callable[[np.ndarray], np.ndarray] | None = None,
    max_bins: int = 200,
) -> int:
    """Freedman–Diaconis bin count of ``f(v)`` (f: none, or a non-decreasing transform such
    as log10), 10..max_bins; ``srt``: ``v`` is sorted (plots.sorted)."""
    if hi <= lo:
        return 10
    q1, q3 = percentile(v, [25, 75], srt, f)
    iqr = q3 - q1
    if iqr <= 0:
        return 50
    width = 2.0 * iqr / v.size ** (1.0 / 3.0)
    return int(min(max_bins, max(10, math.ceil((hi - lo) / width))))


def _grid_edges(
    v: np.ndarray, lo: float, hi: float, step: float, srt: bool = False, max_bins: int = 200
) -> np.ndarray:
    """Bin edges for samples quantised to ``step``: every bin is a whole number of steps wide
    (the Freedman–Diaconis width rounded to whole steps, at least one step, and wide enough that
    there are at most ``max_bins`` bins), and every edge lies halfway between two grid values,
    so each bin holds whole grid values and none is an empty tooth of a comb."""
    q1, q3 = percentile(v, [25, 75], srt)
    fd = 2.0 * (q3 - q1) / v.size ** (1.0 / 3.0)
    k = max(1, round(fd / step), math.ceil((hi - lo) / (max_bins * step)))
    width = k * step
    start = lo - 0.5 * step  # lo is a grid value: the first edge sits half a step below it
    nb = max(1, math.ceil((hi + 0.5 * step - start) / width - 1e-9))
    return start + width * np.arange(nb + 1)


def _snap_to_grid(edges: np.ndarray, origin: float, step: float) -> np.ndarray:
    """Move edges to the nearest midpoint between grid values ``origin + k * step`` and drop
    duplicates, so every bin holds at least one whole grid value."""
    k = np.round((edges - origin) / step - 0.5)
    return np.unique(origin + (k + 0.5) * step)


def _box_stats(
    v: np.ndarray, label: str, rng: np.random.Generator, srt: bool = False
) -> dict[str, Any]:
    """A box's figures (`Axes.bxp`); ``srt``: ``v`` is sorted (plots.sorted)."""
    from . import sorted as srt_

    q1, med, q3 = (float(q) for q in percentile(v, [25, 50, 75], srt))
    iqr = q3 - q1
    lo_f, hi_f = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    inside = srt_.within(v, lo_f, hi_f, srt)
    whislo = srt_.lowest(inside, srt) if inside.size else q1
    whishi = srt_.highest(inside, srt) if inside.size else q3
    fl = srt_.outside(v, lo_f, hi_f, srt)
    if fl.size > MAX_FLIERS:
        srt = np.sort(fl)
        top = srt[-MAX_FLIERS // 4 :]
        rest = rng.choice(srt[: -MAX_FLIERS // 4], size=MAX_FLIERS - top.size, replace=False)
        fl = np.concatenate([rest, top])
    return {
        "label": label,
        "med": med,
        "q1": q1,
        "q3": q3,
        "whislo": whislo,
        "whishi": whishi,
        "fliers": fl,
        "mean": float(v.mean()),
    }


def _scaled(box: dict[str, Any], by: float) -> dict[str, Any]:
    """A box's figures (`_box_stats`, ns) in the display unit (ns / ``by``)."""
    keys = ("med", "q1", "q3", "whislo", "whishi", "fliers", "mean")
    return {k: (v / by if k in keys else v) for k, v in box.items()}


# ------------------------------------------------------------------------------- output


def plain_text(fig: Figure) -> Figure:
    """Every text of ``fig`` as written, never mathtext: a column or scenario named ``$x_$``
    is shown as it is (mathtext would fail to parse it, or set it in italics). Done where
    figures are written (`save`, `to_bytes`), after they are made."""
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        t.set_parse_math(False)
    return fig


def save(fig: Figure, path: str | os.PathLike[str], dpi: int = 150, replace: bool = True) -> Path:
    """Write ``fig`` as PNG, SVG or PDF, chosen by the suffix of ``path``, atomically
    (`files.atomic_write`; ``replace=False``: a file that exists is not replaced). Returns
    the path."""
    p = Path(path)
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise BadInput(f"{p}: write .png, .svg or .pdf (the suffix chooses the format)")
    if p.is_dir():
        raise BadInput(f"{p} is a directory; give a file name")
    if not p.parent.is_dir():
        raise BadInput(f"{p.parent} does not exist")
    metas: dict[str, dict[str, Any]] = {
        "png": {"Software": "latscope"},
        "svg": {"Date": None},
        "pdf": {"CreationDate": None, "Creator": "latscope"},
    }
    meta = metas[fmt]
    plain_text(fig)
    try:
        with atomic_write(p, replace=replace) as f:
            fig.savefig(f, format=fmt, dpi=dpi, metadata=meta)
    except OSError as e:
        raise BadInput(f"cannot write {p}: {e.strerror}") from None
    return p


def to_bytes(fig: Figure, fmt: str = "png", dpi: int = 100) -> bytes:
    """The figure encoded as PNG or SVG bytes (for embedding in a report)."""
    import io

    buf = io.BytesIO()
    meta: dict[str, Any] = {"Software": "latscope"} if fmt == "png" else {"Date": None}
    plain_text(fig).savefig(buf, format=fmt, dpi=dpi, metadata=meta)
    return buf.getvalue()
