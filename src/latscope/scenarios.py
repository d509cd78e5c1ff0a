"""Scenario files: named scenarios and matrices in TOML, validated against the probe's
catalogue before anything runs, and the interleaved order in which they run (docs/suites.md).

A file::

    name = "orwc"                 # default: the file name without .toml
    description = "..."
    repeat = 3                    # repetitions of every scenario (default 1)
    n = 10000                     # defaults for every scenario: n, warmup, clock
    warmup = 100
    interleave = "rounds"         # or "shuffle"
    seed = 42                     # optional; --seed overrides; else drawn and recorded

    [[scenario]]
    name = "orwc"
    benchmark = "file"
    params = { size = "4k" }
    note = "report 000"
    [scenario.matrix]             # cartesian product: one scenario per combination
    cache = ["warm", "drop"]
    dir = { ext4 = "/var/tmp", tmpfs = "/dev/shm" }   # label = value

gives the scenarios orwc-warm-ext4, orwc-warm-tmpfs, orwc-drop-ext4 and orwc-drop-tmpfs.

Order (`plan`): with ``interleave = "rounds"`` (the default) round r runs every scenario that
has an r-th repetition once, in a fresh random order, and rounds follow one another; so every
scenario is measured early and late, and drift over the session (a warming machine, a
background job) falls on all of them alike instead of passing for a difference between them
(report 000's cold loop ran after, and slower than, its warm loop).  ``"shuffle"`` shuffles
all (scenario x repetition) runs at once.  Both use ``random.Random(seed)``; the seed is
recorded with every run, so the order can be reproduced.
"""

from __future__ import annotations

import itertools
import random
import re
import secrets
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from . import probe
from .errors import BadInput, Unsupported
from .files import read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

BUILTIN = ("quick", "seeds", "gil")
TOP_KEYS = {"name", "description", "repeat", "seed", "n", "warmup", "clock", "interleave"}
SCENARIO_KEYS = {
    "name",
    "benchmark",
    "params",
    "matrix",
    "n",
    "warmup",
    "clock",
    "repeat",
    "note",
    "optional",
    "columns",
}
INTERLEAVE = ("rounds", "shuffle")

#: The largest scenario file read (docs/suites.md); a suite is a page of TOML, not megabytes.
FILE_LIMIT = 1 * 2**20
#: The most scenarios a suite may have (matrices expanded) and the most runs (scenarios x
#: repetitions), checked before a matrix is expanded or a plan made (docs/suites.md).
MAX_SCENARIOS = 1_000
MAX_RUNS = 10_000


@dataclass(frozen=True)
class Scenario:
    name: str
    benchmark: str
    params: dict[str, str]
    n: int | None = None
    warmup: int | None = None
    clock: str | None = None
    repeat: int = 1
    note: str | None = None
    entry: str = ""  # the [[scenario]] entry it came from (its name before the matrix)
    columns: tuple[str, ...] = ()  # columns to compare (default: all)
    needs_root: tuple[str, ...] = ()  # parameters that need root here (from the catalogue)


@dataclass(frozen=True)
class Skip:
    name: str
    benchmark: str
    why: str


@dataclass
class Suite:
    name: str
    path: Path
    description: str | None
    scenarios: list[Scenario]
    skipped: list[Skip] = field(default_factory=list)
    seed: int | None = None
    interleave: str = "rounds"
    builtin: bool = False
    claims: list[Any] = field(default_factory=list)  # [[claim]], checked by suite/claims.py


@dataclass(frozen=True)
class Step:
    index: int  # position in the order, 0-based
    scenario: Scenario
    repetition: int  # 1-based


# ------------------------------------------------------------------------------- finding files


#: Where the built-in suite "quick" comes from: the probe's catalogue, not a file.
QUICK_SOURCE = Path("latscope-probe --list")


def quick_doc() -> dict[str, Any]:
    """The quick plan as a scenario file would say it: every catalogue scenario with
    ``quick: true``, in catalogue order, with its n, warmup and note; the catalogue's top-level
    ``quick`` n and warmup where a scenario gives none.  Every scenario is optional: one this
    probe cannot run here is skipped with its reason."""
    cat = probe.catalogue()
    entries: list[dict[str, Any]] = []
    for b in cat.get("benchmarks", []):
        for sc in b.get("scenarios") or []:
            if not sc.get("quick"):
                continue
            e: dict[str, Any] = {
                "name": sc["name"],
                "benchmark": b["name"],
                "params": dict(sc.get("params") or {}),
                "optional": True,
            }
            for k in ("n", "warmup", "note"):
                if sc.get(k) is not None:
                    e[k] = sc[k]
            entries.append(e)
    doc: dict[str, Any] = {
        "name": "quick",
        "description": "The probe's quick plan: a first look at what each primitive costs "
        "here, not a comparison.",
        "repeat": 1,
        "scenario": entries,
    }
    for k in ("n", "warmup"):
        v = (cat.get("quick") or {}).get(k)
        if v is not None:
            doc[k] = v
    return doc


