"""The JSON files the store keeps, read and checked before use: one reader (`read_json`: the
guarded `files.read_text`, then `json.loads`, then `checked`) and one validator (`checked`:
each field of a `Spec` has the JSON type it must have), so that a damaged file is one line
(`BadFile`), never a TypeError further on.

Specs: `RUN_SPEC` (run.json), `OWNER_SPEC` (a partial run's owner.json); the trust records
(variation.py) bring their own.  Limits: `RUN_LIMIT` for run.json and the trust records,
`OWNER_LIMIT` for owner.json (docs/store.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..files import read_text

#: The largest run.json (or trust record) the store reads: a run's is a few kilobytes.
RUN_LIMIT = 4 * 2**20
#: The largest owner.json of a partial run the store reads.
OWNER_LIMIT = 64 * 2**10

NULL = type(None)
#: What a parameter or a tag may be: a JSON scalar.
SCALAR: tuple[type, ...] = (str, int, float, bool, NULL)

_NAMES = {
    str: "a string",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    dict: "an object",
    list: "a list",
    NULL: "null",
}


class BadFile(BadInput):
    """A file of the store that cannot be used: ``path`` and what is wrong (``problem``,
    without the path: the reason a scan gives when it skips the run)."""

    def __init__(self, path: str | Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = Path(path)
        self.problem = problem


@dataclass(frozen=True)
class Field:
    """What a field of a JSON object must be: one of ``kinds`` (``NULL`` for null; a whole
    number passes for a number, never true or false for a number); ``items``: the kinds of
    the values of an object or the items of a list; ``check``: a further test, returning
    what is wrong or None."""

    kinds: tuple[type, ...]
    required: bool = False
    items: tuple[type, ...] | None = None
    check: Callable[[Any], str | None] | None = None
    spec: Mapping[str, Field] | None = None  # an object's fields, checked the same way
    each: Field | None = None  # every value of an object, or item of a list


Spec = Mapping[str, Field]


def kind_of(v: Any) -> str:
    """A JSON value's kind in words ("a list", "a string", ...)."""
    for t in (bool, NULL, str, int, float, dict, list):
        if isinstance(v, t):
            return _NAMES[t]
    return type(v).__name__


