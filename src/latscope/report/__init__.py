"""Reports: what the lab tells a reader about runs, in the terminal and as documents.

- `text`: the terminal summary of a run (`latscope run`, `latscope show`);
- `document`: a small document model rendered as self-contained HTML, as Markdown with image
  files, or as rich tables;
- `parts` and `run`: the full analysis of one run as document blocks;
- `compare`: runs against a baseline (`latscope compare`, the report's comparison);
- `full`: the report of one or more runs (`latscope report`), and writing it;
- `latex`: fragments of the report for a LaTeX document (`--latex DIR`), and writing them;
  `tex`: text escaped for LaTeX.
"""

from .full import (
    analyse_runs,
    build,
    check_target,
    comparison_section,
    write_html,
    write_markdown,
)
from .latex import report_fragments, suite_fragment, write_latex
from .run import HIST_CUT, RunAnalysis, analyse, run_blocks, summary_rows

__all__ = [
    "HIST_CUT",
    "RunAnalysis",
    "analyse",
    "analyse_runs",
    "build",
    "check_target",
    "comparison_section",
    "report_fragments",
    "run_blocks",
    "suite_fragment",
    "summary_rows",
    "write_html",
    "write_latex",
    "write_markdown",
]
