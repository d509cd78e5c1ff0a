"""The header of a sample file against the format's schema (docs/sample-format.md, "Checked
before any figure"): `parse_header` reads its JSON (UTF-8, no NaN or Infinity, no key twice,
bounded nesting), `header_problem` says what is wrong with it, for data of a given shape, or
None. `column_name_problem` is the rule for a column's name, which the CSV importer follows
when it names columns."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

#: Nesting of the header's JSON (the probe's is 4 deep), and the length of one string in it.
MAX_DEPTH = 32
MAX_STRING = 1 << 16
#: Nanoseconds per tick: from a femtosecond to a second.
NS_PER_TICK_RANGE = (1e-6, 1e9)
#: Names the lab shows and matches: benchmark, clock, a column's kind, unit and latency.
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+\-]{0,63}")
#: Characters a column name never holds (beside whitespace and non-printing ones): they are
#: markup or escapes in the terminal, LaTeX and shells.
NAME_FORBIDDEN = frozenset("[]\\{}\"'`")
MAX_NAME = 64
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]{1,40}")
_INT64 = 2**63


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _tree_problem(v: Any, where: str = "header", depth: int = 0) -> str | None:
    """What is wrong with a JSON value anywhere in the header: nesting deeper than
    `MAX_DEPTH`, a string that is not UTF-8 (a lone surrogate escape) or longer than
    `MAX_STRING`, a number that is not finite or an integer beyond 64 bits; or None."""
    if depth > MAX_DEPTH:
        return f"header: nested more than {MAX_DEPTH} deep"
    if isinstance(v, str):
        if len(v) > MAX_STRING:
            return f"{where}: a string of {len(v)} characters (at most {MAX_STRING})"
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            return f"{where}: a string that is not UTF-8 (a lone surrogate)"
    elif isinstance(v, float):
        if not math.isfinite(v):
            return f"{where}: a number that is not finite"
    elif isinstance(v, int) and not isinstance(v, bool):
        if not -_INT64 <= v < _INT64:
            return f"{where}: an integer beyond 64 bits"
    elif isinstance(v, dict):
        for k, x in v.items():
            at = f"{where}.{k if _PLAIN_KEY.fullmatch(k) else json.dumps(k)[:40]}"
            why = _tree_problem(k, where, depth + 1) or _tree_problem(x, at, depth + 1)
            if why:
                return why
    elif isinstance(v, list):
        for i, x in enumerate(v):
            why = _tree_problem(x, f"{where}[{i}]", depth + 1)
            if why:
                return why
    return None


def column_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a column (it is shown, matched and used in file and frame
    column names): not a string of 1 to `MAX_NAME` printing characters without whitespace and
    without any of ``[]\\{}"'` ``; or None."""
    if not isinstance(name, str) or not name:
        return "a column name must be a non-empty string"
    if len(name) > MAX_NAME:
        return f"column name '{name[:20]}…' is longer than {MAX_NAME} characters"
    bad = [c for c in name if c in NAME_FORBIDDEN or c.isspace() or not c.isprintable()]
    if bad:
        return f"column name {name!r} holds {bad[0]!r}, which a column name may not"
    return None


def _typed(h: Mapping[str, Any], key: str, ok: Any, what: str, where: str = "") -> str | None:
    """A problem when ``h[key]`` is present (and not null) but ``ok(value)`` is false."""
    v = h.get(key)
    if v is None or ok(v):
        return None
    return f"{where}{key} must be {what} (it is {json.dumps(v)[:40]})"


def _nonneg(v: Any) -> bool:
    return _is_num(v) and v >= 0


#: A clock's step, read cost and resolution (ns) lie below a second, its calibration (ms)
#: below an hour: a header that says more is damaged (a step of 1e308 ns would overflow
#: what is worked out from it).
CLOCK_NS_MAX = 1e9
CALIBRATION_MS_MAX = 3.6e6


def _obj(v: Any) -> bool:
    return isinstance(v, dict)


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _params(v: Any) -> bool:
    """An object of values: texts, numbers, true/false or null (the probe's parameters)."""
    return _obj(v) and all(x is None or isinstance(x, (str, int, float)) for x in v.values())


def _texts(v: Any) -> bool:
    return _obj(v) and all(x is None or _text(x) for x in v.values())


def _token(v: Any) -> bool:
    return isinstance(v, str) and _TOKEN.fullmatch(v) is not None


#: An arms run's index columns (format version 3), after the durations, in this order.
INDEX_COLUMNS = ("arm", "block", "round")
#: The arms of one run (the probe's --arm, 2 to 8).
ARMS_RANGE = (2, 8)


