"""The environment measurements are taken in: what a result was measured on, what in it may
bias the figures, and whether two results can be compared at all.

- `schema`: the one schema: which facts the probe records (`PROBE_FACTS`), `merge()` of its
  record and the lab's capture, `of_header()` and `of_run()` for sample files and stored runs
  (older records read into the schema);
- `snapshot`: `capture()` reads /proc, /sys and a few files under /etc and /boot into a plain,
  JSON-ready dict, with the probe's record of the rest (never raises; `root` points it at a
  fake tree);
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
from .schema import PROBE_FACTS, SCHEMA, emulation_caveat, emulator, merge, of_header, of_run
from .snapshot import capture, cpu_busy, cpu_times, load_now, steal_between

__all__ = [
    "PROBE_FACTS",
    "SCHEMA",
    "Env",
    "Finding",
    "capture",
    "check",
    "compatible",
    "costly_mitigations",
    "cpu_busy",
    "cpu_times",
    "emulation_caveat",
    "emulator",
    "load_now",
    "steal_between",
    "merge",
    "of_header",
    "of_run",
    "format_cpulist",
    "frequency_control",
    "parse_cpulist",
    "parse_mountinfo",
    "render",
    "summary_rows",
]
