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


def probe_main() -> int:
    """The `latscope-probe` command: the probe latscope itself runs (the one installed with it,
    or LATSCOPE_PROBE), with its own command line (docs/probe-cli.md), in place of this
    process; where there is none, one line and status 3."""
    import os

    from .errors import LatscopeError
    from .probe import probe_path

    if os.environ.get("LATSCOPE_PROBE_SHIM"):  # found on PATH was this command itself
        sys.stderr.write("latscope-probe: error: no probe is installed with latscope\n")
        return 3
    os.environ["LATSCOPE_PROBE_SHIM"] = "1"
    try:
        path = probe_path()
        os.execv(path, ["latscope-probe", *sys.argv[1:]])
    except LatscopeError as e:
        sys.stderr.write(f"latscope-probe: error: {e.message}\n")
        return e.exit_code
    except OSError as e:
        sys.stderr.write(f"latscope-probe: error: cannot run the probe: {e.strerror}\n")
        return 3
    return 0  # not reached: execv returns only by raising
