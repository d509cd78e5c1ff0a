"""ZeroMQ through pyzmq (PAIR, and PUB/SUB as report 002 used it) and asyncio (a Queue between
two tasks, a loopback TCP round trip between streams).  Same interface as lp_mechs; the
asyncio mechanisms time their round trips inside the event loop (``arun``)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import struct
import tempfile
import time

from lp_mechs import Mech

_Q = struct.Struct("<q")
PRIME = -2


class Zmq(Mech):
    """The engine binds (in ``prepare``, before the responder is forked), the responder
    connects with a context of its own between processes, the same one between threads
    (inproc needs it)."""

    pubsub = False

    def prepare(self):
        import zmq

        self.zmq = zmq
        self.dir = None
        self.ctx = zmq.Context()
        tr = self.params.get("transport", "tcp")
        if self.pubsub:
            self.out = self.ctx.socket(zmq.PUB)
            self.inp = self.ctx.socket(zmq.SUB)
            self.inp.setsockopt(zmq.SUBSCRIBE, b"")
        else:
            self.out = self.inp = self.ctx.socket(zmq.PAIR)
        for s in {self.out, self.inp}:
            s.setsockopt(zmq.LINGER, 0)
        self.addrs = []
        socks = [self.out] if self.out is self.inp else [self.out, self.inp]
        for i, s in enumerate(socks):
            if tr == "tcp":
                port = s.bind_to_random_port("tcp://127.0.0.1")
                self.addrs.append(f"tcp://127.0.0.1:{port}")
            elif tr == "ipc":
                if self.dir is None:
                    self.dir = tempfile.mkdtemp(prefix="latscope-zmq-")
                a = f"ipc://{self.dir}/s{i}"
                s.bind(a)
                self.addrs.append(a)
            else:
                a = f"inproc://latscope-{os.getpid()}-{id(self)}-{i}"
                s.bind(a)
                self.addrs.append(a)

    def _peer(self):
        zmq = self.zmq
        ctx = self.ctx if self.mp is None else zmq.Context()
        if self.pubsub:
            inp = ctx.socket(zmq.SUB)
            inp.setsockopt(zmq.SUBSCRIBE, b"")
            out = ctx.socket(zmq.PUB)
            inp.connect(self.addrs[0])
            out.connect(self.addrs[1])
        else:
            inp = out = ctx.socket(zmq.PAIR)
            out.connect(self.addrs[0])
        for s in {inp, out}:
            s.setsockopt(zmq.LINGER, 0)
        return ctx, inp, out

    def _prime(self):
        """PUB/SUB drops what is published before the subscription has arrived: publish a
        priming message until the answer comes back, then drain the late ones."""
        if not self.pubsub:
            return
        zmq = self.zmq
        poller = zmq.Poller()
        poller.register(self.inp, zmq.POLLIN)
        while True:
            self.out.send(_Q.pack(PRIME))
            if poller.poll(20):
                self.inp.recv()
                break
        while poller.poll(100):
            self.inp.recv()

    def initiator(self):
        self._prime()
        send, recv, pack, unpack = self.out.send, self.inp.recv, _Q.pack, _Q.unpack

        def rt(v):
            send(pack(v))
            return unpack(recv())[0]

        return rt

    def stop(self):
        self.out.send(_Q.pack(-1))

    def serve(self):
        ctx, inp, out = self._peer()
        send, recv, pack, unpack = out.send, inp.recv, _Q.pack, _Q.unpack
        pc = time.perf_counter_ns
        try:
            while True:
                v = unpack(recv())[0]
                if v == PRIME:
                    send(pack(PRIME))
                    continue
                if v < 0:
                    return
                send(pack(pc()))
        finally:
            inp.close()
            out.close()
            if ctx is not self.ctx:
                ctx.term()

    def close(self):
        try:
            for s in {self.out, self.inp}:
                s.close(linger=0)
            self.ctx.term()
        except Exception:  # a context in a bad state: the process ends anyway
            pass
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


class ZmqPair(Zmq):
    pubsub = False


class ZmqPubSub(Zmq):
    pubsub = True


# ----------------------------------------------------------------------------------- asyncio


class AsyncioQueue(Mech):
    """Both tasks in the engine's event loop: no responder thread or process."""

    in_loop = True

    async def arun(self, measure):
        a, b = asyncio.Queue(), asyncio.Queue()
        pc = time.perf_counter_ns

        async def responder():
            while True:
                v = await a.get()
                if v < 0:
                    return
                b.put_nowait(pc())

        task = asyncio.ensure_future(responder())
        put, get = a.put_nowait, b.get

        async def rt(v):
            put(v)
            return await get()

        try:
            await measure(rt)
        finally:
            put(-1)
            await task


async def _serve_stream(reader, writer, done):
    pc = time.perf_counter_ns
    try:
        while True:
            v = _Q.unpack(await reader.readexactly(8))[0]
            if v < 0:
                break
            writer.write(_Q.pack(pc()))
    finally:
        writer.close()
        done.set()


class AsyncioTcp(Mech):
    """A listening socket on 127.0.0.1 made in ``prepare``; the server is a task of the
    engine's loop (tasks) or of a loop in the responder process (processes)."""

    in_loop = True

    def prepare(self):
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(1)
        self.port = self.lsock.getsockname()[1]

    def after_fork(self):
        self.lsock.close()

    async def _server(self):
        done = asyncio.Event()
        srv = await asyncio.start_server(lambda r, w: _serve_stream(r, w, done), sock=self.lsock)
        return srv, done

    def serve(self):  # the responder process
        async def main():
            srv, done = await self._server()
            await done.wait()
            srv.close()

        asyncio.run(main())

    async def arun(self, measure):
        srv = done = None
        if self.mode == "tasks":
            srv, done = await self._server()
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        write, readx, pack, unpack = writer.write, reader.readexactly, _Q.pack, _Q.unpack

        async def rt(v):
            write(pack(v))
            return unpack(await readx(8))[0]

        try:
            await measure(rt)
        finally:
            write(pack(-1))
            if done is not None:
                await done.wait()
            writer.close()
            if srv is not None:
                srv.close()

    def close(self):
        self.lsock.close()


CLASSES = {
    "py_zmq_pair": ZmqPair,
    "py_zmq_pubsub": ZmqPubSub,
    "py_asyncio_queue": AsyncioQueue,
    "py_asyncio_tcp": AsyncioTcp,
}
