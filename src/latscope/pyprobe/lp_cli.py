"""The engine's command line (the C probe's contract, docs/probe-cli.md; this engine's part of
it in docs/python-runtime.md): --list, --check, a run into -o FILE, --version, --help.
Every error is one line, ``latscope-pyprobe: error: ...``, with the catalogue's exit code."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys

import lp_catalogue as cat
import lp_driver
import lp_record
from lp_record import Fail

USAGE = """\
usage: INTERPRETER path/to/pyprobe BENCH [-p key=value ...] [-n N] [--warmup W] -o FILE
                                    [--workers W|auto] [--progress-fd FD] [--peer-timeout S]
                                    [--clock auto|perf_counter_ns] [--inject-ns N]
       INTERPRETER path/to/pyprobe BENCH --check [-p key=value ...] [-n N] [--warmup W]
       INTERPRETER path/to/pyprobe --list | --clocks | --version | --help

The Python runtime engine of latscope: hand-offs between two threads or processes as a Python
program makes them, timed with time.perf_counter_ns(), written as a latscope sample file.
Exit codes: 0 ok, 1 measurement failed, 2 bad input, 3 unsupported here, 130 interrupted.
"""


def _mechanism_class(name):
    """The class that runs benchmark ``name``: lp_net (asyncio, pyzmq) is imported only for
    its own benchmarks, asyncio alone taking longer to import than a blocking run of the
    standard library's mechanisms takes to start (60 ms under PyPy)."""
    import lp_mechs

    if name in lp_mechs.CLASSES:
        return lp_mechs.CLASSES[name]
    import lp_net

    return lp_net.CLASSES[name]


def _int(opt, text, lo, hi):
    try:
        v = int(text)
    except ValueError:
        raise Fail(f"{opt} {text}: not a whole number", 2) from None
    if not lo <= v <= hi:
        raise Fail(f"{opt} {text}: must be between {lo} and {hi}", 2)
    return v


def parse(argv):
    o = {
        "bench": None,
        "params": [],
        "n": None,
        "warmup": None,
        "out": None,
        "check": False,
        "workers": "1",
        "progress_fd": None,
        "peer_timeout": 10.0,  # busy-waiting threads under load hand over slowly
        "clock": "auto",
        "inject_ns": 0,
        "action": None,
    }
    valued = {
        "-p",
        "-n",
        "--warmup",
        "-o",
        "--workers",
        "--progress-fd",
        "--peer-timeout",
        "--clock",
        "--inject-ns",
    }
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--list", "--version", "--help", "-h", "--clocks", "--env"):
            o["action"] = a
        elif a == "--check":
            o["check"] = True
        elif a in valued:
            if i + 1 >= len(argv):
                raise Fail(f"{a} needs a value", 2)
            v = argv[i + 1]
            i += 1
            if a == "-p":
                o["params"].append(v)
            elif a == "-n":
                o["n"] = _int("-n", v, 1, 100_000_000)
            elif a == "--warmup":
                o["warmup"] = _int("--warmup", v, 0, 10_000_000)
            elif a == "-o":
                o["out"] = v
            elif a == "--workers":
                o["workers"] = v
            elif a == "--progress-fd":
                o["progress_fd"] = _int("--progress-fd", v, 0, 1 << 20)
            elif a == "--peer-timeout":
                try:
                    o["peer_timeout"] = float(v)
                except ValueError:
                    raise Fail(f"--peer-timeout {v}: not a number of seconds", 2) from None
                if not 0.1 <= o["peer_timeout"] <= 3600:
                    raise Fail(f"--peer-timeout {v}: must be between 0.1 and 3600 s", 2)
            elif a == "--clock":
                o["clock"] = v
            else:
                o["inject_ns"] = _int("--inject-ns", v, 0, 10_000_000)
        elif a.startswith("-"):
            raise Fail(f"unknown option {a} (see --help)", 2)
        elif o["bench"] is None:
            o["bench"] = a
        else:
            raise Fail(f"unexpected argument {a!r} (one benchmark per run)", 2)
        i += 1
    return o


def _same_interpreter(value):
    found = shutil.which(value) or value
    if not os.path.exists(found):
        raise Fail(f"python={value}: no such interpreter", 2)
    if os.path.realpath(found) != os.path.realpath(sys.executable):
        raise Fail(
            f"python={value}: this engine runs under {sys.executable}; start it with the "
            "interpreter you name (the lab does)",
            2,
        )
    return sys.executable


def _cpus(v):
    if v in ("none", ""):
        return "none"
    parts = v.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise Fail(f"cpus={v}: write A,B (two CPU numbers) or none", 2)
    a, b = (int(p) for p in parts)
    have = lp_driver.usable_cpus()
    if have is None:
        raise Fail(f"cpus={v}: this system does not pin threads", 3)
    for c in (a, b):
        if c not in have:
            raise Fail(f"cpus={v}: CPU {c} is not available here ({sorted(have)})", 3)
    return f"{a},{b}"


