"""Ansible as the fleet's engine: its programs found, its inventory read, the fleet's
playbooks written and run, their results read back as events (docs/fleet.md).

ansible-playbook runs as a subprocess in a session of its own, with the fleet's private
directory for everything it writes here (local temporary files, ssh control sockets, the
events file, its log). Ansible's Python API is not a stable interface (its maintainers say
so), and in this process it would install signal handlers and fork workers under the lab's
own signal handling; the command line is stable, and its process group can be stopped as a
whole. Two plugins of the package do what the targets must not need Python for: the action
`latscope_transfer` (files copied by the connection itself) and the callback
`latscope_events` (one JSON line per task result); every other task is `raw`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BadInput, Unsupported
from ..files import write_text

HERE = Path(__file__).resolve().parent
PLUGINS = HERE / "plugins"
RUN_SH = HERE / "run.sh"
#: How long a playbook that was told to stop may take before it is killed.
STOP_WAIT_S = 10.0
#: How long the clean-up playbook may take (an unreachable host costs its connect timeout).
CLEANUP_S = 300.0
#: The longest directory of ssh control sockets (Ansible names each with 10 characters).
CONTROL_DIR_MAX = 70
#: What a remote path may be made of: it is written into shell commands and playbooks.
SAFE_PATH = re.compile(r"/[A-Za-z0-9_./-]*")


def tool(name: str) -> str:
    """An ansible-core program: beside this Python (the venv latscope[fleet] is installed
    in), else on PATH; Unsupported (one line) where ansible-core is not installed."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found:
        return found
    raise Unsupported(
        f"latscope fleet needs ansible-core ({name} was not found): "
        "pip install 'latscope[fleet]' (or ansible-core) into latscope's environment"
    )


@dataclass
class Workspace:
    """The fleet's private directory on this machine (mode 0700): playbooks, the events file,
    ansible's log, local temporary files, ssh control sockets and the fetched files."""

    dir: Path
    control_made: bool = False

    def make_control(self) -> None:
        """The control directory, made here (mode 0700; a name already there is refused)."""
        try:
            self.control.mkdir(mode=0o700)
        except OSError as e:
            raise BadInput(f"cannot make {self.control}: {e.strerror}") from None
        self.control_made = True

    @property
    def log(self) -> Path:
        return self.dir / "ansible.log"

    @property
    def fetched(self) -> Path:
        return self.dir / "fetched"

    @property
    def control(self) -> Path:
        """ssh's control sockets: in the workspace, or where its path is too long for one
        (a socket's path holds 107 bytes, and ssh adds 17 while it makes one), in a
        directory of its own under /tmp (`close_connections` removes it)."""
        d = self.dir / "cp"
        return d if len(str(d)) <= CONTROL_DIR_MAX else Path("/tmp") / f"lsf-cp-{self.dir.name}"

    def env(self, events: Path | None = None) -> dict[str, str]:
        """ansible's environment: the user's (their ansible.cfg and inventory settings
        apply), with the fleet's plugins added and its files kept here; ``events``: the file
        the callback writes the task results to."""
        e = dict(os.environ)

        def prepend(key: str, value: str) -> None:
            e[key] = os.pathsep.join([value, *([e[key]] if e.get(key) else [])])

        prepend("ANSIBLE_ACTION_PLUGINS", str(PLUGINS / "action"))
        prepend("ANSIBLE_CALLBACK_PLUGINS", str(PLUGINS / "callback"))
        enabled = [c for c in e.get("ANSIBLE_CALLBACKS_ENABLED", "").split(",") if c.strip()]
        e["ANSIBLE_CALLBACKS_ENABLED"] = ",".join(["latscope_events", *enabled])
        e.update(
            ANSIBLE_STDOUT_CALLBACK="default",
            ANSIBLE_LOCAL_TEMP=str(self.dir / "tmp"),
            ANSIBLE_SSH_CONTROL_PATH_DIR=str(self.control),
            ANSIBLE_RETRY_FILES_ENABLED="False",
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_FORCE_COLOR="0",
        )
        if events is not None:
            e["LATSCOPE_FLEET_EVENTS"] = str(events)
        return e


