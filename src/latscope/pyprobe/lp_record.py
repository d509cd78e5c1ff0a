"""What a sample file records besides the samples: the clock (its step and read cost, measured
here), the interpreter, the environment; and the writing of the file itself (`write_samples`,
the one place that knows the format)."""

from __future__ import annotations

import json
import os
import platform
import socket
import struct
import sys
import time
import zlib

import lp_catalogue as cat


class Fail(Exception):
    """One line for the user and the exit code (catalogue ``exit_codes``)."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.message = message
        self.code = code


# ------------------------------------------------------------------------------- the clock


def _grouped_median(vals, step):
    """The median of values on a grid of ``step``, estimated within the step (grouped-data
    median), so that it does not jump by whole steps between runs."""
    vals = sorted(vals)
    n = len(vals)
    med = vals[n // 2]
    if step <= 1:
        return float(med)
    below = sum(1 for v in vals if v < med)
    at = sum(1 for v in vals if v == med)
    return med - step / 2 + step * (n / 2 - below) / max(at, 1)


def measure_clock(reads=20001):
    """perf_counter_ns: its step (the spacing of its values, from back-to-back deltas with
    varying work between the reads) and its read cost (median of back-to-back reads)."""
    pc = time.perf_counter_ns
    d = [0] * reads
    for i in range(reads):
        a = pc()
        b = pc()
        d[i] = b - a
    deltas = set()
    x = 0
    for i in range(20000):
        a = pc()
        for _ in range(i % 7):
            x += 1
        deltas.add(pc() - a)
    vals = sorted(v for v in deltas if v > 0)
    gaps = sorted(b - a for a, b in zip(vals, vals[1:], strict=False))
    step = float(gaps[len(gaps) // 2]) if gaps else 1.0
    step = max(step, 1.0)
    info = time.get_clock_info("perf_counter")
    return {
        "name": cat.CLOCK,
        "ns_per_tick": 1.0,
        "step_ns": step,
        "overhead_ns": _grouped_median(d, step),
        "resolution_ns": step,
        "getres_ns": round(info.resolution * 1e9),
        "implementation": info.implementation,
        "monotonic": info.monotonic,
    }


# ------------------------------------------------------------------------- the interpreter


def interpreter():
    """Which interpreter runs the engine, and its GIL."""
    import sysconfig

    free = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    gil_enabled = getattr(sys, "_is_gil_enabled", None)
    return {
        "implementation": sys.implementation.name,
        "version": platform.python_version(),
        "executable": sys.executable,
        "build": " ".join(platform.python_build()),
        "compiler": platform.python_compiler(),
        "free_threaded_build": free,
        "gil": bool(gil_enabled()) if gil_enabled else True,
        "switchinterval": sys.getswitchinterval(),
        "jit": sys.implementation.name == "pypy",
    }


# ------------------------------------------------------------------------ the environment


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def environment():
    """The environment in the lab's schema (store.md, "The environment"), as the C probe
    records it."""
    u = os.uname()
    model = None
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    cs = (_read("/sys/devices/system/clocksource/clocksource0/current_clocksource") or "").strip()
    return {
        "schema": 2,
        "hostname": socket.gethostname(),
        "kernel": {
            "sysname": u.sysname,
            "release": u.release,
            "version": u.version,
            "machine": u.machine,
        },
        "cpu": {"model": model or platform.processor() or None, "online_count": os.cpu_count()},
        "clocksource": {"current": cs or None},
        "process": {"pid": os.getpid(), "uid": os.getuid(), "euid": os.geteuid()},
    }


def utc_now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ------------------------------------------------------------------------ the sample file


def check_target(path):
    """Refuse an output path whose directory is missing or which exists (exit 2)."""
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise Fail(f"-o {path}: the directory {d} does not exist", 2)
    if os.path.lexists(path):
        raise Fail(f"-o {path}: already exists; the engine never replaces a file", 2)


def write_samples(path, header, columns):
    """Write the sample file (docs/sample-format.md, version 2) at ``path``: the magic line, the
    header as one line of JSON, DATA, the columns one after another as little-endian int64,
    and the END trailer with the row count and the CRC-32 of every byte before it (header
    included).  Written under
    an unpredictable name in the target's directory (O_EXCL), then linked to ``path``, which
    is never replaced."""
    nrows = len(columns[0]) if columns else 0
    data = b"".join(struct.pack(f"<{nrows}q", *c) for c in columns)
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    body = b"".join(
        [
            b"LATSCOPE-SAMPLES %d\n" % cat.SAMPLE_FORMAT_VERSION,
            head,
            b"\n",
            b"DATA %d %d\n" % (len(columns), nrows),
            data,
        ]
    )
    crc = zlib.crc32(body) & 0xFFFFFFFF  # version 2: everything before the END line
    blob = body + b"\nEND %d %08x\n" % (nrows, crc)
    d = os.path.dirname(os.path.abspath(path))
    # 64 random bits from the system's source, as secrets.token_hex(8) draws them (without
    # importing secrets: hashlib, random and base64 after it, 30 ms under PyPy)
    tmp = os.path.join(d, f".{os.path.basename(path)}.{os.urandom(8).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # fails on an existing path: never replaces a file
        except FileExistsError:
            raise Fail(f"-o {path}: appeared during the run; not replaced", 2) from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
