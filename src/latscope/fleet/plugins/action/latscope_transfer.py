"""Ansible action `latscope_transfer`: a file copied to or from a host by the connection
itself (sftp or scp over ssh, or whatever the host's connection plugin does), with no module
run on the host, so the host needs no Python (docs/fleet.md).

    latscope_transfer: {mode: put, src: LOCAL_FILE, dest: REMOTE_FILE}
    latscope_transfer: {mode: fetch, src: REMOTE_FILE, dest_dir: LOCAL_DIR}

``fetch`` writes LOCAL_DIR/<digest of the inventory hostname>/<file name> and returns that
path as ``dest``. Loaded by ansible-playbook from this directory (ANSIBLE_ACTION_PLUGINS);
latscope never imports it."""

from __future__ import annotations

import hashlib
import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False  # no remote temporary directory: the paths are given
    _VALID_ARGS = frozenset(("mode", "src", "dest", "dest_dir"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        mode, src = args.get("mode"), args.get("src")
        if mode not in ("put", "fetch") or not src:
            raise AnsibleActionFail("latscope_transfer: give mode (put or fetch) and src")
        if mode == "put":
            dest = args.get("dest")
            if not dest:
                raise AnsibleActionFail("latscope_transfer: put needs dest")
            self._connection.put_file(src, dest)
        else:
            host = (task_vars or {}).get("inventory_hostname", "")
            sub = hashlib.sha1(host.encode()).hexdigest()[:16]
            d = os.path.join(args.get("dest_dir") or ".", sub)
            os.makedirs(d, mode=0o700, exist_ok=True)
            dest = os.path.join(d, os.path.basename(src))
            self._connection.fetch_file(src, dest)
            if not os.path.isfile(dest):
                raise AnsibleActionFail(f"latscope_transfer: {src} was not fetched")
        result.update(changed=True, src=src, dest=dest)
        return result
