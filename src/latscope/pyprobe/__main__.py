"""Entry point: ``INTERPRETER path/to/pyprobe ARGS`` (or ``python -m latscope.pyprobe``)."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import lp_cli  # noqa: E402  (after the path is set)

if __name__ == "__main__":
    sys.exit(lp_cli.main(sys.argv[1:]))
