"""The engine's catalogue (``--list``): every benchmark, its parameters, columns and display
facts, in the shape of the C probe's catalogue (docs/probe-cli.md).  This is the one
definition: the lab reads it from ``--list`` and declares nothing of its own."""

from __future__ import annotations

import sys

ENGINE = "latscope-pyprobe"
VERSION = "0.1.0"
CATALOGUE_VERSION = 1
SAMPLE_FORMAT_VERSION = 2  # as the C probe writes (test_pyprobe checks they agree)
CLOCK = "perf_counter_ns"
PREFIX = "py_"

LATENCIES = {
    "round_trip": {
        "label": "round trip",
        "description": "initiator -> responder -> initiator, timed by the initiator on its own "
        "clock",
    },
    "one_way_shared_clock": {
        "label": "one-way, shared clock",
        "description": "initiator -> responder: the responder's clock read after its receive "
        "minus the initiator's start read of the same round trip",
    },
    "one_way_rtt_half": {
        "label": "one-way est. = RTT/2",
        "description": "half the round trip: right only when both directions cost the same",
    },
}
EXIT_CODES = {
    "0": "ok",
    "1": "measurement failed",
    "2": "bad input",
    "3": "unsupported or not permitted here",
    "130": "interrupted",
}

_THREADS = "two threads of one interpreter (they share its GIL where it has one)"


def _m(
    name,
    summary,
    modes,
    blocking,
    region,
    counterpart,
    *,
    switches=1,
    extra=(),
    n=10000,
    rules=(),
    note=None,
    needs=None,
):
    return {
        "name": PREFIX + name,
        "summary": summary,
        "modes": modes,
        "blocking": blocking,
        "region": region,
        "counterpart": counterpart,
        "switches": switches,
        "extra": list(extra),
        "n": n,
        "rules": list(rules),
        "note": note,
        "needs": needs,
    }


_SPIN_N = [
    {"when": {"param": "mode", "equals": "threads"}, "n": 400},
    {"when": {"param": "cpus", "placement": "same_cpu"}, "n": 400},
]
_SPIN_NOTE = "400 between threads (each hand-off waits for the GIL switch interval) or on one CPU"
_TRANSPORT = {
    "name": "transport",
    "type": "enum",
    "default": "tcp",
    "unit": None,
    "help": "inproc (threads only), ipc (a Unix socket in a private directory) or tcp "
    "(127.0.0.1, a free port)",
    "choices": ["inproc", "ipc", "tcp"],
    "needs_root_when": None,
}

