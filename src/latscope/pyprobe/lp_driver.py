"""The ping-pong driver: the responder (a thread, a forked process, or a task of the
initiator's event loop), the initiator's timed loop in a thread of its own, and the
engine's main thread as supervisor: signals, progress lines, a peer that dies or stalls.

Everything a run makes is on the clean-up list (`CLEANUP`), run on every path: the normal
end, an error, a signal (SIGINT, SIGTERM, SIGHUP: exit 130).  The responder process ignores
SIGINT (the engine ends it) and ends itself when the engine is gone.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

from lp_record import Fail

CLEANUP = []  # callables, run last first by `cleanup`


def cleanup():
    while CLEANUP:
        f = CLEANUP.pop()
        try:
            f()
        except Exception:  # clean-up goes on whatever one step did
            pass


class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted()


def _rusage():
    import resource

    who = getattr(resource, "RUSAGE_THREAD", None)
    if who is None:
        return None
    r = resource.getrusage(who)
    return {
        "minflt": r.ru_minflt,
        "majflt": r.ru_majflt,
        "nvcsw": r.ru_nvcsw,
        "nivcsw": r.ru_nivcsw,
    }


_CPUSET_BYTES = 128  # a cpu_set_t: 1024 CPUs


def _libc_affinity():
    """sched_{get,set}affinity through libc (ctypes), for interpreters whose os module lacks
    them (PyPy 3.9); None where there is no such call."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.sched_getaffinity, libc.sched_setaffinity, ctypes
    except (ImportError, OSError, AttributeError):
        return None


