"""Round trips between the hosts of a fleet: every ordered pair through `latscope-probe serve`,
beside the same protocol on one host (docs/fleet.md, "Between hosts").

The plan, for R rounds: every ordered pair (client a, server b) of the hosts, a host to
itself included (its own server over its own address: the same client, handshake and server
as the other cells, without the wire), and on every host the benchmark the probe's catalogue
names as the remote one's ``counterpart`` (``tcp`` beside ``tcp_remote``: both ends in one
host, over loopback). Each round runs them all once, one at a time across the fleet (only
one client measures at any moment, so no pair shares a link or a server with another), in a
random order drawn from the seed, as a suite's rounds are. Every host serves on its address
for the whole run; the clean-up stops the servers.

A host's address is the inventory's ``latscope_address`` variable, else its
``ansible_host``, else its name; one that is not numeric is resolved here (the servers bind a
numeric address, and the static probes resolve no names).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Any

from .. import probe
from ..errors import BadInput
from ..files import write_text
from ..scenarios import Scenario, Step, Suite, plan
from ..units import fmt, shown

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ..record import Run
    from .running import FleetRun, Serve

#: Parameters a pairs run sets itself: the far side and its token.
SET_HERE = ("host", "port", "token_file")
#: The name of the token file in each host's private directory (run.sh works there).
TOKEN_FILE = "token"
#: More hosts than this, or longer names, and the matrix is printed as a list of pairs.
MATRIX_HOSTS = 5
MATRIX_NAME = 12


def remote_benchmarks() -> list[str]:
    """The probe's benchmarks a pairs run can use: those with a one-host counterpart."""
    return [
        b["name"]
        for b in probe.catalogue()["benchmarks"]
        if b.get("counterpart") and b.get("engine") != "python"
    ]


@dataclass(frozen=True)
class Cell:
    """What one scenario of a pairs run is: a pair (client → server) or the counterpart on
    one host (server None)."""

    client: str
    server: str | None


