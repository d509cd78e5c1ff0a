"""`latscope-probe serve` and the benchmarks that measure against it, tcp_remote and udp_remote
(docs/probe-cli.md, "serve"; docs/mechanisms.md, "Across hosts").

The server runs on 127.0.0.1 and, as root where `ip netns` works, in a network namespace of its
own joined to the client's by a veth pair. Counts and structure only, never timings: every
client with the token is served and writes a sample file the lab reads; a wrong token, a
foreign protocol, a silent client and datagrams from anyone but the admitted client get
nothing, are logged, and the server stays up for the next client; the server ends after
--sessions, after --max-time and on SIGINT or SIGTERM, with exit 0 and no process left.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import is_root, procs_mentioning, run_probe, unexpected_stderr
from latscope import samples

TOKEN = b"a-test-token-of-32-bytes-for-you"


def token_file(d: Path, token: bytes = TOKEN, name: str = "token", mode: int = 0o600) -> Path:
    p = d / name
    p.write_bytes(token + b"\n")
    p.chmod(mode)
    return p


class Server:
    """`latscope-probe serve` as a process of its own (in a network namespace when `netns` is
    given), its log lines gathered as they come."""

    def __init__(
        self, probe: str, tok: Path, *args: str, bind: str = "127.0.0.1:0", netns: str = ""
    ) -> None:
        pre = ["ip", "netns", "exec", netns] if netns else []
        cmd = [*pre, probe, "serve", "--bind", bind, "--token-file", str(tok), *args]
        env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
        self.p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        m = re.search(r"listening on \S+:(\d+) ", self.wait_for("listening on"))
        assert m, self.lines
        self.port = int(m.group(1))

    def _read(self) -> None:
        assert self.p.stderr is not None
        for line in self.p.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, count: int = 1, timeout: float = 30) -> str:
        """The `count`th log line that holds `text`, once it is there."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            hits = [ln for ln in self.lines if text in ln]
            if len(hits) >= count:
                return hits[count - 1]
            if self.p.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.02)
        pytest.fail(f"no log line {text!r} (x{count}); the log:\n" + "\n".join(self.lines))

    def log(self, text: str) -> list[str]:
        return [ln for ln in self.lines if text in ln]

    def alive(self) -> bool:
        return self.p.poll() is None

    def end(self, timeout: float = 30) -> int:
        """Wait for the server to end by itself; its exit status."""
        rc = self.p.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return rc

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


@pytest.fixture()
def servers() -> Iterator[list[Server]]:
    """Every server a test starts, killed after it if still there (the test ends each)."""
    started: list[Server] = []
    yield started
    for s in started:
        s.kill()


def serve(servers: list[Server], probe: str, tok: Path, *args: str, **kw: str) -> Server:
    s = Server(probe, tok, *args, **kw)
    servers.append(s)
    return s


