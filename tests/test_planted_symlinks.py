"""Root-owned writes: latscope runs as root, and another user who can write in a directory
where latscope writes (a shared /tmp, a group directory) plants a symbolic link where it
will write, pointing at a file of someone else's. For every path latscope writes — each
command's destination, the report's figure files, the store's own files and directories —
a link to a victim file (or directory) outside is planted there, and beside it a link at
every predictable name a temporary could have (`.NAME.tmp.PID`, `NAME.tmp`, `NAME~`, ...;
latscope's own temporaries are unpredictable). The command runs in this process (so its pid,
which an old-style temporary name would carry, is known), and then:

- the victim is untouched (same inode, contents and modification time; a victim directory
  stays empty), and every link planted at a temporary name still points at it;
- the command either refused (exit 2, one line) — an existing destination without
  ``--force``, a link where a directory is wanted, a store name taken — or replaced the link
  itself with a regular file (``--force``, or a file of the store's own).

The links are planted as root, as the victim is root's: `fs.protected_symlinks` does not stop
root from following a link it owns, so a write that followed one would show here.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from synth import lognormal, make_run

VICTIM_TEXT = b"someone else's file\n"


def temporary_names(name: str, pid: int) -> list[str]:
    """Every name a temporary of ``name`` could predictably have (old latscope: the first)."""
    return [
        f".{name}.tmp.{pid}",
        f".{name}.tmp",
        f"{name}.tmp",
        f"{name}.tmp.{pid}",
        f".{name}.{pid}.tmp",
        f".{name}.{pid}",
        f"{name}~",
        f".{name}.swp",
        f"{name}.part",
        f".{name}.partial",
        f"{name}.new",
        f".{name}.new",
    ]


class Victim:
    """A file and a directory outside every path latscope is given, and the links to them."""

    def __init__(self, root: Path) -> None:
        d = root / "outside"
        d.mkdir()
        self.file = d / "precious"
        self.file.write_bytes(VICTIM_TEXT)
        os.chmod(self.file, 0o644)
        self.dir = d / "precious-dir"
        self.dir.mkdir()
        self.stat = self.file.stat()
        self.links: list[Path] = []  # at temporary names: must stay as they are

    def plant(self, path: Path, to_dir: bool = False, temporaries: bool = True) -> Path:
        """A link at ``path`` to the victim (its file, or its directory), and links at every
        predictable temporary name beside it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(self.dir if to_dir else self.file)
        if temporaries:
            for name in temporary_names(path.name, os.getpid()):
                link = path.parent / name
                if not os.path.lexists(link):
                    link.symlink_to(self.file)
                    self.links.append(link)
        return path

    def plant_temporaries(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        for name in temporary_names(path.name, os.getpid()):
            link = path.parent / name
            if not os.path.lexists(link):
                link.symlink_to(self.file)
                self.links.append(link)

    def assert_untouched(self) -> None:
        st = self.file.stat()
        assert stat.S_ISREG(os.lstat(self.file).st_mode)
        assert self.file.read_bytes() == VICTIM_TEXT
        assert (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode) == (
            self.stat.st_ino,
            self.stat.st_size,
            self.stat.st_mtime_ns,
            self.stat.st_mode,
        )
        assert os.listdir(self.dir) == []
        assert os.listdir(self.file.parent) == ["precious", "precious-dir"]
        for link in self.links:
            assert link.is_symlink() and os.readlink(link) == str(self.file), link


@dataclass
class Lab:
    """A store with two synthetic runs, a directory the user names, a victim outside."""

    cli: Callable[..., object]
    store: Path
    out: Path
    victim: Victim
    a: str
    b: str


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The two runs, made once: each test gets a copy of this store (`lab`)."""
    store = tmp_path_factory.mktemp("made") / "store"
    a = make_run(store, {"call": lognormal(600, 500.0, seed=1)})
    b = make_run(store, {"call": lognormal(600, 520.0, seed=2)}, created_utc="2026-01-01T00:00:02Z")
    return store, a.id, b.id


@pytest.fixture()
def lab(cli, store: Path, tmp_path: Path, made: tuple[Path, str, str]) -> Lab:
    shutil.copytree(made[0], store, symlinks=True)
    out = tmp_path / "shared"
    out.mkdir()
    return Lab(cli, store, out, Victim(tmp_path), made[1], made[2])


def refused(r: object, *words: str) -> None:
    """Exit 2 and one line saying why."""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]  # type: ignore[attr-defined]
    assert r.returncode == 2, (r.returncode, r.stderr)  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("latscope: error: "), lines
    for w in words:
        assert w in lines[0], lines[0]


def replaced(r: object, path: Path) -> None:
    """Exit 0, and the link at ``path`` is now a regular file of latscope's."""
    assert r.returncode == 0, r.stderr  # type: ignore[attr-defined]
    assert not path.is_symlink() and stat.S_ISREG(os.lstat(path).st_mode), path
    assert path.stat().st_size > 0


# ------------------------------------------------------------------------------ destinations


def _suite(lab: Lab) -> Path:
    f = lab.out.parent / "tiny.toml"
    f.write_text(
        'name = "tiny"\nrepeat = 1\n[[scenario]]\nname = "sys"\nbenchmark = "syscall"\nn = 200\n'
    )
    return f


#: name -> (destination inside the user's directory, the command's arguments)
DESTINATIONS: dict[str, tuple[str, Callable[[Lab, Path], list[str]]]] = {
    "export --csv": ("samples.csv", lambda lab, p: ["export", lab.a, "--csv", str(p)]),
    "export --parquet": ("samples.parquet", lambda lab, p: ["export", lab.a, "--parquet", str(p)]),
    "report --html": (
        "report.html",
        lambda lab, p: ["report", lab.a, "--html", str(p), "--no-figures", "--quiet"],
    ),
    "report --md: report.md": (
        "md/report.md",
        lambda lab, p: ["report", lab.a, "--md", str(p.parent), "--no-figures", "--quiet"],
    ),
    "plot -o": ("hist.png", lambda lab, p: ["plot", lab.a, "--kind", "hist", "-o", str(p)]),
    "compare --plot": ("shift.svg", lambda lab, p: ["compare", lab.a, lab.b, "--plot", str(p)]),
    "history --plot": ("history.png", lambda lab, p: ["history", "synthetic", "--plot", str(p)]),
    "suite --html": (
        "suite.html",
        lambda lab, p: ["suite", str(_suite(lab)), "--html", str(p), "--no-figures", "--quiet"],
    ),
    "suite --md: report.md": (
        "smd/report.md",
        lambda lab, p: ["suite", str(_suite(lab)), "--md", str(p.parent), "--no-figures"],
    ),
}


@pytest.mark.parametrize("force", [False, True], ids=["refused", "--force"])
@pytest.mark.parametrize("what", list(DESTINATIONS))
def test_a_link_at_a_destination(lab: Lab, what: str, force: bool) -> None:
    """Without --force: refused before any work (a suite runs nothing); with it: the link is
    replaced by the file, never followed."""
    rel, args = DESTINATIONS[what]
    dest = lab.victim.plant(lab.out / rel)
    r = lab.cli(*args(lab, dest), *(["--force"] if force else []))
    if force:
        replaced(r, dest)
    else:
        refused(r, str(dest), "exists (a symbolic link); --force replaces it")
        assert dest.is_symlink()
        if what.startswith("suite"):
            assert not (lab.store / "suites").exists()  # checked before the first run
    lab.victim.assert_untouched()


def test_a_link_at_a_figure_of_a_markdown_report(lab: Lab) -> None:
    """report --md DIR with links planted at the names its figures will have: refused before
    a figure is drawn; with --force each is replaced."""
    from latscope import report
    from latscope.measure.runner import load
    from latscope.report.document import image_files

    doc = report.build([load(lab.a, lab.store)], figures=True)
    names = image_files(doc)
    assert len(names) >= 3
    md = lab.out / "figs"
    for name in names:
        lab.victim.plant(md / name)
    r = lab.cli("report", lab.a, "--md", str(md), "--quiet")
    refused(r, f"{md / names[0]} exists (a symbolic link)")
    assert not (md / "report.md").exists()
    r = lab.cli("report", lab.a, "--md", str(md), "--quiet", "--force")
    for name in names:
        replaced(r, md / name)
    replaced(r, md / "report.md")
    lab.victim.assert_untouched()


@pytest.mark.parametrize("force", [False, True], ids=["refused", "--force"])
@pytest.mark.parametrize("command", ["report", "suite"])
def test_a_link_where_a_directory_is_wanted(lab: Lab, command: str, force: bool) -> None:
    """--md DIR where DIR is a link to someone else's directory: refused, even with --force
    (a directory is never followed), before any work."""
    d = lab.victim.plant(lab.out / "md", to_dir=True)
    if command == "report":
        args = ["report", lab.a, "--md", str(d), "--no-figures", "--quiet"]
    else:
        args = ["suite", str(_suite(lab)), "--md", str(d), "--no-figures", "--quiet"]
    r = lab.cli(*args, *(["--force"] if force else []))
    refused(r, str(d), "is a symbolic link")
    assert d.is_symlink()
    lab.victim.assert_untouched()


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_device_at_a_destination_even_with_force(lab: Lab, kind: str) -> None:
    """Not a link, but the same question: a FIFO would hang the writer, a device be written
    into; both are refused even with --force, before any work."""
    if kind == "fifo":
        dest = lab.out / "samples.csv"
        os.mkfifo(dest)
        said = "is a FIFO"
    else:
        dest = Path("/dev/null")
        said = "is a device"
    lab.victim.plant_temporaries(lab.out / "samples.csv")
    r = lab.cli("export", lab.a, "--csv", str(dest), "--force")
    refused(r, said)
    lab.victim.assert_untouched()


# ------------------------------------------------------------------------------ the store


def test_a_link_at_a_summary_the_store_rebuilds(lab: Lab) -> None:
    """`ls` rebuilds a missing summary.parquet: a link planted in its place is replaced by
    the store's own file."""
    run_dir = lab.store / "runs" / lab.a
    (run_dir / "summary.parquet").unlink()
    dest = lab.victim.plant(run_dir / "summary.parquet")
    r = lab.cli("ls")
    replaced(r, dest)
    lab.victim.assert_untouched()


def _fixed_run_id(monkeypatch: pytest.MonkeyPatch, run_id: str) -> None:
    from latscope.store import Store

    monkeypatch.setattr(Store, "new_run_id", lambda self, bench: run_id)


@pytest.mark.parametrize("command", ["run", "import"])
def test_a_link_at_the_partial_directory_of_a_new_run(
    lab: Lab, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """A run id guessed and its partial directory planted as a link: never followed (mkdir
    does not), the id is given up; with every id taken, one line and exit 2."""
    run_id = "20260101-000000-x-0000"
    _fixed_run_id(monkeypatch, run_id)
    runs = lab.store / "runs"
    lab.victim.plant(runs / f".partial-{run_id}", to_dir=True)
    lab.victim.plant_temporaries(runs / run_id)
    if command == "run":
        r = lab.cli("run", "syscall", "-n", "100", "--quiet")
    else:
        csv = lab.out.parent / "in.csv"
        csv.write_text("call_ns\n" + "\n".join(str(500 + i % 7) for i in range(100)) + "\n")
        r = lab.cli("import", str(csv), "--quiet")
    refused(r, "cannot allocate a run directory")
    lab.victim.assert_untouched()


def test_a_link_at_the_name_a_run_is_committed_to(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The final name of a run planted as a link (dangling, into the victim's directory):
    the commit's rename does not follow it; one line, exit 2, nothing created there."""
    run_id = "20260101-000000-syscall-0001"
    _fixed_run_id(monkeypatch, run_id)
    final = lab.store / "runs" / run_id
    final.parent.mkdir(parents=True, exist_ok=True)
    final.symlink_to(lab.victim.dir / "made-here")
    r = lab.cli("run", "syscall", "-n", "100", "--quiet")
    refused(r, f"cannot commit run {run_id}")
    assert final.is_symlink()
    assert not [d for d in (lab.store / "runs").iterdir() if d.name.startswith(".partial")]
    lab.victim.assert_untouched()


def test_links_at_a_suites_record_and_report(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite run id guessed: its record (STORE/suites/ID.json) and default report
    (STORE/reports/ID.html) planted as links are replaced by the store's own files."""
    import latscope.suite.running as running

    sid = "20260101-000000-tiny-s0000"
    monkeypatch.setattr(running, "new_suite_run_id", lambda name: sid)
    record = lab.victim.plant(lab.store / "suites" / f"{sid}.json")
    html = lab.victim.plant(lab.store / "reports" / f"{sid}.html")
    r = lab.cli("suite", str(_suite(lab)), "--no-figures", "--quiet")
    replaced(r, record)
    replaced(r, html)
    lab.victim.assert_untouched()


def test_a_link_at_a_trust_record(lab: Lab) -> None:
    """What `latscope trust` keeps for a scenario (STORE/trust/BENCH-HASH.json, a name made
    from the scenario): a link there is replaced by the record."""
    from latscope.measure.runner import LabStore
    from latscope.measure.variation import record_path, write_record

    st = LabStore(lab.store)
    key = "syscall {} mono_raw"
    dest = lab.victim.plant(record_path(st, key))
    write_record(st, {"format": 1, "key": key, "columns": {}})
    assert not dest.is_symlink() and dest.stat().st_size > 0
    lab.victim.assert_untouched()
