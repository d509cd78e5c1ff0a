"""Ansible callback `latscope_events`: one JSON line per task result (host, task, status, rc,
the ends of stdout and stderr, msg, dest) appended to the file $LATSCOPE_FLEET_EVENTS, which
`latscope fleet` reads as the playbook runs (docs/fleet.md). Loaded by ansible-playbook from
this directory (ANSIBLE_CALLBACK_PLUGINS); latscope never imports it."""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

#: How much of a task's stdout and stderr an event keeps (their ends).
KEEP = 4000


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "latscope_events"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        path = os.environ.get("LATSCOPE_FLEET_EVENTS")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        self._fd = os.open(path, flags, 0o600) if path else None

    def _event(self, result, status):
        if self._fd is None:
            return
        host = getattr(result, "host", None) or result._host
        task = getattr(result, "task", None) or result._task
        r = getattr(result, "result", None)
        if r is None:
            r = result._result
        ev = {"host": host.get_name(), "task": task.get_name(), "status": status}
        for k in ("rc", "msg", "dest"):
            if r.get(k) is not None:
                ev[k] = r[k] if isinstance(r[k], (int, float)) else str(r[k])
        for k in ("stdout", "stderr"):
            if r.get(k):
                ev[k] = str(r[k])[-KEEP:]
        # one write of one line: the reader never sees half an event
        os.write(self._fd, (json.dumps(ev) + "\n").encode())

    def v2_runner_on_ok(self, result):
        self._event(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._event(result, "failed")

    def v2_runner_on_unreachable(self, result):
        self._event(result, "unreachable")

    def v2_runner_on_skipped(self, result):
        self._event(result, "skipped")
