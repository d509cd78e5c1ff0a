"""The lab's layout (docs/architecture.md): every import of every module, function-local and
type-checking ones included, read from the source with ast, names a module and a name that
exist; the modules import each other without a cycle; none is longer than 600 lines; and
dependencies flow one way, from the CLI down to the probe, the samples and the statistics."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import latscope

SRC = Path(latscope.__file__).resolve().parent
MAX_LINES = 600

#: Each part of the lab (a top-level module or a subpackage) by layer, lowest first. A part may
#: import parts of lower layers only; modules within one part import each other freely (but
#: without a cycle).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_version", "errors", "pyprobe"),  # pyprobe: an engine run by path, imports nothing
    ("units", "files", "progress", "tables", "children", "heap"),
    ("stats", "probe", "samples", "leftovers"),
    ("summary", "env", "scenarios", "plots"),
    ("notes",),  # reads the environment in its one schema (env.of_header)
    ("store",),
    ("facts",),  # a run's facts: built from a Run given to it, read by runs and the views
    ("record",),  # a kept run (Run): its samples, facts and views' reading of them
    ("measure",),  # making runs: runner, importer, repeat, variation, arms, ab, trust
    ("report",),
    ("suite", "matrix"),
    ("fleet",),  # a suite on every host of an inventory: suite's plan, runs and comparison
    ("cli",),
    ("_entry",),  # the command's entry point: imports the CLI under a Ctrl-C guard
    ("",),  # latscope/__init__.py: the public API
)
#: The statistics depend on nothing of the lab but these.
STATS_MAY_IMPORT = {"units", "errors"}


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(SRC.rglob("*.py")):
        parts = ["latscope", *p.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


@cache
def _tree(name: str) -> ast.Module:
    """Module ``name`` parsed, once: the checks below ask for the same modules many times."""
    return ast.parse(MODULES[name].read_text(), str(MODULES[name]))


def _package(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rsplit(".", 1)[0]


def _imports(name: str) -> list[tuple[int, str, str | None]]:
    """(line, module, imported name or None) for every latscope import in module ``name``."""
    tree = _tree(name)
    out: list[tuple[int, str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [
                (node.lineno, a.name, None) for a in node.names if a.name.startswith("latscope.")
            ]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package(name).split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod == "latscope" or mod.startswith("latscope."):
                out += [(node.lineno, mod, a.name) for a in node.names]
    return out


def _edges() -> dict[str, set[str]]:
    """Module -> the latscope modules it imports (a submodule when one is imported by name)."""
    out: dict[str, set[str]] = {}
    for name in MODULES:
        deps = set()
        for _, mod, what in _imports(name):
            target = f"{mod}.{what}" if what and f"{mod}.{what}" in MODULES else mod
            if target != name:
                deps.add(target)
        out[name] = deps
    return out


def _part(name: str) -> str:
    """The part of the lab a module belongs to: "store" for latscope.store.core."""
    return name.split(".")[1] if "." in name else ""


def _layer(part: str) -> int:
    for i, parts in enumerate(LAYERS):
        if part in parts:
            return i
    raise AssertionError(f"latscope.{part} is in no layer of LAYERS (tests/test_layout.py)")


@cache
def _defined(name: str) -> frozenset[str]:
    """The names a module defines or imports at its top level."""
    tree = _tree(name)
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.If):  # TYPE_CHECKING and version switches
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    out |= {(a.asname or a.name).split(".")[0] for a in sub.names}
    return frozenset(out)


def _module_aliases(name: str) -> dict[str, str]:
    """Local names bound to latscope modules anywhere in module ``name`` (``from .. import env
    as envmod``: envmod -> latscope.env)."""
    tree = _tree(name)
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = _package(name).split(".")
            base = base[: len(base) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                if f"{mod}.{a.name}" in MODULES:
                    out[a.asname or a.name] = f"{mod}.{a.name}"
    return out


def test_every_import_names_what_exists() -> None:
    """Function-local imports and module attributes (``envmod.render``) included: a lazy path
    that no test takes cannot hide a name that moved."""
    bad = []
    for name in MODULES:
        for line, mod, what in _imports(name):
            if mod not in MODULES:
                bad.append(f"{MODULES[name]}:{line}: no module {mod}")
            elif what and f"{mod}.{what}" not in MODULES and what not in _defined(mod):
                bad.append(f"{MODULES[name]}:{line}: {mod} has no {what}")
        aliases = _module_aliases(name)
        for node in ast.walk(_tree(name)):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
            ):
                mod = aliases[node.value.id]
                if f"{mod}.{node.attr}" not in MODULES and node.attr not in _defined(mod):
                    bad.append(f"{MODULES[name]}:{node.lineno}: {mod} has no {node.attr}")
    assert not bad, "\n".join(bad)


def test_no_import_cycle() -> None:
    edges = _edges()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_module_over_600_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in MODULES.values()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_dependencies_flow_down_the_layers() -> None:
    bad = []
    for name, deps in _edges().items():
        part = _part(name)
        for d in sorted(deps):
            dp = _part(d)
            if dp == part:
                continue
            if _layer(dp) >= _layer(part):
                bad.append(f"{name} imports {d} (layer {_layer(part)} -> {_layer(dp)})")
            if part == "stats" and dp not in STATS_MAY_IMPORT:
                bad.append(f"{name} imports {d}: stats/ imports only {sorted(STATS_MAY_IMPORT)}")
    assert not bad, "\n".join(bad)


def test_cli_commands_depend_only_on_the_shared_module() -> None:
    top = {"latscope.cli", "latscope.cli.__main__", "latscope.cli.shared"}
    bad = [
        f"{name} imports {d}"
        for name, deps in _edges().items()
        if name.startswith("latscope.cli.") and name not in top
        for d in deps
        if d.startswith("latscope.cli") and d != "latscope.cli.shared"
    ]
    bad += [
        f"latscope.cli.shared imports {d}"
        for d in _edges()["latscope.cli.shared"]
        if d.startswith("latscope.cli")
    ]
    assert not bad, "\n".join(bad)


def test_the_store_computes_no_summary() -> None:
    """The store keeps files and indexes; summaries come from the runner, never the store."""
    bad = [
        f"{name} imports {d}"
        for name, deps in _edges().items()
        if _part(name) == "store"
        for d in deps
        if _part(d) in ("record", "runner", "stats")
    ]
    assert not bad, "\n".join(bad)
