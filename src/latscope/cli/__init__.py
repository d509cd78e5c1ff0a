"""The `latscope` command line: `main()` builds the parser from the command modules and runs
the command, turning every error a user can act on into one line and an exit code.

Command modules (each `add_parsers(sub)` and `COMMANDS`), in the order `latscope --help` lists
them: `measure` (list, clocks, run, quick), `explain` (explain), `ab` (ab, trust), `runs`
(show, export), `store` (ls, rm, history), `suite` (suite, env), `analysis` (report, compare,
import, plot), `ipc` (matrix), `fleet` (fleet), `completion`.
They share `shared` (consoles, --store, -p parsing) and depend on no other command module.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .._version import __version__
from ..errors import Interrupted, LatscopeError
from ..units import shown
from . import ab, analysis, completion, explain, fleet, ipc, measure, runs, shared, store, suite
from .shared import Parser, console, err_console

__all__ = ["build_parser", "console", "err_console", "main"]

EPILOG = """\
examples:
  latscope quick                              a default set of benchmarks, with summaries
  latscope list                               benchmarks, parameters, defaults, units
  latscope run syscall                        a null system call (getppid), per call
  latscope run file -p cache=drop -p dir=/var/tmp   cold page cache (needs root)
  latscope run pipe -p cpus=0,0 -n 100000     pipe ping-pong, both on CPU 0
  latscope ab 'pipe cpus=0,0' 'eventfd cpus=0,0'   interleaved in one process: which is faster
  latscope trust pipe -p cpus=0,0             what 'latscope ab' resolves here
  latscope show last                          the latest run again
  latscope export last --csv samples.csv      every sample, for your own tools

runs are kept in a store: $LATSCOPE_STORE, or --store DIR, or ~/.local/share/latscope

signals: SIGINT (Ctrl-C), SIGTERM and SIGHUP stop any command the same way: a running probe
is stopped and waited for, the run being made is not kept (finished runs stay), one line
says so, and the exit status is 128 + the signal's number (130, 143, 129).
files: a FILE that exists is replaced only with --force (a symbolic link there is replaced,
never followed); a directory, FIFO or device there is never written to.
"""

#: The command modules, in the order their commands are listed.
MODULES = (measure, explain, ab, runs, store, suite, analysis, ipc, fleet, completion)


class _Unbuilt:
    """The parser of a command that is not run, as its module's `add_parsers` sees it: every
    call taken and nothing built."""

    def __getattr__(self, name: str) -> Callable[..., _Unbuilt]:
        return self._take

    def _take(self, *args: object, **kwargs: object) -> _Unbuilt:
        return self


class _OneCommand:
    """The subparsers as the command modules see them when the command line names one of the
    commands: that command's parser alone is built. argparse checks each argument as it is
    added, and building the parsers of all 22 commands (180 arguments) took longer than some
    commands' own work."""

    def __init__(self, sub: Any, command: str) -> None:
        self.sub, self.command = sub, command

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        return self.sub.add_parser(name, **kwargs) if name == self.command else _Unbuilt()


def _command_of(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is not an option (the options
    before a command, -h and -V, take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: of every command, or with ``command`` (one of `commands`)
    of that one alone. Without a command, or with one that is none of them, every command's
    parser is there for the list `--help` prints and the error a wrong name gets; `latscope
    completion` reads every command's options, so it gets the whole parser too."""
    ap = Parser(
        prog="latscope",
        description="Measure what operating-system primitives cost, with every sample "
        "recorded and honest statistics.",
        epilog=EPILOG,
        formatter_class=shared.RAW,
    )
    ap.add_argument("-V", "--version", action="version", version=f"latscope {__version__}")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=Parser)
    one = _OneCommand(sub, command) if command in commands() and command != "completion" else None
    for mod in MODULES:
        mod.add_parsers(one or sub)
    ap.set_defaults(root_parser=ap)  # the whole command line, for `latscope completion`
    return ap


def commands() -> dict[str, Callable[[argparse.Namespace], int]]:
    out: dict[str, Callable[[argparse.Namespace], int]] = {}
    for mod in MODULES:
        out.update(mod.COMMANDS)
    return out


def _stopped(line: str, status: int) -> int:
    """The one line of a command stopped by a signal; a second signal meanwhile changes
    nothing, and a terminal that went away (SIGHUP) takes the line with it."""
    from .. import probe

    with probe.held_signals(drop=True):
        try:
            err_console.print(
                f"latscope: {shown(line, markup=False)}", soft_wrap=True, markup=False
            )
        except OSError:
            pass
    return status


def main(argv: Sequence[str] | None = None) -> int:
    from .. import probe

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    if not args.cmd:
        parser.print_help()
        return 2
    with probe.stop_signals():  # SIGINT, SIGTERM, SIGHUP: one path (probe.py)
        try:
            return commands()[args.cmd](args)
        except Interrupted as e:
            return _stopped(e.message, e.exit_code)
        except KeyboardInterrupt as e:
            signum = probe.signum_of(e)
            return _stopped(f"interrupted by {probe.signal_name(signum)}", 128 + signum)
        except LatscopeError as e:
            # the message may echo input: control characters escaped, never sent to the terminal
            err_console.print(
                f"latscope: error: {shown(e.message, markup=False)}",
                soft_wrap=True,
                markup=False,
            )
            return e.exit_code
        except BrokenPipeError:  # the reader of the output left (| head): end quietly
            return 0
        except MemoryError:  # numpy's _ArrayMemoryError is one: a run too big to hold here
            err_console.print(
                "latscope: error: out of memory: this machine (or its memory limit) cannot "
                "hold what this command works on; use fewer iterations (-n) or a machine with "
                "more memory",
                soft_wrap=True,
                markup=False,
            )
            return 1