def quick(repeat: int | None = None) -> Suite:
    """The built-in suite "quick", generated from the catalogue (`quick_doc`); `latscope
    quick` runs the same plan."""
    return parse(QUICK_SOURCE, repeat=repeat, builtin=True, doc=quick_doc())


def builtin_path(name: str) -> Path:
    return Path(str(resources.files("latscope") / "suites" / f"{name}.toml"))


def resolve(ref: str) -> tuple[Path, bool]:
    """A suite reference: a built-in name (``BUILTIN``) first, then a path."""
    if ref in BUILTIN:
        return (QUICK_SOURCE if ref == "quick" else builtin_path(ref)), True
    p = Path(ref).expanduser()
    if not p.exists():
        raise BadInput(
            f"{ref}: no such suite file (built-in suites: {', '.join(BUILTIN)}); "
            "write one as in docs/suites.md"
        )
    if p.is_dir():
        raise BadInput(f"{ref}: is a directory; give a TOML scenario file")
    return p, False


# ------------------------------------------------------------------------------- validation


class _Err:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, where: str, msg: str) -> BadInput:
        return BadInput(f"{self.path}: {where}: {msg}")


def _as_str(v: Any) -> str | None:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, str)):
        return str(v)
    return None


def _where(message: str, params: dict[str, str], matrix_keys: set[str]) -> str:
    """The key of a scenario a probe refusal names (``size=12q: ...``), as the file says it:
    params.KEY or matrix.KEY; "params" where the refusal names none (a rule of the
    benchmark over several parameters)."""
    for k in sorted(params, key=len, reverse=True):
        if re.search(rf"(?<![\w.]){re.escape(k)}=", message):
            return f"matrix.{k}" if k in matrix_keys else f"params.{k}"
    return "params"


def _needs_root(pdef: dict[str, Any], value: str) -> bool:
    when = pdef.get("needs_root_when")
    return bool(when) and value == when


def _label(v: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.+=]+", "_", v).strip("_")
    return s or "empty"


def _pos_int(
    err: _Err, where: str, key: str, v: Any, minimum: int, maximum: int | None = None
) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise err(where, f"{key} = {_short(v)}: must be a whole number >= {minimum}")
    if maximum is not None and v > maximum:
        raise err(where, f"{key} = {v}: at most {maximum:,} (docs/suites.md)")
    return v


def _short(v: Any) -> str:
    """A value of the file as an error message shows it: its repr, cut to a line."""
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _read(path: Path, text: str | None) -> dict[str, Any]:
    """A scenario file's TOML (``text``: its text, already read): a regular file (never a
    FIFO or a device) of at most FILE_LIMIT bytes, UTF-8, TOML."""
    if text is None:
        text = read_text(path, "a scenario file (TOML)", FILE_LIMIT)
    try:
        return dict(tomllib.loads(text))
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise BadInput(f"{path}: not valid TOML: nested too deep") from None


def _probe_key(message: str, params: dict[str, str], matrix_keys: set[str]) -> str:
    """The key of a scenario a probe refusal is about: n, warmup or clock for a refusal
    of the option (``-n 10: ...``), else the parameter (`_where`)."""
    for option, key in (("-n ", "n"), ("--warmup ", "warmup"), ("--clock ", "clock")):
        if message.startswith(option):
            return key
    return _where(message, params, matrix_keys)


