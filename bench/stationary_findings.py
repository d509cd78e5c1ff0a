#!/usr/bin/env python3
"""Findings on runs where nothing happened (issue 22): RUNS identical runs of one command, each
analysed as `latscope show RUN --full` and the report analyse it, counting per run the change
points (per column and in all) and the findings (warning codes), and printing what the
``levels`` finding (the host's two speeds) says.

The truth: the command is the same every time and nothing changes during a run but the host's
state, so a change point or a drift finding is a false alarm; the host switching speed is
the one thing that may be said, once.

    python bench/stationary_findings.py                         # 10 x file open=existing 4 KiB
    python bench/stationary_findings.py --runs 5 -- syscall -n 20000

Runs are kept in a temporary store (removed at the end; ``--keep DIR`` keeps them there). Run
it on a machine with nothing else running: it measures the machine.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

DEFAULT = ["file", "-p", "open=existing", "-p", "size=4096", "-n", "20000"]
DRIFT = {"slowdown", "level_shift", "oscillation", "trend", "warmup"}


def latscope() -> str:
    here = Path(sys.executable).parent / "latscope"
    return str(here) if here.exists() else (shutil.which("latscope") or "latscope")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="identical runs (default 10)")
    ap.add_argument("--keep", metavar="DIR", help="keep the runs in this new store (to look into)")
    ap.add_argument("command", nargs="*", help="latscope run's arguments (after --)")
    args = ap.parse_args()
    command = args.command or DEFAULT
    from latscope.record import Run
    from latscope.report.run import analyse
    from latscope.store import Store

    with tempfile.TemporaryDirectory(prefix="latscope-stationary-") as tmp:
        store = args.keep or tmp
        if args.keep and Path(args.keep).exists():
            raise SystemExit(f"--keep {args.keep}: it exists already; name a new folder")
        for i in range(args.runs):
            r = subprocess.run(
                [latscope(), "run", *command, "--store", store, "--quiet"],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if r.returncode != 0:
                raise SystemExit(f"latscope run failed ({r.returncode}): {r.stderr.strip()}")
            print(f"run {i + 1}/{args.runs} done", file=sys.stderr)
        st = Store(store)
        runs = [Run(st.runs_dir / m["id"]) for m in st.list_meta()]
        with_cp = with_drift = total_cp = 0
        codes: Counter[str] = Counter()
        level_lines: list[str] = []
        print(f"latscope run {' '.join(command)}: {len(runs)} runs")
        print(f"{'run':>4} {'change points per column':<40} findings")
        for k, run in enumerate(runs, 1):
            ra = analyse(run, run.id)
            per = {c: len(a.drift.change_points) for c, a in ra.columns.items()}
            found = sorted({w.code for a in ra.columns.values() for w in a.warnings})
            codes.update(found)
            total_cp += sum(per.values())
            with_cp += any(per.values())
            with_drift += bool(DRIFT & set(found))
            for c, a in ra.columns.items():
                lv = next((w for w in a.warnings if w.code == "levels"), None)
                if lv is not None and len(level_lines) < 3:
                    level_lines.append(f"run {k} {c}: {lv.message}")
            cps = " ".join(f"{c}:{n}" for c, n in per.items())
            print(f"{k:>4} {cps:<40} {', '.join(found) or '—'}")
        print(
            f"runs with a change point: {with_cp} of {len(runs)} ({total_cp} change points in "
            f"all); runs with a drift finding ({', '.join(sorted(DRIFT))}): {with_drift}"
        )
        print("findings (runs with each): " + ", ".join(f"{c} {n}" for c, n in codes.items()))
        for line in level_lines:
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