#: name, what it measures, modes, blocking, the timed region, the C probe's counterpart
MECHANISMS = [
    _m(
        "spinlock",
        "report 002's spinlock: a shared list [start, flag, latency] guarded by a spinlock "
        "(a threading.Lock taken by spinning on a non-blocking acquire), both workers "
        "busy-waiting on the flag",
        ["threads"],
        False,
        "rtt: spin until the lock is taken, write the start time and set the flag, release; "
        "then take, read "
        "the flag, release, until worker 2 has cleared it; worker 2 takes the lock in a loop, "
        "and when the flag is set reads the clock, writes the difference and clears it",
        "spin",
        switches=None,
        n=400,
        rules=_SPIN_N,
        note=_SPIN_NOTE,
    ),
    _m(
        "semlock",
        "report 002's semaphore: the same shared list guarded by a "
        "threading.Semaphore(1); worker 1 busy-waits on the flag",
        ["threads"],
        False,
        "rtt: as py_spinlock with a Semaphore(1) as the lock",
        "posix_sem",
        switches=None,
        n=400,
        rules=_SPIN_N,
        note=_SPIN_NOTE,
    ),
    _m(
        "spin",
        "busy-wait ping-pong on two counters: a list between threads, "
        "multiprocessing.shared_memory between processes",
        ["threads", "processes"],
        False,
        "rtt: write the value and bump counter A, then loop reading counter B until the "
        "responder has bumped it",
        "spin",
        switches=None,
        n=10000,
        rules=_SPIN_N,
        note=_SPIN_NOTE,
    ),
    _m(
        "lock",
        "threading.Lock hand-off (multiprocessing.Lock between processes): two locks "
        "held, each side releases the other's",
        ["threads", "processes"],
        True,
        "rtt: release lock A, acquire lock B (the responder acquires A and releases B)",
        "futex",
    ),
    _m(
        "semaphore",
        "threading.Semaphore hand-off (multiprocessing.Semaphore between "
        "processes): two semaphores at 0",
        ["threads", "processes"],
        True,
        "rtt: release semaphore A, acquire semaphore B",
        "posix_sem",
    ),
    _m(
        "condition",
        "threading.Condition hand-off (multiprocessing.Condition between "
        "processes): a turn variable under one condition",
        ["threads", "processes"],
        True,
        "rtt: with the condition: set the turn, notify, wait until the turn is back",
        "condvar",
    ),
    _m(
        "event",
        "threading.Event hand-off (multiprocessing.Event between processes): two "
        "events, set and cleared",
        ["threads", "processes"],
        True,
        "rtt: set event A, wait for event B, clear it",
        "futex",
    ),
    _m(
        "queue",
        "queue.Queue hand-off between two threads: one queue each way",
        ["threads"],
        True,
        "rtt: put an int on queue A, get from queue B",
        "condvar",
    ),
    _m(
        "mp_queue",
        "multiprocessing.Queue hand-off: one queue each way (a pipe, pickling and a feeder thread)",
        ["threads", "processes"],
        True,
        "rtt: put an int on queue A (handed to its feeder thread), get from queue B",
        "pipe",
    ),
    _m(
        "mp_pipe",
        "multiprocessing.Pipe (a duplex Connection: a Unix socket pair, pickled ints)",
        ["threads", "processes"],
        True,
        "rtt: Connection.send(int), Connection.recv()",
        "socketpair",
    ),
    _m(
        "socketpair",
        "socket.socketpair (AF_UNIX, stream), 8-byte messages",
        ["threads", "processes"],
        True,
        "rtt: sendall(8 bytes), recv until 8 bytes",
        "socketpair",
    ),
    _m(
        "pipe",
        "os.pipe, one each way, 8-byte messages",
        ["threads", "processes"],
        True,
        "rtt: os.write(8 bytes) to pipe A, os.read from pipe B",
        "pipe",
    ),
    _m(
        "zmq_pair",
        "ZeroMQ PAIR sockets through pyzmq, 8-byte messages",
        ["threads", "processes"],
        True,
        "rtt: send(8 bytes), recv() on a PAIR socket",
        "zmq_{transport}",
        extra=[_TRANSPORT],
        needs="pyzmq",
        switches=None,
    ),
    _m(
        "zmq_pubsub",
        "ZeroMQ PUB/SUB through pyzmq as report 002 used it, one PUB/SUB pair "
        "each way, 8-byte messages",
        ["threads", "processes"],
        True,
        "rtt: publish(8 bytes) on A, receive on B's subscriber",
        "zmq_{transport} pattern=pubsub",
        extra=[_TRANSPORT],
        needs="pyzmq",
        switches=None,
    ),
    _m(
        "asyncio_queue",
        "asyncio.Queue hand-off between two tasks of one event loop",
        ["tasks"],
        True,
        "rtt: put_nowait on queue A, await get on queue B",
        None,
        switches=0,
    ),
    _m(
        "asyncio_tcp",
        "a loopback TCP round trip between asyncio streams (two tasks of one "
        "loop, or a server in another process)",
        ["tasks", "processes"],
        True,
        "rtt: writer.write(8 bytes), await reader.readexactly(8)",
        "tcp",
        switches=None,
    ),
]

COMMON_PARAMS = [
    {
        "name": "cpus",
        "type": "cpus",
        "default": "none",
        "unit": "cpu",
        "help": "placement A,B: initiator on CPU A, responder on CPU B (A=B: same CPU); none: "
        "unpinned",
        "needs_root_when": None,
    },
    {
        "name": "switchinterval",
        "type": "float",
        "default": "0.005",
        "unit": "s",
        "help": "sys.setswitchinterval in the engine (and its child): how long a thread may "
        "hold the GIL while another waits for it (CPython's default 5 ms)",
        "min": 0.000001,
        "max": 1.0,
        "needs_root_when": None,
    },
    {
        "name": "python",
        "type": "path",
        "default": "",
        "unit": None,
        "help": "the interpreter that runs the engine (the lab starts the engine with it; "
        "default: the one running latscope)",
        "needs_root_when": None,
    },
]


def zmq_status():
    """(available, reason) of pyzmq under this interpreter."""
    try:
        import zmq  # noqa: F401
    except Exception as e:  # ImportError, or a broken build
        return False, f"pyzmq is not installed for {sys.executable} ({type(e).__name__})"
    return True, None


def shm_status():
    try:
        from multiprocessing import shared_memory  # noqa: F401
    except Exception as e:
        return False, f"multiprocessing.shared_memory is missing here ({type(e).__name__})"
    return True, None