def parse(
    path: Path,
    text: str | None = None,
    repeat: int | None = None,
    builtin: bool = False,
    doc: dict[str, Any] | None = None,
) -> Suite:
    """Read and validate a scenario file (or ``doc``, a file's content already built);
    one BadInput line (file, scenario, key) on the
    first problem.  Optional scenarios whose benchmark is not in this probe's catalogue, or
    is unavailable here, are listed in `skipped` with the reason."""
    err = _Err(path)
    if doc is None:
        doc = _read(path, text)
    unknown = set(doc) - TOP_KEYS - {"scenario", "claim"}
    if unknown:
        raise err(
            "top level",
            f"unknown key '{sorted(unknown)[0]}' (known: {', '.join(sorted(TOP_KEYS))}, "
            "[[scenario]], [[claim]])",
        )
    cat = probe.catalogue()
    benches = {b["name"]: b for b in cat["benchmarks"]}
    clocks = {c["name"] for c in cat.get("clocks", [])} | {"auto"}

    def common(where: str, d: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        if "n" in d:
            out["n"] = _pos_int(err, where, "n", d["n"], 1)
        if "warmup" in d:
            out["warmup"] = _pos_int(err, where, "warmup", d["warmup"], 0)
        if "repeat" in d:
            out["repeat"] = _pos_int(err, where, "repeat", d["repeat"], 1, MAX_RUNS)
        if "clock" in d:
            if not isinstance(d["clock"], str) or d["clock"] not in clocks:
                raise err(
                    where,
                    f"clock = {_short(d['clock'])}: choose one of {', '.join(sorted(clocks))}",
                )
            out["clock"] = d["clock"]
        return out

    defaults = common("top level", doc, {"n": None, "warmup": None, "clock": None, "repeat": 1})
    if repeat is not None:
        if repeat < 1:
            raise BadInput(f"--repeat {repeat}: must be 1 or more")
        if repeat > MAX_RUNS:
            raise BadInput(f"--repeat {repeat}: at most {MAX_RUNS:,} (docs/suites.md)")
    interleave = doc.get("interleave", "rounds")
    if not isinstance(interleave, str) or interleave not in INTERLEAVE:
        raise err("top level", f"interleave = {_short(interleave)}: choose rounds or shuffle")
    seed = doc.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise err("top level", f"seed = {_short(seed)}: must be a whole number")
    name = doc.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise err("top level", "name must be a non-empty string")
    if not isinstance(doc.get("description", ""), str):
        raise err("top level", "description must be a string")
    entries = doc.get("scenario")
    if entries is None:
        raise err("top level", "no [[scenario]] entries")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise err("top level", "write scenarios as [[scenario]] tables")

    scenarios: list[Scenario] = []
    skipped: list[Skip] = []
    seen: dict[str, str] = {}
    planned = [0, 0]  # scenarios and runs, counted before any matrix is expanded
    for i, e in enumerate(entries):
        ename = e.get("name")
        where = f"scenario '{ename}'" if isinstance(ename, str) else f"scenario #{i + 1}"
        unknown = set(e) - SCENARIO_KEYS
        if unknown:
            raise err(
                where,
                f"unknown key '{sorted(unknown)[0]}' (known: {', '.join(sorted(SCENARIO_KEYS))})",
            )
        bench = e.get("benchmark")
        if bench is None:
            raise err(where, "benchmark: missing (name one from 'latscope list')")
        if not isinstance(bench, str):
            raise err(where, f"benchmark = {_short(bench)}: give a name from 'latscope list'")
        if ename is None:
            ename = bench
        if not isinstance(ename, str) or not ename:
            raise err(where, "name must be a non-empty string")
        opts = common(where, e, defaults)
        if repeat is not None:
            opts["repeat"] = repeat
        note = e.get("note")
        if note is not None and not isinstance(note, str):
            raise err(where, "note must be a string")
        optional = e.get("optional", False)
        if not isinstance(optional, bool):
            raise err(where, "optional must be true or false")
        params = e.get("params", {})
        matrix = e.get("matrix", {})
        if not isinstance(params, dict):
            raise err(where, "params must be a table (params = { key = value })")
        if not isinstance(matrix, dict):
            raise err(where, "matrix must be a table ([scenario.matrix])")
        b = benches.get(bench)
        if b is None:
            if optional:
                skipped.append(
                    Skip(ename, bench, f"benchmark '{bench}' is not in this probe's catalogue")
                )
                continue
            raise err(
                where,
                f"benchmark: unknown benchmark '{bench}' (known: {', '.join(benches)})",
            )
        pdefs = {p["name"]: p for p in b.get("params", [])}
        colnames = [c["name"] for c in b.get("columns", [])]
        colnames += [str(d["name"]) for d in b.get("derived_columns") or []]
        cols = e.get("columns", [])
        if not isinstance(cols, list) or not all(isinstance(c, str) for c in cols):
            raise err(where, "columns must be a list of column names")
        for k, vals in matrix.items():
            if not isinstance(vals, (dict, list)):
                raise err(where, f"matrix.{k}: give a list of values or a table label = value")
        size = 1
        for vals in matrix.values():
            size *= max(len(vals), 1)
            if size > MAX_SCENARIOS:
                break
        planned[0] += size
        planned[1] += size * opts["repeat"]
        if planned[0] > MAX_SCENARIOS:
            raise err(
                where,
                f"more than {MAX_SCENARIOS:,} scenarios in the suite (its matrices expanded); "
                "split it into several suites (docs/suites.md)",
            )
        if planned[1] > MAX_RUNS:
            raise err(
                where,
                f"more than {MAX_RUNS:,} runs in the suite (scenarios x repeat); lower repeat "
                "or split the suite (docs/suites.md)",
            )
        for c in cols:
            if c not in colnames:
                raise err(
                    where, f"columns: '{c}' is not a column of {bench} ({', '.join(colnames)})"
                )

        def check(
            key: str,
            raw: Any,
            what: str,
            bench: str = bench,
            pdefs: dict[str, Any] = pdefs,
            where: str = where,
        ) -> str:
            if key not in pdefs:
                raise err(
                    where,
                    f"{what}: unknown parameter '{key}' of {bench} (known: "
                    f"{', '.join(pdefs) or 'none'})",
                )
            v = _as_str(raw)
            if v is None:
                raise err(where, f"{what}: {raw!r} is not a string, number or boolean")
            return v

        fixed = {k: check(k, v, f"params.{k}") for k, v in params.items()}
        axes: list[list[tuple[str, str, str]]] = []  # per key: (key, label, value)
        for k, vals in matrix.items():
            if k in fixed:
                raise err(where, f"matrix.{k}: also given in params; give it in one place")
            if isinstance(vals, dict):
                items = list(vals.items())
            elif isinstance(vals, list):
                items = [(None, v) for v in vals]
            else:
                raise err(where, f"matrix.{k}: give a list of values or a table label = value")
            if not items:
                raise err(where, f"matrix.{k}: no values")
            axis = []
            for label, raw in items:
                v = check(k, raw, f"matrix.{k}")
                axis.append((k, _label(label if label is not None else v), v))
            axes.append(axis)
        if not b.get("available", True):
            why = b.get("unavailable_reason") or "unavailable here"
            skipped.append(Skip(ename, bench, f"benchmark '{bench}' is unavailable here: {why}"))
            continue
        for combo in itertools.product(*axes) if axes else [()]:
            sname = "-".join([ename] + [lab for _, lab, _ in combo])
            ps = dict(fixed)
            ps.update({k: v for k, _, v in combo})
            if sname in seen:
                raise err(where, f"name: scenario '{sname}' is already defined ({seen[sname]})")
            seen[sname] = where
            # the probe's own rules (docs/probe-cli.md, --check): one call per scenario;
            # refused as bad input: the file is wrong; not possible here (exit 3): the run
            # is skipped when its turn comes, or now where the scenario is optional
            # with the scenario's n, warmup and clock: their limits are the probe's too
            try:
                probe.check(bench, ps, n=opts["n"], warmup=opts["warmup"], clock=opts["clock"])
            except Unsupported as ex:
                if optional:
                    skipped.append(Skip(sname, bench, ex.message))
                    continue
            except BadInput as ex:
                if optional:
                    skipped.append(Skip(sname, bench, ex.message))
                    continue
                key = _probe_key(ex.message, ps, set(matrix))
                raise err(where, f"{key}: {ex.message}") from None
            roots = tuple(k for k, v in ps.items() if _needs_root(pdefs[k], v))
            scenarios.append(
                Scenario(
                    name=sname,
                    benchmark=bench,
                    params=ps,
                    n=opts["n"],
                    warmup=opts["warmup"],
                    clock=opts["clock"],
                    repeat=opts["repeat"],
                    note=note,
                    entry=ename,
                    columns=tuple(cols),
                    needs_root=roots,
                )
            )
    if not scenarios:
        raise err(
            "top level", "no scenario can run here" + (f" ({skipped[0].why})" if skipped else "")
        )
    desc = doc.get("description")
    return Suite(
        name=name,
        path=path,
        description=desc if isinstance(desc, str) else None,
        scenarios=scenarios,
        skipped=skipped,
        seed=seed,
        interleave=interleave,
        builtin=builtin,
        claims=_claims if isinstance(_claims := doc.get("claim", []), list) else [_claims],
    )


def load(ref: str, repeat: int | None = None) -> Suite:
    if ref == "quick":
        return quick(repeat)
    path, builtin = resolve(ref)
    return parse(path, repeat=repeat, builtin=builtin)


# ------------------------------------------------------------------------------- order


def new_seed() -> int:
    return secrets.randbits(32)


def plan(suite: Suite, seed: int) -> list[Step]:
    """The order of all (scenario x repetition) runs (module docs): reproducible from seed."""
    rng = random.Random(seed)
    steps: list[tuple[Scenario, int]] = []
    if suite.interleave == "shuffle":
        steps = [(s, r) for s in suite.scenarios for r in range(1, s.repeat + 1)]
        rng.shuffle(steps)
    else:
        rounds = max(s.repeat for s in suite.scenarios)
        for r in range(1, rounds + 1):
            batch = [s for s in suite.scenarios if s.repeat >= r]
            rng.shuffle(batch)
            # no scenario twice in a row across a round boundary, where that can be avoided
            if steps and len(batch) > 1 and batch[0] is steps[-1][0]:
                j = rng.randrange(1, len(batch))
                batch[0], batch[j] = batch[j], batch[0]
            steps.extend((s, r) for s in batch)
    return [Step(i, s, r) for i, (s, r) in enumerate(steps)]