def _columns_problem(cols: Any, ncols: int, version: int = 2) -> str | None:
    if not isinstance(cols, list):
        return "columns must be a list"
    if len(cols) != ncols:
        return f"the header names {len(cols)} columns but the data has {ncols}"
    # version 3: an arms run's index columns (arm, block, round) follow the durations
    nindex = 0
    if version >= 3:
        while nindex < len(cols) and isinstance(cols[-1 - nindex], dict):
            if cols[-1 - nindex].get("kind") != "index":
                break
            nindex += 1
        if nindex:
            names = [c.get("name") for c in cols[len(cols) - nindex :]]
            if tuple(names) != INDEX_COLUMNS:
                want = ", ".join(INDEX_COLUMNS)
                return f"the index columns must be {want}, in this order, after the durations"
    cols = cols[: len(cols) - nindex]
    seen: set[str] = set()
    for i, c in enumerate(cols):
        if not isinstance(c, dict):
            return f"columns[{i}] must be an object"
        why = column_name_problem(c.get("name"))
        if why:
            return f"columns[{i}]: {why}"
        name = c["name"]
        if name in seen:
            return f"columns[{i}]: column '{name}' appears twice"
        seen.add(name)
        kind = c.get("kind")
        if i == 0 and (name != "t_start" or kind != "time"):
            return "columns[0] must be t_start, of kind time"
        if i > 0 and kind != "duration":
            if kind == "index" and version >= 3:
                return f"columns[{i}] ({name}): an index column before a duration"
            return f"columns[{i}] ({name}): kind must be duration"
        for key, ok, what in (
            ("unit", _token, "a name"),
            ("latency", _token, "a name"),
            ("context_switches", lambda v: _is_int(v) and v >= 0, "a count"),
            ("description", lambda v: isinstance(v, str), "text"),
        ):
            why = _typed(c, key, ok, what, f"columns[{i}].")
            if why:
                return why
    if len(cols) < 2:
        return "no timed columns (only t_start)"
    return None


def index_columns(header: Mapping[str, Any]) -> list[str]:
    """The names of a header's index columns (an arms run's arm, block and round), in file
    order; none for a run of one benchmark."""
    cols = header.get("columns") or []
    return [c["name"] for c in cols if isinstance(c, dict) and c.get("kind") == "index"]


def _counts(v: Any) -> bool:
    return isinstance(v, list) and all(_is_int(x) and x >= 0 for x in v)


def _arm_problem(a: Any, i: int, nworkers: int | None) -> str | None:
    where = f"arms[{i}]"
    if not isinstance(a, dict):
        return f"{where} must be an object"
    if not _token(a.get("benchmark")):
        return f"{where}.benchmark must be a name"
    if not _params(a.get("params")):
        return f"{where}.params must be an object of values"
    if not (_is_int(a.get("n")) and a["n"] >= 0):
        return f"{where}.n must be a count"
    for key, ok, what in (
        ("inject_ns", _nonneg, "a number ≥ 0"),
        ("warmup", lambda v: _is_int(v) and v >= 0, "a count"),
        ("given", lambda v: isinstance(v, list) and all(_text(x) for x in v), "a list of texts"),
        ("word", _text, "text"),
        ("bench", _obj, "an object"),
        ("filesystem", _obj, "an object"),
        ("columns", lambda v: isinstance(v, list) and all(_obj(x) for x in v), "a list of objects"),
    ):
        why = _typed(a, key, ok, what, f"{where}.")
        if why:
            return why
    for key in ("block_iterations", "discard_per_block"):
        v = a.get(key)
        if not _counts(v) or (nworkers is not None and len(v) != nworkers):
            return f"{where}.{key} must be a count per worker"
    ru = a.get("timed_rusage")
    if ru is not None:
        if not isinstance(ru, list) or (nworkers is not None and len(ru) != nworkers):
            return f"{where}.timed_rusage must be one object per worker"
        for w, roles in enumerate(ru):
            if not isinstance(roles, dict) or not all(
                isinstance(c, dict) and all(x is None or _is_int(x) for x in c.values())
                for c in roles.values()
            ):
                return f"{where}.timed_rusage[{w}] must map roles to integer counters"
    return None


