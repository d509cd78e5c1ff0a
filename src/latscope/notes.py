"""What a figure of a benchmark means under its parameters: the one place that explains it.

A few parameter combinations measure something other than what their name suggests: spinning
peers on one CPU measure the scheduler's time slice; a cold-cache file loop pauses between
iterations, and with the default order its read is not cold at all. ``notes_for`` returns the
notes that apply, and every view of a run (``latscope run`` and ``show``, the report, the
suite's table and report, the IPC matrix) prints them from here, so they read the same
everywhere and change in one place.

Rules (``params`` are a run's resolved parameters; missing ones take the probe's defaults
``cache=warm``, ``open=create``, ``order=wr``):

- ``spin-one-cpu``: a spinning mechanism (``spinning``: ``spin``, ``spin_pause``) with both
  parties on one CPU (``cpus=A,A``);
- ``file-fadvise`` / ``file-drop``: ``file`` with ``cache=fadvise`` / ``cache=drop``;
- ``file-read-cached``: ``file`` with ``cache`` fadvise or drop and ``order=wr`` (the read
  follows the write, so it is served from the page cache);
- ``file-read-cold``: ``file`` with ``cache`` fadvise or drop and ``order=rw`` (the read comes
  first after the cache was emptied);
- ``file-tmpfs``: ``file`` with a non-warm cache on tmpfs (``fs_type``), where the page cache
  is the storage;
- ``python-gil``: a benchmark of the Python runtime engine whose parties busy-wait
  (``mechanism.blocking`` false) between two threads (``mode=threads``): they share one GIL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import probe
from .env import of_header


@dataclass(frozen=True)
class Note:
    key: str  # short, stable identifier
    text: str  # one paragraph for the reader


def spinning(benchmark: str) -> bool:
    """Whether the benchmark's parties busy-wait (catalogue ``mechanism.blocking`` false)
    where they may sit on two CPUs (``placements``), so that on one CPU they hand over only
    when the scheduler preempts the one spinning; ``yield``, whose only placement is one CPU,
    hands the CPU over itself."""
    m = (probe.entry(benchmark) or {}).get("mechanism") or {}
    return m.get("blocking") is False and "different_cpus" in (m.get("placements") or [])


SPIN_ONE_CPU = (
    "Both parties busy-wait on one CPU: the waiting one holds the CPU until the scheduler "
    "preempts it at a timer tick, so each hand-over takes about one scheduler tick (1/HZ: "
    "4 ms at HZ=250) or more. The figure is the scheduler's time slice, not the cost of the "
    "mechanism; pin the parties to two CPUs (cpus=0,1) to measure the spin hand-over."
)
FILE_FADVISE = (
    "cache=fadvise: before every iteration the probe runs fdatasync and "
    "posix_fadvise(DONTNEED) on the file, so its pages leave the page cache, but dentries and "
    "the inode stay cached, and the loop pauses for the flush between iterations. Open (a "
    "path lookup in cached dentries) is therefore not cold, and can even come out faster than "
    "warm: the pause lets the CPU and the filesystem's background work settle. That pause, not "
    "the cache, made open look faster 'without cache' in the ORWC cache lab (suite seeds). "
    "cache=drop empties the dentry and inode caches too (root only)."
)
FILE_DROP = (
    "cache=drop: before every iteration the probe runs sync and writes 3 to "
    "/proc/sys/vm/drop_caches, emptying the page cache and the dentry and inode caches: open "
    "looks the path up again. The drop takes long and lies between the timed regions, so "
    "every iteration follows a pause (compare with cache=fadvise, which pauses too but keeps "
    "dentries and inodes)."
)
FILE_READ_CACHED = (
    "order=wr: the read follows the write, so it is served from the page cache the write just "
    "filled, whatever cache says: this read is not cold. For a cold read use "
    "open=existing order=rw."
)
FILE_READ_COLD = (
    "order=rw: the read comes first after the file's pages were dropped, so it is a cold read "
    "(from the device), and the write after it finds the page cached."
)
FILE_TMPFS = (
    "tmpfs: the page cache is the storage, so nothing can be dropped; cache=fadvise and "
    "cache=drop measure the pause between iterations, not a cold cache."
)

PYTHON_GIL = (
    "Both threads busy-wait in one Python interpreter, and only the thread holding the GIL "
    "runs: the waiting one keeps it until the interpreter forces a switch. CPython forces it "
    "after sys.getswitchinterval() ({interval}), so each hand-off takes one switch interval "
    "or a few; PyPy forces it sooner, so its hand-offs grow with the interval but stay a "
    "fraction of it. The figure is the interpreter's switching, not the primitive's cost: "
    "report 002's 5 ms spinlock and semaphore were exactly this. Between two processes (a GIL "
    "each, mode=processes) the same busy-wait costs microseconds; 'latscope suite gil' sweeps "
    "the interval (docs/python-runtime.md)."
)
# The interval as it reads where a note stands for several runs whose intervals differ.
EACH_INTERVAL = "each run's switchinterval; 5 ms by default"


def _interval(p: Mapping[str, Any]) -> str:
    v = p.get("switchinterval")
    try:
        return f"{float(v) * 1e3:g} ms in this run" if v not in (None, "") else "5 ms by default"
    except (TypeError, ValueError):
        return "5 ms by default"


def _python_gil(interval: str) -> Note:
    return Note("python-gil", PYTHON_GIL.format(interval=interval))


def notes_for(
    benchmark: str, params: Mapping[str, Any] | None, fs_type: str | None = None
) -> list[Note]:
    """The notes that explain ``benchmark``'s figures under ``params`` (see the module
    docstring); ``fs_type`` is the file benchmark's filesystem type, when known."""
    p = params or {}
    out: list[Note] = []
    if probe.placement(p.get("cpus")) == "same_cpu" and spinning(benchmark):
        out.append(Note("spin-one-cpu", SPIN_ONE_CPU))
    entry = probe.entry(benchmark) or {}
    if (
        entry.get("engine") == "python"
        and (entry.get("mechanism") or {}).get("blocking") is False
        and str(p.get("mode") or "threads") == "threads"
    ):
        out.append(_python_gil(_interval(p)))
    if benchmark == "file":
        cache = str(p.get("cache") or "warm")
        if cache == "fadvise":
            out.append(Note("file-fadvise", FILE_FADVISE))
        elif cache == "drop":
            out.append(Note("file-drop", FILE_DROP))
        if cache in ("fadvise", "drop"):
            if str(p.get("order") or "wr") == "wr":
                out.append(Note("file-read-cached", FILE_READ_CACHED))
            else:
                out.append(Note("file-read-cold", FILE_READ_COLD))
            if fs_type == "tmpfs":
                out.append(Note("file-tmpfs", FILE_TMPFS))
    return out