def hosts(inventory: str, limit: str | None) -> list[str]:
    """The inventory hostnames ``inventory`` (with ``limit``, an Ansible host pattern) names,
    in its order (`ansible-inventory --list`); BadInput (one line) when it names none."""
    return list(inventory_hosts(inventory, limit))


def inventory_hosts(inventory: str, limit: str | None) -> dict[str, dict[str, Any]]:
    """`hosts`, each with its variables (as the inventory sets them, not templated)."""
    import tempfile

    args = [tool("ansible-inventory"), "-i", inventory, "--list"]
    if limit:
        args += ["--limit", limit]
    with tempfile.TemporaryDirectory(prefix="latscope-fleet-") as d:
        try:
            r = subprocess.run(
                args, capture_output=True, text=True, timeout=300, env=Workspace(Path(d)).env()
            )
        except subprocess.TimeoutExpired:
            raise BadInput(f"{inventory}: ansible-inventory did not answer within 300 s") from None
    said = _first_line(r.stderr)
    if r.returncode != 0:
        raise BadInput(f"{inventory}: ansible-inventory failed: {said}")
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        raise BadInput(f"{inventory}: ansible-inventory printed no inventory: {said}") from None
    out: list[str] = []
    seen_groups: set[str] = set()

    def walk(group: str) -> None:
        if group in seen_groups or not isinstance(doc.get(group), dict):
            return
        seen_groups.add(group)
        for h in doc[group].get("hosts") or []:
            if h not in out:
                out.append(str(h))
        for child in doc[group].get("children") or []:
            walk(str(child))

    walk("all")
    if not out:
        what = f" matching {limit}" if limit else ""
        raise BadInput(f"{inventory}: no hosts{what}" + (f" (ansible: {said})" if said else ""))
    meta = doc.get("_meta")
    hostvars = meta.get("hostvars") if isinstance(meta, dict) else None
    if not isinstance(hostvars, dict):
        hostvars = {}
    found = {h: v if isinstance(v := hostvars.get(h), dict) else {} for h in out}
    for h, v in found.items():
        literal_addresses(h, v)
    return found


#: The host variables latscope reads itself (a host's address): taken literally.
ADDRESS_VARS = ("latscope_address", "ansible_host")


def literal_addresses(host: str, hostvars: dict[str, Any]) -> None:
    """A host's address as the inventory gives it, never a template: Ansible evaluates a
    template in ``ansible_host`` on this machine when it connects (a ``lookup('pipe', ...)``
    runs a command here), so one is refused, before anything runs (one line)."""
    for key in ADDRESS_VARS:
        value = hostvars.get(key)
        if isinstance(value, str) and any(m in value for m in ("{{", "{%", "{#")):
            raise BadInput(
                f"inventory: host {host}: {key} is an Ansible template, which Ansible would "
                "evaluate on this machine (a lookup can run commands here); give the address "
                "itself"
            )


def _first_line(text: str) -> str:
    """The first line ansible printed that says something (a warning or an error)."""
    for ln in text.splitlines():
        ln = ln.strip()
        if ln:
            return ln
    return ""


