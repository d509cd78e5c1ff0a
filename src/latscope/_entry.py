"""The `latscope` command's entry point: the CLI itself (``latscope.cli.main``), imported here
so that a Ctrl-C while Python loads it (a few hundred milliseconds: rich, argparse, the
commands) ends with the same one line and status as a Ctrl-C later, not a traceback."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from .cli import main as cli_main

        return cli_main()
    except KeyboardInterrupt:
        # before the CLI's own signal handling is in place (cli.main handles it from then on)
        try:
            sys.stderr.write("latscope: interrupted by SIGINT\n")
        except OSError:
            pass
        return 130
