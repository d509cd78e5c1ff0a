"""A store of many synthetic runs, and how long the commands that read it take.

    python bench/store_scale.py [--runs 10000] [--store DIR] [--keep]

Makes a store of ``--runs`` runs through the store's own add path (`Store.transaction`, then
`Transaction.commit`: run.json, summary.parquet, the rename, the rows added to the summary
table), spread over 8 benchmarks, 3 hosts (host tags, as an import or a fleet gives them) and
6 months.  Each run's sample file is a real one (`samples.write`) but short (64 samples of two
timed columns), and its summary is computed (`Run.summary`) once for each of 16 sample sets
and reused, so that making the store takes minutes, not hours; the commands below read only
run.json, the files' states and the summary table, never the samples.

Then, best of 3 wall times each: `latscope ls`, `latscope history BENCH` (a new process each,
output to a pipe at 80 columns), a DuckDB query over the partitioned files (in this process;
with pyarrow's dataset reader when DuckDB is missing), and the import of DuckDB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from latscope import samples
from latscope.record import Run
from latscope.store import Store, summary_frame

BENCHES = ("syscall", "pipe", "futex", "eventfd", "tcp", "udp", "file", "sem")
HOSTS = ("node-a", "node-b", "node-c")
MONTHS = ("2026-06", "2026-07", "2026-08", "2026-09", "2026-10", "2026-11")


def _header(bench: str, seed: int) -> dict:
    return {
        "probe": {"version": "bench", "compiler": "none"},
        "benchmark": bench,
        "params": {"seed": seed},
        "warmup": 0,
        "clock": {
            "name": "mono_raw",
            "ns_per_tick": 1.0,
            "overhead_ns": 20.0,
            "resolution_ns": 1.0,
            "getres_ns": 1,
        },
        "columns": [{"name": "t_start", "unit": "ticks", "kind": "time"}]
        + [
            {"name": c, "unit": "ticks", "kind": "duration", "latency": "call", "description": c}
            for c in ("rtt", "call")
        ],
        "bench": {},
        "env": {"schema": 2, "hostname": "bench", "kernel": {"release": "6.1.0"}},
        "started_utc": "2026-01-01T00:00:00Z",
        "finished_utc": "2026-01-01T00:00:01Z",
    }


def make_store(root: Path, n_runs: int) -> float:
    rng = np.random.default_rng(1)
    templates = []
    tmp = Path(tempfile.mkdtemp(prefix="scale-templates-"))
    for k in range(16):
        ticks = {
            "t_start": np.arange(64, dtype=np.int64) * 1000,
            "rtt": np.rint(2000 * np.exp(0.3 * rng.standard_normal(64))).astype(np.int64),
            "call": np.rint(300 * np.exp(0.3 * rng.standard_normal(64))).astype(np.int64),
        }
        p = tmp / f"t{k}.lss"
        samples.write(p, _header("syscall", k), ticks)
        templates.append((ticks, Run(p).summary()))
    shutil.rmtree(tmp)
    st = Store(root)
    t0 = time.perf_counter()
    for i in range(n_runs):
        bench = BENCHES[i % len(BENCHES)]
        host = HOSTS[(i // len(BENCHES)) % len(HOSTS)]
        month = MONTHS[i * len(MONTHS) // n_runs]
        ticks, summary = templates[i % len(templates)]
        with st.transaction(bench, host=host) as t:
            samples.write(t.samples_path, _header(bench, i % 16), ticks)
            day, sec = 1 + (i % 28), i % 86400
            meta = {
                "id": t.id,
                "created_utc": f"{month}-{day:02d}T{sec // 3600:02d}:{sec // 60 % 60:02d}:"
                f"{sec % 60:02d}.{i % 1000000:06d}Z",
                "benchmark": bench,
                "params": {"seed": i % 16},
                "params_given": {},
                "clock": "mono_raw",
                "latscope_version": "bench",
                "probe_warnings": [],
                "tags": {},
                "env": {"schema": 2, "hostname": host, "kernel": {"release": "6.1.0"}},
                "status": "complete",
            }
            t.commit(meta, summary=summary_frame(meta, summary))
        if (i + 1) % 1000 == 0:
            print(f"  {i + 1} runs, {time.perf_counter() - t0:.0f} s", flush=True)
    return time.perf_counter() - t0


def best_of(n: int, f) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return min(out)


def run_cli(root: Path, *args: str) -> None:
    env = {**os.environ, "COLUMNS": "80"}
    r = subprocess.run(
        [sys.executable, "-m", "latscope.cli", *args, "--store", str(root)],
        capture_output=True,
        env=env,
        check=False,
    )
    if r.returncode != 0:
        raise SystemExit(f"latscope {' '.join(args)} failed: {r.stderr.decode()[-500:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--store", type=Path, help="make the store here (default: a temporary)")
    ap.add_argument("--keep", action="store_true", help="keep the store afterwards")
    a = ap.parse_args()
    root = a.store or Path(tempfile.mkdtemp(prefix="latscope-scale-")) / "store"
    try:
        if not (root / "runs").exists():
            print(f"making {a.runs} runs in {root}")
            took = make_store(root, a.runs)
            print(f"made {a.runs} runs in {took:.1f} s ({1000 * took / a.runs:.1f} ms a run)")
        parts = list((root / "summary").glob("*/*/*.parquet"))
        print(f"summary table: {len(parts)} part files")
        bench = BENCHES[0]
        run_cli(root, "ls")  # the first read after making: nothing to index
        t_ls = best_of(3, lambda: run_cli(root, "ls"))
        t_hist = best_of(3, lambda: run_cli(root, "history", bench))
        t_imp = time.perf_counter()
        try:
            import duckdb
        except ImportError:
            duckdb = None
        t_imp = time.perf_counter() - t_imp
        glob = f"{root}/summary/*/*/*.parquet"
        query = (
            "SELECT benchmark, host, count(*) AS runs, median(p50_ns) AS p50_ns "
            f"FROM read_parquet('{glob}', hive_partitioning=true) "
            "WHERE column_index = 0 GROUP BY ALL ORDER BY ALL"
        )
        if duckdb is not None:
            t_q = best_of(3, lambda: duckdb.sql(query).fetchall())
            rows = duckdb.sql(query).fetchall()
            engine = f"DuckDB {duckdb.__version__}"
        else:
            import pyarrow.dataset as ds

            def q():
                return ds.dataset(root / "summary", format="parquet", partitioning="hive").to_table(
                    columns=["benchmark", "p50_ns"], filter=ds.field("column_index") == 0
                )

            t_q = best_of(3, q)
            rows = [(None,) * 3] * 0
            engine = "pyarrow.dataset (DuckDB is not installed)"
        print(f"query ({engine}): {len(rows)} groups, {sum(r[2] for r in rows)} runs")
        print(f"latscope ls             {t_ls:6.2f} s   (best of 3, each a new process)")
        print(f"latscope history {bench:7s}{t_hist:6.2f} s")
        print(f"query over the table    {t_q:6.3f} s   (in this process)")
        print(f"import of duckdb        {t_imp:6.3f} s")
        print(f"load average (1 min)    {os.getloadavg()[0]:6.2f}   on {os.cpu_count()} CPUs")
    finally:
        if not a.keep and a.store is None:
            shutil.rmtree(root.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
