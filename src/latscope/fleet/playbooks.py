"""The playbooks of a fleet run (running.py): the main one (on every host: the private
directory, the probe and run.sh copied there, a pairs run's servers, then every step: a probe
run and the fetch of its sample file, and last the clean-up) and the clean-up (a probe or
server still running stopped by its pid file, the private directory removed) for the hosts
the main one did not clean up. Every task is `raw`: the hosts need a shell, not Python; what
a host name, scenario or path holds reaches Ansible untemplated (`ansible.no_template`) and
the shell quoted."""

from __future__ import annotations

import json
import shlex
from collections.abc import Collection
from pathlib import Path
from typing import Any

from .. import probe
from . import ansible

#: A fleet run (running.FleetRun): its id, steps, paired steps and servers are read here.
FleetRun = Any

SETUP_TASKS = (
    "make the private directory",
    "copy the probe",
    "copy run.sh",
    "check the probe",
    "copy the token",
    "protect the token",
)
#: The task that starts a host's server (a pairs run): its failure leaves the host a client.
SERVE_TASK = "start the server"
#: The clean-up on a host (`CLEANUP`): the main playbook's last task, the clean-up playbook's
#: only one.
CLEANUP_TASK = "clean up"
#: Starts `latscope-probe serve` in the private directory, in a session of its own (so the
#: end of the connection that started it does not end it), its pid in serve.pid, and waits
#: until it says it listens; else its last lines and exit 3.
START_SERVER = """\
cd {d} || exit 2
umask 077
if command -v setsid >/dev/null 2>&1; then s=setsid; else s=; fi
$s ./latscope-probe serve --bind {bind} --token-file token --sessions {sessions} \\
  --max-time {max_time} </dev/null >serve.log 2>&1 &
echo $! >serve.pid
i=0
while [ $i -lt 100 ]; do
  grep -q ' listening on ' serve.log 2>/dev/null && {{ sed -n 1p serve.log; exit 0; }}
  kill -0 "$(cat serve.pid)" 2>/dev/null || {{ tail -n 2 serve.log >&2; exit 3; }}
  sleep 0.1 2>/dev/null || sleep 1
  i=$((i+1))
done
echo "latscope-probe serve did not say it listens within 10 s" >&2
exit 3
"""


def probe_options(sc: Any) -> list[str]:
    """The probe's command line for a scenario, without the probe and without -o."""
    full = probe.probe_args(
        sc.benchmark, sc.params, "OUT", sc.n, sc.warmup, sc.clock, workers="auto"
    )
    engine = probe.engine_command(sc.benchmark, sc.params)
    return full[len(engine) : -2]


def remote_dir(remote_tmp: str, fleet_id: str) -> str:
    """The private directory on a host (a template: the host's digest is Ansible's)."""
    return f"{remote_tmp.rstrip('/') or ''}/latscope-fleet-{fleet_id}-" + (
        "{{ (inventory_hostname | hash('sha1'))[:12] }}"
    )


