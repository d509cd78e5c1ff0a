"""Figures of latency samples, for the HTML report, the CLI and LaTeX documents.

Every function takes latencies in nanoseconds (numpy arrays, iteration order) or analysis
results, returns a ``matplotlib.figure.Figure`` and never touches pyplot: figures are created
with ``Figure()`` on an Agg canvas, so nothing leaks into a global figure registry or changes
``rcParams``, and the functions are safe in threads and notebooks. ``save(fig, path)`` writes
PNG, SVG or PDF by the file's suffix, atomically (`files.atomic_write`).

Every function also accepts ``ax=``, an existing Axes to draw into (to compose several plots
in one figure), and returns that Axes' figure. Axes carry units: latencies are shown in the
unit in which their median reads between 1 and 1000 (ns, µs, ms, s). Titles say what is shown
and which run (``label``). Logarithmic axes label a few round values in that unit, chosen when
the figure is drawn so that no two labels overlap at its size (`ticks`). No figure is wider
than ``MAX_WIDTH`` (1,000 px in the HTML report): one with many panels wraps them into rows.

Big runs stay fast: scatter plots are rasterized (vector formats hold one image instead of
millions of markers), a time series of more than ``MAX_POINTS`` samples is drawn as a min-max
envelope per pixel column (every spike stays visible: a spike is the maximum of its column),
ECDF and tail plots use at most a few thousand points, the figures of a distribution
(histogram, box, violin, ECDF, tail) take a column sorted once (`sorted_samples`) where several
are drawn of one column, which spares each a dozen whole-column passes, box plots draw at most
``MAX_FLIERS`` outliers per box (the largest ones first) and violins use a KDE on a subsample.
"""

from .common import (
    COLORS,
    FORMATS,
    MAX_FLIERS,
    MAX_POINTS,
    MAX_SPIKES,
    MAX_WIDTH,
    PRINT_WIDTH,
    SMALL,
    Unit,
    new_figure,
    printed,
    save,
    set_title,
    to_bytes,
    unit_for,
)
from .comparison import Series, scenarios, shift
from .distribution import HIST_CUT, box, ecdf, histogram, qq, tail
from .series import acf, time_series
from .sorted import SortedSamples, sorted_samples

__all__ = [
    "HIST_CUT",
    "COLORS",
    "FORMATS",
    "MAX_FLIERS",
    "MAX_POINTS",
    "MAX_SPIKES",
    "MAX_WIDTH",
    "PRINT_WIDTH",
    "SMALL",
    "Series",
    "SortedSamples",
    "Unit",
    "acf",
    "box",
    "ecdf",
    "histogram",
    "new_figure",
    "printed",
    "qq",
    "save",
    "scenarios",
    "set_title",
    "shift",
    "sorted_samples",
    "tail",
    "time_series",
    "to_bytes",
    "unit_for",
]
