"""Units: every number a user sees carries one, chosen to fit the values.  And text a user
gave (or a file holds) is shown as text: `shown`."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

_UNITS = (("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9))


def pick_unit(values_ns: Iterable[float | None]) -> tuple[str, float]:
    """The unit in which the typical (median of given) value reads between 1 and 1000."""
    vals = sorted(abs(v) for v in values_ns if v is not None and math.isfinite(v) and v != 0)
    if not vals:
        return "ns", 1.0
    ref = float(f"{vals[len(vals) // 2]:.4g}")  # as shown: 999.98 ns reads 1.000 µs
    unit = _UNITS[0]
    for u in _UNITS:
        if ref >= u[1]:
            unit = u
    return unit


def fmt(value_ns: float | None, unit: tuple[str, float] | None = None, digits: int = 4) -> str:
    """Format a nanosecond value with its unit, e.g. '1.234 µs'."""
    if value_ns is None or (isinstance(value_ns, float) and not math.isfinite(value_ns)):
        return "—"
    name, scale = unit if unit else pick_unit([value_ns])
    v = value_ns / scale
    return f"{_sig(v, digits)} {name}"


def fmt_bare(value_ns: float | None, unit: tuple[str, float], digits: int = 4) -> str:
    if value_ns is None or (isinstance(value_ns, float) and not math.isfinite(value_ns)):
        return "—"
    return _sig(value_ns / unit[1], digits)


def _sig(v: float, digits: int) -> str:
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    if abs(round(v, max(0, digits - 1 - mag))) >= 10 ** (mag + 1):
        mag += 1  # rounding carries into the next power of ten: 9.9996 reads 10.00, not 10.000
    decimals = max(0, digits - 1 - mag)
    return f"{v:.{decimals}f}"


def fmt_ratio(x: float | None) -> str:
    """A ratio to three significant figures, trailing zeros kept: 1.00, 0.982, 2.33, 400."""
    if x is None or not math.isfinite(x):
        return "—"
    if x == 0:
        return "0"
    s = f"{x:#.3g}"
    if "e" in s:  # beyond 1e3 or below 1e-3: no exponent for a ratio a person reads
        return f"{x:.3g}" if x < 1 else f"{x:,.0f}"
    return s.rstrip(".")


# C0 and C1 controls, DEL, the bidirectional controls (which reorder what follows them on a
# terminal) and lone surrogates (undecodable bytes of a file name, as Python reads them)
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escaped(m: re.Match[str]) -> str:
    c = m.group()
    o = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    if 0xDC80 <= o <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): that byte
        return f"\\x{o - 0xDC00:02x}"
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def shown(text: object, markup: bool = True) -> str:
    """``text`` (a parameter, a name, a path, an error that echoes input) as the terminal
    should show it: every control character written as an escape (ESC as ``\\x1b``, a
    newline as ``\\n``, a byte that is not UTF-8 as ``\\xff``), never acted on; and, for
    text printed with rich markup on (``markup``), brackets escaped so that ``[bold]`` or
    ``[/x]`` is printed as it is, never read as markup.  The one way user text reaches a table
    or a line."""
    s = _CONTROL.sub(_escaped, str(text))
    if markup:
        from rich.markup import escape

        s = escape(s)
    return s


def pct(x: float | None, sign: str = "") -> str:
    """A fraction as a percentage with two significant digits (never in e-notation)."""
    if x is None or not math.isfinite(x):
        return "—"
    v = 100 * x
    return f"{sign}{v:.0f}%" if abs(v) >= 10 else f"{sign}{v:.2g}%"