def _mode_param(modes):
    return {
        "name": "mode",
        "type": "enum",
        "default": "processes" if "processes" in modes and "threads" in modes else modes[0],
        "unit": None,
        "help": "the two parties: "
        + ", ".join(
            {
                "threads": _THREADS,
                "processes": "two processes (fork)",
                "tasks": "two asyncio tasks of one event loop",
            }[m]
            for m in modes
        ),
        "choices": list(modes),
        "needs_root_when": None,
    }


def entry(m):
    """The catalogue entry of mechanism ``m``."""
    available, reason = True, None
    if m["needs"] == "pyzmq":
        available, reason = zmq_status()
    name = m["name"]
    modes = m["modes"]
    frame = (
        "rtt: from the initiator's start read of perf_counter_ns to its end read: one Python "
        "call of the round trip (the mechanism's send and receive, above) and, on the "
        "responder's side between its receive and its answer, one read of the clock sent back "
        "as its receive time.  Outside the timed region: the stores of the samples and the "
        "progress counter.  Each sample holds one clock read cost (clock.overhead_ns), not "
        "subtracted.  oneway: the responder's read minus the initiator's start read "
        "(perf_counter_ns is CLOCK_MONOTONIC: one clock for every thread and process)"
    )
    return {
        "name": name,
        "kind": "ipc",
        "engine": "python",
        "summary": m["summary"],
        "available": available,
        "unavailable_reason": reason,
        "needs": m["needs"],
        "default_n": m["n"],
        "default_n_note": m["note"],
        "default_n_rules": m["rules"],
        "counterpart": m["counterpart"],
        "mechanism": {
            "threads": "threads" in modes,
            "processes": "processes" in modes,
            "tasks": "tasks" in modes,
            "blocking": m["blocking"],
            "message_size": False,
            "message_bytes": 8,
            "context_switches_per_way": m["switches"] if m["blocking"] else None,
            "timed_region": m["region"],
            "timed_region_frame": frame,
            "placements": ["same_cpu", "different_cpus", "unpinned"],
            "placement_note": None,
        },
        "params": [_mode_param(modes), *m["extra"], *COMMON_PARAMS],
        "columns": [
            {
                "name": "rtt",
                "description": "round trip: initiator sends, responder answers; timed by the "
                "initiator",
                "latency": "round_trip",
                "latency_label": LATENCIES["round_trip"]["label"],
                "when": None,
            },
            {
                "name": "oneway",
                "description": "initiator to responder, from the shared clock (responder's "
                "receive time minus the initiator's start of the round trip)",
                "latency": "one_way_shared_clock",
                "latency_label": LATENCIES["one_way_shared_clock"]["label"],
                "when": None,
            },
        ],
        "derived_columns": [
            {
                "name": "rtt/2",
                "from": "rtt",
                "divide_by": 2,
                "formula": "rtt / 2",
                "description": "half the round trip, computed by the lab: the one-way time "
                "where both directions cost the same",
                "latency": "one_way_rtt_half",
                "latency_label": LATENCIES["one_way_rtt_half"]["label"],
            }
        ],
        "scenarios": [
            {
                "name": name,
                "params": {},
                "n": None,
                "warmup": None,
                "quick": False,
                "note": m["summary"],
            }
        ],
        "display": {
            "roles": ["initiator", "responder"],
            # the interpreter allocates (ints, frames): faults are part of what it costs
            "faults_expected_when": {"param": "mode", "not_equals": ""},
            "switches_column": None,
            "lines": [
                {
                    "template": "{interpreter.implementation} {interpreter.version} "
                    "({interpreter.executable}), {bench.mode}, switch interval "
                    "{interpreter.switchinterval} s, GIL {interpreter.gil:onoff}",
                    "style": None,
                },
                {"template": "{bench.timed_region}", "style": "dim"},
            ],
            "check_figure": None,
        },
    }


def find(name):
    for m in MECHANISMS:
        if m["name"] == name:
            return m
    return None


def catalogue(interp):
    zmq_ok, _ = zmq_status()
    return {
        "engine": "python",
        "catalogue_version": CATALOGUE_VERSION,
        "sample_format_version": SAMPLE_FORMAT_VERSION,
        "probe_version": VERSION,
        "interpreter": interp,
        "features": {"zmq": zmq_ok, "shared_memory": shm_status()[0]},
        "workers_auto": {"max": 10, "min_per_worker": 200},
        "clocks": [
            {
                "name": CLOCK,
                "available": True,
                "default": True,
                "description": "time.perf_counter_ns() (CLOCK_MONOTONIC on Linux): the clock "
                "a Python program reads",
            }
        ],
        "clock_choices": ["auto", CLOCK],
        "latencies": LATENCIES,
        "quick": {"n": 2000, "warmup": 200},
        "exit_codes": EXIT_CODES,
        "benchmarks": [entry(m) for m in MECHANISMS],
    }
