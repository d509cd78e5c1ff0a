"""Ticks of logarithmic axes that read: a few labelled values in the axis' unit, chosen at draw
time for the length of the axis and the size of its labels, so that no two labels overlap
whatever the figure's size; minor ticks unlabelled.

Matplotlib's default labels every minor tick of a log axis spanning less than a decade or so
(``2×10^2  3×10^2  4×10^2 …``), which smears into one line at the sizes of a report. Here the
major ticks are chosen among these, in this order: evenly spaced round values
(``120 140 160``; only for an axis spanning less than a factor of 5), 1-2-5 per decade,
1-2-3-5, 1-3, every decade, every 2nd, 3rd, 5th… decade: the first with 3 to 7 labels in
view (else 2) whose labels fit, that is keep a gap of at least half a character between
every two neighbours. Labels are plain numbers (``0.5 2 20 500 50000``) while every tick lies
in [0.001, 100000], else powers of ten for the whole axis, and then only at whole decades
(``10^5  10^6``, never ``3×10^5``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.ticker import Formatter, Locator, MaxNLocator, NullFormatter

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis

#: At most this many labelled ticks on a log axis.
MAX_TICKS = 7
#: Plain numbers for ticks in this range; powers of ten outside.
PLAIN = (1e-3, 1e5)


def log_ticks(ax: Axes) -> None:
    """Readable ticks on every logarithmic axis of ``ax`` (call after ``set_xscale("log")``:
    setting the scale resets the ticks)."""
    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() != "log":
            continue
        axis.set_major_locator(LogTicks())
        axis.set_major_formatter(LogLabels())
        axis.set_minor_locator(LogMinor())
        axis.set_minor_formatter(NullFormatter())


# ------------------------------------------------------------------------------- labels


def _plain(v: float, digits: int) -> str:
    return str(
        np.format_float_positional(v, precision=digits, unique=True, fractional=False, trim="-")
    )


#: Exponents in superscript digits: a power of ten as plain text ("10⁻⁴"), never mathtext,
#: which the figures turn off (`common.plain_text`: a name with dollar signs stays as written).
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _power(v: float, digits: int) -> str:
    e = math.floor(math.log10(v) + 1e-9)
    m = v / 10.0**e
    power = "10" + str(e).translate(_SUPERSCRIPT)
    return power if abs(m - 1.0) < 1e-6 else f"{_plain(m, digits)}×{power}"


def tick_labels(values: Sequence[float]) -> list[str]:
    """The labels of the ticks ``values`` (all positive): plain numbers or powers of ten for all
    of them, with the fewest significant digits (at least 3) that tell every two apart."""
    vals = [float(v) for v in values]
    if not vals:
        return []
    pos = [v for v in vals if v > 0]
    plain = all(PLAIN[0] * (1 - 1e-9) <= v <= PLAIN[1] * (1 + 1e-9) for v in pos)
    one = _plain if plain else _power
    labels: list[str] = []
    for digits in range(3, 10):
        labels = [one(v, digits) if v > 0 else "" for v in vals]
        if len(set(labels)) == len(labels):
            break
    return labels


class LogLabels(Formatter):
    """Labels of the major ticks of a log axis (`tick_labels`)."""

    def __init__(self) -> None:
        self._labels: dict[float, str] = {}

    def set_locs(self, locs: Any) -> None:
        super().set_locs(locs)
        vals = [float(v) for v in locs]
        self._labels = dict(zip(vals, tick_labels(vals), strict=True))

    def __call__(self, x: float, pos: int | None = None) -> str:
        label = self._labels.get(float(x))
        if label is None:
            label = tick_labels([x])[0] if x > 0 else ""
        return label


# ------------------------------------------------------------------------------- ticks


def _decade_ticks(lo: float, hi: float, subs: Sequence[float], every: int = 1) -> np.ndarray:
    e0 = math.floor(math.log10(lo)) - 1
    e1 = math.ceil(math.log10(hi)) + 1
    e0 -= e0 % every
    decades = 10.0 ** np.arange(e0, e1 + 1, every, dtype=np.float64)
    return np.unique(np.outer(decades, np.asarray(subs, dtype=np.float64)).ravel())


def candidates(lo: float, hi: float) -> list[np.ndarray]:
    """Tick sets for a log axis over [lo, hi], the preferred (densest) first."""
    out: list[np.ndarray] = []
    if hi / lo < 5.0:
        for nb in (10, 6, 4, 3):
            t = MaxNLocator(nbins=nb, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
            out.append(np.asarray(t[t > 0], dtype=np.float64))
    out.append(_decade_ticks(lo, hi, (1.0, 2.0, 5.0)))
    out.append(_decade_ticks(lo, hi, (1.0, 2.0, 3.0, 5.0)))
    out.append(_decade_ticks(lo, hi, (1.0, 3.0)))
    out.append(_decade_ticks(lo, hi, (1.0,)))
    span = math.log10(hi / lo)
    every = 2
    while every <= max(2, span):
        out.append(_decade_ticks(lo, hi, (1.0,), every))
        every = {2: 3, 3: 5}.get(every, every * 2)
    return out


def fits(
    ticks: np.ndarray,
    lo: float,
    hi: float,
    length_pt: float,
    extents_pt: Sequence[float],
    gap_pt: float,
) -> bool:
    """Whether labels of ``extents_pt`` (along the axis, points) at ``ticks`` on a log axis of
    ``length_pt`` over [lo, hi] keep at least ``gap_pt`` between neighbours."""
    if ticks.size < 2:
        return True
    pos = (np.log10(ticks) - math.log10(lo)) / math.log10(hi / lo) * length_pt
    half = np.asarray(extents_pt, dtype=np.float64) / 2.0
    return bool(np.all(np.diff(pos) >= half[:-1] + half[1:] + gap_pt))


def powers(ticks: np.ndarray) -> bool:
    """Whether `tick_labels` writes ``ticks`` as powers of ten."""
    return any("10" in s and s[-1] in "⁰¹²³⁴⁵⁶⁷⁸⁹" for s in tick_labels(list(ticks)))


def decades(ticks: np.ndarray) -> bool:
    """Whether every tick is a power of ten."""
    e = np.log10(ticks)
    return bool(np.allclose(e, np.round(e), atol=1e-9))


class LogTicks(Locator):
    """Major ticks of a log axis: the first of `candidates` whose labels fit, with between 3
    (else 2) and `MAX_TICKS` of them in view (or, on a very short axis, one)."""

    def __init__(self) -> None:
        self._last: tuple[tuple[Any, ...], Any] | None = None

    def __call__(self) -> Any:
        lo, hi = self.axis.get_view_interval() if self.axis else (1.0, 10.0)
        return self.tick_values(float(lo), float(hi))

    def _geometry(self) -> tuple[float, bool, Any]:
        axis: Axis | None = self.axis
        from matplotlib.font_manager import FontProperties

        if axis is None:
            return 300.0, True, FontProperties(size=8)
        ax = axis.axes
        horizontal = axis.axis_name == "x"
        fig = ax.figure
        bbox = ax.get_position()
        size = fig.get_size_inches() if fig is not None else (5.0, 3.6)
        length = 72.0 * (bbox.width * size[0] if horizontal else bbox.height * size[1])
        ticks = axis.get_major_ticks(1)
        prop = ticks[0].label1.get_fontproperties() if ticks else FontProperties(size=8)
        return max(length, 1.0), horizontal, prop

    def tick_values(self, vmin: float, vmax: float) -> Any:
        lo, hi = sorted((vmin, vmax))
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= 0:
            return np.array([1.0])
        if lo <= 0:
            lo = hi / 1e3
        if hi / lo < 1.000001:
            lo, hi = lo / 1.5, hi * 1.5
        length, horizontal, prop = self._geometry()
        key = (lo, hi, round(length, 1), horizontal, hash(prop))
        if self._last is not None and self._last[0] == key:  # a draw asks many times
            return self._last[1]
        ticks = self._choose(lo, hi, length, horizontal, prop)
        self._last = (key, ticks)
        return ticks

    def _choose(self, lo: float, hi: float, length: float, horizontal: bool, prop: Any) -> Any:
        size = float(prop.get_size_in_points())
        gap = 0.5 * size

        def measure(ticks: np.ndarray) -> list[float]:
            if not horizontal:
                return [1.25 * size] * ticks.size
            from matplotlib.textpath import text_to_path

            return [
                float(text_to_path.get_text_width_height_descent(s, prop, False)[0])
                for s in tick_labels(list(ticks))
            ]

        def ok(view: np.ndarray, strict: bool) -> bool:
            if strict and powers(view) and not decades(view):
                return False
            return fits(view, lo, hi, length, measure(view), gap)

        tol = 1e-9
        views = [c[(c >= lo * (1 - tol)) & (c <= hi * (1 + tol))] for c in candidates(lo, hi)]
        # the first that fits with 3 to MAX_TICKS labels, else with 2, else with more;
        # powers of ten at whole decades only, unless no two decades are in view
        for strict in (True, False):
            for least in (3, 2):
                for view in views:
                    if least <= view.size <= MAX_TICKS and ok(view, strict):
                        return view
            for view in views:
                if view.size > MAX_TICKS and ok(view, strict):
                    return view
        # a very short axis: one tick, at a round value in view when there is one
        for view in reversed(views):
            if view.size:
                return view[view.size // 2 : view.size // 2 + 1]
        return np.array([math.sqrt(lo * hi)])


class LogMinor(Locator):
    """Minor ticks of a log axis: 2…9 in every decade, or the decades alone beyond 6."""

    def __call__(self) -> Any:
        lo, hi = self.axis.get_view_interval() if self.axis else (1.0, 10.0)
        return self.tick_values(float(lo), float(hi))

    def tick_values(self, vmin: float, vmax: float) -> Any:
        lo, hi = sorted((vmin, vmax))
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= 0:
            return np.array([])
        lo = lo if lo > 0 else hi / 1e3
        subs = np.arange(1.0, 10.0) if math.log10(hi / lo) <= 6 else (1.0,)
        t = _decade_ticks(lo, hi, subs)
        return t[(t >= lo) & (t <= hi)]