def usable_cpus():
    """The CPUs this process may run on, or None where the system cannot say (not Linux)."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    calls = _libc_affinity()
    if calls is None:
        return None
    get, _, ctypes = calls
    buf = ctypes.create_string_buffer(_CPUSET_BYTES)
    if get(0, _CPUSET_BYTES, buf) != 0:
        return None
    return {i for i in range(_CPUSET_BYTES * 8) if buf.raw[i // 8] >> (i % 8) & 1}


def pin(cpu):
    """Pin the calling thread (Linux: pid 0 is the calling thread) to ``cpu``; -1: leave it."""
    if cpu < 0:
        return
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})
        return
    calls = _libc_affinity()
    if calls is None:
        raise Fail(f"cpus: this interpreter cannot pin a thread to CPU {cpu}", 3)
    _, put, ctypes = calls
    mask = bytearray(_CPUSET_BYTES)
    mask[cpu // 8] |= 1 << (cpu % 8)
    buf = ctypes.create_string_buffer(bytes(mask), _CPUSET_BYTES)
    if put(0, _CPUSET_BYTES, buf) != 0:
        err = ctypes.get_errno()
        raise Fail(f"cpus: pinning to CPU {cpu} failed: {os.strerror(err)}", 3)


def _diff(a, b):
    if a is None or b is None:
        return None
    return {k: b[k] - a[k] for k in a}


class Segment:
    """One worker's share of a run: n recorded iterations after ``warmup``."""

    def __init__(self, mech, n, warmup, inject_ns):
        self.mech = mech
        c = mech.params.get("cpus", "none")
        self.cpus = [int(x) for x in c.split(",")] if c != "none" else [-1, -1]
        self.n = n
        self.warmup = warmup
        self.inject = int(inject_ns)
        self.t0 = [0] * n
        self.rtt = [0] * n
        self.ow = [0] * n
        self.done = 0
        self.beat = -1  # warm-up iterations done (the supervisor's sign of life)
        self.error = None
        self.finished = threading.Event()
        self.rusage = {}

    # ---------------------------------------------------------------- the initiator's loop

    def _loop(self, rt):
        pc, inject = time.perf_counter_ns, self.inject
        for i in range(self.warmup):
            rt(i)
            self.beat = i
        t0s, rtts, ows = self.t0, self.rtt, self.ow
        ru = _rusage()
        for i in range(self.n):
            t0 = pc()
            if inject:
                while pc() - t0 < inject:
                    pass
            r = rt(i)
            t1 = pc()
            t0s[i] = t0
            rtts[i] = t1 - t0
            ows[i] = r - t0
            self.done = i + 1
        self.rusage["initiator"] = _diff(ru, _rusage())

    async def _aloop(self, rt):
        pc, inject = time.perf_counter_ns, self.inject
        for i in range(self.warmup):
            await rt(i)
            self.beat = i
        t0s, rtts, ows = self.t0, self.rtt, self.ow
        ru = _rusage()
        for i in range(self.n):
            t0 = pc()
            if inject:
                while pc() - t0 < inject:
                    pass
            r = await rt(i)
            t1 = pc()
            t0s[i] = t0
            rtts[i] = t1 - t0
            ows[i] = r - t0
            self.done = i + 1
        self.rusage["initiator"] = _diff(ru, _rusage())

    def _initiator(self):
        try:
            pin(self.cpus[0])
            if getattr(self.mech, "in_loop", False):
                import asyncio

                asyncio.run(self.mech.arun(self._aloop))
            else:
                rt = self.mech.initiator()
                try:
                    self._loop(rt)
                finally:
                    self.mech.stop()
        except BaseException as e:  # the supervisor reports it
            self.error = e
        finally:
            self.finished.set()

    # ------------------------------------------------------------------------ the responder

    def _responder_thread(self):
        ru = _rusage()
        try:
            pin(self.cpus[1])
            self.mech.serve()
        except BaseException as e:
            self.error = self.error or e
            self.finished.set()
        self.rusage["responder"] = _diff(ru, _rusage())

    def _child(self, wfd):
        """The responder process: ends itself when the engine is gone."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        parent = os.getppid()

        def watch():
            while True:
                time.sleep(0.25)
                if os.getppid() != parent:
                    os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
        ru = _rusage()
        try:
            pin(self.cpus[1])
            self.mech.serve()
            msg = {"rusage": _diff(ru, _rusage())}
        except BaseException as e:
            msg = {"error": f"{type(e).__name__}: {e}"}
        try:
            os.write(wfd, json.dumps(msg).encode())
        finally:
            os.close(wfd)
        sys.stdout.flush()

    # -------------------------------------------------------------------------- the run

    def run(self, supervise):
        """Run the segment; ``supervise(segment, alive)`` watches it from the main thread
        (``alive()``: whether the responder still runs)."""
        mech = self.mech
        mech.prepare()
        CLEANUP.append(mech.close)
        proc = None
        rfd = -1
        if mech.mode == "processes":
            rfd, wfd = os.pipe()
            proc = mech.mp.Process(target=self._child, args=(wfd,), daemon=True)
            proc.start()
            os.close(wfd)

            def end_child():
                if proc.is_alive():
                    proc.terminate()
                    proc.join(1)
                    if proc.is_alive():
                        proc.kill()
                proc.join(1)

            CLEANUP.append(end_child)
            CLEANUP.append(lambda: os.close(rfd))
            mech.after_fork()

            def alive():
                return proc.is_alive()
        elif mech.mode == "threads":
            rt = threading.Thread(target=self._responder_thread, daemon=True)
            rt.start()

            def alive():
                return rt.is_alive() or self.finished.is_set()
        else:

            def alive():
                return True

        it = threading.Thread(target=self._initiator, daemon=True)
        it.start()
        supervise(self, alive)
        if self.error is not None:
            e = self.error
            if isinstance(e, Fail):
                raise e
            if isinstance(e, (EOFError, ConnectionError)):
                raise Fail(f"the responder closed its end mid-run (it died?): {e}", 1)
            raise Fail(f"{mech.__class__.__name__}: {type(e).__name__}: {e}", 1)
        if proc is not None:
            proc.join(supervise.peer_timeout)
            if proc.is_alive():
                raise Fail("the responder process did not end after the last round trip", 1)
            got = _read_all(rfd)
            try:
                msg = json.loads(got or b"{}")
            except ValueError:
                msg = {}
            if msg.get("error"):
                raise Fail(f"the responder failed: {msg['error']}", 1)
            self.rusage["responder"] = msg.get("rusage")
        elif mech.mode == "threads":
            rt.join(supervise.peer_timeout)
            if rt.is_alive():
                raise Fail("the responder thread did not end after the last round trip", 1)
        cleanup()
        return self


def _read_all(fd):
    out = b""
    while True:
        b = os.read(fd, 65536)
        if not b:
            return out
        out += b


class Supervisor:
    """The main thread's watch over a segment: progress lines, a responder that died, a peer
    that completes no round trip for ``peer_timeout`` seconds."""

    def __init__(self, peer_timeout, progress_fd, total):
        self.peer_timeout = peer_timeout
        self.progress = (
            os.fdopen(progress_fd, "w", buffering=1) if progress_fd is not None else None
        )
        self.total = total
        self.base = 0  # iterations of earlier segments

    def __call__(self, seg, alive):
        last, since = None, time.monotonic()
        # the first look after 50 ms, as the C probe's first progress line comes (a run has
        # begun by then), then four a second: each look takes the GIL from the timed loop
        wait = 0.05
        while not seg.finished.wait(wait):
            wait = 0.25
            now = time.monotonic()
            if (seg.beat, seg.done) != last:
                last, since = (seg.beat, seg.done), now
                self.report(self.base + seg.done)
            if not alive():
                # the responder ends when told to, after the last round trip: gone before that,
                # it died (the initiator would wait or spin on for nothing); after it, a
                # normal end races the check
                if seg.done >= seg.n:
                    seg.finished.wait(0.5)
                if not seg.finished.is_set():
                    raise Fail("the responder died during the run", 1)
            if now - since > self.peer_timeout:
                raise Fail(
                    f"no round trip completed for {self.peer_timeout:g} s: the responder "
                    "stalled or died (--peer-timeout)",
                    1,
                )
        self.base += seg.n
        self.report(self.base)

    def report(self, done):
        if self.progress is not None:
            try:
                self.progress.write(f"progress {done} {self.total}\n")
            except OSError:
                self.progress = None
