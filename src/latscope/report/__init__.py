"""Reports: what the lab tells a reader about runs, in the terminal and as documents.

- `text`: the terminal summary of a run (`latscope run`, `latscope show`);
- `document`: a small document model rendered as self-contained HTML, as Markdown with image
  files, or as rich tables;
- `parts` and `run`: the full analysis of one run as document blocks;
- `compare`: runs against a baseline (`latscope compare`, the report's comparison);
- `full`: the report of one or more runs (`latscope report`), and writing it.
"""

from .full import build, check_target, comparison_section, write_html, write_markdown
from .run import HIST_CUT, RunAnalysis, analyse, run_blocks, summary_rows

__all__ = [
    "HIST_CUT",
    "RunAnalysis",
    "analyse",
    "build",
    "check_target",
    "comparison_section",
    "run_blocks",
    "summary_rows",
    "write_html",
    "write_markdown",
]
