"""What every command module of the CLI shares: the consoles, the parser class that turns a
usage error into one line, the --store argument and the store it opens, `-p KEY=VALUE`
parsing, and the wrapping of help texts.  The command modules depend on this module and on the
layers below the CLI, never on each other."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import textwrap
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, NoReturn, TypeVar

from rich.console import Console

from ..errors import BadInput
from ..units import shown

if TYPE_CHECKING:
    from ..measure.runner import LabStore


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """The reader of the output left (``| head``): nothing more is written, and `main`
        ends with status 0, as the probe does (rich's own choice is SystemExit(1))."""
        self.quiet = True
        os.dup2(os.open(os.devnull, os.O_WRONLY), self.file.fileno())
        raise BrokenPipeError


def _console(stderr: bool = False) -> Console:
    c = _Console(stderr=stderr, highlight=False)
    if not c.is_terminal and c.width < 132 and not os.environ.get("COLUMNS"):
        # logs and pipes: wide enough for the summary table without wrapping numbers (a
        # width the user gives in COLUMNS is theirs)
        c = _Console(stderr=stderr, highlight=False, width=132)
    return c


console = _console()
err_console = _console(stderr=True)

T = TypeVar("T")


class RAW(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs laid out as written (examples in columns), refitted to the
    terminal: an example line too wide puts its explanation on the next line, indented; a
    prose line too wide wraps at its own indentation."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "".join(indent + ln + "\n" for ln in reflow(text.rstrip("\n").splitlines(), width))


def reflow(lines: Sequence[str], width: int) -> list[str]:
    """Help lines fitted to ``width`` (`RAW`): lines that fit stay as written; an example
    (an indented ``latscope ...`` line) too wide puts what it does on the next line; a
    paragraph of prose with a line too wide is wrapped again as a whole."""
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if not para:
            return
        if any(len(ln) > width for ln in para):
            lead = para[0][: len(para[0]) - len(para[0].lstrip())]
            out.extend(
                textwrap.wrap(
                    " ".join(ln.strip() for ln in para),
                    width,
                    initial_indent=lead,
                    subsequent_indent=lead,
                    break_on_hyphens=False,
                )
            )
        else:
            out.extend(para)
        para.clear()

    for line in lines:
        lead = line[: len(line) - len(line.lstrip())]
        body = line.strip()
        if lead and body.startswith("latscope "):  # an example: command, then what it does
            flush()
            cmd, gap, desc = body.partition("  ")
            if len(line) <= width or not gap:
                out.append(line)
            else:
                out.append(lead + cmd)
                ind = lead + "    "
                out += textwrap.wrap(desc.strip(), width, initial_indent=ind, subsequent_indent=ind)
        elif not body:
            flush()
            out.append("")
        else:
            if para and lead != para[0][: len(para[0]) - len(para[0].lstrip())]:
                flush()
            para.append(line)
    flush()
    return out


class Parser(argparse.ArgumentParser):
    _width: int | None = None

    def _get_formatter(self) -> argparse.HelpFormatter:
        """argparse's help formatter, as wide as the terminal (less 2, argparse's margin): the
        width read once per parser, where argparse read the terminal's size again for each of
        the 180 arguments it checks as the command line is built (a third of that time)."""
        if self._width is None:
            self._width = shutil.get_terminal_size().columns - 2
        return self.formatter_class(prog=self.prog, width=self._width)

    def error(self, message: str) -> NoReturn:
        err_console.print(
            f"latscope: error: {shown(message, markup=False)} (see 'latscope --help')",
            soft_wrap=True,
            markup=False,
        )
        raise SystemExit(2)


@functools.cache
def wrap(text: str, width: int = 79) -> str:
    """A help description wrapped for an 80-column terminal (once per process: the parser is
    built for each command line, and the tests run many in one process)."""
    return textwrap.fill(text, width)


def parse_params(items: Sequence[str] | None) -> dict[str, str]:
    """`-p KEY=VALUE` arguments as a dict; one-line BadInput for a malformed or repeated one."""
    out: dict[str, str] = {}
    for it in items or []:
        if "=" not in it or it.startswith("="):
            raise BadInput(f"-p {it}: write parameters as key=value")
        k, v = it.split("=", 1)
        if k in out:
            raise BadInput(f"-p {k}: given twice")
        out[k] = v
    return out


def clock_arg(value: str) -> str:
    """`--clock C`: one of the probe's `clock_choices` (auto, then every clock), read from
    the catalogue only when the option is given."""
    from .. import probe

    choices = probe.clock_choices()
    if value not in choices:
        raise argparse.ArgumentTypeError(
            f"invalid choice: '{value}' (choose from {', '.join(choices)})"
        )
    return value


def store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        metavar="DIR",
        help="where runs are kept (default: $LATSCOPE_STORE or ~/.local/share/latscope)",
    )


def params_arg(p: argparse.ArgumentParser, what: str = "a benchmark parameter; repeatable") -> None:
    """`-p KEY=VALUE`, repeatable, into ``params`` (parsed by `parse_params`)."""
    p.add_argument("-p", dest="params", action="append", metavar="KEY=VALUE", help=what)


def host_arg(p: argparse.ArgumentParser, what: str = "only runs of host NAME") -> None:
    """`--host NAME`: runs of one host (the host tag a run was added with, else the name of
    the host that measured it; docs/store.md)."""
    p.add_argument("--host", metavar="NAME", help=what)


def force_arg(p: argparse.ArgumentParser) -> None:
    """`--force`: the one way a command replaces a file that exists (files.check_destination)."""
    p.add_argument(
        "--force",
        action="store_true",
        help="replace output files that exist (a symbolic link there is replaced, never "
        "followed; a directory, FIFO or device is never written to)",
    )


def open_store(args: argparse.Namespace) -> LabStore:
    """The store a command's --store names (default: $LATSCOPE_STORE or the user's)."""
    from ..measure.runner import (
        LabStore,  # when a command runs: the CLI starts without polars, numpy
    )

    return LabStore(getattr(args, "store", None))


def value_error(fn: Callable[[], T]) -> T:
    """Run fn, turning an analysis ValueError into one line for the user."""
    try:
        return fn()
    except ValueError as e:
        raise BadInput(str(e)) from None


@contextlib.contextmanager
def record_on_stdout(on: bool) -> Iterator[Callable[[str], None]]:
    """``--json`` of a command that prints as it goes (suite, trust): while it runs, what it
    prints goes to standard error, and the function it is given writes the record's JSON
    text, alone, to standard output; without ``on`` nothing changes (the function then writes
    nothing)."""
    if not on:
        yield lambda text: None
        return
    out = console.file
    console.file = err_console.file
    try:
        yield lambda text: out.write(text if text.endswith("\n") else text + "\n")
    finally:
        console.file = out
