#!/usr/bin/env python3
"""The README's examples, produced by the program: every fenced block of the language
``console`` holds commands (lines ``$ latscope ...``, a trailing ``# comment`` allowed) each
followed by what it printed. This script runs them again in an 80-column terminal's width
against a new temporary store and writes their output into the README, so the examples are
what latscope prints today:

    .venv/bin/python scripts/readme_examples.py            # rewrite README.md's examples
    .venv/bin/python scripts/readme_examples.py --check    # run them, compare their shape

``--check`` (and tests/test_readme.py) runs every command (with fewer iterations: ``-n``
capped, or added to a ``run``) and compares the *shape* of what it prints with the README's:
its first line, the table's heading and the line naming the run, with every number, run id
and path made a placeholder. Measured figures change from run to run; the layout may not, unnoticed.
A command marked ``# as root`` is skipped without root.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
WIDTH = 80
#: Iterations a check gives a `run` (or the most of a given -n): the shape, not the figures.
CHECK_N = 2000
CHECK_GIVEN_N = 200
DEFAULT_STORE = "~/.local/share/latscope"
FENCE = re.compile(r"^```console\n(.*?)^```\n", re.S | re.M)


@dataclass
class Example:
    command: str  # as written after '$ ', without its comment
    comment: str  # '# ...' after it, or ''
    output: list[str]


def examples(text: str) -> Iterator[tuple[re.Match[str], list[Example]]]:
    """Each console block of ``text`` and its commands with their outputs."""
    for m in FENCE.finditer(text):
        out: list[Example] = []
        for line in m.group(1).splitlines():
            if line.startswith("$ "):
                cmd, _, comment = line[2:].partition("#")
                out.append(Example(cmd.strip(), ("# " + comment.strip()) if comment else "", []))
            elif out:
                out[-1].output.append(line)
        while out and out[-1].output and not out[-1].output[-1].strip():
            out[-1].output.pop()
        yield m, out


def latscope() -> str:
    here = Path(sys.executable).parent / "latscope"
    return str(here) if here.exists() else "latscope"


def run(example: Example, store: Path, check: bool) -> list[str] | None:
    """What the command prints (stdout, then stderr's lines), or None when it cannot run
    here (a command marked '# as root', without root)."""
    if "as root" in example.comment and os.geteuid() != 0:
        return None
    argv = shlex.split(example.command)
    if argv[0] != "latscope":
        raise SystemExit(f"README: not a latscope command: {example.command}")
    argv = [latscope(), *argv[1:]]
    if check:
        argv = fewer(argv)
    env = {
        **os.environ,
        "COLUMNS": str(WIDTH),
        "LINES": "60",
        "LATSCOPE_STORE": str(store),
        "NO_COLOR": "1",
        "TERM": "dumb",
    }
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"README: '{example.command}' exited {done.returncode}: {done.stderr}")
    lines = done.stdout.splitlines() + done.stderr.splitlines()
    return [ln.rstrip() for ln in lines]


def fewer(argv: list[str]) -> list[str]:
    """``argv`` measuring less: a given -n at most `CHECK_GIVEN_N`, a `run` without one
    `CHECK_N` iterations, an `ab` without --time one second."""
    out = list(argv)
    if "-n" in out:
        i = out.index("-n") + 1
        out[i] = str(min(int(out[i]), CHECK_GIVEN_N))
    elif len(out) > 1 and out[1] == "run":
        out += ["-n", str(CHECK_N)]
    if len(out) > 1 and out[1] == "ab" and "--time" not in out:
        out += ["--time", "1"]
    return out


#: What changes from run to run: run ids, numbers (with their separators), temporary paths.
_RUN_ID = re.compile(r"\b\d{8}-\d{6}-[A-Za-z0-9_.-]+-[0-9a-f]{4}\b")
_NUMBER = re.compile(r"[-+−]?\d[\d,.]*(?:[eE][-+]?\d+)?")
_PATH = re.compile(r"~?(/[\w.-]+)+")


def skeleton(line: str) -> str:
    line = _RUN_ID.sub("RUN", line)
    line = _PATH.sub("PATH", line)
    line = _NUMBER.sub("#", line)
    return " ".join(line.split())


def shape(lines: list[str]) -> tuple[str, ...]:
    """The lines that must keep their form: the first, a table's heading (a line starting
    'column') and the line naming the run kept (starting 'run '), where there are. What
    lies between (warnings, withheld tails) depends on the figures of the moment."""
    lines = [ln for ln in lines if ln.strip()]
    if not lines:
        return ()
    heads = [ln for ln in lines if ln.split()[:1] == ["column"]]
    runs = [ln for ln in lines if ln.startswith("run ")]
    return tuple(skeleton(ln) for ln in [lines[0], *heads[:1], *runs[-1:]])


def regenerate(text: str) -> str:
    with tempfile.TemporaryDirectory(prefix="latscope-readme-") as d:
        store = Path(d) / "store"
        parts, last = [], 0
        for m, exs in examples(text):
            body = []
            for ex in exs:
                got = run(ex, store, check=False)
                if got is not None:  # the store as a reader's would be: the default one
                    got = [ln.replace(str(store), DEFAULT_STORE) for ln in got]
                body.append(f"$ {ex.command}" + (f"      {ex.comment}" if ex.comment else ""))
                body += ex.output if got is None else got
                body.append("")
            parts.append(text[last : m.start(1)] + "\n".join(body[:-1]) + "\n")
            last = m.end(1)
        parts.append(text[last:])
    return "".join(parts)


def check(text: str, jobs: int = 2) -> list[str]:
    """Each example whose output no longer has the README's shape, as a line. The commands
    run ``jobs`` at a time (their figures do not matter here, their shape does), each into a
    store of its own."""
    from concurrent.futures import ThreadPoolExecutor

    exs = [ex for _, block in examples(text) for ex in block]
    with tempfile.TemporaryDirectory(prefix="latscope-readme-") as d:
        stores = [Path(d) / f"store{i}" for i in range(len(exs))]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            outs = list(
                pool.map(lambda a: run(a[0], a[1], check=True), zip(exs, stores, strict=True))
            )
    bad = []
    for ex, got in zip(exs, outs, strict=True):
        if got is None:
            continue
        want, have = shape(ex.output), shape(got)
        if want != have:
            bad.append(f"'{ex.command}': README {want} != now {have}")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare, do not rewrite")
    a = ap.parse_args()
    text = README.read_text()
    if a.check:
        bad = check(text)
        for line in bad:
            print(line)
        return 1 if bad else 0
    README.write_text(regenerate(text))
    print(f"rewrote the examples of {README.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
