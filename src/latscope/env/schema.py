"""The environment's one schema (docs/store.md, "The environment"): which facts the probe
records, how its record and the lab's capture make one environment, and how the records of
older probes read in it.

The probe records what it saw from inside the run (`PROBE_FACTS`: host, kernel, CPU model,
CPUs online, the kernel's clock source, its process, whether it ran under an emulator, the
file benchmark's filesystem) in the
sample file's header, under the names below; the lab captures the rest (`snapshot.capture`)
and never reads those facts itself. A run's run.json holds the merge.
"""

import copy
from typing import Any

from .readers import Env

SCHEMA = 2

# The facts the probe records (probe/core/sfile.c, env_json), section by section; None: a
# value, not a section. "filesystem" is recorded by benchmarks that work in a directory,
# "emulation" by probes from 0.1 on (docs/ports.md): both None where the record has none.
PROBE_FACTS: dict[str, Any] = {
    "hostname": None,
    "kernel": ("sysname", "release", "version", "machine"),
    "cpu": ("model", "online_count"),
    "clocksource": ("current",),
    "process": ("pid", "uid", "euid"),
    "emulation": ("emulated", "emulator", "evidence", "built_for"),
    "filesystem": (
        "path",
        "fstype",
        "source",
        "mount_point",
        "mount_options",
        "super_options",
        "statfs_magic",
        # the block device behind it (null where there is none: tmpfs, overlay, ...)
        "device",
        "write_cache",  # its queue's: "write back" (flushed to be durable), "write through"
        "scheduler",
        "rotational",
    ),
}


def probe_facts(record: Env | None) -> Env:
    """The probe's facts from its record, every key present (None where it did not say);
    "filesystem" is None when the record has none."""
    record = record or {}
    out: Env = {}
    for key, fields in PROBE_FACTS.items():
        value = record.get(key)
        if fields is None:
            out[key] = value
        elif key in ("filesystem", "emulation") and not isinstance(value, dict):
            out[key] = None
        else:
            section = value if isinstance(value, dict) else {}
            out[key] = {f: section.get(f) for f in fields}
    return out


def merge(lab: Env, record: Env | None) -> Env:
    """One environment: the lab's capture with the probe's facts (``record``: a header's
    ``env``, in this schema) in their sections. The probe's value is the truth; the lab
    records none of these facts, so nothing is overwritten but placeholders."""
    env = copy.deepcopy(lab)
    for key, value in probe_facts(record).items():
        if isinstance(value, dict) and isinstance(env.get(key), dict):
            env[key].update(value)
        elif value is not None or key not in env:
            env[key] = value
    env["schema"] = SCHEMA
    return env


def of_header(header: Any) -> Env | None:
    """The environment a sample file's header records, in this schema; None when it records
    none. Headers written before the schema was shared (a flat ``env``: ``cpu_model``,
    ``cpus_online``, ``clocksource``, ``release``, ..., and the file benchmark's filesystem in
    ``bench.filesystem``: ``type``, ``mountpoint``, ``options``) are read into it."""
    if not isinstance(header, dict):
        return None
    env = header.get("env")
    if not isinstance(env, dict):
        return None
    if isinstance(env.get("schema"), int) and env["schema"] >= 2:
        return probe_facts(env) | {"schema": env["schema"]}
    out: Env = {
        "schema": SCHEMA,
        "hostname": env.get("hostname"),
        "kernel": {k: env.get(k) for k in ("sysname", "release", "version", "machine")},
        "cpu": {"model": env.get("cpu_model"), "online_count": env.get("cpus_online")},
        "clocksource": {"current": env.get("clocksource")},
        "process": {k: env.get(k) for k in ("pid", "uid", "euid")},
        "filesystem": None,
    }
    bench = header.get("bench")
    fs = bench.get("filesystem") if isinstance(bench, dict) else None
    if isinstance(fs, dict):
        out["filesystem"] = {
            "path": bench.get("dir"),
            "fstype": fs.get("type"),
            "source": fs.get("source"),
            "mount_point": fs.get("mountpoint"),
            "mount_options": fs.get("options"),  # mount and superblock options, together
            "super_options": None,
            "statfs_magic": fs.get("statfs_magic"),
        }
    return out


def emulator(env: Env | None) -> str | None:
    """The emulator the run's probe found itself under (the record's ``emulation``:
    "qemu-user", "wine 8.0", or "an emulator" where it did not name it); None when it ran on
    the machine itself or did not say. The one test of "emulated" every view uses."""
    em = (env or {}).get("emulation")
    if not isinstance(em, dict) or em.get("emulated") is not True:
        return None
    return em.get("emulator") if isinstance(em.get("emulator"), str) else "an emulator"


def emulation_caveat(env: Env | None) -> str | None:
    """The one line every view of a run prints when its probe found itself under a user-mode
    emulator (the record's ``emulation``); None otherwise."""
    who = emulator(env)
    if who is None:
        return None
    em = (env or {}).get("emulation") or {}
    arch = em.get("built_for") if isinstance(em.get("built_for"), str) else "target"
    if who.startswith("wine"):  # a Windows probe under Wine: Linux's kernel, not Windows'
        return f"measured under Wine ({who}): not the figures of Windows on a real machine"
    return f"measured under emulation ({who}): not the figures of a real {arch} machine"


def of_run(run_json: Any, header: Any) -> Env | None:
    """A stored run's environment: run.json's ``env`` (the merge; runs kept before the schema
    was shared hold the lab's capture, whose names are this schema's, the probe's facts among
    them), or, for a run kept without one (imported), the one its sample file records."""
    env = run_json.get("env") if isinstance(run_json, dict) else None
    if isinstance(env, dict):
        return env
    return of_header(header)
