"""Text for LaTeX: `escape` sets any text as it is written (the special characters, the
symbols latscope writes, accented letters) with nothing but the LaTeX kernel, in pdfLaTeX's
default font encoding (OT1) without a bitmap font, and `label` makes a \\label key."""

from __future__ import annotations

import unicodedata

from .document import slug

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\ensuremath{\$}",  # not \$: in OT1 a bitmap (TS1) glyph
    "&": r"\&",
    "#": r"\#",
    "%": r"\%",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "[": "{[}",
    "]": "{]}",
    '"': "''",
    "`": "{`}",
    "\n": " ",
    "\t": " ",
    "\r": " ",
    # what latscope itself writes
    "µ": r"\latscopemu{}",
    "–": "--",
    "—": "---",
    "−": r"\ensuremath{-}",
    "±": r"\ensuremath{\pm}",
    "×": r"\ensuremath{\times}",
    "·": r"\ensuremath{\cdot}",
    "°": r"\ensuremath{^\circ}",
    "²": r"\textsuperscript{2}",
    "³": r"\textsuperscript{3}",
    "…": r"\dots{}",
    "©": "(c)",
    "ß": r"\ss{}",
    "æ": r"\ae{}",
    "Æ": r"\AE{}",
    "ø": r"\o{}",
    "Ø": r"\O{}",
    "å": r"\aa{}",
    "Å": r"\AA{}",
    "œ": r"\oe{}",
    "Œ": r"\OE{}",
    "ł": r"\l{}",
    "Ł": r"\L{}",
    "ı": r"\i{}",
    "¿": r"?`",
    "¡": r"!`",
    "‘": "`",
    "’": "'",
    "“": "``",
    "”": "''",
    "«": "<<",
    "»": ">>",
    "\u00a0": "~",
    "\u2009": r"\,",
    "\u202f": r"\,",
}
_MATH = {
    "≥": r"\geq",
    "≤": r"\leq",
    "≈": r"\approx",
    "≠": r"\neq",
    "∞": r"\infty",
    "√": r"\surd",
    "←": r"\leftarrow",
    "→": r"\rightarrow",
    "↔": r"\leftrightarrow",
    "◇": r"\diamond",
    "◆": r"\diamond",
    "†": r"\dagger",
    "‡": r"\ddagger",
    "§": r"\S",
    "¶": r"\P",
    "•": r"\bullet",
    "∑": r"\sum",
    "∆": r"\Delta",
    "ϵ": r"\epsilon",
}
_GREEK = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
    "sigma tau upsilon phi chi psi omega"
).split()
#: capital Greek letters that LaTeX sets as the Latin letter they look like
_LOOKALIKE = dict(
    alpha="A",
    beta="B",
    epsilon="E",
    zeta="Z",
    eta="H",
    iota="I",
    kappa="K",
    mu="M",
    nu="N",
    omicron="O",
    rho="P",
    tau="T",
    chi="X",
)
for _i, _name in enumerate(_GREEK):
    _code = _i + (_i >= 17)  # skip U+03C2 (final sigma) and U+03A2 (unassigned)
    _MATH[chr(0x3B1 + _code)] = "o" if _name == "omicron" else "\\" + _name
    _MATH[chr(0x391 + _code)] = (
        rf"\mathrm{{{_LOOKALIKE[_name]}}}" if _name in _LOOKALIKE else "\\" + _name.capitalize()
    )
_MATH["ς"] = r"\varsigma"
_ACCENTS = {
    "\u0301": "'",
    "\u0300": "`",
    "\u0302": "^",
    "\u0308": '"',
    "\u0303": "~",
    "\u0304": "=",
    "\u0306": "u",
    "\u0307": ".",
    "\u030b": "H",
    "\u030a": "r",
    "\u030c": "v",
    "\u0327": "c",
}


def _char(c: str) -> str:
    if c in _SPECIAL:
        return _SPECIAL[c]
    if c in _MATH:
        return rf"\ensuremath{{{_MATH[c]}}}"
    if c.isascii():
        return c if c.isprintable() else " "
    # an accented Latin letter: the letter under LaTeX's accent command (é -> \'{e})
    parts = unicodedata.normalize("NFD", c)
    if len(parts) >= 2 and parts[0].isascii() and parts[0].isalpha():
        out = "i" if parts[0] == "i" else parts[0]
        for mark in parts[1:]:
            if mark not in _ACCENTS:
                break
            cmd = _ACCENTS[mark]
            base = r"\i" if out == "i" and cmd not in "ck" else out
            out = f"\\{cmd}{{{base}}}"
        else:
            return out
    # a character pdfLaTeX has no glyph for: a visible stand-in, never a compile error
    return "?"


def escape(text: object, breaks: bool = False) -> str:
    """``text`` as LaTeX that typesets it as written: the special characters
    (``\\ { } $ & # % _ ~ ^``, and ``< > | [ ] " `` that the default font encoding would set
    wrongly or that start an optional argument) as commands, the symbols latscope writes
    (–, ±, ≥, τ, …) as commands that need no package (µ as ``\\latscopemu{}``, which a
    fragment defines), accented letters with LaTeX's accents, ``--`` kept as two hyphens; a
    character no pdfLaTeX font has becomes ``?``.
    ``breaks``: also allow a line break after ``/``, ``,`` and ``=`` (paths, parameter
    lists in a narrow column)."""
    s = str(text)
    out = []
    for i, c in enumerate(s):
        out.append("-{}" if c == "-" and s[i + 1 : i + 2] == "-" else _char(c))
        if breaks and c in "/,=":
            out.append(r"\allowbreak{}")
    return "".join(out)


def label(*parts: str) -> str:
    """A \\label key: ``latscope:`` and the parts, each reduced to letters, digits, ``-``,
    ``_`` and ``.``."""
    return "latscope:" + ":".join(slug(p) for p in parts)
