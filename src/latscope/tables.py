"""Tables that fit the terminal they are printed in, without cutting a number.

A table is declared as `Column`s in the order they are shown, each with a ``drop`` rank: when
the table does not fit the console's width, the column with the highest rank is left out,
then the next, until every column that must not wrap (numbers, ids, intervals) is shown whole;
columns of text (``wrap=True``: parameters, tags, notes) wrap instead. Columns with no rank
are always shown; when the table is still too wide with every rank left out, every column may
wrap (at a space, or folded): a number is never cut to an ellipsis. `fit` returns the table
and the headings it left out, so the command can say where they are (``--wide``, ``show
--full``); ``wide=True`` keeps every column whatever the width (a terminal too narrow for it
wraps lines, as any wide output does).

A text column may name ``breaks``, the characters after which its text may break (a scenario
name such as ``r000-orwc-cold-fadvise-ext4`` breaks after its hyphens): when the table is too
wide, such a column is broken there, at the widest width that lets the table fit, before any
column is folded mid-word.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box as rich_box
from rich.console import Console, RenderableType
from rich.table import Table


@dataclass(frozen=True)
class Column:
    head: str
    justify: str = "left"
    drop: int | None = None  # rank: the highest is left out first; None: always shown
    wrap: bool = False  # text that may wrap; a column that does not wrap is never cut
    style: str | None = None
    breaks: str = ""  # characters after which a cell may break (tried before folding)


def prebreak(text: str, width: int, breaks: str) -> str:
    """``text`` in lines of at most ``width`` characters, broken only after one of ``breaks``
    (each line as full as it can be); a piece longer than ``width`` stays whole."""
    if not breaks or len(text) <= width:
        return text
    pieces: list[str] = []
    cur = ""
    for ch in text:
        cur += ch
        if ch in breaks:
            pieces.append(cur)
            cur = ""
    if cur:
        pieces.append(cur)
    lines: list[str] = []
    line = ""
    for piece in pieces:
        if line and len(line) + len(piece) > width:
            lines.append(line)
            line = ""
        line += piece
    lines.append(line)
    return "\n".join(lines)


def _broken(
    cols: Sequence[Column], rows: Sequence[Sequence[RenderableType]], width: int
) -> tuple[list[Column], list[list[RenderableType]]]:
    """The columns with ``breaks`` as columns that do not wrap, their text broken at
    ``width``."""
    out_cols = [Column(c.head, c.justify, c.drop, False, c.style) if c.breaks else c for c in cols]
    out_rows = [
        [
            prebreak(v, width, c.breaks) if c.breaks and isinstance(v, str) else v
            for c, v in zip(cols, r, strict=True)
        ]
        for r in rows
    ]
    return out_cols, out_rows


def _table(
    cols: Sequence[Column],
    rows: Sequence[Sequence[RenderableType]],
    all_wrap: bool = False,
    **kw: Any,
) -> Table:
    kw.setdefault("box", rich_box.SIMPLE_HEAD)
    kw.setdefault("pad_edge", False)
    kw.setdefault("collapse_padding", True)
    kw.setdefault("title_justify", "left")
    t = Table(**kw)
    for c in cols:
        t.add_column(
            c.head,
            justify=c.justify,  # type: ignore[arg-type]
            no_wrap=not (c.wrap or all_wrap),
            overflow="fold",
            style=c.style,
        )
    for r in rows:
        t.add_row(*r)
    return t


def _fits(console: Console, t: Table, width: int, text_min: int = 12) -> bool:
    """Every column that does not wrap gets its whole width at ``width``, and every column
    that wraps at least its longest word (up to ``text_min`` characters)."""
    extra = t._extra_width  # noqa: SLF001 (rich's own layout: edges and separators)
    options = console.options.update_width(max(1, width - extra))
    widths = t._calculate_column_widths(console, options)  # noqa: SLF001
    if sum(widths) + extra > width:
        return False
    for i, col in enumerate(t.columns):
        m = t._measure_column(console, options, col)  # noqa: SLF001
        need = m.maximum if col.no_wrap else min(m.minimum, text_min + 2)
        if widths[i] < need:
            return False
    return True


#: Rows beyond which a table of text is laid out on its widest rows and printed line by line
#: (`Long`): rich lays out and renders every cell, about 0.1 ms each.
LONG = 400


@dataclass
class Long:
    """A long table of text (`fit`): laid out by rich on its widest rows (``table``), printed
    by `show` line by line in those columns' widths, the same layout as rich's."""

    table: Table
    keep: list[int]
    rows: Sequence[Sequence[str]]
    title: str | None


def _widest(rows: Sequence[Sequence[Any]]) -> list[int]:
    """The indexes of the rows that decide a layout: for each column, the row with its
    longest text and the row with its longest word."""
    from rich.cells import cell_len

    def width(s: str) -> int:
        return len(s) if s.isascii() else cell_len(s)

    def word(s: str) -> int:
        return max(map(width, s.split()), default=0) if " " in s else width(s)

    picked: set[int] = set()
    for c in range(len(rows[0]) if rows else 0):
        cells = [str(r[c]) for r in rows]
        ascii_only = all(map(str.isascii, cells))
        lens = list(map(len if ascii_only else width, cells))
        picked.add(lens.index(max(lens)))
        if any(" " in x for x in cells):
            words = list(map(word, cells))
            picked.add(words.index(max(words)))
    return sorted(picked)


def _with_breaks(
    console: Console,
    cols: Sequence[Column],
    rows: Sequence[Sequence[RenderableType]],
    floor: int,
    **table_kw: Any,
) -> Table | None:
    """The table with its ``breaks`` columns broken at the widest width (their longest cell
    down to ``floor`` characters) at which it fits, or None."""
    longest = max(
        (len(str(v)) for r in rows for c, v in zip(cols, r, strict=True) if c.breaks),
        default=0,
    )
    for w in range(longest, floor - 1, -1):
        bc, br = _broken(cols, rows, w)
        t = _table(bc, br, **table_kw)
        if _fits(console, t, console.width):
            return t
    return None


def fit(
    console: Console,
    cols: Sequence[Column],
    rows: Sequence[Sequence[RenderableType]],
    wide: bool = False,
    long: bool = False,
    **table_kw: Any,
) -> tuple[Table | Long, list[str]]:
    """The table with as many columns as fit ``console``'s width (module docs), and the
    headings of the columns left out (in the order they are shown).  ``long``: a table of
    more than `LONG` rows of text (and no column with ``breaks``) is laid out on its widest
    rows and comes back as a `Long` (for `show`)."""
    plain = not any(c.breaks for c in cols) and all(isinstance(c, str) for r in rows for c in r)
    if long and len(rows) > LONG and plain:
        sample = [rows[i] for i in _widest(rows)]
        t, left = fit(console, cols, sample, wide, **table_kw)
        assert isinstance(t, Table)
        keep = [i for i, c in enumerate(cols) if c.head.replace("\n", " ") not in left]
        title = table_kw.get("title")
        return Long(t, keep, rows, str(title) if title is not None else None), left
    keep = list(range(len(cols)))
    ranks = sorted((c.drop for c in cols if c.drop is not None), reverse=True)
    while True:
        kc = [cols[i] for i in keep]
        kr = [[r[i] for i in keep] for r in rows]
        left = [cols[i].head.replace("\n", " ") for i in range(len(cols)) if i not in keep]
        t = _table(kc, kr, **table_kw)
        if wide:
            return t, left
        if any(c.breaks for c in kc):
            # broken after a hyphen (down to 12 characters while a column can still go)
            # rather than folded mid-word
            tb = _with_breaks(console, kc, kr, 12 if ranks else 6, **table_kw)
            if tb is not None:
                return tb, left
        if not ranks or (not any(c.breaks for c in kc) and _fits(console, t, console.width)):
            if not _fits(console, t, console.width, text_min=4):
                # nothing more to leave out, and text folded to 4 characters is not enough:
                # every column may wrap (at spaces, or folded), rather than text columns
                # squeezed to nothing or numbers cut
                t = _table(kc, kr, all_wrap=True, **table_kw)
            return t, left
        top = ranks.pop(0)
        keep = [i for i in keep if cols[i].drop != top]


def _plain(cell: str) -> str:
    if "[" not in cell:
        return cell
    from rich.text import Text

    return Text.from_markup(cell).plain


def _show_long(console: Console, t: Long, wide: bool) -> None:
    """A `Long` table, line by line: rich's layout of its widest rows (column widths), each
    cell aligned as its column says, text that does not fit its column wrapped."""
    from rich.cells import cell_len

    width = 10_000 if wide else console.width
    tab = t.table
    options = console.options.update_width(max(1, width - tab._extra_width))  # noqa: SLF001
    widths = tab._calculate_column_widths(console, options)  # noqa: SLF001
    # rich's widths hold each column's padding: one space on the right but for the last
    widths = [w - (i < len(widths) - 1) for i, w in enumerate(widths)]
    out: list[str] = []

    right = [col.justify == "right" for col in tab.columns]

    def line(cells: Sequence[str]) -> str:
        parts = []
        for w, c, r in zip(widths, cells, right, strict=True):
            if not c.isascii():
                pad = " " * max(0, w - cell_len(c))
                parts.append(pad + c if r else c + pad)
            else:
                parts.append(c.rjust(w) if r else c.ljust(w))
        return (" " + "  ".join(parts)).rstrip()

    if t.title:
        out += [_plain(t.title), ""]
    out.append(line([_plain(str(c.header)) for c in tab.columns]))
    out.append(" " + "─" * (sum(widths) + 2 * (len(widths) - 1)))
    for r in t.rows:
        cells = [_plain(r[i]) for i in t.keep]
        if all(
            (len(c) if c.isascii() else cell_len(c)) <= w
            for c, w in zip(cells, widths, strict=True)
        ):
            out.append(line(cells))
            continue
        folded = [
            textwrap.wrap(c, w, break_long_words=True) or [""] if cell_len(c) > w else [c]
            for c, w in zip(cells, widths, strict=True)
        ]
        for k in range(max(len(f) for f in folded)):
            out.append(line([f[k] if k < len(f) else "" for f in folded]))
    out.append("")
    with console:  # rich's buffer first, then the lines as they are (no markup, no wrap)
        pass
    console.file.write("\n".join(out) + "\n")
    console.file.flush()


def show(console: Console, t: Table | Long, wide: bool = False) -> None:
    """Print a table from `fit`; ``wide``: at its natural width, even beyond the terminal's
    (every column whole: the terminal wraps the lines)."""
    if isinstance(t, Long):
        _show_long(console, t, wide)
        return
    if not wide:
        console.print(t)
        return
    natural = t.__rich_measure__(console, console.options.update_width(10_000)).maximum
    width = console.width
    console.width = max(width, natural)  # rich clamps print(width=) to the console's width
    try:
        console.print(t)
    finally:
        console.width = width