def run_notes(meta: Mapping[str, Any]) -> list[Note]:
    """``notes_for`` a stored run's metadata (benchmark, resolved params, filesystem: the
    probe's record, ``env.filesystem``; ``bench.filesystem`` in files of older probes)."""
    fs = ((of_header(dict(meta)) or {}).get("filesystem") or {}).get("fstype")
    return notes_for(str(meta.get("benchmark") or ""), meta.get("params") or {}, fs)


def grouped_notes(items: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[tuple[str, Note]]:
    """Notes of several (name, benchmark, params) items, each note once with the names it
    applies to (comma-separated, each name once), in first-seen order: for tables of
    scenarios or cells. A note whose text differs between the items (the python-gil note's
    switch interval) reads in its general form there, never as one item's."""
    seen: dict[str, tuple[list[str], Note]] = {}
    for name, bench, params in items:
        for note in notes_for(bench, params):
            names, first = seen.setdefault(note.key, ([], note))
            if name not in names:
                names.append(name)
            if note.text != first.text:
                seen[note.key] = (names, _general(note))
    return [(", ".join(names), note) for names, note in seen.values()]


def _general(note: Note) -> Note:
    """``note`` in words that hold for every run it stands for."""
    return _python_gil(EACH_INTERVAL) if note.key == "python-gil" else note