def _interleave_problem(il: Any, narms: int, nworkers: int | None) -> str | None:
    if not isinstance(il, dict):
        return "interleave must be an object"
    if not (_is_int(il.get("seed")) and il["seed"] >= 0):
        return "interleave.seed must be a whole number ≥ 0"
    for key in ("time_s", "block_ms"):
        if not (_is_num(il.get(key)) and il[key] > 0):
            return f"interleave.{key} must be a number > 0"
    rounds = il.get("rounds")
    if not _counts(rounds) or not rounds or (nworkers is not None and len(rounds) != nworkers):
        return "interleave.rounds must be a count per worker"
    order = il.get("order")
    if not isinstance(order, list) or len(order) != len(rounds):
        return "interleave.order must hold one list of rounds per worker"
    every = list(range(narms))
    for w, (rs, nr) in enumerate(zip(order, rounds, strict=True)):
        if not isinstance(rs, list) or len(rs) != nr:
            return f"interleave.order[{w}] must hold its worker's {nr} rounds"
        for r, o in enumerate(rs):
            if not isinstance(o, list) or sorted(x if _is_int(x) else -1 for x in o) != every:
                return f"interleave.order[{w}][{r}] must run every arm once"
    return None


def _arms_problem(header: Mapping[str, Any], n: int) -> str | None:
    """An arms run's header (format version 3): its arms and interleave, against n."""
    arms = header.get("arms")
    lo, hi = ARMS_RANGE
    if not isinstance(arms, list) or not lo <= len(arms) <= hi:
        return f"arms must be a list of {lo} to {hi} objects (an arms run's index columns)"
    ws = header.get("workers")
    nworkers = len(ws) if isinstance(ws, list) else None
    for i, a in enumerate(arms):
        why = _arm_problem(a, i, nworkers)
        if why:
            return why
    total = sum(a["n"] for a in arms)
    if total != n:
        return f"the arms' n add up to {total}, not the header's n ({n})"
    return _interleave_problem(header.get("interleave"), len(arms), nworkers)


def index_problem(header: Mapping[str, Any], index: Mapping[str, Any]) -> str | None:
    """What is wrong with an arms run's index columns (int64 arrays by name) against its
    header, which `header_problem` accepted: every arm within the header's arms, each holding
    as many rows as its n says, block and round numbers not negative; or None."""
    import numpy as np

    if not index:
        return None
    arms = header["arms"]
    arm = np.asarray(index["arm"])
    if arm.size and (int(arm.min()) < 0 or int(arm.max()) >= len(arms)):
        return f"an arm index outside 0..{len(arms) - 1} (the header has {len(arms)} arms)"
    counts = np.bincount(arm, minlength=len(arms)) if arm.size else np.zeros(len(arms), int)
    for k, a in enumerate(arms):
        if int(counts[k]) != a["n"]:
            return f"arm {k} holds {int(counts[k])} rows, its n says {a['n']}"
    for name in ("block", "round"):
        v = np.asarray(index[name])
        if v.size and int(v.min()) < 0:
            return f"a negative {name} number"
    return None


def _clock_problem(clk: Any) -> str | None:
    if not isinstance(clk, dict):
        return "clock must be an object"
    if not _token(clk.get("name")):
        return "clock.name must be a name"
    npt = clk.get("ns_per_tick")
    lo, hi = NS_PER_TICK_RANGE
    if not _is_num(npt) or not lo <= npt <= hi:
        shown = json.dumps(npt)[:40]
        return f"clock.ns_per_tick must be a number from {lo:g} to {hi:g} (it is {shown})"
    for key in ("step_ns", "overhead_ns", "resolution_ns", "getres_ns", "calibration_ms"):
        top = CALIBRATION_MS_MAX if key == "calibration_ms" else CLOCK_NS_MAX
        why = _typed(
            clk,
            key,
            lambda v, top=top: _nonneg(v) and v <= top,
            f"a number from 0 to {top:g}",
            "clock.",
        )
        if why:
            return why
    for key, ok, what in (
        ("calibration_ppm", _is_num, "a number"),
        ("tsc_invariant", lambda v: isinstance(v, bool), "true or false"),
        ("resolution_guessed", lambda v: isinstance(v, bool), "true or false"),
        ("calibrated_against", lambda v: isinstance(v, str), "text"),
        ("resolution_note", lambda v: isinstance(v, str), "text"),
    ):
        why = _typed(clk, key, ok, what, "clock.")
        if why:
            return why
    return None


