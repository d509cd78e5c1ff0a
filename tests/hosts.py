"""Test hosts without a real fleet: each host is a network namespace on this machine with its
own `sshd` listening only on its own veth address, reached with a throwaway key.

`fleet(n, root)` makes n hosts and an Ansible inventory naming them (h1, h2, ...), and removes
everything it made on every path: the end of the block, a failure while making them, an
exception, Ctrl-C (the block's ``finally``) and the interpreter's exit (``atexit``, for a
session stopped between fixtures). Namespaces are named ``lsfleet-PID-K-I`` after the test
process and the fleet's number K in it (a process may hold several fleets at once: a
module's and a test's), so one that a killed test process left is recognised and removed by
the next one (`sweep`).

The hosts share one network, as machines on a switch do: a bridge ``lfPID-Kb`` in this
machine's namespace with 10.213.X.1/24 (X: a /24 that no address or route of this machine
uses), and for each host a namespace ``lsfleet-PID-K-I`` and a veth pair whose root end
``lfPID-K-Ir`` is a port of the bridge and whose namespace end ``lfPID-K-In`` has
10.213.X.(10+I)/24;
so the hosts reach each other directly, and this machine reaches them all (no forwarding,
no routes added). Each host runs an sshd started by ``ip netns exec`` in a mount namespace
of its own, where /run is a fresh tmpfs holding its privilege separation directory (so
nothing of this machine's /run, /etc/ssh or ~/.ssh is read or written), with its config,
host key, authorized key, log and known_hosts in the fleet's temporary directory. The hosts
share this machine's file system and process table: what a fleet run leaves on a host is
seen here (`Host.pids`, the remote temporary directory).
"""

from __future__ import annotations

import atexit
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
PREFIX = "lsfleet-"
#: The fleets made in this process, numbered (K in the module docs).
_SERIAL = itertools.count(1)


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip() or r.returncode}")
    return r


def unavailable() -> str | None:
    """Why namespace hosts cannot be made here, or None."""
    if os.geteuid() != 0:
        return "namespace hosts need root (ip netns, veth pairs, a bridge, sshd)"
    for tool in ("ip", "unshare", "ssh", "ssh-keygen"):
        if not shutil.which(tool):
            return f"namespace hosts need {tool} (iproute2, util-linux, openssh-client)"
    if not os.access(SSHD, os.X_OK):
        return "namespace hosts need sshd (Debian openssh-server)"
    probe = f"{PREFIX}{os.getpid()}-probe"
    r = _run("ip", "netns", "add", probe, check=False)
    if r.returncode != 0:
        return f"ip netns add failed: {r.stderr.strip()}"
    _run("ip", "netns", "del", probe, check=False)
    bridge = f"lf{os.getpid()}t"
    r = _run("ip", "link", "add", bridge, "type", "bridge", check=False)
    if r.returncode != 0:
        return f"ip link add type bridge failed: {r.stderr.strip()}"
    _run("ip", "link", "del", bridge, check=False)
    return None


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


#: Where `ip netns add` mounts a namespace under its name.
NETNS_RUN = Path("/run/netns")


