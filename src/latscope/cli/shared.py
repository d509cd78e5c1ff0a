"""What every command module of the CLI shares: the consoles, the parser class that turns a
usage error into one line, the --store argument and the store it opens, `-p KEY=VALUE`
parsing, and the wrapping of help texts.  The command modules depend on this module and on the
layers below the CLI, never on each other."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn, TypeVar

from rich.console import Console

from ..errors import BadInput

if TYPE_CHECKING:
    from ..runner import LabStore


def _console(stderr: bool = False) -> Console:
    c = Console(stderr=stderr, highlight=False)
    if not c.is_terminal and c.width < 132:
        # logs and pipes: wide enough for the summary table without wrapping numbers
        c = Console(stderr=stderr, highlight=False, width=132)
    return c


console = _console()
err_console = _console(stderr=True)

RAW = argparse.RawDescriptionHelpFormatter
T = TypeVar("T")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        err_console.print(
            f"latscope: error: {message} (see 'latscope --help')", soft_wrap=True, markup=False
        )
        raise SystemExit(2)


def wrap(text: str, width: int = 79) -> str:
    """A help description wrapped for an 80-column terminal."""
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
    from ..runner import LabStore  # when a command runs: the CLI starts without polars, numpy

    return LabStore(getattr(args, "store", None))


def value_error(fn: Callable[[], T]) -> T:
    """Run fn, turning an analysis ValueError into one line for the user."""
    try:
        return fn()
    except ValueError as e:
        raise BadInput(str(e)) from None
