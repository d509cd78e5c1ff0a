"""The pieces a LaTeX fragment is made of (latex.py builds the fragments): booktabs tables
from the report's blocks, figure environments, and `Fragment`, one ``.tex`` file of floats
in groups with its header (what it holds, its labels, the packages it needs)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from .._version import __version__
from .document import Cell, CellLike, Image, KeyValues, slug
from .tex import escape, label

#: The packages a fragment needs (named in its header and loaded by example.tex).
PACKAGES = ("graphicx", "booktabs")
#: At most this many floats between two \latscopeflush (LaTeX holds at most 18 unplaced).
FLUSH_EVERY = 8

# ------------------------------------------------------------------------------ floats


def _cell(c: CellLike) -> str:
    text = escape(_text(c))
    if isinstance(c, Cell) and c.tone in ("bold", "good", "bad") and text:
        text = rf"\textbf{{{text}}}"
    if text.startswith("*"):  # not the starred \\ of the row before
        text = "{}" + text
    return text


def _notes(notes: Sequence[str]) -> list[str]:
    if not notes:
        return []
    out = [r"  \par\smallskip{\footnotesize\raggedright"]
    out += [f"  {escape(n)}\\par" for n in notes]
    out.append("  }")
    return out


@dataclass
class _Float:
    kind: str  # "table" or "figure"
    label: str
    caption: str
    body: list[str]
    notes: list[str] = field(default_factory=list)
    image: Image | None = None
    file: str = ""

    def tex(self) -> str:
        out = [rf"\begin{{{self.kind}}}", r"  \centering"]
        if self.kind == "table":
            out.append(rf"  \caption{{{escape(self.caption)}}}\label{{{self.label}}}")
            out += self.body
            out += _notes(self.notes)
        else:
            out.append(
                r"  \includegraphics[width=\linewidth,height=0.85\textheight,keepaspectratio]"
                rf"{{\latscopedir {self.file}}}"
            )
            out.append(rf"  \caption{{{escape(self.caption)}}}\label{{{self.label}}}")
        out.append(rf"\end{{{self.kind}}}")
        return "\n".join(out)


def _tabular(
    headers: Sequence[CellLike],
    rows: Sequence[Sequence[CellLike]],
    align: str,
    small: Collection[int] = (),
) -> tuple[list[str], list[str]]:
    """A booktabs tabular, shrunk to the line width where wider (\\latscopefit), and its
    notes: a column the report sets small (a method, a note) shows a letter per distinct
    text, and the notes say what each letter stands for."""
    n = len(headers)
    spec = "".join("r" if i < len(align) and align[i] == "r" else "l" for i in range(n))
    letters: dict[int, dict[str, str]] = {i: {} for i in small}
    body: list[list[str]] = []
    for row in rows:
        cells = []
        for i, c in enumerate(row[:n]):
            text = c.text if isinstance(c, Cell) else c
            if i in letters and text:
                k = len(letters[i])
                key = letters[i].setdefault(text, chr(ord("a") + k) if k < 26 else str(k + 1))
                cells.append(f"({key})")
            else:
                cells.append(_cell(c))
        body.append(cells + [""] * (n - len(cells)))
    out = [r"  \latscopefit{\small", rf"  \begin{{tabular}}{{@{{}}{spec}@{{}}}}", r"    \toprule"]
    heads = [_header(h, a) for h, a in zip(headers, spec, strict=True)]
    out.append("    " + " & ".join(heads) + r" \\")
    out.append(r"    \midrule")
    out += ["    " + " & ".join(cells) + r" \\" for cells in body]
    out += [r"    \bottomrule", r"  \end{tabular}}"]
    notes = [
        f"{_text(headers[i])}: " + "; ".join(f"({k}) {text}" for text, k in used.items()) + "."
        for i, used in letters.items()
        if used
    ]
    return out, notes


#: A column header longer than this is set on two lines.
LONG_HEADER = 12


def _header(h: CellLike, align: str) -> str:
    """A header cell; a long one on two lines (split at the space nearest its middle), in a
    tabular of its own, so that the header does not widen its column."""
    text = _text(h)
    spaces = [i for i, c in enumerate(text) if c == " "]
    if "\n" in text:  # the document's own break (document.Table)
        cut = text.index("\n")
    elif len(text) <= LONG_HEADER or not spaces:
        return _cell(h)
    else:
        cut = min(spaces, key=lambda i: abs(i - len(text) / 2))
    top, bottom = escape(text[:cut]), escape(text[cut + 1 :])
    return rf"\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}{top}\\{bottom}\end{{tabular}}"


def _text(c: CellLike) -> str:
    return c.text if isinstance(c, Cell) else c


#: A key-value row with a longer value is left out of the LaTeX tables (a description that
#: the HTML report keeps); the table's note names it.
LONG_VALUE = 200


def _key_values(kv: KeyValues) -> tuple[list[str], list[str]]:
    """A key-value block as a two-column table (small type), and its note naming the rows
    left out for their length."""
    out = [r"  {\small\begin{tabular}{@{}lp{0.62\linewidth}@{}}", r"    \toprule"]
    long = []
    for k, v in kv.rows:
        text = _text(v)
        if len(text) > LONG_VALUE:
            long.append(k)
            continue
        # \tabularnewline, which \raggedright leaves alone (it redefines \\)
        out.append(f"    {escape(k)} & \\raggedright {escape(text, breaks=True)} \\tabularnewline")
    out += [r"    \bottomrule", r"  \end{tabular}\par}"]
    notes = []
    if long:
        notes.append(f"Left out for length: {', '.join(long)} (in the HTML report).")
    return out, notes


# ------------------------------------------------------------------------------ fragments


@dataclass
class Fragment:
    """One ``.tex`` file: ``name`` (its file name without ``.tex``, unique in DIR), what it
    holds (``title``, ``source``: the run ids or the suite run) and its floats, in groups
    (a run's setup and summary, each column, a comparison, ...)."""

    name: str
    title: str
    source: str
    floats: list[_Float] = field(default_factory=list)
    #: indices into floats after which \latscopeflush comes (the ends of groups)
    flush_after: set[int] = field(default_factory=set)
    #: notes waiting for a table
    pending: list[str] = field(default_factory=list)
    group_start: int = 0
    #: a run's full analysis (``<run>-more``): example.tex names it, does not input it
    full: bool = False

    @property
    def images(self) -> list[_Float]:
        return [f for f in self.floats if f.image is not None]

    def note(self, text: str) -> None:
        """A note (a warning, a sentence) for the group's next table, else its last."""
        self.pending.append(text)

    def table(self, lab: str, caption: str, body: list[str], notes: Sequence[str] = ()) -> None:
        self.floats.append(_Float("table", lab, caption, body, [*self.pending, *notes]))
        self.pending = []

    def figure(self, img: Image) -> None:
        """A figure float; its panels are stacked in print (`plots.printed`), and its caption
        says so."""
        stem = slug(img.key).replace(".", "-")
        used = {f.file for f in self.floats}
        k, file = 2, f"{stem}.pdf"
        while file in used:
            file, k = f"{stem}-{k}.pdf", k + 1
        lab = label(file.removesuffix(".pdf"))
        caption = img.caption
        for side, place in (("(left", "(top"), ("(right", "(bottom")):
            caption = caption.replace(side, place)
        self.floats.append(_Float("figure", lab, caption, [], image=img, file=file))

    def end_group(self) -> None:
        r"""End a group of floats: notes no table followed go to the last table (of the
        group, else the one before it), and \latscopeflush comes after it."""
        tables = [f for f in self.floats if f.kind == "table"]
        if self.pending and tables:
            tables[-1].notes += self.pending
            self.pending = []
        if len(self.floats) > self.group_start:
            self.flush_after.add(len(self.floats) - 1)
        self.group_start = len(self.floats)

    def render(self) -> str:
        tables = sum(f.kind == "table" for f in self.floats)
        figures = len(self.floats) - tables
        head = [
            f"% {_comment(self.title)}",
            f"% {_comment(self.source)}; written by latscope {__version__}.",
            "%",
            "% A fragment for a LaTeX document: \\input{" + self.name + "} where it belongs, with",
            "% " + " ".join(f"\\usepackage{{{p}}}" for p in PACKAGES) + " in the preamble",
            "% (LaTeX 2019-10 or newer). It holds floats only: "
            f"{tables} table{'s' if tables != 1 else ''} and "
            f"{figures} figure{'s' if figures != 1 else ''}"
            + (" (PDF files beside this one)." if figures else "."),
            "% \\latscopeflush (default \\clearpage) follows each group of floats; define it",
            "% before the \\input to change that, e.g. \\newcommand\\latscopeflush{}. The",
            "% micro sign is \\latscopemu (default \\ensuremath{\\mu}; for an upright one with",
            "% T1 fonts: \\newcommand\\latscopemu{\\textmu}).",
            "% Labels, to \\ref in the text:",
        ]
        head += [f"%   {f.label}  ({f.kind}: {_comment(f.caption)[:60]})" for f in self.floats]
        head += [
            "%",
            r"\providecommand\latscopeflush{\clearpage}",
            r"\providecommand\latscopemu{\ensuremath{\mu}}",
            r"\makeatletter",
            r"\@ifundefined{latscope@box}{\newsavebox\latscope@box}{}",
            r"\providecommand\latscopefit[1]{\sbox\latscope@box{#1}%",
            r"  \ifdim\wd\latscope@box>\linewidth\resizebox{\linewidth}{!}{\usebox\latscope@box}%",
            r"  \else\usebox\latscope@box\fi}",
            r"\@ifundefined{CurrentFilePath}{\def\latscopedir{}}{%",
            r"  \edef\latscopedir{\CurrentFilePath}%",
            r"  \ifx\latscopedir\@empty\else\edef\latscopedir{\latscopedir/}\fi}",
            r"\makeatother",
            "",
        ]
        body: list[str] = []
        if self.pending:  # notes without a table to go with
            body += [r"{\footnotesize", *(f"{escape(n)}\\par" for n in self.pending), "}", ""]
        since = 0
        for i, f in enumerate(self.floats):
            body.append(f.tex())
            since += 1
            if i in self.flush_after or since >= FLUSH_EVERY or i == len(self.floats) - 1:
                body.append(r"\latscopeflush")
                since = 0
            body.append("")
        return "\n".join(head + body).rstrip() + "\n"


def _comment(text: str) -> str:
    return " ".join(str(text).split())