def _is(v: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(v, bool):
        return bool in kinds
    if isinstance(v, int) and float in kinds:
        return True
    return isinstance(v, kinds)


def _names(kinds: tuple[type, ...]) -> str:
    """The kinds in words: "a string, a number or null"."""
    words = [_NAMES.get(k, k.__name__) for k in kinds if not (k is int and float in kinds)]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _field(name: str, v: Any, f: Field) -> str | None:
    """What is wrong with the value ``v`` of field ``name`` (a path: 'env.cpu.online'), or
    None."""
    if not _is(v, f.kinds):
        return f"'{name}' is {kind_of(v)}, not {_names(f.kinds)}"
    if isinstance(v, (dict, list)):
        pairs = v.items() if isinstance(v, dict) else enumerate(v)
        for k, x in pairs:
            if f.items is not None and not _is(x, f.items):
                return f"'{name}' holds {kind_of(x)} at {k!r}, not {_names(f.items)}"
            if f.each is not None:
                why = _field(f"{name}.{k}", x, f.each)
                if why:
                    return why
    if f.spec is not None and isinstance(v, dict):
        why = _fields(v, f.spec, f"{name}.")
        if why:
            return why
    if f.check is not None and v is not None:
        why = f.check(v)
        if why:
            return f"'{name}' {why}"
    return None


def _fields(obj: dict[str, Any], spec: Spec, prefix: str = "") -> str | None:
    for key, f in spec.items():
        if key not in obj:
            if f.required:
                return f"no '{prefix}{key}'"
            continue
        why = _field(prefix + key, obj[key], f)
        if why:
            return why
    return None


def problem(obj: Any, spec: Spec) -> str | None:
    """What is wrong with ``obj`` against ``spec`` (the first problem), or None."""
    if not isinstance(obj, dict):
        return f"{kind_of(obj)}, not a JSON object"
    return _fields(obj, spec)


def checked(obj: Any, spec: Spec, path: str | Path) -> dict[str, Any]:
    """``obj`` when it is an object whose fields are as ``spec`` says; else BadFile naming
    the first field that is not."""
    why = problem(obj, spec)
    if why:
        raise BadFile(path, why)
    return dict(obj)


def loads(text: str, path: str | Path) -> Any:
    """JSON text as Python values; BadFile (one line) for text that is not JSON or nests too
    deep for the parser."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise BadFile(path, f"not JSON ({e.msg}: line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise BadFile(path, "JSON nested too deep to read") from None
    except ValueError:  # a number of more digits than Python converts
        raise BadFile(path, "JSON with a number too long to read") from None


def read_json(path: Path, what: str, spec: Spec, limit: int = RUN_LIMIT) -> dict[str, Any]:
    """A JSON object of the store, checked: a regular file (never through a symbolic link) of
    at most ``limit`` bytes, UTF-8, JSON, with the fields ``spec`` names as it says; BadFile
    (one line) on the first problem."""
    try:
        text = read_text(path, what, limit, follow=False)
    except BadInput as e:
        prefix = f"{path}: "
        msg = e.message[len(prefix) :] if e.message.startswith(prefix) else e.message
        raise BadFile(path, msg) from None
    return checked(loads(text, path), spec, path)


def parse_utc(s: Any) -> datetime | None:
    """A time as run.json writes it (2025-01-12T18:15:30.123456Z, or ISO 8601), in UTC; None
    for anything else."""
    if not isinstance(s, str) or not s:
        return None
    for f in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(s, f).replace(tzinfo=timezone.utc)
        except ValueError:
            pass
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None


def _utc(v: Any) -> str | None:
    return None if parse_utc(v) else f"is {v!r}, not a time such as 2025-01-12T18:15:30Z"


def _section(**fields: Field) -> Field:
    """An object of the environment (or null), with these fields; others are not read."""
    return Field((dict, NULL), spec=fields)


_ANY = Field(SCALAR)
_NUMBER = Field((float, NULL))
_STRING = Field((str, NULL))
_INTS = Field((list, NULL), items=(int,))
_STRINGS = Field((list, NULL), items=(str,))

#: The environment a run.json holds (docs/store.md, "The environment"): every field the lab
#: reads of it (its display, checks and comparison), of the type it reads; the others are
#: not read and need no check.
ENV_SPEC: Spec = {
    "schema": Field((int, str, NULL)),
    "hostname": _ANY,
    "distribution": _ANY,
    "latscope_version": _ANY,
    "captured_at": _ANY,
    "python": _section(version=_ANY, implementation=_ANY),
    "kernel": Field((dict, NULL), items=SCALAR, spec={"cmdline": _STRING}),
    "cpu": _section(
        model=_ANY,
        online_count=_ANY,
        logical=Field((int, NULL)),
        online=_INTS,
        physical_cores=_ANY,
        packages=_ANY,
        smt=_ANY,
        siblings=Field((dict, NULL), each=_INTS),
        affinity=_INTS,
    ),
    "cpufreq": _section(
        per_cpu=Field(
            (dict, NULL),
            each=Field(
                (dict,),
                spec={
                    "cur_khz": _NUMBER,
                    "min_khz": _NUMBER,
                    "max_khz": _NUMBER,
                    "governor": _STRING,
                    "driver": _STRING,
                },
            ),
        ),
        governors=_STRINGS,
        driver=_ANY,
        turbo=_ANY,
        turbo_source=_STRING,
    ),
    "cpuidle": _section(
        states=Field(
            (list, NULL),
            each=Field((dict,), spec={"name": _ANY, "disabled": _ANY, "latency_us": _NUMBER}),
        )
    ),
    "clocksource": _section(current=_ANY, available=_STRINGS),
    "probe_clock": _section(name=_ANY, description=_ANY),
    "emulation": _section(emulated=Field((bool, NULL)), emulator=_ANY, built_for=_ANY),
    "tsc": Field((dict, NULL), items=SCALAR),
    "virtualization": _section(
        vm=_ANY, kind=_ANY, hints=_STRINGS, wsl=_ANY, container=_ANY, container_hints=_STRINGS
    ),
    "cgroup": _section(
        version=_ANY,
        path=_ANY,
        cpuset=_ANY,
        cpu_limit=_NUMBER,
        cpu_quota_us=_ANY,
        cpu_period_us=_ANY,
        limit_at=_ANY,
    ),
    "seccomp": _section(mode=_ANY, filters=_ANY),
    "mitigations": Field((dict, NULL), items=(str,)),
    "isolation": _section(isolated=_STRING, isolcpus=_STRING, nohz_full=_STRING, rcu_nocbs=_STRING),
    "load": _section(**{k: Field((float,), required=True) for k in ("1m", "5m", "15m")}),
    "cpu_busy": Field((dict, NULL), items=(float,)),
    # the hypervisor's share of the CPUs' time while the probe ran (env.steal_between)
    "steal": _section(share=_NUMBER, cpu_seconds=_NUMBER),
    "memory_total_bytes": _NUMBER,
    "process": Field((dict, NULL), items=SCALAR),
    "filesystem": Field((dict, NULL), items=SCALAR),
}

#: run.json: the fields the lab reads (docs/store.md); others are kept as they are.
RUN_SPEC: Spec = {
    "id": Field((str,), required=True),
    "created_utc": Field((str,), required=True, check=_utc),
    "benchmark": Field((str,), required=True),
    "params": Field((dict, NULL), items=SCALAR),
    "params_given": Field((dict, NULL), items=SCALAR),
    "clock": Field((str, NULL)),
    "command": Field((str, NULL)),
    "probe_command": Field((str, NULL)),
    "latscope_version": Field((str, NULL)),
    "probe_warnings": Field((list, NULL), items=(str,)),
    "tags": Field((dict, NULL), items=SCALAR),
    "env": Field((dict, NULL), spec=ENV_SPEC),
    "status": Field((str, NULL)),
    "host": Field((str, NULL)),
    "ab": Field((dict, NULL)),  # an interleaved run's comparison (measure.comparison.facts)
}

#: owner.json of a partial run (`Store.begin`).
OWNER_SPEC: Spec = {
    "pid": Field((int,), required=True),
    "start_ticks": Field((int, NULL)),
    "boot_id": Field((str, NULL)),
    "host": Field((str, NULL)),
    "started_utc": Field((str, NULL)),
}


def read_run(d: Path) -> dict[str, Any]:
    """A run directory's run.json, checked against `RUN_SPEC`, and its id the directory's
    name (BadFile on a problem)."""
    from .layout import RUN_FILE

    meta = read_json(d / RUN_FILE, "run metadata (run.json)", RUN_SPEC)
    if meta["id"] != d.name:
        raise BadFile(d / RUN_FILE, f"names another run ('id' is {meta['id']!r})")
    return meta