def last_error(log: Path) -> str:
    """The last line of ansible's log that names an error, for a playbook that failed before
    any host did."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "no output"
    for ln in reversed(lines):
        if "ERROR" in ln or "error" in ln.lower():
            return ln.strip()
    return next((ln.strip() for ln in reversed(lines) if ln.strip()), "no output")


def task(name: str, action: str, args: Any, **keywords: Any) -> dict[str, Any]:
    return {"name": name, action: args, **keywords}


def raw(name: str, command: str, **keywords: Any) -> dict[str, Any]:
    """A `raw` task run by /bin/sh on the host: no module, no Python there."""
    return {"name": name, "raw": command, "args": {"executable": "/bin/sh"}, **keywords}


def play(name: str, pattern: str, tasks: list[dict[str, Any]], **keywords: Any) -> dict[str, Any]:
    return {
        "name": name,
        "hosts": pattern,
        "gather_facts": False,
        **keywords,
        "tasks": tasks,
    }


def no_template(text: str, what: str) -> str:
    """``text`` as it goes into a playbook, where Ansible templates strings: refused (one
    line) if it holds template syntax, which Ansible would evaluate."""
    for mark in ("{{", "{%", "{#"):
        if mark in text:
            raise BadInput(f"{what}: '{mark}' cannot be passed through Ansible (it is a template)")
    return text


def write_playbook(ws: Workspace, name: str, plays: list[dict[str, Any]]) -> Path:
    """A playbook in the workspace: JSON, which is YAML too."""

    p = ws.dir / f"{name}.yml"
    write_text(p, json.dumps(plays, indent=1), mode=0o600, replace=False)
    return p


@dataclass
class Playbook:
    """ansible-playbook running in a session of its own; `events()` gives the task results
    as they come (the events file read on), `stop()` ends it with its workers and ssh
    clients."""

    proc: subprocess.Popen[bytes]
    ws: Workspace
    file: Path  # its events
    _offset: int = 0
    _rest: bytes = b""
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def start(
        cls, ws: Workspace, playbook: Path, inventory: str, limit: str | None, forks: int | None
    ) -> Playbook:
        args = [tool("ansible-playbook"), "-i", inventory]
        if limit:
            args += ["--limit", limit]
        if forks:
            args += ["--forks", str(forks)]
        args.append(str(playbook))
        events = playbook.with_suffix(".events")
        log = open(ws.log, "ab")  # noqa: SIM115 (kept by the child; closed here at once)
        try:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=ws.env(events),  # in the user's directory: their ansible.cfg applies
                start_new_session=True,  # the terminal's Ctrl-C reaches the lab, not ansible
            )
        finally:
            log.close()
        return cls(proc, ws, events)

    def events(self) -> Iterator[dict[str, Any]]:
        """The task results written since the last call."""
        try:
            with open(self.file, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return
        self._offset += len(chunk)
        data = self._rest + chunk
        *lines, self._rest = data.split(b"\n")
        for ln in lines:
            with suppress(ValueError):
                ev = json.loads(ln)
                if isinstance(ev, dict):
                    yield ev

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        """SIGINT to its process group (ansible's own way out), SIGKILL after STOP_WAIT_S."""
        for sig, wait in ((signal.SIGINT, STOP_WAIT_S), (signal.SIGKILL, STOP_WAIT_S)):
            if self.proc.poll() is not None:
                break
            with suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            with suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=wait)
        with suppress(ProcessLookupError):  # what of its group may be left
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def run_to_end(
    ws: Workspace, playbook: Path, inventory: str, limit: str | None, timeout: float
) -> tuple[int, list[dict[str, Any]]]:
    """Run a playbook to its end (stopped after ``timeout`` s): its exit status and events."""
    pb = Playbook.start(ws, playbook, inventory, limit, None)
    try:
        pb.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pb.stop()
    finally:
        if pb.running():
            pb.stop()
    return pb.proc.returncode, list(pb.events())


def close_connections(ws: Workspace) -> None:
    """End the ssh master connections (ControlPersist) that ansible left in the workspace's
    control directory, so that no ssh process of the fleet outlives it; the directory goes
    with them."""
    ssh = shutil.which("ssh")
    if not ws.control_made:
        return
    for sock in ws.control.iterdir() if ssh else ():
        with suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                [ssh, "-o", f"ControlPath={sock}", "-O", "exit", "latscope-fleet"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=15,
            )
    shutil.rmtree(ws.control, ignore_errors=True)
