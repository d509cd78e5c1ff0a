"""Benchmark: the report's figures of one column of 10^6, 10^7 and 10^8 synthetic samples.

The samples are `bench_analysis.synthetic`'s. Each size runs in a process of its own and prints
the wall time of: sorting the column once (`plots.sorted_samples`, which the distribution's
figures share), then each figure the report draws of a column, made and written to PNG at the
HTML report's resolution (100 dpi, twice as dense): the histograms (cut at p97, and every
sample on log axes), the ECDF and tail, the box and violin, and every sample against time
(a min-max envelope above `plots.MAX_POINTS`); and the peak resident memory of that process
(the input is 16 bytes a sample). A benchmark, not a test: the figures belong to the machine.

    python bench/bench_figures.py [--unsorted] [N ...]  (default: 1000000 10000000 100000000)
    python bench/bench_figures.py --one N [--unsorted]  (one size, in this process, JSON)

``--unsorted``: each figure is given the samples in their order, as before the column was
sorted once (every figure then makes its own passes over the whole column).

Issue goal: the figures of 10^8 samples draw in seconds.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_analysis import synthetic  # noqa: E402
from latscope import plots  # noqa: E402

DPI = 200  # the HTML report's 100 dpi, drawn twice as dense (report.document.HTML_SCALE)


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def one(n: int, unsorted: bool = False) -> dict[str, object]:
    x, t = synthetic(n)
    out: dict[str, object] = {"n": n}
    t0 = time.perf_counter()
    s = x if unsorted else plots.sorted_samples(x)
    out["sort_s"] = time.perf_counter() - t0

    def two(left: Callable[..., object], right: Callable[..., object]) -> object:
        fig = plots.new_figure(ncols=2)
        left(ax=fig.axes[0])
        right(ax=fig.axes[1])
        return fig

    figures: dict[str, Callable[[], object]] = {
        "histograms": lambda: two(
            lambda ax: plots.histogram(s, cut=plots.HIST_CUT, ax=ax),
            lambda ax: plots.histogram(s, cut=100.0, log_x=True, log_count=True, ax=ax),
        ),
        "ecdf, tail": lambda: two(
            lambda ax: plots.ecdf({"x": s}, ax=ax), lambda ax: plots.tail({"x": s}, ax=ax)
        ),
        "box, violin": lambda: two(
            lambda ax: plots.box({"x": s}, ax=ax),
            lambda ax: plots.box({"x": s}, violin=True, ax=ax),
        ),
        "time series": lambda: plots.time_series(x, t=t),
    }
    for name, make in figures.items():
        t0 = time.perf_counter()
        plots.to_bytes(make(), "png", dpi=DPI)  # type: ignore[arg-type]
        out[name] = time.perf_counter() - t0
    out["peak_mib"] = _peak_mib()
    return out


def main() -> None:
    args = sys.argv[1:]
    unsorted = "--unsorted" in args
    args = [a for a in args if a != "--unsorted"]
    if args[:1] == ["--one"]:
        print(json.dumps(one(int(float(args[1])), unsorted)))
        return
    sizes = [int(float(a)) for a in args] or [10**6, 10**7, 10**8]
    names = ["sort_s", "histograms", "ecdf, tail", "box, violin", "time series"]
    print(f"{'samples':>13}  " + "  ".join(f"{n.replace('_s', ''):>11}" for n in names) + "  peak")
    for n in sizes:
        got = subprocess.run(
            [sys.executable, __file__, "--one", str(n), *(["--unsorted"] if unsorted else [])],
            capture_output=True,
            text=True,
        )
        if got.returncode != 0:
            print(f"{n:>13,}  failed: {got.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(got.stdout)
        cells = "  ".join(f"{r[k]:>9.2f} s" for k in names)
        print(f"{n:>13,}  {cells}  {r['peak_mib']:,.0f} MiB")


if __name__ == "__main__":
    main()