def client(
    probe: str,
    bench: str,
    out: Path,
    port: int,
    tok: Path,
    *params: str,
    host: str = "127.0.0.1",
    n: int = 300,
    netns: str = "",
) -> subprocess.CompletedProcess[str]:
    args = [bench, "-n", str(n), "--warmup", "20", "-o", str(out)]
    for p in (f"host={host}", f"port={port}", f"token_file={tok}", *params):
        args += ["-p", p]
    if netns:
        env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
        return subprocess.run(
            ["ip", "netns", "exec", netns, probe, *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    return run_probe(probe, *args)


def check_sample(out: Path, bench: str, n: int = 300) -> dict:
    """The sample file of a remote run: one timed column (rtt), the far side recorded."""
    sf = samples.load(out)
    h = sf.header
    assert h["benchmark"] == bench and h["n"] == n
    assert [c["name"] for c in h["columns"]] == ["t_start", "rtt"]
    assert h["columns"][1]["latency"] == "round_trip"
    assert (sf.ticks["rtt"] > 0).all() and sf.ticks["rtt"].shape == (n,)
    b = h["bench"]
    assert b["transport"] == bench.split("_")[0]
    assert "no clock" in b["one_way"]
    peer = b["peer"]
    assert peer["protocol"] == 1 and peer["probe_version"]
    assert peer["env"]["hostname"] and peer["env"]["kernel"]["release"]
    assert peer["pinning"] in ("unpinned",) or peer["pinning"].startswith("CPU ")
    assert TOKEN.decode() not in out.read_bytes().decode("utf-8", "replace")
    return h


# ------------------------------------------------------------------ the protocol, from Python


def proof(token: bytes, role: str, first: str, second: str) -> str:
    msg = f"latscope-serve 1 {role} {first} {second}".encode()
    return hmac.new(token, msg, hashlib.sha256).hexdigest()


class Session:
    """A client that speaks the protocol as docs/probe-cli.md gives it, with Python's hmac:
    admitted, it holds a session (tcp on its connection, or udp from `self.udp`)."""

    def __init__(self, port: int, udp: bool = False, size: int = 8, token: bytes = TOKEN) -> None:
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.s.makefile("rb")
        cn = os.urandom(32).hex()
        self.s.sendall(f"LATSCOPE-SERVE 1 HELLO {cn}\n".encode())
        w = self.f.readline().decode().split()
        assert w[:3] == ["LATSCOPE-SERVE", "1", "CHALLENGE"] and len(w[3]) == 64
        sn = w[3]
        self.s.sendall(f"PROOF {proof(token, 'client', sn, cn)}\n".encode())
        w = self.f.readline().decode().split()
        assert w[0] == "WELCOME", w
        assert w[1] == proof(token, "server", cn, sn)  # the server holds the token too
        self.info = json.loads(self.f.read(int(w[3])))
        self.udp = None
        if udp:
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.udp.bind(("127.0.0.1", 0))
            self.udp.settimeout(1.0)
            self.s.sendall(f"START udp {size} {self.udp.getsockname()[1]}\n".encode())
        else:
            self.s.sendall(f"START tcp {size}\n".encode())
        assert self.f.readline() == b"READY\n"

    def close(self) -> None:
        if self.udp:
            self.udp.close()
        self.f.close()
        self.s.close()


def silent_answer(sock: socket.socket, timeout: float = 10) -> bytes:
    """Everything the server sends before it closes the connection (a connection the server
    had not yet accepted when it closed its listener is reset instead: nothing either)."""
    sock.settimeout(timeout)
    got = b""
    while True:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            return got
        if not chunk:
            return got
        got += chunk


def no_server_left(tmp_path: Path, *servers: Server) -> None:
    for s in servers:
        assert not s.alive()
    assert procs_mentioning(str(tmp_path)) == [], "a process of this test is still running"


# ------------------------------------------------------------------ on 127.0.0.1


def test_tcp_and_udp_remote(probe: str, tmp_path: Path, servers: list[Server]) -> None:
    """Both benchmarks against one server; it exits after its two sessions (--sessions)."""
    tok = token_file(tmp_path)
    s = serve(servers, probe, tok, "--sessions", "2", "--max-time", "120", "--cpu", "0")
    for bench, params in (("tcp_remote", ()), ("udp_remote", ("cpu=0", "size=100"))):
        out = tmp_path / f"{bench}.lss"
        r = client(probe, bench, out, s.port, tok, *params)
        assert r.returncode == 0, r.stderr
        assert unexpected_stderr(r.stderr) == [], r.stderr
        h = check_sample(out, bench)
        assert h["bench"]["peer"]["pinning"] == "CPU 0"
        assert h["bench"]["server"]["port"] == s.port
    assert h["bench"]["pinning"] == "CPU 0" and h["bench"]["message_bytes"] == 100
    assert s.end() == 0
    assert len(s.log("admitted 127.0.0.1:")) == 2
    assert len(s.log("round trips; the client closed")) == 2
    assert s.log("stopping: 2 sessions served")
    assert s.log("done: 2 sessions served, 0 clients refused")
    assert not [ln for ln in s.lines if TOKEN.decode() in ln]
    no_server_left(tmp_path, s)


def test_catalogue_entries(probe: str) -> None:
    """rtt only, the lab's rtt/2 derived from it, and no quick scenario (they need a server)."""
    cat = json.loads(run_probe(probe, "--list").stdout)
    for name in ("tcp_remote", "udp_remote"):
        b = next(b for b in cat["benchmarks"] if b["name"] == name)
        assert [c["name"] for c in b["columns"]] == ["rtt"]
        assert [(d["name"], d["from"], d["divide_by"]) for d in b["derived_columns"]] == [
            ("rtt/2", "rtt", 2)
        ]
        assert {"host", "port", "size", "token_file", "cpu"} == {p["name"] for p in b["params"]}
        assert not any(sc["quick"] for sc in b["scenarios"])
        assert "mechanism" not in b  # not a ping-pong between two local parties
        # the defaults name no server: --check says what to give
        r = run_probe(probe, name, "--check")
        assert r.returncode == 2 and "host=" in r.stderr


def test_wrong_token_refused(probe: str, tmp_path: Path, servers: list[Server]) -> None:
    """A client with another token is refused and logged; the next right one is served."""
    tok = token_file(tmp_path)
    bad = token_file(tmp_path, b"another-token-that-is-long-enough", name="bad")
    s = serve(servers, probe, tok, "--sessions", "1", "--max-time", "120")
    out = tmp_path / "bad.lss"
    r = client(probe, "tcp_remote", out, s.port, bad)
    assert r.returncode == 1, r.stderr
    assert "refused this client: the token differs" in r.stderr
    assert not out.exists()
    line = s.wait_for("refused 127.0.0.1:")
    assert line.endswith("wrong token (its proof does not match)")
    assert s.alive()
    r = client(probe, "udp_remote", tmp_path / "good.lss", s.port, tok)
    assert r.returncode == 0, r.stderr
    check_sample(tmp_path / "good.lss", "udp_remote")
    assert s.end() == 0
    assert s.log("done: 1 sessions served, 1 clients refused")
    no_server_left(tmp_path, s)


def test_foreign_clients_get_nothing(probe: str, tmp_path: Path, servers: list[Server]) -> None:
    """Another protocol, a wrong proof and a silent client are closed without a byte of
    answer past the challenge; the silent one holds up nobody: a client that comes after it
    is served while it waits."""
    tok = token_file(tmp_path)
    s = serve(servers, probe, tok, "--sessions", "2", "--max-time", "120")
    http = socket.create_connection(("127.0.0.1", s.port))
    http.sendall(b"GET / HTTP/1.0\r\n\r\n")
    assert silent_answer(http) == b""
    s.wait_for("not a latscope hello")
    old = socket.create_connection(("127.0.0.1", s.port))
    old.sendall(b"LATSCOPE-SERVE 2 HELLO " + b"ab" * 32 + b"\n")
    assert silent_answer(old) == b""
    s.wait_for("protocol version 2 (this server speaks 1)")
    guess = socket.create_connection(("127.0.0.1", s.port))
    guess.sendall(b"LATSCOPE-SERVE 1 HELLO " + b"cd" * 32 + b"\n")
    challenge = guess.makefile("rb").readline()
    assert challenge.startswith(b"LATSCOPE-SERVE 1 CHALLENGE ")
    guess.sendall(b"PROOF " + b"00" * 32 + b"\n")
    assert silent_answer(guess) == b""
    s.wait_for("wrong token")
    silent = socket.create_connection(("127.0.0.1", s.port))
    r = client(probe, "tcp_remote", tmp_path / "t.lss", s.port, tok)
    assert r.returncode == 0, r.stderr
    assert silent_answer(silent) == b""
    s.wait_for("no answer within the handshake time")
    assert s.alive()
    s.p.send_signal(signal.SIGINT)
    assert s.end() == 0
    assert s.log("done: 1 sessions served, 4 clients refused")
    for c in (http, old, guess, silent):
        c.close()
    no_server_left(tmp_path, s)


def test_udp_only_to_the_admitted_client(probe: str, tmp_path: Path, servers: list[Server]) -> None:
    """No reflection: a datagram from another port or another address, or from anyone while
    no udp session runs, gets no answer and is logged; the admitted client's is echoed."""
    tok = token_file(tmp_path)
    s = serve(servers, probe, tok, "--sessions", "1", "--max-time", "120")
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stranger.settimeout(0.5)
    stranger.sendto(b"x" * 8, ("127.0.0.1", s.port))
    with pytest.raises(TimeoutError):
        stranger.recv(100)
    s.wait_for("no session is running")
    sess = Session(s.port, udp=True)
    assert sess.info["probe_version"] and sess.info["env"]["hostname"]
    assert sess.udp is not None
    sess.udp.sendto(b"y" * 8, ("127.0.0.1", s.port))
    assert sess.udp.recv(100) == b"y" * 8
    stranger.sendto(b"x" * 8, ("127.0.0.1", s.port))  # another port of the same address
    other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    other.bind(("127.0.0.2", 0))  # another address (loopback is 127.0.0.0/8)
    other.settimeout(0.5)
    other.sendto(b"z" * 8, ("127.0.0.1", s.port))
    for sock in (stranger, other):
        with pytest.raises(TimeoutError):
            sock.recv(100)
    s.wait_for("not the admitted client's address and port", count=2)
    assert s.log("from 127.0.0.2:")
    sess.udp.sendto(b"w" * 8, ("127.0.0.1", s.port))
    assert sess.udp.recv(100) == b"w" * 8
    sess.close()
    assert s.end() == 0
    assert s.log("ended: 2 round trips; the client closed its connection")
    assert s.log("3 udp datagrams dropped")
    stranger.close()
    other.close()
    no_server_left(tmp_path, s)


def test_idle_connections_without_the_token_cannot_keep_a_client_out(
    probe: str, tmp_path: Path, servers: list[Server]
) -> None:
    """200 idle connections from someone without the token, and more as the clients come, while
    a thread floods the server with connections from the same address: the connection that
    waited longest before its proof makes room for each newcomer, so a client with the token
    is still served, 3 times of 3; a nonce in upper-case hex is refused at once (the protocol
    writes lower case), not left to time out."""
    import threading

    tok = token_file(tmp_path)
    s = serve(servers, probe, tok, "--sessions", "10", "--max-time", "120")
    idle = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(200)]
    stop, flooded = threading.Event(), [0]

    def flood() -> None:  # a connect flood from one address, bounded in count and time
        end = time.monotonic() + 30
        while not stop.is_set() and flooded[0] < 20_000 and time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", s.port), timeout=1).close()
            except OSError:
                pass
            flooded[0] += 1

    t = threading.Thread(target=flood, daemon=True)
    t.start()
    try:
        for k in range(3):
            r = client(probe, "tcp_remote", tmp_path / f"t{k}.lss", s.port, tok)
            assert r.returncode == 0, r.stderr
            idle += [socket.create_connection(("127.0.0.1", s.port)) for _ in range(20)]
    finally:
        stop.set()
        t.join(timeout=10)
    assert flooded[0] > 0
    assert s.log("pushed out by a newer connection before its proof")
    upper = socket.create_connection(("127.0.0.1", s.port))
    t0 = time.monotonic()
    upper.sendall(b"LATSCOPE-SERVE 1 HELLO " + b"AB" * 32 + b"\n")
    assert silent_answer(upper) == b"" and time.monotonic() - t0 < 2.0
    s.wait_for("not a latscope hello")
    for c in (*idle, upper):
        c.close()
    s.p.send_signal(signal.SIGINT)
    assert s.end() == 0
    assert s.log("done: 3 sessions served")
    no_server_left(tmp_path, s)


def test_a_trickle_of_foreign_datagrams_keeps_nothing_alive(
    probe: str, tmp_path: Path, servers: list[Server]
) -> None:
    """A UDP session whose client stopped sending while a stranger sends a datagram every
    50 ms: SIGTERM still ends the session and the server at once."""
    tok = token_file(tmp_path)
    s = serve(servers, probe, tok, "--sessions", "1", "--max-time", "120")
    sess = Session(s.port, udp=True)
    assert sess.udp is not None
    sess.udp.sendto(b"y" * 8, ("127.0.0.1", s.port))
    assert sess.udp.recv(100) == b"y" * 8
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stop = time.monotonic() + 8.0
    sent_sigterm = None
    while time.monotonic() < stop and s.alive():
        stranger.sendto(b"x" * 8, ("127.0.0.1", s.port))
        if sent_sigterm is None and time.monotonic() > stop - 7.0:
            s.p.send_signal(signal.SIGTERM)
            sent_sigterm = time.monotonic()
        time.sleep(0.05)
    assert sent_sigterm is not None and not s.alive(), "the trickle kept the server up"
    assert time.monotonic() - sent_sigterm < 3.0  # the trickle went on past its end
    assert s.end() == 0
    assert s.log("ended: 1 round trips; the server is stopping")
    stranger.close()
    sess.close()
    no_server_left(tmp_path, s)


def test_max_time(probe: str, tmp_path: Path, servers: list[Server]) -> None:
    """--max-time ends the server, with a session running: its client is cut off."""
    s = serve(servers, probe, token_file(tmp_path), "--max-time", "5")
    sess = Session(s.port)
    assert s.end() == 0
    assert s.log("stopping: --max-time 5 s reached")
    assert s.log("ended: 0 round trips; the server is stopping")
    assert sess.s.recv(10) == b""
    sess.close()
    no_server_left(tmp_path, s)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_ends_it(probe: str, tmp_path: Path, servers: list[Server], sig: int) -> None:
    """SIGINT or SIGTERM: the running session and every handshake are closed, exit 0."""
    s = serve(servers, probe, token_file(tmp_path))
    sess = Session(s.port, udp=True)
    pending = socket.create_connection(("127.0.0.1", s.port))
    s.wait_for("started (1 of 10)")
    s.p.send_signal(sig)
    assert s.end() == 0
    assert s.log(f"stopping: signal {int(sig)}")
    assert s.log("done: 1 sessions served")
    assert silent_answer(pending) == b"" and sess.s.recv(10) == b""
    pending.close()
    sess.close()
    no_server_left(tmp_path, s)


def test_refusals(probe: str, tmp_path: Path) -> None:
    """Bad settings: one line, exit 2, before anything listens."""
    good = token_file(tmp_path)
    loose = token_file(tmp_path, name="loose", mode=0o644)
    short = token_file(tmp_path, b"short", name="short")
    link = tmp_path / "link"
    link.symlink_to(good)
    env_tok = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0", "LATSCOPE_TOKEN": ""}
    for args, words in (
        (["--token-file", str(good)], "give --bind ADDR:PORT"),
        (["--bind", "localhost:7300", "--token-file", str(good)], "numeric address"),
        (["--bind", "127.0.0.1", "--token-file", str(good)], "numeric address"),
        (["--bind", "127.0.0.1:0"], "no token"),
        (["--bind", "127.0.0.1:0", "--token-file", str(loose)], "chmod 600"),
        (["--bind", "127.0.0.1:0", "--token-file", str(short)], "fewer than 16"),
        (["--bind", "127.0.0.1:0", "--token-file", str(link)], "symbolic link"),
        (["--bind", "192.0.2.1:0", "--token-file", str(good)], "an address of this host"),
        (["--bind", "127.0.0.1:0", "--token-file", str(good), "--sessions", "0"], "--sessions"),
        (["--bind", "127.0.0.1:0", "--token-file", str(good), "--wide-open"], "unknown option"),
    ):
        r = subprocess.run(
            [probe, "serve", *args], capture_output=True, text=True, timeout=30, env=env_tok
        )
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("latscope-probe: error: "), r.stderr
        assert words in lines[0], (args, r.stderr)
    # the token from the environment, never from the command line
    env = {**env_tok, "LATSCOPE_TOKEN": TOKEN.decode()}
    p = subprocess.Popen(
        [probe, "serve", "--bind", "127.0.0.1:0", "--max-time", "1"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    _, err = p.communicate(timeout=30)
    assert p.returncode == 0 and "listening on 127.0.0.1:" in err, err
    # a client without a server, or without a token
    r = run_probe(probe, "tcp_remote", "-p", "host=127.0.0.1", "--check")
    assert r.returncode == 2 and "port=" in r.stderr
    r = run_probe(
        probe, "udp_remote", "-p", "host=127.0.0.1", "-p", "port=9", "-p", f"token_file={loose}"
    )
    assert r.returncode == 2 and "chmod 600" in r.stderr
    r = run_probe(probe, "udp_remote", "-p", "host=127.0.0.1", "-p", "port=9", "-p", "size=65508")
    assert r.returncode == 2 and "65507" in r.stderr


def test_the_lab_runs_it(
    probe: str, tmp_path: Path, servers: list[Server], cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`latscope run tcp_remote -p host= -p port= -p token_file=`: the lab needs nothing of
    its own for it (a worker process is a session); show gives rtt and rtt/2 and both sides."""
    monkeypatch.setenv("LATSCOPE_PROBE", probe)
    tok = token_file(tmp_path)
    s = serve(servers, probe, tok, "--sessions", "2", "--max-time", "120")
    params = ["-p", "host=127.0.0.1", "-p", f"port={s.port}", "-p", f"token_file={tok}"]
    r = cli("run", "tcp_remote", *params, "-n", "400", "--repeat", "2")
    assert r.returncode == 0, r.stderr
    assert s.end() == 0
    assert len(s.log("admitted")) == 2
    r = cli("ls", "--json")
    runs = json.loads(r.stdout)
    run_id = runs["runs"][0]["id"]
    r = cli("show", run_id, "--full")
    assert r.returncode == 0, r.stderr
    assert "rtt/2" in r.stdout and "oneway" not in r.stdout
    assert "echo thread unpinned" in r.stdout and "share no clock" in r.stdout
    # the report says the same: both ends, the far side as its handshake described it
    md = tmp_path / "md"
    r = cli("report", run_id, "--md", str(md), "--no-figures")
    assert r.returncode == 0, r.stderr
    text = (md / "report.md").read_text()
    assert f"to 127.0.0.1:{s.port}:" in text and "echo thread unpinned" in text
    assert "the two hosts share no clock" in text
    no_server_left(tmp_path, s)


def test_a_remote_host_is_an_arm(
    probe: str,
    tmp_path: Path,
    servers: list[Server],
    cli,
    monkeypatch: pytest.MonkeyPatch,
    short_processes: None,
) -> None:
    """`latscope ab` with tcp_remote arms: a far side cannot share the probe's process, so the
    arms alternate as short processes in shuffled rounds, one session each, and the verdict
    comes from the same paired statistic (docs/ab.md, "Arms in separate processes")."""
    monkeypatch.setenv("LATSCOPE_PROBE", probe)
    tok = token_file(tmp_path)
    # both ends on one CPU: an unpinned loopback round trip is 10 or 100 µs by where the two
    # threads land, process by process
    s = serve(servers, probe, tok, "--sessions", "400", "--max-time", "120", "--cpu", "0")
    far = f"tcp_remote host=127.0.0.1 port={s.port} token_file={tok} cpu=0"
    r = cli("ab", far, f"{far} size=512", "--time", "0.2", "--json")  # 12 rounds at least
    assert r.returncode == 0, r.stderr
    f = json.loads(r.stdout)
    assert f["mode"] == "processes" and "tcp_remote" in f["apart"]
    assert [a["params"]["size"] for a in f["arms"]] == [8, 512]
    rounds = sum(f["rounds"])
    assert rounds >= 12 and all(a["n"] > 0 for a in f["arms"])
    assert [c["column"] for c in f["comparisons"]] == ["rtt"]
    assert all(c["rounds"] == rounds for c in f["comparisons"])
    # a pilot per arm, then one process per arm and round: each a session of its own
    assert len(s.log("admitted")) == 2 + 2 * rounds
    s.p.send_signal(signal.SIGTERM)
    assert s.end() == 0
    no_server_left(tmp_path, s)


# ------------------------------------------------------------------ two network namespaces


@pytest.fixture()
def netns_pair() -> Iterator[tuple[str, str]]:
    """Two network namespaces joined by a veth pair: A 10.202.0.1, B 10.202.0.2 (root and
    `ip netns` only); removed, with their links, on every path."""
    if not is_root:
        pytest.skip("network namespaces need root")
    if shutil.which("ip") is None:
        pytest.skip("no ip command (iproute2)")
    tag = f"lsr{os.getpid()}"
    a, b = f"{tag}-a", f"{tag}-b"
    made: list[str] = []

    def ip(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)

    try:
        for ns in (a, b):
            r = ip("netns", "add", ns)
            if r.returncode != 0:
                pytest.skip(f"ip netns add does not work here: {r.stderr.strip()}")
            made.append(ns)
        for cmd in (
            ("-n", a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b),
            ("-n", a, "addr", "add", "10.202.0.1/30", "dev", "va"),
            ("-n", b, "addr", "add", "10.202.0.2/30", "dev", "vb"),
            ("-n", a, "link", "set", "va", "up"),
            ("-n", b, "link", "set", "vb", "up"),
            ("-n", a, "link", "set", "lo", "up"),
            ("-n", b, "link", "set", "lo", "up"),
        ):
            r = ip(*cmd)
            assert r.returncode == 0, f"ip {' '.join(cmd)}: {r.stderr}"
        yield a, b
    finally:
        for ns in made:
            pids = ip("netns", "pids", ns).stdout.split()
            for pid in pids:
                os.kill(int(pid), signal.SIGKILL)
            ip("netns", "del", ns)
        left = set(ip("netns", "list").stdout.split()) & set(made)
        assert not left, f"network namespaces left: {left}"


def test_between_namespaces(
    probe: str, tmp_path: Path, servers: list[Server], netns_pair: tuple[str, str]
) -> None:
    a, b = netns_pair
    tok = token_file(tmp_path)
    s = serve(
        servers, probe, tok, "--sessions", "2", "--max-time", "120", bind="10.202.0.2:0", netns=b
    )
    # from A with the wrong token: refused, logged with A's address; a datagram from A while no
    # session runs: dropped and logged
    bad = token_file(tmp_path, b"another-token-that-is-long-enough", name="bad")
    r = client(probe, "tcp_remote", tmp_path / "bad.lss", s.port, bad, host="10.202.0.2", netns=a)
    assert r.returncode == 1 and "refused" in r.stderr
    s.wait_for("refused 10.202.0.1:")
    udp = (
        "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1); "
        f"s.sendto(b'x' * 8, ('10.202.0.2', {s.port}))\n"
        "try:\n    s.recv(64); print('answered')\nexcept TimeoutError:\n    print('nothing')"
    )
    r = subprocess.run(
        ["ip", "netns", "exec", a, sys.executable, "-c", udp],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.stdout.strip() == "nothing", r.stderr
    s.wait_for("dropped a udp datagram from 10.202.0.1:")
    for bench in ("tcp_remote", "udp_remote"):
        out = tmp_path / f"{bench}.lss"
        r = client(probe, bench, out, s.port, tok, host="10.202.0.2", netns=a)
        assert r.returncode == 0, r.stderr
        h = check_sample(out, bench)
        assert h["bench"]["client_address"].startswith("10.202.0.1:")
        assert h["bench"]["server"]["address"] == f"10.202.0.2:{s.port}"
    assert s.end() == 0
    assert len(s.log("admitted 10.202.0.1:")) == 2
    no_server_left(tmp_path, s)
