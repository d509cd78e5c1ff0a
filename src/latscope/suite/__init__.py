"""Suites: every scenario of a scenario file run R times in an interleaved order, compared,
recorded and reported (docs/suites.md).

- `running`: the runs, in the planned order (`execute`), and what is skipped or stops;
- `paired`: each benchmark's scenarios measured together as arms of one run (`measure_pairs`);
- `comparison`: the scenarios compared per column (`compare_rows`) and the terminal table;
- `records`: the suite's JSON record (`write_record`);
- `report`: the suite's report as a document (`document`).
"""

from typing import TYPE_CHECKING, Any

from .running import StepResult, SuiteRun, execute, new_suite_run_id

if TYPE_CHECKING:
    from .comparison import Row, compare_rows, comparison_table, print_comparison
    from .records import record, write_record
    from .report import document, representative

#: Imported when first used, so that a suite's first run starts without scipy and
#: matplotlib loaded (and a signal meanwhile is answered at once).
_LATER = {
    "Row": "comparison",
    "compare_rows": "comparison",
    "comparison_table": "comparison",
    "print_comparison": "comparison",
    "record": "records",
    "write_record": "records",
    "document": "report",
    "representative": "report",
}


def __getattr__(name: str) -> Any:
    if name not in _LATER:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{_LATER[name]}"), name)


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
