"""Statistical analysis of latency samples (ns, in iteration order).

One module per concern; each module's docstring explains its method choices:

- ``summary``: descriptive statistics and percentiles with "samples beyond" counts;
- ``dependence``: ACF, Ljung–Box, effective sample size, block length (on normal scores);
- ``intervals``: confidence intervals for the median, headline percentiles and the mean;
- ``distribution``: shifted log-normal fit, goodness of fit, Q–Q data, modes;
- ``outliers``: Tukey classes and MAD spikes;
- ``periodicity``: the period of recurring spikes (declustered into events);
- ``drift``: windowed medians, change points, trend, warm-up/slowdown warnings;
- ``compare``: two runs against each other, with a verdict against a noise threshold;
- ``analyze``: everything above on one column, once.

All results are frozen dataclasses with ``to_dict()`` returning JSON-serialisable values.
"""

from ._common import MAD_SCALE, AnalysisWarning, Prepared, quantile_sorted
from .analyze import ColumnAnalysis, analyze_column
from .compare import Comparison, RatioInterval, compare
from .dependence import Dependence, autocorrelation, dependence
from .distribution import (
    Distribution,
    LogNormalFit,
    Modes,
    describe_distribution,
    find_modes,
    fit_shifted_lognormal,
)
from .drift import ChangePoint, Drift, drift, timer_too_coarse, window_medians
from .intervals import Interval, Intervals, confidence_intervals, order_statistic_interval
from .outliers import Outliers, outliers
from .periodicity import Periodicity, spike_periodicity
from .summary import MIN_BEYOND, Percentile, Summary, summarize

__all__ = [
    "MAD_SCALE",
    "MIN_BEYOND",
    "AnalysisWarning",
    "ChangePoint",
    "ColumnAnalysis",
    "Comparison",
    "Dependence",
    "Distribution",
    "Drift",
    "Interval",
    "Intervals",
    "LogNormalFit",
    "Modes",
    "Outliers",
    "Percentile",
    "Periodicity",
    "Prepared",
    "RatioInterval",
    "Summary",
    "analyze_column",
    "autocorrelation",
    "compare",
    "confidence_intervals",
    "dependence",
    "describe_distribution",
    "drift",
    "find_modes",
    "fit_shifted_lognormal",
    "order_statistic_interval",
    "outliers",
    "quantile_sorted",
    "spike_periodicity",
    "summarize",
    "timer_too_coarse",
    "window_medians",
]
