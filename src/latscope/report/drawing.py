"""A document's figures drawn to PNG, on the CPUs the report may use.

Drawing is most of a report's time (matplotlib lays out and renders each figure: about 0.3 s
a figure, six for a run of one column) and each figure is drawn alone, so `drawn` shares
them out: on Linux, forked processes and this one take the next figure to draw from a pipe
that holds every figure's number (the figures differ in cost: the next free process takes
the next one), and the children hand back their PNG bytes through a memory file (memfd: no
path anyone could redirect). A child dies with this process (PR_SET_PDEATHSIG), takes the
default action on SIGINT, SIGTERM and SIGHUP, and is killed and reaped on every path out of
`drawn`; the figures of a child that fails, or outlives its time, are drawn here instead.
Elsewhere, or for one figure, they are drawn one after another. The bytes are the same
either way.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

#: At most this many processes draw (this one included).
MAX_WORKERS = 4
#: How long the report waits for its children once it has drawn what it took: this many
#: times its own time a figure, for every figure, and at least `MIN_WAIT_S`; a child that
#: hangs (a lock a library held when it was forked) costs that, then its figures are drawn
#: here.
WAIT_FACTOR = 4.0
MIN_WAIT_S = 10.0
#: The time a figure is taken to need when the report drew none itself.
SECONDS_PER_FIGURE = 60.0

_PR_SET_PDEATHSIG = 1

Drawn = tuple[bytes, int, int]  # PNG bytes, width and height in pixels


def _draw(make: Callable[[], Any], dpi: int, scale: int = 1) -> Drawn:
    """One figure: PNG bytes at ``dpi x scale``, and its size at ``dpi`` (where it is shown;
    ``scale`` 2 is sharp on a high-density screen)."""
    from .. import plots

    fig = make()
    data = plots.to_bytes(fig, "png", dpi=dpi * scale)
    # the size drawn (the PNG header's width and height), shown at 1/scale
    width, height = (round(v / scale) for v in struct.unpack(">II", data[16:24]))
    return data, width, height


def _workers(n: int) -> int:
    if n < 2 or not hasattr(os, "fork") or not hasattr(os, "memfd_create"):
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(n, cpus, MAX_WORKERS))


def _taken(queue: int) -> Iterator[int]:
    """The figure numbers this process takes from the queue (4 bytes each) until it is
    empty: one read per number, so no two processes take the same one."""
    while len(b := os.read(queue, 4)) == 4:
        yield struct.unpack("<I", b)[0]


def _child(makers: Sequence[Callable[[], Any]], queue: int, dpi: int, scale: int, fd: int) -> None:
    """In a forked child: draw the figures it takes from ``queue`` and write the pickled
    results to ``fd``; never returns."""
    code = 1
    try:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
        data = pickle.dumps({i: _draw(makers[i], dpi, scale) for i in _taken(queue)})
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        code = 0
    finally:
        os._exit(code)


def _collect(pid: int, fd: int, deadline: float) -> dict[int, Drawn] | None:
    """A child's results once it has exited well; None when it failed or outlived
    ``deadline`` (then it is killed). The child is reaped either way."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.005)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        return None
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    try:
        got = pickle.loads(b"".join(chunks))  # our own child's, through an unnamed file
    except Exception:  # noqa: BLE001 (a child killed mid-write: its figures are drawn here)
        return None
    return got if isinstance(got, dict) else None


def drawn(
    makers: Sequence[Callable[[], Any]],
    dpi: int,
    progress: Callable[[int], None] | None = None,
    scale: int = 1,
) -> list[Drawn]:
    """Each figure ``makers[i]()`` drawn to PNG at ``dpi x scale``, its size in pixels at
    ``dpi`` (module docs), in order; ``progress(i)`` as figure i is done."""
    n = len(makers)
    out: list[Drawn | None] = [None] * n
    k = _workers(n)
    if k == 1:
        for i, make in enumerate(makers):
            out[i] = _draw(make, dpi, scale)
            if progress:
                progress(i)
        return [d for d in out if d is not None]
    children: list[tuple[int, int]] = []  # pid, memfd
    queue, w = os.pipe2(os.O_CLOEXEC)
    try:
        os.write(w, b"".join(struct.pack("<I", i) for i in range(n)))  # < 64 KiB: one write
        os.close(w)
        w = -1
        for _ in range(1, k):
            fd = os.memfd_create("latscope-figures", os.MFD_CLOEXEC)
            try:
                pid = os.fork()
            except OSError:
                os.close(fd)
                break
            if pid == 0:
                _child(makers, queue, dpi, scale, fd)
            children.append((pid, fd))
        t0, mine = time.monotonic(), 0
        for i in _taken(queue):
            out[i] = _draw(makers[i], dpi, scale)
            mine += 1
            if progress:
                progress(i)
        each = (time.monotonic() - t0) / mine if mine else SECONDS_PER_FIGURE
        deadline = time.monotonic() + max(MIN_WAIT_S, WAIT_FACTOR * each * n)
        while children:
            pid, fd = children[0]
            got = _collect(pid, fd, deadline) or {}
            children.pop(0)
            os.close(fd)
            for i, d in got.items():
                if 0 <= i < n and out[i] is None:
                    out[i] = d
                    if progress:
                        progress(i)
        for i in range(n):  # taken by a child that failed: drawn here
            if out[i] is None:
                out[i] = _draw(makers[i], dpi, scale)
                if progress:
                    progress(i)
    finally:
        for pid, fd in children:  # an error or a signal here: no child outlives it
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            os.close(fd)
        os.close(queue)
        if w >= 0:
            os.close(w)
    return [d for d in out if d is not None]