def _ns_id(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:  # the process (or the namespace) is gone
        return None
    return st.st_dev, st.st_ino


def netns_of_pids() -> dict[int, tuple[int, int]]:
    """Every process here with the network namespace it is in (device and inode of its
    /proc/PID/ns/net): what `ip netns pids` compares, read in one pass for every host
    instead of a command per host and poll."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and (ns := _ns_id(f"/proc/{d}/ns/net")) is not None:
            out[int(d)] = ns
    return out


def netns_pids(ns: str, where: dict[int, tuple[int, int]] | None = None) -> set[int]:
    """The live processes in namespace ``ns`` (as `ip netns pids` gives them); ``where``: a
    `netns_of_pids` already read."""
    want = _ns_id(NETNS_RUN / ns)
    if want is None:
        return set()
    where = netns_of_pids() if where is None else where
    return {p for p, i in where.items() if i == want and _alive(p)}


def netns_names() -> set[str]:
    r = _run("ip", "netns", "list", check=False)
    return {line.split()[0] for line in r.stdout.splitlines() if line.strip()}


def _is_sshd(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "sshd"
    except OSError:
        return False


def _kill_sshd(ns: str) -> None:
    """Kill the sshd processes in ``ns`` (the listener and the sessions), not what runs under
    them: a shell killed half-way through root's start-up files could leave their locks (the
    hosts share this machine's home directories); the rest ends when its connection does."""
    for _ in range(50):
        pids = {p for p in netns_pids(ns) if _is_sshd(p)}
        if not pids:
            return
        for p in pids:
            with suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        time.sleep(0.05)


def _kill_all(ns: str) -> None:
    """Every process in ``ns`` gone: sshd first, the rest given 5 s to end by itself."""
    _kill_sshd(ns)
    end = time.monotonic() + 5
    while netns_pids(ns) and time.monotonic() < end:
        time.sleep(0.05)
    for _ in range(50):
        pids = netns_pids(ns)
        if not pids:
            return
        for p in pids:
            with suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        time.sleep(0.05)


def _remove_ns(ns: str, link: str | None) -> None:
    _kill_all(ns)
    if link:
        _run("ip", "link", "del", link, check=False)
    _run("ip", "netns", "del", ns, check=False)


def sweep() -> None:
    """Remove the namespace hosts (their root-side links, their bridge) of test processes
    that are gone: what a killed test process could not remove itself."""
    for ns in netns_names():
        m = re.fullmatch(rf"{PREFIX}(\d+)-(\d+)(?:-(\d+))?", ns)
        if m and not _alive(int(m.group(1))):
            pid, k, i = m.groups()
            # (a namespace named before K: lsfleet-PID-I, its link lfPIDIr)
            _remove_ns(ns, f"lf{pid}-{k}-{i}r" if i else f"lf{pid}{k}r")
    links = _run("ip", "-o", "link", "show", "type", "bridge", check=False).stdout
    for m in re.finditer(r"^\d+: (lf(\d+)(-\d+)?b)[:@]", links, re.M):
        if not _alive(int(m.group(2))):
            _run("ip", "link", "del", m.group(1), check=False)


def _subnet() -> int:
    """X of a 10.213.X.0/24 that no address or route here uses (from this process's pid,
    so that test processes in parallel pick different ones)."""
    used = _run("ip", "-o", "addr").stdout + _run("ip", "route").stdout
    used += _run("ip", "route", "show", "table", "all", check=False).stdout
    start = os.getpid() % 250
    for k in range(250):
        x = (start + k) % 250 + 1
        if f"10.213.{x}." not in used:
            return x
    raise RuntimeError("no free 10.213.X.0/24 for test hosts")


@dataclass
class Host:
    name: str  # inventory hostname
    ns: str  # network namespace
    addr: str  # its sshd's address
    link: str  # the root end of its veth pair
    dir: Path  # its sshd's config, keys and log
    sshd: subprocess.Popen[bytes] | None = None

    def pids(self) -> set[int]:
        """Every live process in the host's namespace (its sshd and what runs under it)."""
        return netns_pids(self.ns)

    def extra_pids(self, pids: set[int] | None = None) -> set[int]:
        """The processes in the host's namespace (``pids``, if read already) but its
        listening sshd."""
        keep = {self.sshd.pid} if self.sshd and self.sshd.poll() is None else set()
        return (self.pids() if pids is None else pids) - keep

    def kill_sshd(self) -> None:
        """The host drops out: its sshd and every session of it are killed."""
        _kill_sshd(self.ns)
        if self.sshd is not None:
            with suppress(subprocess.TimeoutExpired):
                self.sshd.wait(timeout=5)

    def log(self) -> str:
        """What its sshd said (start-up and log)."""
        out = []
        for name in ("start.log", "sshd.log"):
            with suppress(OSError):
                out.append((self.dir / name).read_text(errors="replace"))
        return "".join(out).strip()


@dataclass
class Fleet:
    dir: Path
    hosts: list[Host] = field(default_factory=list)
    inventory: Path | None = None
    key: Path | None = None
    bridge: str | None = None  # the hosts' network (module docs)
    closed: bool = False

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)

    def pids(self) -> dict[str, set[int]]:
        """Every live process in each host's namespace, by host (/proc read once)."""
        where = netns_of_pids()
        return {h.name: netns_pids(h.ns, where) for h in self.hosts}

    def quiet(self, timeout: float = 15.0) -> dict[str, set[int]]:
        """Wait (at most ``timeout`` s) until no host runs anything but its sshd; the
        processes still there then, by host."""
        end = time.monotonic() + timeout
        while True:
            now = self.pids()
            left = {h.name: p for h in self.hosts if h.sshd and (p := h.extra_pids(now[h.name]))}
            if not left or time.monotonic() > end:
                return left
            time.sleep(0.1)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for h in self.hosts:
            if h.sshd is not None and h.sshd.poll() is None:
                h.sshd.kill()
                with suppress(subprocess.TimeoutExpired):
                    h.sshd.wait(timeout=5)
            _remove_ns(h.ns, h.link)
        if self.bridge:
            _run("ip", "link", "del", self.bridge, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


def _keygen(path: Path) -> str:
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "latscope-test", "-f", str(path))
    return path.with_suffix(".pub").read_text().strip()


SSHD_CONFIG = """\
ListenAddress {addr}:22
HostKey {dir}/host_key
AuthorizedKeysFile {dir}/authorized_keys
PidFile none
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PermitTTY no
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding no
MaxStartups 100
MaxSessions 100
Subsystem sftp internal-sftp
SetEnv SHLVL=1
"""
# SHLVL=1: bash started by sshd then reads no ~/.bashrc (it does so only at level 1, which it
# would count up to from nothing): the test hosts are namespaces of this machine, and the
# start-up files of its root (a pyenv set up there costs 0.1-0.3 s a command) are none of
# theirs; a fleet's commands need none.


