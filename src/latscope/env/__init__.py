"""The environment measurements are taken in: what a result was measured on, what in it may
bias the figures, and whether two results can be compared at all.

- `snapshot`: `capture()` reads /proc, /sys and a few files under /etc and /boot into a plain,
  JSON-ready dict (never runs a command, never raises; `root` points it at a fake tree);
- `checks`: `check()` turns a captured dict into findings (warnings and hints with advice);
- `display`: `render()` builds a rich table for the CLI;
- `compat`: `compatible()` lists the differences that make two results incomparable;
- `readers` and `hardware`: the defensive readers, CPU lists, mountinfo, and the processor's
  sections of the capture.
"""

from .checks import Finding, check, costly_mitigations, frequency_control
from .compat import compatible
from .display import render, summary_rows
from .readers import Env, format_cpulist, parse_cpulist, parse_mountinfo
from .snapshot import SCHEMA, capture, cpu_busy

__all__ = [
    "SCHEMA",
    "Env",
    "Finding",
    "capture",
    "check",
    "compatible",
    "costly_mitigations",
    "cpu_busy",
    "format_cpulist",
    "frequency_control",
    "parse_cpulist",
    "parse_mountinfo",
    "render",
    "summary_rows",
]
