"""The mechanisms built on the standard library: report 002's spinlock and semaphore, a
busy-wait on two counters, threading and multiprocessing hand-offs, queues, pipes and a
socket pair.

Each is a class with the driver's interface (lp_driver): ``prepare`` (in the engine, before
the responder starts), ``initiator()`` (returns ``rt(v)``: send the non-negative int ``v``,
wait for the answer, return the responder's clock read), ``stop()`` (tell the responder to
end), ``serve()`` (the responder's loop: receive, read the clock, answer it) and ``close``
(the engine's clean-up, on every path).  Between processes the responder is forked after
``prepare``, so it inherits what ``prepare`` made.
"""

from __future__ import annotations

import os
import queue
import socket
import struct
import threading
import time

_Q = struct.Struct("<q")


class Mech:
    blocking = True

    def __init__(self, mode, params, mp):
        self.mode = mode
        self.params = params
        self.mp = mp  # the multiprocessing context (fork) between processes, else None

    def prepare(self):
        pass

    def close(self):
        pass

    def after_fork(self):
        """In the engine, once the responder process runs: drop what only it uses."""

    def slots(self, k):
        """k shared int64 slots: a list between threads, shared memory between processes."""
        if self.mp is None:
            return [0] * k
        return self.mp.RawArray("q", k)


# ------------------------------------------------------------- report 002, as it was written


class Shared002(Mech):
    """data = [start, flag, latency, stop], both workers take the lock even to read it: a
    spinlock (a lock acquired by spinning) or a threading.Semaphore(1)."""

    blocking = False
    semaphore = False

    def prepare(self):
        self.data = [0, False, 0, False]
        if self.semaphore:
            lock = threading.Semaphore(1)
            self.take, self.give = lock.acquire, lock.release
        else:
            # A spinlock: Python has none, so it is a lock taken by spinning on a
            # non-blocking acquire; the spinning thread never sleeps, so it keeps the GIL.
            lock = threading.Lock()
            trylock = lock.acquire

            def take():
                while not trylock(False):
                    pass

            self.take, self.give = take, lock.release

    def initiator(self):
        data, take, give, pc = self.data, self.take, self.give, time.perf_counter_ns

        def rt(v):
            take()
            data[0] = pc()
            data[1] = True
            give()
            while True:
                take()
                flag, lat, start = data[1], data[2], data[0]
                give()
                if not flag:
                    return start + lat

        return rt

    def stop(self):
        self.take()
        self.data[3] = True
        self.data[1] = True
        self.give()

    def serve(self):
        data, take, give, pc = self.data, self.take, self.give, time.perf_counter_ns
        while True:
            take()
            if data[1]:
                if data[3]:
                    give()
                    return
                t = pc()
                data[2] = t - data[0]
                data[1] = False
            give()


class SpinLock(Shared002):
    semaphore = False


class SemLock(Shared002):
    semaphore = True


# ------------------------------------------------------------------------------ busy-waiting


class Spin(Mech):
    """[seq A, value A, seq B, value B]: a list between threads, a
    multiprocessing.shared_memory block between processes."""

    blocking = False

    def prepare(self):
        self.shm = None
        if self.mp is None:
            self.s = [0, 0, 0, 0]
        else:
            from multiprocessing import shared_memory

            self.shm = shared_memory.SharedMemory(create=True, size=32)
            self.s = self.shm.buf.cast("q")
            for i in range(4):
                self.s[i] = 0
        self.k = 0

    def initiator(self):
        s = self.s

        def rt(v):
            k = s[0] + 1
            s[1] = v
            s[0] = k
            while s[2] != k:
                pass
            return s[3]

        return rt

    def stop(self):
        self.s[1] = -1
        self.s[0] += 1

    def serve(self):
        s, pc, k = self.s, time.perf_counter_ns, 0
        while True:
            k += 1
            while s[0] != k:
                pass
            if s[1] < 0:
                return
            s[3] = pc()
            s[2] = k

    def close(self):
        if self.shm is not None:
            shm, self.shm = self.shm, None
            try:
                self.s.release()
            except (AttributeError, BufferError, ValueError):
                pass
            self.s = None
            try:
                shm.close()
            except (BufferError, OSError):
                pass
            try:
                shm.unlink()
            except OSError:
                pass


# ---------------------------------------------------------------------------- sync hand-offs


class Lock(Mech):
    def prepare(self):
        mk = self.mp.Lock if self.mp else threading.Lock
        self.a, self.b = mk(), mk()
        self.a.acquire()
        self.b.acquire()
        self.s = self.slots(2)

    def initiator(self):
        s, rel, acq = self.s, self.a.release, self.b.acquire

        def rt(v):
            s[0] = v
            rel()
            acq()
            return s[1]

        return rt

    def stop(self):
        self.s[0] = -1
        self.a.release()

    def serve(self):
        s, acq, rel, pc = self.s, self.a.acquire, self.b.release, time.perf_counter_ns
        while True:
            acq()
            if s[0] < 0:
                return
            s[1] = pc()
            rel()


class Semaphore(Lock):
    def prepare(self):
        mk = self.mp.Semaphore if self.mp else threading.Semaphore
        self.a, self.b = mk(0), mk(0)
        self.s = self.slots(2)


