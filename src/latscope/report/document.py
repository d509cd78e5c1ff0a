"""A small document model for reports, rendered three ways: self-contained HTML, Markdown with
image files, and rich tables in the terminal (``latscope show --full``).

``parts.py``, ``run.py`` and ``full.py`` decide *what* a report says; this module only decides
how it looks. Keeping the content in one place makes the HTML report, the Markdown report and
the terminal show the same figures, intervals and warnings.

The HTML needs nothing from the network: the CSS is inline, there is no JavaScript, and the
figures are PNG images embedded as ``data:`` URIs.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import write_bytes
from ..units import shown as escape  # markup and control characters: text, as given

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.console import Console

TONES = ("good", "bad", "warn", "dim", "bold", "")


@dataclass
class Cell:
    """A table cell with a tone: good (green), bad (red), warn (yellow), dim or bold."""

    text: str
    tone: str = ""


CellLike = str | Cell


@dataclass
class Heading:
    text: str
    level: int = 2
    anchor: str | None = None
    toc: str | None = None  # shorter text for the table of contents


@dataclass
class Text:
    text: str
    tone: str = ""  # "", "dim", "note"


@dataclass
class Alert:
    """A warning for the reader: what is wrong and what to do."""

    message: str
    code: str = ""
    severity: str = "warning"  # "warning" or "info"


@dataclass
class KeyValues:
    title: str
    rows: list[tuple[str, CellLike]]


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[CellLike]]
    align: str = ""  # one letter per column: l or r (default l)
    note: str = ""
    small: set[int] = field(default_factory=set)  # columns set in a smaller font
    # in a terminal too narrow for the whole table: column index -> rank, the highest left
    # out first (tables.fit); pages and files keep every column. A header may hold "\n" to
    # break in a terminal (a space elsewhere).
    drop: dict[int, int] = field(default_factory=dict)
    # the first column names groups of consecutive rows (a comparison's columns): a terminal
    # shows each name once, and one too narrow for it in a column as a line above its rows
    group: bool = False


@dataclass
class Image:
    """A figure, drawn only when rendered (the terminal never draws it)."""

    key: str
    caption: str
    make: Callable[[], Figure]
    wide: bool = True


@dataclass
class Links:
    """Links to pages beside this one: ``(text, href, how)``, ``href`` relative to the page;
    ``how`` says what gives the page where there is no link (Markdown, the terminal)."""

    title: str
    items: list[tuple[str, str, str]]


@dataclass
class Fold:
    """Where a folded part begins (``summary``: its one line, always shown) or, with
    ``summary`` None, ends: HTML folds it (``<details>``), Markdown too; the terminal and
    LaTeX show what it holds as it is."""

    summary: str | None = None


Block = Heading | Text | Alert | KeyValues | Table | Image | Links | Fold


def folded(summary: str, blocks: Iterable[Block]) -> list[Block]:
    """``blocks`` in a fold that says ``summary``."""
    inner = list(blocks)
    return [Fold(summary), *inner, Fold(None)] if inner else []


@dataclass
class Document:
    title: str
    subtitle: str = ""
    blocks: list[Block] = field(default_factory=list)
    # pages beside this one (file name -> page), written into the folder ``pages_dir`` next to
    # it; its `Links` point there
    pages: dict[str, Document] = field(default_factory=dict)
    pages_dir: str = ""

    def add(self, *blocks: Block) -> None:
        self.blocks.extend(blocks)

    def extend(self, blocks: Iterable[Block]) -> None:
        self.blocks.extend(blocks)

    @property
    def images(self) -> list[Image]:
        return [b for b in self.blocks if isinstance(b, Image)]


Progress = Callable[[str], None]


def _text(c: CellLike) -> str:
    return c.text if isinstance(c, Cell) else c


def _tone(c: CellLike) -> str:
    return c.tone if isinstance(c, Cell) else ""


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")
    return s or "x"


# ------------------------------------------------------------------------------------ HTML

CSS = """
:root { --fg:#1d2330; --muted:#5d6675; --line:#dde1e7; --bg:#ffffff; --head:#f3f5f8;
  --warn:#fff6db; --warnline:#e0b325; --info:#e8f1fb; --infoline:#6a9fd4;
  --good:#17803d; --bad:#c22a2a; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 21px; margin: 40px 0 10px; padding-top: 12px; border-top: 3px solid var(--fg); }
h3 { font-size: 17px; margin: 28px 0 8px; padding-bottom: 3px;
  border-bottom: 1px solid var(--line); }
h4 { font-size: 14px; margin: 18px 0 6px; color: var(--muted); text-transform: uppercase;
  letter-spacing: .04em; }
p { margin: 6px 0; }
.subtitle, .dim { color: var(--muted); }
.note { color: var(--muted); font-size: 12.5px; }
nav.toc { background: var(--head); border: 1px solid var(--line); border-radius: 6px;
  padding: 10px 16px; margin: 16px 0; }
nav.toc ul { margin: 4px 0; padding-left: 20px; }
nav.toc a { color: #1f5fa8; text-decoration: none; }
table { border-collapse: collapse; margin: 6px 0 4px; font-size: 13px;
  font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: 4px 0; color: var(--fg); }
th, td { border: 1px solid var(--line); padding: 3px 8px; vertical-align: top; }
th { background: var(--head); text-align: left; font-weight: 600; }
td.r { text-align: right; white-space: nowrap; }
td.small, th.small { font-size: 11.5px; color: var(--muted); max-width: 360px; }
table.kv th { width: 210px; }
table.kv td { max-width: 880px; overflow-wrap: anywhere; }
tr:nth-child(even) td { background: #fafbfc; }
.good { color: var(--good); font-weight: 600; }
.bad { color: var(--bad); font-weight: 600; }
.warn { color: #9a6b00; font-weight: 600; }
.bold { font-weight: 700; }
.alert { border-left: 4px solid var(--warnline); background: var(--warn); padding: 6px 10px;
  margin: 6px 0; border-radius: 3px; }
.alert.info { border-color: var(--infoline); background: var(--info); }
.alert code { font-size: 12px; color: var(--muted); margin-right: 6px; }
figure { margin: 10px 0 18px; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { color: var(--muted); font-size: 12.5px; margin-top: 2px; }
.scroll { overflow-x: auto; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
details.fold { margin: 18px 0; border: 1px solid var(--line); border-radius: 6px;
  padding: 0 14px; }
details.fold > summary { cursor: pointer; font-weight: 600; padding: 10px 0;
  color: #1f5fa8; }
details.fold[open] > summary { border-bottom: 1px solid var(--line); margin-bottom: 8px; }
"""


def _cell_html(c: CellLike, tag: str, cls: list[str]) -> str:
    tone = _tone(c)
    classes = [*cls, tone] if tone else cls
    attr = f' class="{" ".join(classes)}"' if classes else ""
    return f"<{tag}{attr}>{html.escape(_text(c))}</{tag}>"


def _drawn(
    doc: Document, dpi: int, progress: Progress | None, scale: int = 1
) -> list[tuple[bytes, int, int]]:
    """Every figure of the document drawn (`drawing.drawn`: on several CPUs), in order."""
    from .drawing import drawn

    images = [b for b in doc.blocks if isinstance(b, Image)]
    return drawn(
        [b.make for b in images],
        dpi,
        (lambda i: progress(images[i].caption)) if progress else None,
        scale,
    )


#: The HTML page's figures hold this many pixels for each one they are shown at (sharp on a
#: high-density screen, and when zoomed).
HTML_SCALE = 2


def render_html(doc: Document, progress: Progress | None = None, dpi: int = 100) -> str:
    """The document as one self-contained HTML page; its figures are shown at ``dpi`` and
    hold `HTML_SCALE` times as many pixels."""
    pngs = iter(_drawn(doc, dpi, progress, HTML_SCALE))
    out: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(doc.title)}</title>",
        f"<style>{CSS}</style></head><body><main>",
        f"<h1>{html.escape(doc.title)}</h1>",
    ]
    if doc.subtitle:
        out.append(f'<p class="subtitle">{html.escape(doc.subtitle)}</p>')
    # the contents list what is shown unfolded; a fold's own line says what it holds
    toc, depth_f = [], 0
    for b in doc.blocks:
        if isinstance(b, Fold):
            depth_f += 1 if b.summary is not None else -1
        elif depth_f == 0 and isinstance(b, Heading) and b.level in (2, 3) and b.anchor:
            toc.append(b)
    if len(toc) > 1:
        out.append('<nav class="toc"><strong>Contents</strong><ul>')
        depth = 2
        for i, h in enumerate(toc):
            if h.level > depth:
                out.append("<ul>")
            elif h.level < depth:
                out.append("</li></ul></li>")
            elif i:
                out.append("</li>")
            depth = h.level
            entry = html.escape(h.toc or h.text)
            out.append(f'<li><a href="#{html.escape(h.anchor or "")}">{entry}</a>')
        out.append("</li></ul></li>" if depth == 3 else "</li>")
        out.append("</ul></nav>")
    for b in doc.blocks:
        if isinstance(b, Fold):
            out.append(
                f'<details class="fold"><summary>{html.escape(b.summary)}</summary>'
                if b.summary is not None
                else "</details>"
            )
        elif isinstance(b, Heading):
            anchor = f' id="{html.escape(b.anchor)}"' if b.anchor else ""
            lvl = min(max(b.level, 2), 4)
            out.append(f"<h{lvl}{anchor}>{html.escape(b.text)}</h{lvl}>")
        elif isinstance(b, Text):
            cls = f' class="{b.tone}"' if b.tone else ""
            out.append(f"<p{cls}>{html.escape(b.text)}</p>")
        elif isinstance(b, Alert):
            cls = "alert info" if b.severity == "info" else "alert"
            code = f"<code>{html.escape(b.code)}</code>" if b.code else ""
            out.append(f'<div class="{cls}">{code}{html.escape(b.message)}</div>')
        elif isinstance(b, KeyValues):
            out.append('<div class="scroll"><table class="kv">')
            if b.title:
                out.append(f"<caption>{html.escape(b.title)}</caption>")
            for k, v in b.rows:
                out.append(f"<tr><th>{html.escape(k)}</th>{_cell_html(v, 'td', [])}</tr>")
            out.append("</table></div>")
        elif isinstance(b, Table):
            out.append('<div class="scroll"><table>')
            if b.title:
                out.append(f"<caption>{html.escape(b.title)}</caption>")
            out.append(
                "<thead><tr>"
                + "".join(
                    _cell_html(h.replace("\n", " "), "th", ["small"] if i in b.small else [])
                    for i, h in enumerate(b.headers)
                )
                + "</tr></thead><tbody>"
            )
            for row in b.rows:
                cells = []
                for i, c in enumerate(row):
                    classes: list[str] = []
                    if i < len(b.align) and b.align[i] == "r":
                        classes.append("r")
                    if i in b.small:
                        classes.append("small")
                    cells.append(_cell_html(c, "td", classes))
                out.append("<tr>" + "".join(cells) + "</tr>")
            out.append("</tbody></table></div>")
            if b.note:
                out.append(f'<p class="note">{html.escape(b.note)}</p>')
        elif isinstance(b, Links):
            out.append(f"<p><strong>{html.escape(b.title)}</strong></p><ul>")
            out += [
                f'<li><a href="{html.escape(href)}">{html.escape(text)}</a></li>'
                for text, href, _how in b.items
            ]
            out.append("</ul>")
        elif isinstance(b, Image):
            png, width, height = next(pngs)
            data = base64.b64encode(png).decode("ascii")
            out.append(
                f'<figure><img src="data:image/png;base64,{data}" width="{width}" '
                f'height="{height}" '
                f'alt="{html.escape(b.caption)}"><figcaption>{html.escape(b.caption)}'
                "</figcaption></figure>"
            )
    out.append(f"<footer>{html.escape(doc.subtitle)}</footer></main></body></html>")
    return "\n".join(out)


# -------------------------------------------------------------------------------- Markdown


#: Markdown's own characters, written as themselves (a backslash before each).
_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*[]|"})


def _md_escape(s: str) -> str:
    """Text as itself in Markdown: no HTML (``<``, ``>`` and ``&`` as entities: a name such as
    ``<script>`` is shown, never run), no link, code or table cell of its own (an underscore
    inside a word, as in ``inject_ns``, is no emphasis in CommonMark, and stays as it is)."""
    return html.escape(s, quote=False).translate(_MD_SPECIAL).replace("\n", " ")


def _md_cell(c: CellLike) -> str:
    t = _md_escape(_text(c))
    return f"**{t}**" if _tone(c) in ("good", "bad", "bold") and t else t


def image_files(doc: Document) -> list[str]:
    """The file names `render_markdown` gives the document's figures, in order."""
    names: list[str] = []
    used: set[str] = set()
    for b in doc.blocks:
        if isinstance(b, Image):
            name = slug(b.key)
            k = 2
            while name in used:
                name = f"{slug(b.key)}-{k}"
                k += 1
            used.add(name)
            names.append(f"{name}.png")
    return names


def render_markdown(
    doc: Document,
    image_dir: Path,
    progress: Progress | None = None,
    dpi: int = 120,
    save: Callable[[str, bytes], Path] | None = None,
) -> tuple[str, list[Path]]:
    """The document as Markdown; figures are written as PNG files into ``image_dir``, named
    by `image_files` (atomically: ``save(name, data)``, by default `files.write_bytes`).
    Returns the text and the image paths."""
    pngs = iter(_drawn(doc, dpi, progress))
    lines: list[str] = [f"# {doc.title}", ""]
    if doc.subtitle:
        lines += [f"_{doc.subtitle}_", ""]
    written: list[Path] = []
    names = iter(image_files(doc))
    for b in doc.blocks:
        if isinstance(b, Fold):  # GitHub's and most renderers' fold
            summary = html.escape(b.summary) if b.summary is not None else None
            lines += (
                [f"<details><summary>{summary}</summary>", ""]
                if summary is not None
                else ["</details>", ""]
            )
        elif isinstance(b, Heading):
            lines += [f"{'#' * min(max(b.level, 2), 4)} {_md_escape(b.text)}", ""]
        elif isinstance(b, Text):
            lines += [f"_{_md_escape(b.text)}_" if b.tone else _md_escape(b.text), ""]
        elif isinstance(b, Alert):
            tag = "Warning" if b.severity == "warning" else "Note"
            code = f" (`{b.code.replace('`', '')}`)" if b.code else ""  # a code span: literal
            lines += [f"> **{tag}**{code}: {_md_escape(b.message)}", ""]
        elif isinstance(b, Links):
            lines += [f"**{_md_escape(b.title)}**", ""]
            lines += [f"- {_md_escape(text)}: {_md_escape(how)}" for text, _h, how in b.items]
            lines.append("")
        elif isinstance(b, KeyValues):
            if b.title:
                lines += [f"**{_md_escape(b.title)}**", ""]
            lines += ["| | |", "|---|---|"]
            lines += [f"| {_md_escape(k)} | {_md_cell(v)} |" for k, v in b.rows]
            lines.append("")
        elif isinstance(b, Table):
            if b.title:
                lines += [f"**{_md_escape(b.title)}**", ""]
            lines.append("| " + " | ".join(_md_escape(h) for h in b.headers) + " |")
            aligns = [
                "---:" if i < len(b.align) and b.align[i] == "r" else "---"
                for i in range(len(b.headers))
            ]
            lines.append("|" + "|".join(aligns) + "|")
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            lines.append("")
            if b.note:
                lines += [f"_{_md_escape(b.note)}_", ""]
        elif isinstance(b, Image):
            name = next(names)
            data = next(pngs)[0]
            target = save(name, data) if save else write_bytes(image_dir / name, data)
            written.append(target)
            caption = _md_escape(b.caption)
            lines += [f"![{caption}]({target.name})", "", f"_{caption}_", ""]
    return "\n".join(lines).rstrip() + "\n", written


# -------------------------------------------------------------------------------- terminal

_RICH_TONE = {"good": "green", "bad": "red", "warn": "yellow", "dim": "dim", "bold": "bold"}


def _rich_cell(c: CellLike) -> str:
    t = escape(_text(c))
    style = _RICH_TONE.get(_tone(c))
    return f"[{style}]{t}[/{style}]" if style and t else t


def render_rich(doc: Document | Sequence[Block], console: Console) -> None:
    """Print the blocks with rich (figures are listed, not drawn)."""
    from rich.table import Table as RTable

    from ..tables import Column, fit

    blocks = doc.blocks if isinstance(doc, Document) else doc
    for b in blocks:
        if isinstance(b, Heading):
            if b.level <= 2:
                console.rule(f"[bold]{escape(b.text)}[/bold]")
            else:
                console.print(f"\n[bold underline]{escape(b.text)}[/bold underline]")
        elif isinstance(b, Text):
            console.print(f"[dim]{escape(b.text)}[/dim]" if b.tone else escape(b.text))
        elif isinstance(b, Alert):
            tag = "[yellow]warning:[/yellow]" if b.severity == "warning" else "[cyan]note:[/cyan]"
            code = f" [dim]({escape(b.code)})[/dim]" if b.code else ""
            console.print(f"{tag}{code} {escape(b.message)}")
        elif isinstance(b, Links):
            console.print(f"[bold]{escape(b.title)}[/bold]")
            for text, _href, how in b.items:
                console.print(f"  {escape(text)}: {escape(how)}")
        elif isinstance(b, KeyValues):
            t = RTable(title=b.title or None, title_justify="left", show_header=False)
            t.add_column("", style="bold", no_wrap=True)
            t.add_column("", overflow="fold")
            for k, v in b.rows:
                t.add_row(escape(k), _rich_cell(v))
            console.print(t)
        elif isinstance(b, Table):
            cols = [
                Column(
                    "\n".join(escape(part) for part in h.split("\n")),  # a header may break
                    justify="right" if i < len(b.align) and b.align[i] == "r" else "left",
                    drop=b.drop.get(i),
                    # text wraps; numbers and columns of single words (a verdict) never do
                    wrap=not (i < len(b.align) and b.align[i] == "r")
                    and any(" " in _text(r[i]).strip() for r in b.rows if i < len(r)),
                    style="dim" if i in b.small else None,
                    group=b.group and i == 0,
                )
                for i, h in enumerate(b.headers)
            ]
            rows = [[_rich_cell(c) for c in row] for row in b.rows]
            if b.group:  # a group's name on its first row only
                for k in range(len(rows) - 1, 0, -1):
                    if rows[k][0] == rows[k - 1][0]:
                        rows[k][0] = ""
            t, left_out = fit(console, cols, rows, title=b.title or None)
            console.print(t)
            if left_out:
                console.print(
                    f"[dim]left out at this width: {escape(', '.join(left_out))} (a wider "
                    "terminal, or the HTML or Markdown report, shows them)[/dim]"
                )
            if b.note:
                console.print(f"[dim]{escape(b.note)}[/dim]")
        elif isinstance(b, Image):
            continue