def _switches(column, e):
    """The context switches a column's latency contains, as the C probe records them: one
    per way for a blocking hand-off, so two in a round trip (None where the parties spin)."""
    per_way = e["mechanism"]["context_switches_per_way"]
    if per_way is None:
        return None
    return 2 * per_way if column == "rtt" else per_way


def _placement(v):
    if v in (None, "none"):
        return "unpinned"
    a, b = v.split(",")
    return "same_cpu" if a == b else "different_cpus"


def resolve(o):
    """Benchmark, parameters (typed, defaults filled in), n, warmup, workers: everything a run
    checks before it measures."""
    if o["bench"] is None:
        raise Fail("no benchmark given (see --list)", 2)
    m = cat.find(o["bench"])
    if m is None:
        known = ", ".join(x["name"] for x in cat.MECHANISMS)
        raise Fail(f"unknown benchmark '{o['bench']}' (known: {known})", 2)
    e = cat.entry(m)
    defs = {p["name"]: p for p in e["params"]}
    given = {}
    for kv in o["params"]:
        if "=" not in kv:
            raise Fail(f"-p {kv}: write key=value", 2)
        k, v = kv.split("=", 1)
        if k not in defs:
            raise Fail(f"{k}={v}: {e['name']} has no parameter {k} (it has {', '.join(defs)})", 2)
        given[k] = v
    params = {}
    for k, p in defs.items():
        v = given.get(k, p["default"])
        if p["type"] == "enum":
            if v not in p["choices"]:
                raise Fail(f"{k}={v}: choose one of {', '.join(p['choices'])}", 2)
        elif p["type"] == "float":
            try:
                v = float(v)
            except ValueError:
                raise Fail(f"{k}={v}: not a number", 2) from None
            if not p["min"] <= v <= p["max"]:
                raise Fail(f"{k}={v:g}: must be between {p['min']:g} and {p['max']:g}", 2)
        elif k == "python":
            v = _same_interpreter(v) if v else sys.executable
        elif k == "cpus":
            v = _cpus(v)
        params[k] = v
    mode = params["mode"]
    if mode == "tasks" and _placement(params.get("cpus", "none")) == "different_cpus":
        raise Fail(
            f"cpus={params['cpus']}: mode=tasks runs both tasks in one thread, on one CPU: "
            "give cpus=A,A or none",
            2,
        )
    if params.get("transport") == "inproc" and mode != "threads":
        raise Fail("transport=inproc: needs mode=threads (inproc joins sockets of one process)", 2)
    if not e["available"]:
        raise Fail(f"{e['name']}: {e['unavailable_reason']}", 3)
    if m["name"] == "py_spin" and mode == "processes":
        ok, why = cat.shm_status()
        if not ok:
            raise Fail(f"py_spin mode=processes: {why}", 3)
    if o["clock"] not in ("auto", cat.CLOCK):
        raise Fail(f"--clock {o['clock']}: this engine has one clock, {cat.CLOCK}", 2)
    n = o["n"]
    if n is None:
        n = e["default_n"]
        for r in e["default_n_rules"]:
            w = r["when"]
            v = params.get(w["param"])
            if ("equals" in w and str(v) == str(w["equals"])) or (
                "placement" in w and _placement(v) == w["placement"]
            ):
                n = r["n"]
                break
    warmup = o["warmup"]
    if warmup is None:
        warmup = min(max(n // 10, 10), 1000)
    w = o["workers"]
    if w == "auto":
        workers = max(1, min(10, n // 200))
    else:
        workers = _int("--workers", w, 1, 1000)
        if workers > n:
            raise Fail(f"--workers {w}: more workers than iterations (-n {n})", 2)
    if mode in ("processes",) and "processes" not in m["modes"]:
        raise Fail(f"mode={mode}: {e['name']} does not run between processes", 2)
    if o["out"] is not None:
        lp_record.check_target(o["out"])
    return m, e, params, given, n, warmup, workers


def run(o):
    m, e, params, given, n, warmup, workers = resolve(o)
    if o["out"] is None:
        raise Fail("-o FILE is required (where the samples go)", 2)
    sys.setswitchinterval(params["switchinterval"])
    mp = None
    if params["mode"] == "processes":
        import multiprocessing

        mp = multiprocessing.get_context("fork")
    cls = _mechanism_class(m["name"])
    clock = lp_record.measure_clock()
    started = lp_record.utc_now()
    sup = lp_driver.Supervisor(o["peer_timeout"], o["progress_fd"], n)
    shares = [n // workers + (1 if i < n % workers else 0) for i in range(workers)]
    wu = max(10, warmup // workers) if workers > 1 else warmup
    t0, rtt, ow, wlist = [], [], [], []
    base = None
    for share in shares:
        mech = cls(params["mode"], params, mp)
        seg = lp_driver.Segment(mech, share, wu, o["inject_ns"]).run(sup)
        if base is None:
            base = seg.t0[0]
        t0 += [t - base for t in seg.t0]
        rtt += seg.rtt
        ow += seg.ow
        # counters this interpreter cannot read (no RUSAGE_THREAD under PyPy) are left out,
        # never written as null: the format's schema takes integers only
        usage = {
            role: {k: v for k, v in (c or {}).items() if isinstance(v, int)}
            for role, c in (seg.rusage or {}).items()
        }
        usage = {role: c for role, c in usage.items() if c}
        wlist.append({"n": share, "warmup": wu, "pid": os.getpid(), "timed_rusage": usage})
    interp = lp_record.interpreter()
    cols = [c for c in e["columns"]]
    header = {
        "format": "latscope-samples",
        "format_version": cat.SAMPLE_FORMAT_VERSION,
        "probe": {"version": cat.VERSION, "engine": cat.ENGINE, "compiler": interp["compiler"]},
        "benchmark": e["name"],
        "params": params,
        "n": n,
        "warmup": wu,
        "inject_ns": o["inject_ns"],
        "workers": wlist,
        "clock": clock,
        "interpreter": interp,
        "columns": [
            {
                "name": "t_start",
                "unit": "ticks",
                "kind": "time",
                "description": "start of the iteration, since the start of the first recorded one",
            },
            *[
                {
                    "name": c["name"],
                    "unit": "ticks",
                    "kind": "duration",
                    "latency": c["latency"],
                    "context_switches": _switches(c["name"], e),
                    "description": c["description"],
                }
                for c in cols
            ],
        ],
        "bench": {
            "mechanism": e["name"],
            "mode": params["mode"],
            "cpus": [int(c) for c in params["cpus"].split(",")]
            if params["cpus"] != "none"
            else [-1, -1],
            "placement": _placement(params["cpus"]),
            "message_bytes": 8,
            "message_size_parameter": False,
            "blocking": e["mechanism"]["blocking"],
            "timed_region": e["mechanism"]["timed_region"],
            "timed_region_frame": e["mechanism"]["timed_region_frame"],
            "counterpart": (e["counterpart"] or "").format(**params) or None,
            "latencies": {
                "rtt": "round trip (initiator -> responder -> initiator), timed by the initiator",
                "oneway": "one-way initiator -> responder from the shared clock; the rtt/2 "
                "estimate is derived by the lab",
            },
        },
        "env": lp_record.environment(),
        "started_utc": started,
        "finished_utc": lp_record.utc_now(),
        "argv": [sys.executable, *sys.argv],
        "byte_order": "little",
    }
    lp_record.write_samples(o["out"], header, [t0, rtt, ow])
    return 0


def main(argv):
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, lp_driver.on_signal)
    code = 0
    try:
        o = parse(argv)
        if o["action"] in ("--help", "-h"):
            sys.stdout.write(USAGE)
        elif o["action"] == "--version":
            print(f"{cat.ENGINE} {cat.VERSION} (sample format {cat.SAMPLE_FORMAT_VERSION})")
        elif o["action"] == "--list":
            print(json.dumps(cat.catalogue(lp_record.interpreter()), indent=1))
        elif o["action"] == "--clocks":
            print(json.dumps([lp_record.measure_clock()], indent=1))
        elif o["action"] == "--env":
            print(json.dumps(lp_record.environment(), indent=1))
        elif o["check"]:
            m, e, params, given, n, warmup, workers = resolve(o)
            print(
                json.dumps(
                    {
                        "benchmark": e["name"],
                        "params": params,
                        "given": given,
                        "n": n,
                        "warmup": warmup,
                        "workers": workers,
                        "clock": cat.CLOCK,
                        "engine": "python",
                    }
                )
            )
        else:
            code = run(o)
    except Fail as f:
        lp_driver.cleanup()
        sys.stderr.write(f"{cat.ENGINE}: error: {f.message}\n")
        code = f.code
    except (lp_driver.Interrupted, KeyboardInterrupt):
        lp_driver.cleanup()
        sys.stderr.write(f"{cat.ENGINE}: error: interrupted; nothing was written\n")
        code = 130
    except BrokenPipeError:  # the reader of the output left (| head): end quietly, exit 0, as
        lp_driver.cleanup()  # the C probe and the lab do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    except OSError as e:
        lp_driver.cleanup()
        sys.stderr.write(f"{cat.ENGINE}: error: {e.strerror or e}\n")
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    # daemon threads may still block in a hand-off whose peer is gone: end without them
    os._exit(code)