def main_playbook(
    fr: FleetRun, ws: ansible.Workspace, probe_file: str, remote_tmp: str, timeout: int
) -> Path:
    d = remote_dir(remote_tmp, fr.id)
    q = shlex.quote
    tasks = [
        ansible.raw(SETUP_TASKS[0], f"umask 077 && mkdir -m 700 {d}"),
        ansible.task(
            SETUP_TASKS[1],
            "latscope_transfer",
            {
                "mode": "put",
                "src": ansible.no_template(probe_file, "--probe"),
                "dest": f"{d}/latscope-probe",
            },
        ),
        ansible.task(
            SETUP_TASKS[2],
            "latscope_transfer",
            {"mode": "put", "src": str(ansible.RUN_SH), "dest": f"{d}/run.sh"},
        ),
        ansible.raw(
            SETUP_TASKS[3], f"chmod 700 {d}/latscope-probe && {d}/latscope-probe --list >/dev/null"
        ),
    ]
    play_vars: dict[str, Any] = {}
    if fr.serve is not None:
        sv = fr.serve
        tasks.append(
            ansible.task(
                SETUP_TASKS[4],
                "latscope_transfer",
                {"mode": "put", "src": str(sv.token), "dest": f"{d}/token"},
            )
        )
        tasks.append(ansible.raw("protect the token", f"chmod 600 {d}/token"))
        # per host, from the play's variables: what a host name or address holds is never
        # templated (no_template) and never reaches the shell unquoted (numeric ADDR:PORT)
        play_vars["latscope_bind"] = {
            ansible.no_template(h, "a host name"): b for h, b in sv.binds.items()
        }
        play_vars["latscope_sessions"] = dict(sv.sessions)
        tasks.append(
            ansible.raw(
                SERVE_TASK,
                START_SERVER.format(
                    d=d,
                    bind="{{ latscope_bind[inventory_hostname] }}",
                    sessions="{{ latscope_sessions[inventory_hostname] }}",
                    max_time=sv.max_time,
                ),
                register="latscope_serve",
                failed_when=False,
                when="inventory_hostname in latscope_bind",
            )
        )
    if fr.on:
        play_vars["latscope_on"] = {
            str(i): ansible.no_template(h, "a host name") for i, h in fr.on.items()
        }
    for s in fr.steps:
        opts = " ".join(
            q(ansible.no_template(a, f"scenario {s.scenario.name}"))
            for a in probe_options(s.scenario)
        )
        when: list[str] = []
        if s.index in fr.on:
            when.append(f"inventory_hostname == latscope_on['{s.index}']")
        if s.index in fr.serve_on:
            far = ansible.no_template(fr.serve_on[s.index], "a host name")
            # its far side's server started (a host that did not answer has no record)
            when.append(f"(hostvars[{json.dumps(far)}].latscope_serve.rc | default(1)) == 0")
        tasks += _run_and_fetch(d, ws, s.index, opts, timeout, " and ".join(when))
    for ps in fr.paired_steps:  # after every round, on every host
        opts = " ".join(q(ansible.no_template(a, f"scenarios {ps.name}")) for a in ps.options)
        tasks += _run_and_fetch(d, ws, ps.index, opts, timeout)
    # the hosts still in the play clean up at its end, in the connections they have: a run
    # that went well needs no clean-up playbook (Ansible started once more, every host
    # connected to again); the hosts that did not, if any, are the clean-up playbook's
    tasks.append(_cleanup_task(fr, remote_tmp))
    play = ansible.play(f"latscope fleet {fr.id}", "all", tasks)
    if play_vars:
        play["vars"] = play_vars
    return ansible.write_playbook(ws, "fleet", [play])


def _run_and_fetch(
    d: str, ws: ansible.Workspace, i: int, opts: str, timeout: int, when: str = ""
) -> list[dict[str, Any]]:
    """The two tasks of step ``i``: the probe run with ``opts`` (quoted) by run.sh, and the
    fetch of its sample file when it succeeded."""
    return [
        ansible.raw(
            f"run {i}",
            f"/bin/sh {d}/run.sh {d} {timeout} s{i}.lss {opts}",
            register=f"r{i}",
            failed_when=False,
            timeout=timeout + 60,
            **({"when": when} if when else {}),
        ),
        ansible.task(
            f"fetch {i}",
            "latscope_transfer",
            {
                "mode": "fetch",
                "src": f"{d}/s{i}.lss",
                "dest_dir": ansible.no_template(str(ws.fetched), "the temporary directory"),
            },
            when=f"r{i}.rc is defined and r{i}.rc == 0",
        ),
    ]


#: The clean-up on a host: the probe and the server that may still run stopped by their pid
#: files (SIGINT, as Ctrl-C; the process group killed after 10 s), then the private
#: directory removed.
CLEANUP = """\
d={d}
if [ -d "$d" ]; then
  for f in probe.pid serve.pid; do
    p=$(cat "$d/$f" 2>/dev/null)
    case "$p" in
      ''|*[!0-9]*) ;;
      *) kill -INT "$p" 2>/dev/null
         i=0
         while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do
           sleep 0.2 2>/dev/null || sleep 1
           i=$((i+1))
         done
         kill -KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null ;;
    esac
  done
  rm -rf "$d"
fi
"""


def _cleanup_task(fr: FleetRun, remote_tmp: str) -> dict[str, Any]:
    d = remote_dir(remote_tmp, fr.id)
    return ansible.raw(CLEANUP_TASK, CLEANUP.format(d=d), timeout=120)


def cleanup_playbook(
    fr: FleetRun, ws: ansible.Workspace, remote_tmp: str, done: Collection[str] = ()
) -> Path:
    """The clean-up on every host but those in ``done`` (cleaned up by the main playbook:
    skipped, without connecting), as the inventory and --limit name them."""
    task = _cleanup_task(fr, remote_tmp)
    keywords: dict[str, Any] = {"ignore_unreachable": True}
    if done:
        task["when"] = "inventory_hostname not in latscope_cleaned"
        keywords["vars"] = {
            "latscope_cleaned": sorted(ansible.no_template(h, "a host name") for h in done)
        }
    p = ansible.play(f"latscope fleet {fr.id}: clean-up", "all", [task], **keywords)
    return ansible.write_playbook(ws, "cleanup", [p])