def _start_sshd(h: Host) -> None:
    conf = h.dir / "sshd_config"
    # sshd -t first: a config it refuses is a clear failure, in start.log
    inner = (
        "mount -t tmpfs -o mode=755 tmpfs /run && mkdir -m 755 /run/sshd && "
        f'{SSHD} -t -f "$1" && exec {SSHD} -D -f "$1" -E "$2"'
    )
    with open(h.dir / "start.log", "wb") as log:
        h.sshd = subprocess.Popen(
            ["ip", "netns", "exec", h.ns, "unshare", "-m", "--propagation", "private"]
            + ["sh", "-c", inner, "sshd", str(conf), str(h.dir / "sshd.log")],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    end = time.monotonic() + 20
    while True:
        if h.sshd.poll() is not None:
            raise RuntimeError(f"sshd of {h.name} ended ({h.sshd.returncode}): {h.log()}")
        with suppress(OSError), socket.create_connection((h.addr, 22), timeout=1):
            return
        if time.monotonic() > end:
            raise RuntimeError(f"sshd of {h.name} does not answer on {h.addr}:22")
        time.sleep(0.05)


def _make_host(f: Fleet, tag: str, i: int, x: int, pub: str) -> Host:
    h = Host(
        name=f"h{i}",
        ns=f"{PREFIX}{tag}-{i}",
        addr=f"10.213.{x}.{10 + i}",
        link=f"lf{tag}-{i}r",
        dir=f.dir / f"h{i}",
    )
    f.hosts.append(h)  # from here close() removes what exists of it
    h.dir.mkdir(mode=0o700)
    inner = f"lf{tag}-{i}n"
    assert len(inner) < 16, f"{inner}: longer than a network interface's name may be"
    _run("ip", "netns", "add", h.ns)
    _run("ip", "link", "add", h.link, "type", "veth", "peer", "name", inner)
    _run("ip", "link", "set", inner, "netns", h.ns)
    _run("ip", "link", "set", h.link, "master", str(f.bridge))
    _run("ip", "link", "set", h.link, "up")
    ns = ("ip", "netns", "exec", h.ns)
    _run(*ns, "ip", "addr", "add", f"{h.addr}/24", "dev", inner)
    _run(*ns, "ip", "link", "set", inner, "up")
    _run(*ns, "ip", "link", "set", "lo", "up")
    hostpub = _keygen(h.dir / "host_key")
    (h.dir / "authorized_keys").write_text(pub + "\n")
    (h.dir / "sshd_config").write_text(SSHD_CONFIG.format(addr=h.addr, dir=h.dir))
    with open(f.dir / "known_hosts", "a") as kh:
        kh.write(f"{h.addr} {' '.join(hostpub.split()[:2])}\n")
    _start_sshd(h)
    return h


def _inventory(f: Fleet) -> Path:
    """An INI inventory of the hosts: root over ssh with the fleet's key, the fleet's
    known_hosts and nothing of ~/.ssh; no tty (so sshd records no login); no Python."""
    lines = ["[fleet]"]
    lines += [f"{h.name} ansible_host={h.addr}" for h in f.hosts]
    args = " ".join(
        [
            "-F /dev/null",
            f"-o UserKnownHostsFile={f.dir}/known_hosts",
            "-o GlobalKnownHostsFile=/dev/null",
            "-o StrictHostKeyChecking=yes",
            "-o IdentitiesOnly=yes",
            "-o ConnectTimeout=5",
        ]
    )
    lines += [
        "",
        "[fleet:vars]",
        "ansible_connection=ssh",
        "ansible_user=root",
        f"ansible_ssh_private_key_file={f.key}",
        f"ansible_ssh_common_args='{args}'",
        "ansible_ssh_use_tty=false",
        # the fleet runs nothing on a host with Python: an interpreter that is not there
        # fails any task that would
        "ansible_python_interpreter=/nonexistent/python3",
        "ansible_ssh_timeout=5",
    ]
    p = f.dir / "inventory.ini"
    p.write_text("\n".join(lines) + "\n")
    return p


@contextmanager
def fleet(n: int, root: str | os.PathLike[str] | None = None) -> Iterator[Fleet]:
    """n namespace hosts h1..hn with an inventory (module docs); everything removed when the
    block ends, however it ends."""
    sweep()
    d = Path(tempfile.mkdtemp(prefix="lsfleet-", dir=root))
    f = Fleet(d)
    atexit.register(f.close)
    try:
        f.key = d / "id"
        pub = _keygen(f.key)
        x = _subnet()
        tag = f"{os.getpid()}-{next(_SERIAL)}"
        f.bridge = f"lf{tag}b"
        _run("ip", "link", "add", f.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"10.213.{x}.1/24", "dev", f.bridge)
        _run("ip", "link", "set", f.bridge, "up")
        for i in range(1, n + 1):
            _make_host(f, tag, i, x, pub)
        f.inventory = _inventory(f)
        yield f
    finally:
        f.close()
        atexit.unregister(f.close)
