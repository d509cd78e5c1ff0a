"""The fleet: a suite run on every host of an Ansible inventory, the sample files fetched and
kept in the store tagged with their host (docs/fleet.md).

- `running`: the fleet run (`execute`), what a host that fails or drops out becomes, a
  suite's paired runs on every host (`paired_plan`), and the clean-up on every host;
- `playbooks`: the main playbook and the clean-up's;
- `ansible`: ansible-core as the engine (found, run as a subprocess, its results read back);
- `keeping`: a fetched sample file kept as a run (`import_fetched`);
- `plugins/`: the Ansible action and callback the playbooks use, loaded by ansible-playbook,
  never imported here; `run.sh`: one probe run on a host.

ansible-core is an optional dependency (``pip install 'latscope[fleet]'``); the targets need
ssh (or any connection Ansible has), a POSIX shell and the probe, which is copied there, and
no Python.
"""

from __future__ import annotations

from .keeping import import_fetched
from .running import FleetRun, HostResult, execute

__all__ = ["FleetRun", "HostResult", "execute", "import_fetched"]