def _workers_problem(ws: Any, n: int) -> str | None:
    if not isinstance(ws, list) or not ws:
        return "workers must be a non-empty list"
    for i, w in enumerate(ws):
        if not isinstance(w, dict):
            return f"workers[{i}] must be an object"
        if not (_is_int(w.get("n")) and w["n"] >= 0):
            return f"workers[{i}].n must be a count"
        for key, ok, what in (
            ("warmup", lambda v: _is_int(v) and v >= 0, "a count"),
            ("pid", _is_int, "an integer"),
            ("timed_rusage", lambda v: isinstance(v, dict), "an object"),
        ):
            why = _typed(w, key, ok, what, f"workers[{i}].")
            if why:
                return why
        for role, counts in (w.get("timed_rusage") or {}).items():
            if not isinstance(counts, dict) or not all(
                v is None or _is_int(v) for v in counts.values()
            ):
                role = json.dumps(role)[:40]
                return f"workers[{i}].timed_rusage.{role} must map counters to integers"
    total = sum(w["n"] for w in ws)
    if total != n:
        return f"the workers' n add up to {total}, not the header's n ({n})"
    return None


def header_problem(header: Any, ncols: int, nrows: int, version: int) -> str | None:
    """What is wrong with a sample file's header against the format's schema
    (docs/sample-format.md, "Header fields"), for data of ``ncols`` columns of ``nrows`` rows
    in a file of format ``version``; None when nothing is. Fields the lab reads are checked
    for their type and range; others (bench, env, source) must be JSON objects; unknown
    fields are allowed. Nothing anywhere may nest deeper than `MAX_DEPTH`, hold a string
    longer than `MAX_STRING` or a number that is not finite."""
    if not isinstance(header, dict):
        return "the header must be a JSON object"
    why = _tree_problem(header)
    if why:
        return why
    if header.get("format") != "latscope-samples":
        return "format must be 'latscope-samples'"
    if header.get("format_version") != version or isinstance(header["format_version"], bool):
        return f"format_version must be {version}, as the first line says"
    if not _token(header.get("benchmark")):
        return "benchmark must be a name (letters, digits, _ . + -; at most 64)"
    n = header.get("n")
    if not _is_int(n) or n < 0:
        return f"n must be a count (it is {json.dumps(n)[:40]})"
    if n != nrows:
        return f"the header's n is {n} but the data holds {nrows} rows"
    if n == 0:
        return "no samples (n is 0): there is nothing to compute a figure from"
    if not _params(header.get("params")):
        return f"params must be an object of values (it is {json.dumps(header.get('params'))[:40]})"
    why = _columns_problem(header.get("columns"), ncols, version) or _clock_problem(
        header.get("clock")
    )
    if why:
        return why
    if index_columns(header):
        why = _arms_problem(header, n)
        if why:
            return why
    elif version >= 3 and header.get("arms") is not None:
        return "arms without the arm, block and round columns"
    if header.get("workers") is not None:
        why = _workers_problem(header["workers"], n)
        if why:
            return why
    for key, ok, what in (
        ("warmup", lambda v: _is_int(v) and v >= 0, "a count"),
        ("inject_ns", _nonneg, "a number ≥ 0"),
        ("bench", _obj, "an object"),
        ("env", _obj, "an object"),
        ("source", _obj, "an object"),
        ("probe", _texts, "an object of texts"),
        ("argv", lambda v: isinstance(v, list) and all(_text(x) for x in v), "a list of texts"),
        ("started_utc", _text, "text"),
        ("finished_utc", _text, "text"),
        ("name", _text, "text"),
        ("times", _text, "text"),
        ("byte_order", lambda v: v in ("little", "big"), "'little' or 'big'"),
    ):
        why = _typed(header, key, ok, what)
        if why:
            return why
    return None


class _HeaderError(ValueError):
    """What is wrong with the header's JSON, as the message says it."""


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _HeaderError(f"the key {json.dumps(k)[:40]} appears twice in one object")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise _HeaderError(f"the header holds {name}, which is not a number JSON allows")


def parse_header(line: bytes, version: int) -> Any:
    """The header's JSON; ValueError (with the reason) when it is not UTF-8 or not JSON.
    Version 1 files of probes that wrote a path's bytes as they were are read with each
    byte that is not UTF-8 as U+FFFD, as version 2 probes write them."""
    try:
        text = line.decode("utf-8", "strict" if version >= 2 else "replace")
    except UnicodeDecodeError as e:
        raise ValueError(f"the header is not UTF-8 (byte {e.start})") from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except _HeaderError:
        raise
    except RecursionError:
        raise ValueError(f"the header is nested more than {MAX_DEPTH} deep") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"the header is not JSON ({e.msg} at byte {e.pos})") from None
    except ValueError:  # an integer of more digits than Python converts
        raise ValueError(
            "the header is not JSON we read (a number of thousands of digits)"
        ) from None
