"""`latscope completion bash|zsh`: a shell completion script made from the CLI's own parser
(every command and its options), with the catalogue's benchmarks for the commands that take
one. Hooked into the CLI (cli/__init__.py) by `add_parsers(sub)` and `COMMANDS`."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from typing import Any

from .shared import RAW, wrap

EPILOG = """\
examples:
  latscope completion bash > ~/.local/share/bash-completion/completions/latscope
  eval "$(latscope completion bash)"           in ~/.bashrc
  eval "$(latscope completion zsh)"            in ~/.zshrc
"""

#: The commands whose first word is a benchmark.
TAKES_BENCHMARK = ("run", "trust", "history")


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "completion",
        help="a shell completion script for bash or zsh",
        description=wrap(
            "Print a completion script for bash or zsh: the commands, each command's options "
            "and, where a command takes one, the benchmarks of this probe's catalogue."
        ),
        epilog=EPILOG,
        formatter_class=RAW,
    )
    p.add_argument("shell", choices=["bash", "zsh"], help="the shell")


def _commands(ap: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Each command and its option strings, from the parser."""
    out: dict[str, list[str]] = {}
    for action in ap._actions:  # argparse keeps its subparsers here
        if isinstance(action, argparse._SubParsersAction):
            for name, sp in action.choices.items():
                opts = sorted({o for a in sp._actions for o in a.option_strings})
                out[name] = opts
    return out


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for ``shell`` (bash; zsh through its bash emulation) of the
    command line ``parser`` parses."""
    cmds = _commands(parser)
    try:
        from .. import probe

        benches = [b["name"] for b in probe.catalogue().get("benchmarks", [])]
    except Exception:  # no probe here: completion without benchmark names
        benches = []
    cases = "\n".join(
        f"    {shlex.quote(c)}) opts={shlex.quote(' '.join(o))} ;;" for c, o in cmds.items()
    )
    takes = "|".join(TAKES_BENCHMARK)
    body = f"""\
# latscope {shell} completion (latscope completion {shell})
_latscope() {{
  local cur cmd opts
  cur="${{COMP_WORDS[COMP_CWORD]}}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W {shlex.quote(" ".join(["-h", "-V", "--version", *cmds]))} \\
      -- "$cur") )
    return
  fi
  cmd="${{COMP_WORDS[1]}}"
  opts=""
  case "$cmd" in
{cases}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=( $(compgen -W "$opts" -- "$cur") )
  elif [ "$COMP_CWORD" -eq 2 ] && case "$cmd" in {takes}) true ;; *) false ;; esac; then
    COMPREPLY=( $(compgen -W {shlex.quote(" ".join(benches))} -- "$cur") )
  else
    COMPREPLY=( $(compgen -f -- "$cur") )
  fi
}}
complete -F _latscope latscope
"""
    if shell == "zsh":  # zsh runs bash's completion functions through its own emulation
        body = "autoload -U +X bashcompinit && bashcompinit\n" + body
    return body


def cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(script(args.shell, args.root_parser))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"completion": cmd_completion}
