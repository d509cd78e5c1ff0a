"""A program the lab runs for an answer (``latscope-probe --check``, the Python engine under
an interpreter the user named with ``python=``), under limits: it answers within ``timeout``
seconds and in at most ``limit`` bytes on each of stdout and stderr, or it is killed with
every process it started (a session of its own) and the lab says which limit it passed, in
one line. A program that is not what it was said to be (``python=/bin/sleep``, one that
floods its output) costs a bounded time and memory, never a hang or a traceback."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import Unsupported

#: At most this many bytes are read of each of a program's stdout and stderr.
OUTPUT_LIMIT = 4 << 20


@dataclass
class Answer:
    returncode: int
    stdout: str
    stderr: str


def _kill(p: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    p.wait()


def run_bounded(
    cmd: Sequence[str], timeout: float = 60.0, limit: int = OUTPUT_LIMIT, what: str = ""
) -> Answer:
    """Run ``cmd`` and gather its output under the limits (module docs); `Unsupported`
    (exit 3) with one line when it cannot start, outlives ``timeout`` or passes ``limit``."""
    name = what or cmd[0]
    try:
        p = subprocess.Popen(
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as e:
        raise Unsupported(f"cannot run {name}: {e.strerror}") from None
    assert p.stdout is not None and p.stderr is not None
    got = {p.stdout: bytearray(), p.stderr: bytearray()}
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        for f in got:
            sel.register(f, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                _kill(p)
                raise Unsupported(f"{name} gave no answer within {timeout:g} s; it was stopped")
            for key, _ in sel.select(timeout=min(left, 1.0)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = got[key.fileobj]  # type: ignore[index]
                buf += chunk
                if len(buf) > limit:
                    _kill(p)
                    raise Unsupported(
                        f"{name} wrote more than {limit >> 20} MiB where an answer of a few "
                        "lines was expected; it was stopped"
                    )
    try:
        rc = p.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(p)
        raise Unsupported(f"{name} gave no answer within {timeout:g} s; it was stopped") from None
    finally:
        p.stdout.close()
        p.stderr.close()
    return Answer(
        rc,
        got[p.stdout].decode("utf-8", "replace"),
        got[p.stderr].decode("utf-8", "replace"),
    )


def error_line(stderr: str) -> str:
    """The last line a probe or engine wrote on stderr (its one error line), without its
    ``latscope-probe: error:`` prefix."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    msg = lines[-1] if lines else "latscope-probe failed without a message"
    for prefix in (
        "latscope-probe: error: ",
        "latscope-pyprobe: error: ",
        "latscope-probe: ",
        "latscope-pyprobe: ",
    ):
        if msg.startswith(prefix):
            return msg[len(prefix) :]
    return msg