class Event(Mech):
    def prepare(self):
        mk = self.mp.Event if self.mp else threading.Event
        self.a, self.b = mk(), mk()
        self.s = self.slots(2)

    def initiator(self):
        s, a, b = self.s, self.a, self.b

        def rt(v):
            s[0] = v
            a.set()
            b.wait()
            b.clear()
            return s[1]

        return rt

    def stop(self):
        self.s[0] = -1
        self.a.set()

    def serve(self):
        s, a, b, pc = self.s, self.a, self.b, time.perf_counter_ns
        while True:
            a.wait()
            a.clear()
            if s[0] < 0:
                return
            s[1] = pc()
            b.set()


class Condition(Mech):
    """[turn, value, answer] under one condition: turn 1 is the responder's."""

    def prepare(self):
        self.c = self.mp.Condition() if self.mp else threading.Condition()
        self.s = self.slots(3)

    def initiator(self):
        s, c = self.s, self.c

        def rt(v):
            with c:
                s[1] = v
                s[0] = 1
                c.notify()
                while s[0] != 0:
                    c.wait()
                return s[2]

        return rt

    def stop(self):
        with self.c:
            self.s[1] = -1
            self.s[0] = 1
            self.c.notify()

    def serve(self):
        s, c, pc = self.s, self.c, time.perf_counter_ns
        with c:
            while True:
                while s[0] != 1:
                    c.wait()
                if s[1] < 0:
                    return
                s[2] = pc()
                s[0] = 0
                c.notify()


# ------------------------------------------------------------------------- queues and pipes


class Queue(Mech):
    def prepare(self):
        mk = queue.Queue
        self.a, self.b = mk(), mk()

    def initiator(self):
        put, get = self.a.put, self.b.get

        def rt(v):
            put(v)
            return get()

        return rt

    def stop(self):
        self.a.put(-1)

    def serve(self):
        get, put, pc = self.a.get, self.b.put, time.perf_counter_ns
        while True:
            if get() < 0:
                return
            put(pc())


class MpQueue(Queue):
    def prepare(self):
        import multiprocessing

        ctx = self.mp or multiprocessing.get_context()
        self.a, self.b = ctx.Queue(), ctx.Queue()

    def close(self):
        for q in (self.a, self.b):
            try:
                q.close()
                q.cancel_join_thread()
            except (OSError, ValueError, AttributeError):
                pass


class MpPipe(Mech):
    def prepare(self):
        import multiprocessing

        ctx = self.mp or multiprocessing.get_context()
        self.a, self.b = ctx.Pipe(duplex=True)

    def after_fork(self):
        self.b.close()

    def initiator(self):
        send, recv = self.a.send, self.a.recv

        def rt(v):
            send(v)
            return recv()

        return rt

    def stop(self):
        self.a.send(-1)

    def serve(self):
        send, recv, pc = self.b.send, self.b.recv, time.perf_counter_ns
        while True:
            if recv() < 0:
                return
            send(pc())

    def close(self):
        for c in (self.a, self.b):
            try:
                c.close()
            except OSError:
                pass


def _recv8(recv):
    d = recv(8)
    while len(d) < 8:
        more = recv(8 - len(d))
        if not more:
            raise EOFError("the peer closed its end")
        d += more
    return _Q.unpack(d)[0]


class SocketPair(Mech):
    def prepare(self):
        self.a, self.b = socket.socketpair()

    def after_fork(self):
        self.b.close()

    def initiator(self):
        send, recv, pack = self.a.sendall, self.a.recv, _Q.pack

        def rt(v):
            send(pack(v))
            return _recv8(recv)

        return rt

    def stop(self):
        self.a.sendall(_Q.pack(-1))

    def serve(self):
        send, recv, pack, pc = self.b.sendall, self.b.recv, _Q.pack, time.perf_counter_ns
        while True:
            if _recv8(recv) < 0:
                return
            send(pack(pc()))

    def close(self):
        self.a.close()
        self.b.close()


class Pipe(Mech):
    def prepare(self):
        self.r1, self.w1 = os.pipe()
        self.r2, self.w2 = os.pipe()

    def after_fork(self):
        for fd in (self.r1, self.w2):
            os.close(fd)
        self.r1 = self.w2 = -1

    def initiator(self):
        w, r, pack, write, read = self.w1, self.r2, _Q.pack, os.write, os.read

        def rd(k):
            return read(r, k)

        def rt(v):
            write(w, pack(v))
            return _recv8(rd)

        return rt

    def stop(self):
        os.write(self.w1, _Q.pack(-1))

    def serve(self):
        r, w, pack, write, read = self.r1, self.w2, _Q.pack, os.write, os.read
        pc = time.perf_counter_ns

        def rd(k):
            return read(r, k)

        while True:
            if _recv8(rd) < 0:
                return
            write(w, pack(pc()))

    def close(self):
        for fd in (self.r1, self.w1, self.r2, self.w2):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.r1 = self.w1 = self.r2 = self.w2 = -1


CLASSES = {
    "py_spinlock": SpinLock,
    "py_semlock": SemLock,
    "py_spin": Spin,
    "py_lock": Lock,
    "py_semaphore": Semaphore,
    "py_condition": Condition,
    "py_event": Event,
    "py_queue": Queue,
    "py_mp_queue": MpQueue,
    "py_mp_pipe": MpPipe,
    "py_socketpair": SocketPair,
    "py_pipe": Pipe,
}
