"""Suites: every scenario of a scenario file run R times in an interleaved order, compared,
recorded and reported (docs/suites.md).

- `running`: the runs, in the planned order (`execute`), and what is skipped or stops;
- `comparison`: the scenarios compared per column (`compare_rows`) and the terminal table;
- `records`: the suite's JSON record (`write_record`);
- `report`: the suite's report as a document (`document`).
"""

from .comparison import Row, compare_rows, comparison_table, print_comparison
from .records import record, write_record
from .report import document, representative
from .running import StepResult, SuiteRun, execute, new_suite_run_id

__all__ = [
    "Row",
    "StepResult",
    "SuiteRun",
    "compare_rows",
    "comparison_table",
    "document",
    "execute",
    "new_suite_run_id",
    "print_comparison",
    "record",
    "representative",
    "write_record",
]
