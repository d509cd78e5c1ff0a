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
- ``file-discard``: ``file`` with ``open=create`` (``O_TRUNC`` frees the blocks written the
  iteration before) on a file system mounted with ``discard`` (``fs_options``: the mount's
  and the superblock's options, as /proc/self/mountinfo gives them);
- ``file-sync``: ``file`` on a file system mounted ``sync`` (every write waits for the
  device) or ``dirsync`` (every directory change does: ``open=create`` makes one);
- ``file-data-journal``: ``file`` on ext3/ext4 with ``data=journal`` (data is written twice);
- ``python-gil``: a benchmark of the Python runtime engine whose parties busy-wait
  (``mechanism.blocking`` false) between two threads (``mode=threads``): they share one GIL.

Notes from the machine a run was measured on (``env_notes``: its header's environment):

- ``idle-wake``: a blocking mechanism whose parties may sit on two CPUs (``cpus=A,B`` or
  unpinned): the waiting one's CPU goes idle, and the figure holds its wake-up, from a deep
  idle state (an enabled state whose exit latency passes `DEEP_IDLE_US`) or, on a virtual
  machine, from a halted vCPU, which the hypervisor wakes;
- ``frequency``: a CPU whose cpufreq governor scales its clock with the load (any but
  ``performance``/``userspace``): the clock a figure ran at followed the load.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import probe
from .env import of_header, of_run
from .env.checks import frequency_control


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
    "path lookup in cached dentries) is therefore not cold; where it comes out faster than "
    "warm, it is not for want of a cache: the flush changed what the next open has to do (on "
    "a file system mounted with discard, what O_TRUNC frees): the ORWC cache lab's open "
    "'faster without cache'. Compare cache=warm pause=US (the same pause, no flush: suite "
    "seeds' r000-orwc-pause) and open=existing. cache=drop empties the dentry and inode caches "
    "too (root only)."
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

FILE_WRITE_CACHE = (
    "The file's device ({device}) has a volatile write cache ('write back'): fsync returns "
    "only after the device has flushed that cache, so the fsync column holds a cache flush "
    "(on a virtual machine, the host's storage flushing), not only the write of this file's "
    "blocks. A device whose cache says 'write through' needs no flush."
)
FILE_DISCARD = (
    "The file system is mounted with discard: freeing a file's blocks sends a discard (trim) "
    "to the device and waits for it. With open=create every open truncates the data the "
    "iteration before wrote (O_TRUNC: on ext4, ext4_truncate -> ext4_free_blocks -> "
    "blkdev_issue_discard), so open and close time the device's discard, not the open: on a "
    "virtual machine's disk 0.1 to 1 ms, against about 1 us with open=existing. Use "
    "open=existing to time the open alone, or a file system mounted without discard (fstrim "
    "discards in batches instead)."
)
FILE_SYNC = (
    "The file system is mounted {option}: {what} waits for the device, so the figure holds a "
    "device write, not the page cache's work."
)
FILE_DATA_JOURNAL = (
    "The file system journals data (data=journal): every write goes to the journal and then "
    "to its place, twice the work of the default (data=ordered)."
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


#: An idle state whose exit latency passes this (µs) is deep: its wake-up shows in an IPC figure.
DEEP_IDLE_US = 10

IDLE_DEEP = (
    "The wake-up of an idle CPU is in this figure: a party that blocks on a CPU of its own "
    "lets that CPU go idle, and the {driver} idle driver may put it in {state} (exit latency "
    "{latency} µs). Compare cpus=A,A (one CPU never idles between the parties), or hold the "
    "idle states shallow while measuring (cpupower idle-set -D {DEEP_IDLE_US}, or "
    "/dev/cpu_dma_latency held at 0) and record that you did."
)
IDLE_VM = (
    "The wake-up of an idle vCPU is in this figure: a party that blocks on a CPU of its own "
    "lets that vCPU go idle; on this virtual machine ({driver}) it {how}, and a halted vCPU "
    "is woken by the hypervisor (an interrupt the host delivers), which costs far more than "
    "the idle states' stated exit latency ({latency} µs). Compare cpus=A,A (one CPU never "
    "idles between the parties); 'latscope explain' shows the wait as the run queue after a "
    "wake-up."
)
FREQUENCY = (
    "The CPUs' clock follows the load (cpufreq governor {governor}{driver}{turbo}): a party "
    "that waits more than it works may run at a lower frequency than one that spins, and the "
    "frequency may change during the run. For figures that are compared, fix it (cpupower "
    "frequency-set -g performance) and record that you did."
)


def env_notes(
    benchmark: str, params: Mapping[str, Any] | None, env: Mapping[str, Any]
) -> list[Note]:
    """The notes the machine a run was measured on adds to its figures (see the module
    docstring): ``env`` is its header's environment (`env.of_header`)."""
    p = params or {}
    out: list[Note] = []
    m = (probe.entry(benchmark) or {}).get("mechanism") or {}
    two_cpus = (
        "different_cpus" in (m.get("placements") or [])
        and probe.placement(p.get("cpus")) != "same_cpu"
    )
    idle = env.get("cpuidle") if isinstance(env.get("cpuidle"), dict) else {}
    vm = bool((env.get("virtualization") or {}).get("vm"))
    if m.get("blocking") is True and two_cpus and (idle or vm):
        states = [
            s for s in idle.get("states") or [] if isinstance(s, dict) and not s.get("disabled")
        ]
        lat = max((s.get("latency_us") or 0 for s in states), default=0)
        deepest = max(states, key=lambda s: s.get("latency_us") or 0, default={})
        driver = idle.get("driver") or "no idle driver"
        if vm:
            how = (
                "polls for a moment and then halts"
                if str(idle.get("driver")) == "haltpoll"
                else "halts"
            )
            out.append(Note("idle-wake", IDLE_VM.format(driver=driver, how=how, latency=lat)))
        elif lat > DEEP_IDLE_US:
            text = IDLE_DEEP.format(
                driver=driver, state=deepest.get("name"), latency=lat, DEEP_IDLE_US=DEEP_IDLE_US
            )
            out.append(Note("idle-wake", text))
    if frequency_control(dict(env)):
        freq = env.get("cpufreq") or {}
        scaling = sorted(
            {
                str(e.get("governor"))
                for e in (freq.get("per_cpu") or {}).values()
                if e.get("governor") not in (None, "performance", "userspace")
            }
        )
        if scaling:
            text = FREQUENCY.format(
                governor=", ".join(scaling),
                driver=f", driver {freq['driver']}" if freq.get("driver") else "",
                turbo=", turbo on" if freq.get("turbo") else "",
            )
            out.append(Note("frequency", text))
    return out


def _python_gil(interval: str) -> Note:
    return Note("python-gil", PYTHON_GIL.format(interval=interval))


def notes_for(
    benchmark: str,
    params: Mapping[str, Any] | None,
    fs_type: str | None = None,
    fs_options: str = "",
    device: Mapping[str, Any] | None = None,
) -> list[Note]:
    """The notes that explain ``benchmark``'s figures under ``params`` (see the module
    docstring); ``fs_type`` is the file benchmark's filesystem type and ``fs_options`` its
    mount's options, when known."""
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
        opts = set(fs_options.split(","))
        if "discard" in opts and str(p.get("open") or "create") == "create":
            out.append(Note("file-discard", FILE_DISCARD))
        if "sync" in opts:
            what = "every write (and every directory change)"
            out.append(Note("file-sync", FILE_SYNC.format(option="sync", what=what)))
        elif "dirsync" in opts and str(p.get("open") or "create") == "create":
            what = "every directory change (open=create makes the file anew)"
            out.append(Note("file-sync", FILE_SYNC.format(option="dirsync", what=what)))
        if "data=journal" in opts:
            out.append(Note("file-data-journal", FILE_DATA_JOURNAL))
        dev = device or {}
        if _true(p.get("fsync")) and dev.get("write_cache") == "write back":
            out.append(Note("file-write-cache", FILE_WRITE_CACHE.format(device=dev.get("name"))))
    return out


def _true(v: Any) -> bool:
    """A boolean parameter as a header or a user gives it (true, "true", 1)."""
    return v is True or str(v).lower() in ("true", "1", "yes")


def file_system(
    meta: Mapping[str, Any] | None,
) -> tuple[str | None, str, dict[str, Any] | None]:
    """A stored run's file system (the probe's record, ``env.filesystem``; ``bench.filesystem``
    in files of older probes): its type, its mount's and superblock's options, and the block
    device behind it (its name and write cache; None where not recorded)."""
    fs = (of_header(dict(meta or {})) or {}).get("filesystem") or {}
    options = ",".join(str(fs.get(k) or "") for k in ("mount_options", "super_options"))
    dev = {"name": fs.get("device"), "write_cache": fs.get("write_cache")}
    return fs.get("fstype"), options, dev if fs.get("device") else None


def run_notes(meta: Mapping[str, Any]) -> list[Note]:
    """``notes_for`` a stored run's metadata (benchmark, resolved params, `file_system`), and
    the notes of the machine it was measured on (`env_notes`)."""
    bench, params = str(meta.get("benchmark") or ""), meta.get("params") or {}
    env = of_run(meta.get("run"), dict(meta)) or {}
    return notes_for(bench, params, *file_system(meta)) + env_notes(bench, params, env)


NoteItem = tuple[str, str, Mapping[str, Any]] | tuple[str, str, Mapping[str, Any], Any]


def grouped_notes(items: Iterable[NoteItem]) -> list[tuple[str, Note]]:
    """Notes of several (name, benchmark, params) items, each note once with the names it
    applies to (comma-separated, each name once), in first-seen order: for tables of
    scenarios or cells. An item may end with a run's metadata, whose file system is then
    known (`file_system`). A note whose text differs between the items (the python-gil
    note's switch interval) reads in its general form there, never as one item's."""
    seen: dict[str, tuple[list[str], Note]] = {}
    for name, bench, params, *meta in items:
        if meta and meta[0]:
            found = run_notes({**dict(meta[0]), "benchmark": bench, "params": params})
        else:
            found = notes_for(bench, params)
        for note in found:
            names, first = seen.setdefault(note.key, ([], note))
            if name not in names:
                names.append(name)
            if note.text != first.text:
                seen[note.key] = (names, _general(note))
    return [(", ".join(names), note) for names, note in seen.values()]


def _general(note: Note) -> Note:
    """``note`` in words that hold for every run it stands for."""
    return _python_gil(EACH_INTERVAL) if note.key == "python-gil" else note
