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

A first column may be a ``group`` column: it names groups of consecutive rows (a suite's
scenarios, its cell empty on a group's later rows). When the table does not fit with those
names whole, each name becomes a line of its own above its group's rows (`Grouped`), before
any column is left out: a name such as ``r000-orwc-cold-fadvise-ext4`` is never folded into a
narrow column.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box as rich_box
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.table import Table


@dataclass(frozen=True)
class Column:
    head: str
    justify: str = "left"
    drop: int | None = None  # rank: the highest is left out first; None: always shown
    wrap: bool = False  # text that may wrap; a column that does not wrap is never cut
    style: str | None = None
    group: bool = False  # the first column names groups of rows (module docs)


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
LONG = 50


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


def _heading(c: Column) -> str:
    """A column's heading on one line, as the 'left out' line names it: "within-\nrun CI"
    reads "within-run CI"."""
    return c.head.replace("-\n", "-").replace("\n", " ")


def fit(
    console: Console,
    cols: Sequence[Column],
    rows: Sequence[Sequence[RenderableType]],
    wide: bool = False,
    long: bool = False,
    **table_kw: Any,
) -> tuple[Table | Long | Grouped, list[str]]:
    """The table with as many columns as fit ``console``'s width (module docs), and the
    headings of the columns left out (in the order they are shown).  ``long``: a table of
    more than `LONG` rows of text (and no group column) is laid out on its widest rows and
    comes back as a `Long` (for `show`).  With a group column, each set of columns is tried
    with the groups' names whole in their column, then as a `Grouped`, before a column goes."""
    grouped = bool(cols) and cols[0].group
    plain = not grouped and all(isinstance(c, str) for r in rows for c in r)
    if long and len(rows) > LONG and plain:
        sample = [rows[i] for i in _widest(rows)]
        t, left = fit(console, cols, sample, wide, **table_kw)
        assert isinstance(t, Table)
        keep = [i for i, c in enumerate(cols) if _heading(c) not in left]
        title = table_kw.get("title")
        return Long(t, keep, rows, str(title) if title is not None else None), left
    keep = list(range(len(cols)))
    ranks = sorted((c.drop for c in cols if c.drop is not None), reverse=True)
    while True:
        kc = [cols[i] for i in keep]
        kr = [[r[i] for i in keep] for r in rows]
        left = [_heading(cols[i]) for i in range(len(cols)) if i not in keep]
        t = _table(kc, kr, **table_kw)
        if wide:
            return t, left
        best: Table | Grouped = t
        if grouped:
            if _fits(console, t, console.width):
                return t, left
            best = _grouped(kc, kr, **table_kw)
        fits = bool(ranks) and _fits(console, _layout(best), console.width)
        if not ranks or fits:
            # what fits with text columns at 12 characters fits at 4 (asked only without ranks)
            if not fits and not _fits(console, _layout(best), console.width, text_min=4):
                # nothing more to leave out, and text folded to 4 characters is not enough:
                # every column may wrap (at spaces, or folded), rather than text columns
                # squeezed to nothing or numbers cut
                best = (
                    _grouped(kc, kr, all_wrap=True, **table_kw)
                    if grouped
                    else _table(kc, kr, all_wrap=True, **table_kw)
                )
            return best, left
        top = ranks.pop(0)
        keep = [i for i in keep if cols[i].drop != top]


#: The first cell of the row that stands in a `Grouped` table's layout for a group's name.
_MARK = "\ue000"


@dataclass
class Grouped:
    """A table whose group column (`Column.group`) did not fit with its names whole: each
    group's name is a line of its own (bold) above the group's rows, which are indented
    under it; every row is laid out in one table, so the columns line up across groups.
    A rich renderable: ``console.print`` prints it."""

    table: Table  # the other columns; before each group a row whose first cell is _MARK
    names: list[str]  # the groups' names (rich markup), in order

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment
        from rich.text import Text

        names = iter(self.names)
        for line in console.render_lines(self.table, options, pad=False, new_lines=False):
            if any(_MARK in seg.text for seg in line):
                heading = Text.from_markup(" " + next(names, ""), style="bold")
                heading.overflow = "fold"
                yield from console.render(heading, options)
            else:
                yield from line
                yield Segment.line()


def _layout(t: Table | Grouped) -> Table:
    return t.table if isinstance(t, Grouped) else t


def _grouped(
    cols: Sequence[Column],
    rows: Sequence[Sequence[RenderableType]],
    all_wrap: bool = False,
    **kw: Any,
) -> Grouped:
    """``rows`` as a `Grouped` table: the group column (the first) out, its names as
    heading lines, the next column's cells indented by two spaces under them (every line of
    a cell that wraps)."""
    from rich.padding import Padding
    from rich.text import Text

    rest = list(cols[1:])
    c = rest[0]
    rest[0] = Column(f"{cols[0].head}\n  {c.head}", c.justify, c.drop, c.wrap, c.style)
    out: list[list[RenderableType]] = []
    names: list[str] = []
    for r in rows:
        if r[0]:
            names.append(str(r[0]))
            out.append([_MARK] + [""] * (len(rest) - 1))
        first = r[1]
        text = Text.from_markup(first) if isinstance(first, str) else first
        out.append([Padding(text, (0, 0, 0, 2)), *r[2:]])
    return Grouped(_table(rest, out, all_wrap=all_wrap, **kw), names)


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
