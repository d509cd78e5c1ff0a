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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .full import (
        analyse_runs,
        build,
        check_target,
        comparison_section,
        write_html,
        write_markdown,
    )
    from .latex import report_fragments, suite_fragment, write_latex
    from .run import RunAnalysis, analyse, run_blocks, summary_rows

#: Where each name lives. Imported on first use, not with the package: `latscope ab` and
#: `show` import report.ab and report.text, and an eager import of `full` here brought
#: matplotlib with it (0.6 s of every such command, measured with python -X importtime).
_HOME = {
    "analyse_runs": "full",
    "build": "full",
    "check_target": "full",
    "comparison_section": "full",
    "write_html": "full",
    "write_markdown": "full",
    "report_fragments": "latex",
    "suite_fragment": "latex",
    "write_latex": "latex",
    "RunAnalysis": "run",
    "analyse": "run",
    "run_blocks": "run",
    "summary_rows": "run",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)


__all__ = [
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