def address(name: str, hostvars: Mapping[str, Any]) -> str:
    """The numeric address other hosts reach ``name`` at (module docs); BadInput (one line)
    when it cannot be had."""
    given = hostvars.get("latscope_address") or hostvars.get("ansible_host") or name
    given = str(given).strip()
    try:
        return str(ipaddress.ip_address(given.strip("[]")))
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(given, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as e:
        raise BadInput(
            f"host {name}: cannot resolve {given} here ({e}); give its address in the "
            "inventory: latscope_address=IP"
        ) from None
    return str(infos[0][4][0])


def bind(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


@dataclass
class Plan:
    suite: Suite
    steps: list[Step]
    cells: dict[str, Cell]  # scenario name -> what it is
    on: dict[int, str]
    serve_on: dict[int, str]
    addresses: dict[str, str]
    counterpart: str


def _checked(
    bench: str, given: Mapping[str, Any], local: str, local_params: dict[str, str], n: int | None
) -> None:
    """The probe's own rules for the settings (`probe.check`), here, before any host is
    touched: one line (BadInput) for what it refuses. The far side and its token are
    stand-ins (the check reads the token file)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="latscope-pairs-") as d:
        tok = write_text(Path(d) / "token", "0" * 64 + "\n", mode=0o600)
        stand_in = {**given, "host": "192.0.2.1", "port": "7300", "token_file": str(tok)}
        probe.check(bench, stand_in, n=n)
    probe.check(local, local_params, n=n)


def check_settings(
    bench: str, given: Mapping[str, Any], n: int | None
) -> tuple[str, dict[str, str]]:
    """The benchmark and its settings, refused (one line, BadInput) where a pairs run cannot
    have them; else the counterpart and its parameters. It needs no host, so the command line
    (`latscope fleet --pairs`) calls it before the inventory is read: a command that is
    refused anyway runs no inventory (which is code) and waits for none."""
    b = probe.benchmark(bench)
    local = b.get("counterpart")
    if not local or bench not in remote_benchmarks():
        raise BadInput(
            f"--pairs {bench}: not a benchmark between hosts (those are: "
            f"{', '.join(remote_benchmarks())})"
        )
    for k in SET_HERE:
        if k in given:
            raise BadInput(f"-p {k}=: --pairs sets it for every pair; drop it")
    local_names = {p["name"] for p in probe.benchmark(local)["params"]}
    local_params = {k: str(v) for k, v in given.items() if k in local_names and k != "cpus"}
    _checked(bench, given, local, local_params, n)
    return local, local_params


def make_plan(
    bench: str,
    given: Mapping[str, Any],
    n: int | None,
    rounds: int,
    seed: int,
    hosts: Mapping[str, Mapping[str, Any]],
    port: int,
) -> Plan:
    """The pairs run's scenarios and their order (module docs)."""
    local, local_params = check_settings(bench, given, n)
    addrs = {h: address(h, v) for h, v in hosts.items()}
    scen: list[Scenario] = []
    cells: dict[str, Cell] = {}
    for a in hosts:
        for c in hosts:
            name = f"{a} -> {c}"
            params = {k: str(v) for k, v in given.items()}
            params.update(host=addrs[c], port=str(port), token_file=TOKEN_FILE)
            scen.append(Scenario(name, bench, params, n=n, repeat=rounds))
            cells[name] = Cell(a, c)
        name = f"{local} on {a}"
        scen.append(Scenario(name, local, local_params, n=n, repeat=rounds))
        cells[name] = Cell(a, None)
    suite = Suite(
        name=f"pairs-{bench}",
        path=Path("latscope fleet --pairs"),
        description=None,
        scenarios=scen,
        seed=seed,
    )
    steps = plan(suite, seed)
    on = {s.index: cells[s.scenario.name].client for s in steps}
    serve_on = {s.index: srv for s in steps if (srv := cells[s.scenario.name].server) is not None}
    return Plan(suite, steps, cells, on, serve_on, addrs, local)


def serve_settings(p: Plan, port: int, timeout: int) -> Serve:
    """Each host's server: bound to its address, for the sessions its pairs open (one per
    worker process of a run, at most the probe's `workers_auto` max) and a margin, for as
    long as the whole plan may take."""
    from .running import Serve

    most = int((probe.catalogue().get("workers_auto") or {}).get("max") or 10)
    count = {h: 0 for h in p.addresses}
    for srv in p.serve_on.values():
        count[srv] += 1
    return Serve(
        binds={h: bind(a, port) for h, a in p.addresses.items()},
        sessions={h: min(1_000_000, c * most + 4) for h, c in count.items()},
        max_time=min(604_800, (timeout + 60) * len(p.steps) + 600),
    )


# ------------------------------------------------------------------------------- results


@dataclass
class Figure:
    """A cell's round trip: the median of its runs' medians (one per round), the range of
    those, and its runs."""

    p50_ns: float | None
    low_ns: float | None
    high_ns: float | None
    runs: list[str]


def figures(p: Plan, runs: list[Run]) -> dict[str, Figure]:
    """Scenario name -> its figure, from the runs the fleet kept."""
    import polars as pl

    from ..summary import stat, value

    got: dict[str, list[tuple[float, str]]] = {}
    for r in runs:
        name = str(((r.meta.get("run") or {}).get("tags") or {}).get("scenario"))
        if name not in p.cells:
            continue
        rows = r.summary().filter(pl.col("column") == "rtt")
        if rows.height == 0:
            continue
        v = value(rows.row(0, named=True), stat("p50"))
        if v is not None:
            got.setdefault(name, []).append((v, r.id))
    out: dict[str, Figure] = {}
    for name in p.cells:
        vals = got.get(name, [])
        xs = [v for v, _ in vals]
        out[name] = Figure(
            median(xs) if xs else None,
            min(xs) if xs else None,
            max(xs) if xs else None,
            [i for _, i in vals],
        )
    return out


def _widest_spread(figs: dict[str, Figure]) -> tuple[str, Figure] | None:
    """The cell whose rounds' medians differ most (by ratio), where cells have several."""
    several = [
        (name, f)
        for name, f in figs.items()
        if len(f.runs) > 1 and f.low_ns is not None and f.high_ns is not None and f.low_ns > 0
    ]
    if not several:
        return None
    return max(several, key=lambda nf: nf[1].high_ns / nf[1].low_ns)  # type: ignore[operator]


def _cell_text(f: Figure | None) -> str:
    return fmt(f.p50_ns) if f is not None and f.p50_ns is not None else "—"


def matrix_table(figs: dict[str, Figure], p: Plan) -> Table:
    """Client (rows) → server (columns), the median round trip; the diagonal dim (a host to
    its own server); the last column the counterpart on that host."""
    from rich.table import Table

    hosts = list(p.addresses)
    t = Table()
    t.add_column("from \\ to", style="bold")
    for h in hosts:
        t.add_column(shown(h), justify="right")
    t.add_column(f"{p.counterpart}\non one host", justify="right")
    for a in hosts:
        row = [shown(a)]
        for c in hosts:
            txt = _cell_text(figs.get(f"{a} -> {c}"))
            row.append(f"[dim]{txt}[/dim]" if a == c else txt)
        row.append(_cell_text(figs.get(f"{p.counterpart} on {a}")))
        t.add_row(*row)
    return t


def list_table(console: Console, figs: dict[str, Figure], p: Plan, bench: str) -> Any:
    """The same figures as a list of cells (for many hosts or long names)."""
    from ..tables import Column, fit

    rows = []
    for name, cell in p.cells.items():
        f = figs.get(name)
        spread = (
            f"{fmt(f.low_ns)}–{fmt(f.high_ns)}"
            if f is not None and f.low_ns is not None and len(f.runs) > 1
            else ""
        )
        rows.append(
            [
                shown(cell.client),
                shown(cell.server) if cell.server else f"({p.counterpart} on one host)",
                _cell_text(f),
                spread,
                str(len(f.runs) if f else 0),
            ]
        )
    cols = [
        Column("client", wrap=True),
        Column("server", wrap=True),
        Column("median", justify="right"),
        Column("rounds' range", justify="right"),
        Column("runs", justify="right"),
    ]
    t, _ = fit(console, cols, rows, title=f"{bench}: median round trip by pair")
    return t


def show(console: Console, fr: FleetRun, p: Plan, bench: str) -> None:
    """The pairs' figures as a matrix (a list for many hosts), and what the cells are."""
    figs = figures(p, fr.runs)
    hosts = list(p.addresses)
    if len(hosts) <= MATRIX_HOSTS and max(len(h) for h in hosts) <= MATRIX_NAME:
        console.print(f"[bold]{bench}[/bold]: median round trip, client (rows) → server (columns)")
        console.print(matrix_table(figs, p))
    else:
        console.print(list_table(console, figs, p, bench))
    rounds = max((s.repetition for s in p.steps), default=1)
    each = (
        "one run's median"
        if rounds == 1
        else f"the median of its {rounds} runs' medians (one per round)"
    )
    console.print(
        f"[dim]each cell: {each}; dim: a host to its own server over its own address (no "
        f"wire); {p.counterpart} on one host: both ends in that host, over loopback. Round "
        "trips only: the hosts share no clock.[/dim]"
    )
    spread = _widest_spread(figs)
    if spread is not None:
        name, f = spread
        console.print(
            f"[dim]between rounds a cell's medians differ by up to {f.high_ns / f.low_ns:.2f}x "
            f"(widest: {shown(name)}, {fmt(f.low_ns)}–{fmt(f.high_ns)}): cells closer than "
            "that are not told apart by these runs[/dim]"
        )
    for h, why in fr.serve_failed.items():
        console.print(f"[yellow]not measured:[/yellow] pairs to {shown(h)}: {shown(why)}")
