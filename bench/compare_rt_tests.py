#!/usr/bin/env python3
"""latscope beside rt-tests and sockperf, in one run, in one table.

What each tool reports:

* rt-tests (pmqtest, ptsematest, svsematest, sigwaittest): a pair of threads (processes with
  svsematest/sigwaittest -f); the sender reads gettimeofday() just before it wakes the
  receiver, the receiver reads it just after it woke: the **one-way latency from a shared
  clock**, in whole microseconds, summarised as min/avg/max.  Between two cycles the receiver
  sleeps for the interval (-i, 100 us here) before it lets the sender go on.  With -a N both
  threads run on CPU N; without -a the scheduler places them.
* sockperf ping-pong: the client sends a message, the server echoes it, the client times the
  round trip with the TSC and reports **RTT/2** by default (percentiles, min, max, average);
  client and server are two processes, placed here with taskset.  Warm-up: 400 ms.
* latscope: every sample of both the round trip (`rtt`) and the one-way time from the shared
  clock (`oneway`), back to back, no interval; the rows compare like with like: latscope's
  `oneway` against rt-tests, latscope's `rtt`/2 against sockperf.

Pairings: pmqtest - posix_mq; ptsematest (a pthread mutex, i.e. a futex) - futex and
posix_sem; svsematest - sysv_sem; sigwaittest (SIGUSR1, sigwait) - signal (real-time signals,
sigwaitinfo); sockperf UDP/TCP (14-byte messages) - udp/tcp with size=14.

The statistics are numpy's min, mean, median, 99th percentile and max of latscope's samples;
ratios are latscope / tool (mean over avg, min over min).  Needs rt-tests and sockperf (Debian:
apt-get install rt-tests sockperf), taskset, root for the rt-tests (mlockall), two CPUs.

    python bench/compare_rt_tests.py [--probe PATH] [--n 20000] [--loops 5000]

The probe: --probe, else $LATSCOPE_PROBE, else the one installed with the latscope package.
Takes about a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from latscope import samples


@dataclass
class Figures:
    """One tool's or latscope's summary, in microseconds (None: not reported)."""

    source: str
    latency: str
    min: float | None = None
    avg: float | None = None
    p50: float | None = None
    p99: float | None = None
    max: float | None = None


@dataclass
class Row:
    what: str
    placement: str
    tool: Figures
    ours: Figures


def find_probe(arg: str | None) -> str:
    if arg:
        return arg
    if os.environ.get("LATSCOPE_PROBE"):
        return os.environ["LATSCOPE_PROBE"]
    try:
        from latscope import probe as _probe

        return _probe.probe_path()
    except Exception:  # any failure means: not installed
        raise SystemExit(
            "compare_rt_tests: no probe: give --probe PATH or set LATSCOPE_PROBE"
        ) from None


class Latscope:
    def __init__(self, probe: str, n: int, workdir: Path) -> None:
        self.probe, self.n, self.dir, self.count = probe, n, workdir, 0

    def run(self, bench: str, **params: str) -> samples.SampleFile:
        self.count += 1
        out = self.dir / f"{self.count:02d}-{bench}.lss"
        args = [self.probe, bench, "-n", str(self.n), "-o", str(out)]
        for k, v in params.items():
            args += ["-p", f"{k}={v}"]
        r = subprocess.run(args, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise SystemExit(f"compare_rt_tests: latscope-probe {bench}: {r.stderr.strip()}")
        return samples.load(out)

    @staticmethod
    def figures(sf: samples.SampleFile, column: str) -> Figures:
        b = sf.header["bench"]
        if column == "oneway":
            x = sf.ns("oneway") / 1000.0
            what = "one-way, shared clock"
        else:
            x = sf.ns("rtt") / 2000.0
            what = "RTT/2"
        p50, p99 = np.percentile(x, [50, 99])
        return Figures(
            source=f"{b['mechanism']} {b['mode']} ({sf.header['clock']['name']})",
            latency=what,
            min=float(x.min()),
            avg=float(x.mean()),
            p50=float(p50),
            p99=float(p99),
            max=float(x.max()),
        )


def rt_test(tool: str, loops: int, interval: int, cpu: int | None, fork: bool) -> Figures:
    with tempfile.TemporaryDirectory(prefix="latscope-rt-") as d:
        js = Path(d) / "out.json"
        cmd = [tool, "-q", "-l", str(loops), "-i", str(interval), f"--json={js}"]
        if cpu is not None:
            cmd += [f"-a{cpu}"]
        if fork:
            cmd += ["-f"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0 or not js.exists():
            raise SystemExit(f"compare_rt_tests: {' '.join(cmd)} failed: {r.stderr.strip()}")
        rec = json.loads(js.read_text())["thread"]["0"]["receiver"]
    return Figures(
        source=f"{tool}{' -f' if fork else ''}{f' -a{cpu}' if cpu is not None else ''}",
        latency="one-way, shared clock (gettimeofday, 1 us steps)",
        min=float(rec["min"]),
        avg=float(rec["avg"]),
        max=float(rec["max"]),
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sockperf(tcp: bool, cpus: tuple[int, int], seconds: int) -> Figures:
    port = str(free_port())
    proto = ["--tcp"] if tcp else []
    server = subprocess.Popen(
        ["taskset", "-c", str(cpus[1]), "sockperf", "server", "-i", "127.0.0.1", "-p", port]
        + proto,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        cmd = ["taskset", "-c", str(cpus[0]), "sockperf", "ping-pong", "-i", "127.0.0.1"]
        cmd += ["-p", port, "-t", str(seconds), "-m", "14", *proto]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30).stdout
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)

    def grab(pattern: str) -> float:
        m = re.search(pattern, out)
        if not m:
            raise SystemExit(f"compare_rt_tests: cannot read '{pattern}' from sockperf:\n{out}")
        return float(m.group(1))

    return Figures(
        source=f"sockperf {'tcp' if tcp else 'udp'}",
        latency="RTT/2 (TSC)",
        min=grab(r"<MIN> observation =\s*([0-9.]+)"),
        avg=grab(r"avg-latency=([0-9.]+)"),
        p50=grab(r"percentile 50\.000 =\s*([0-9.]+)"),
        p99=grab(r"percentile 99\.000 =\s*([0-9.]+)"),
        max=grab(r"<MAX> observation =\s*([0-9.]+)"),
    )


def fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or not b else f"{a / b:.2f}"


def print_table(rows: list[Row]) -> None:
    head = ("comparison", "placement", "source", "latency", "min", "avg", "p50", "p99", "max")
    table: list[tuple[str, ...]] = []
    for r in rows:
        for f, first in ((r.tool, True), (r.ours, False)):
            table.append(
                (
                    r.what if first else "",
                    r.placement if first else "",
                    f.source,
                    f.latency,
                    fmt(f.min),
                    fmt(f.avg),
                    fmt(f.p50),
                    fmt(f.p99),
                    fmt(f.max),
                )
            )
        table.append(
            (
                "",
                "",
                "ratio latscope/tool",
                "",
                ratio(r.ours.min, r.tool.min),
                ratio(r.ours.avg, r.tool.avg),
                ratio(r.ours.p50, r.tool.p50),
                ratio(r.ours.p99, r.tool.p99),
                "",
            )
        )
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    line = "  ".join(
        h.ljust(w) if i < 4 else h.rjust(w)
        for i, (h, w) in enumerate(zip(head, widths, strict=True))
    )
    print(line)
    print("-" * len(line))
    for t in table:
        print(
            "  ".join(
                c.ljust(w) if i < 4 else c.rjust(w)
                for i, (c, w) in enumerate(zip(t, widths, strict=True))
            )
        )
        if t[2] == "ratio latscope/tool":
            print()


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--probe", help="latscope-probe to use (default: $LATSCOPE_PROBE)")
    ap.add_argument("--n", type=int, default=20_000, help="latscope iterations (20000)")
    ap.add_argument("--loops", type=int, default=5_000, help="rt-tests loops (5000)")
    ap.add_argument("--interval", type=int, default=100, help="rt-tests interval, us (100)")
    ap.add_argument("--seconds", type=int, default=2, help="sockperf duration, s (2)")
    args = ap.parse_args()
    probe = find_probe(args.probe)
    missing = [
        t
        for t in ("pmqtest", "ptsematest", "svsematest", "sigwaittest", "sockperf", "taskset")
        if not shutil.which(t)
    ]
    if missing:
        print(
            f"compare_rt_tests: not installed: {', '.join(missing)} "
            "(Debian: apt-get install rt-tests sockperf util-linux)",
            file=sys.stderr,
        )
        return 3
    if os.geteuid() != 0:
        print("compare_rt_tests: the rt-tests need root (mlockall)", file=sys.stderr)
        return 3
    if not {0, 1} <= os.sched_getaffinity(0):
        print("compare_rt_tests: needs CPUs 0 and 1", file=sys.stderr)
        return 3

    t0 = time.monotonic()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="latscope-cmp-") as d:
        ls = Latscope(probe, args.n, Path(d))
        rt = [
            ("pmqtest", "posix_mq", False),
            ("ptsematest", "futex", False),
            ("ptsematest", "posix_sem", False),
            ("svsematest", "sysv_sem", False),
            ("svsematest", "sysv_sem", True),
            ("sigwaittest", "signal", False),
            ("sigwaittest", "signal", True),
        ]
        cache: dict[tuple[str, int | None, bool], Figures] = {}
        for tool, mech, fork in rt:
            for cpu, cpus, place in ((0, "0,0", "one CPU"), (None, "none", "unpinned")):
                if fork and cpu is None:
                    continue
                key = (tool, cpu, fork)
                if key not in cache:
                    cache[key] = rt_test(tool, args.loops, args.interval, cpu, fork)
                mode = "processes" if fork else "threads"
                sf = ls.run(mech, mode=mode, cpus=cpus)
                rows.append(
                    Row(
                        f"{mech} ({mode})",
                        place,
                        cache[key],
                        Latscope.figures(sf, "oneway"),
                    )
                )
        for tcp in (False, True):
            for cpus, place in (((0, 1), "two CPUs"), ((0, 0), "one CPU")):
                tool = sockperf(tcp, cpus, args.seconds)
                mech = "tcp" if tcp else "udp"
                sf = ls.run(mech, mode="processes", cpus=f"{cpus[0]},{cpus[1]}", size="14")
                rows.append(
                    Row(f"{mech} 14 B (processes)", place, tool, Latscope.figures(sf, "rtt"))
                )

    print(f"latscope beside rt-tests and sockperf (all figures in microseconds; probe {probe})\n")
    print_table(rows)
    print(
        "rt-tests: one-way from a shared clock (gettimeofday, whole microseconds), receiver "
        f"idle {args.interval} us between cycles, {args.loops} cycles; latscope's row: its "
        "`oneway` column (shared clock, back-to-back ping-pong).\n"
        "sockperf: RTT/2 (its default; --full-rtt for the round trip), after 400 ms of "
        f"warm-up, {args.seconds} s; latscope's row: its `rtt` column / 2.\n"
        f"latscope: n={args.n} per row after its default warm-up.  Took "
        f"{time.monotonic() - t0:.0f} s."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
