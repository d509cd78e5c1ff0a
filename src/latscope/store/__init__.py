"""Where runs are kept: one directory per run under a store directory.

Layout (docs/store.md):

    STORE/runs/<run id>/run.json       what was run, when, where (metadata, environment)
    STORE/runs/<run id>/samples.lss    the probe's sample file, untouched
    STORE/runs/.partial-<run id>/      a run being measured; renamed when complete

A run directory appears by an atomic rename once everything in it is written, so two
processes can add runs to one store at the same time, and a run killed half-way never
looks complete.  Files that are not runs are reported and skipped, never fatal.

Each committed run also holds `summary.parquet` (one row per timed column: the figures of the
summary table, the run id, benchmark, parameters, creation time and suite tags), written before
the rename like everything else.  Queries across runs (`latscope ls`, `latscope history`)
read those files (each checked before use) and never touch the samples; the rows are computed
by the runner when a run is made (`runner`), never by the store.  `scan()` is the store's
health check: it reads every run.json, checks each samples.lss for its END line and exact size
(no sample is read), and sorts what it finds into runs, partial runs (with their owner: still
running or killed) and entries it skips with a reason.  Every file is read through the guarded
reader (`files.read_bytes`: a regular file, never through a link, at most a documented size)
and checked before use (docs/store.md).

Every run's rows are also kept in the summary table, `STORE/summary/benchmark=B/month=M/
part-*.parquet` (Hive-partitioned Parquet that other tools read as it is), which `ls` and
`history` read (`catalog`), using a run's rows while its files are as they were when the rows
were written.

Modules: `layout` (names and what a scan finds), `core` (`Store`: scanning, resolving runs, and
the query over the summaries), `writing` (its writing half: adding and removing runs, the
store's own files), `safe` (the directories latscope writes into, checked so that no other user
can redirect a write: docs/store.md, "A store other users can write to"), `index`
(summary.parquet), `table` (the summary table), `catalog` (the runs with their rows, checked),
`meta` (run.json and the store's other JSON files, read and checked), `history` (one figure of
a benchmark over time).
"""

from .core import Store
from .index import SUMMARY_COLUMNS, SUMMARY_SCHEMA_VERSION, summary_frame
from .layout import (
    OWNER_FILE,
    PARTIAL_PREFIX,
    REMOVING_PREFIX,
    RUN_FILE,
    SAMPLES_FILE,
    SUMMARY_FILE,
    Partial,
    Scan,
    Skipped,
    StoredRun,
    bench_of_id,
    default_location,
)
from .writing import Transaction

__all__ = [
    "OWNER_FILE",
    "PARTIAL_PREFIX",
    "REMOVING_PREFIX",
    "RUN_FILE",
    "SAMPLES_FILE",
    "SUMMARY_COLUMNS",
    "SUMMARY_FILE",
    "SUMMARY_SCHEMA_VERSION",
    "Partial",
    "Scan",
    "Skipped",
    "Store",
    "StoredRun",
    "Transaction",
    "bench_of_id",
    "default_location",
    "summary_frame",
]
