"""The summary table: every run's summary rows in Hive-style partitioned Parquet, the files
`ls` and `history` read, and DuckDB, polars, Spark or Trino read as they are (docs/store.md,
"The summary table").

    STORE/summary/benchmark=<benchmark>/month=<YYYY-MM>/part-<time>-<random>.parquet

A partition is one benchmark's runs of one month (the month of their creation, UTC).  The
partition keys are in the directory names only, never in the files.  Rows are added by
writing a new part file (`append`: a temporary beside it, renamed: a reader sees all of it or
none of it, and concurrent writers never write one file); a partition of more than
`COMPACT_AT` files is compacted (`compact`: its rows rewritten into one file, then the files
merged in unlinked), so a store of 10,000 runs stays a few files per benchmark and month.

The table is an index of the run directories (each run keeps its own summary.parquet and
run.json, the truth): `fingerprint` records the type, size, times and inode of a run's
run.json, samples.lss and summary.parquet when its rows were written, and a run whose files no
longer match is read and checked again (`store.catalog`).  A row of a run that is gone is
never shown and is dropped by the next compaction; rows written twice for one run (a race of
two writers) are read once: the latest `indexed_utc`.

Every directory is opened without following a symbolic link (O_NOFOLLOW, relative to the one
above), every file read through the guarded reader; a write goes into directories opened from
the store's root and checked (safe.py: a table another user could redirect is not written),
each file through `files.atomic_write` into the directory held open.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from ..errors import BadInput
from ..files import atomic_write, read_bytes
from . import safe
from .index import SUMMARY_COLUMNS, dtypes, fits, parquet_bytes
from .layout import Skipped

if TYPE_CHECKING:
    import polars as pl

TABLE_DIR = "summary"
#: The partition keys, outermost first: directory names ``key=value``.
KEYS = ("benchmark", "month")
#: The version of the table's rows (summary.parquet's 2, plus host, tags, status, env_brief,
#: fingerprint and indexed_utc, without the partition keys).
TABLE_VERSION = 3
#: Files in one partition before an append compacts it into one.
COMPACT_AT = 4
#: The largest part file the store reads (a compacted partition: ~500 bytes a row).
PART_LIMIT = 1 << 30
#: A compaction claimed longer ago than this was left by a killed writer and is taken over.
_CLAIM_STALE_S = 120.0

#: The columns of a part file, in order (polars dtypes by name): summary.parquet's without the
#: partition key ``benchmark``, then what the table adds.
TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    *((n, t) for n, t in SUMMARY_COLUMNS if n != "benchmark"),
    ("host", "Utf8"),  # the host tag the run was added with, else the measuring host's name
    ("tags", "Utf8"),  # JSON: run.json's tags
    ("status", "Utf8"),
    ("env_brief", "Utf8"),  # JSON: what env.compat.compatible reads of run.json's environment
    ("fingerprint", "Utf8"),  # run.json, samples.lss, summary.parquet when indexed
    ("indexed_utc", "Datetime"),
)
#: The columns of the rows as read (`read`): the partition keys first, then the file's.
ROW_COLUMNS: tuple[tuple[str, str], ...] = (
    ("benchmark", "Utf8"),
    ("month", "Utf8"),
    *TABLE_COLUMNS,
)
_REQUIRED = ("run_id", "created_utc", "column", "column_index")


def encode(value: str) -> str:
    """A partition value as a directory name: Hive's escaping (``%XX`` for anything but
    letters, digits and ``_.-``), so ``/``, ``=`` and a leading dot never reach a path."""
    return quote(value, safe="_-").replace(".", "%2E")


def month_of(created: datetime | None) -> str:
    return created.strftime("%Y-%m") if created else "unknown"


def partition(benchmark: str, created: datetime | None) -> tuple[str, str]:
    """The directory names of a run's partition: ``benchmark=...``, ``month=...``."""
    return f"benchmark={encode(benchmark)}", f"month={month_of(created)}"


# ------------------------------------------------------------------------------- directories


def _open_dir(parent: int, name: str) -> int:
    """A directory ``name`` in the open directory ``parent``, opened for reading without
    following a link; OSError when it is missing, a link or not a directory."""
    return os.open(name, safe.DIR_FLAGS, dir_fd=parent)


def _part_name() -> str:
    return f"part-{time.time_ns():x}-{secrets.token_hex(4)}.parquet"


# ------------------------------------------------------------------------------- writing


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Rows (dicts with the columns of `ROW_COLUMNS`, missing ones null) as a frame of
    `ROW_COLUMNS`."""
    import polars as pl

    kinds = dtypes(utc=False)
    schema = {name: kinds[t] for name, t in ROW_COLUMNS}
    return pl.DataFrame(
        [{name: r.get(name) for name in schema} for r in rows], schema=schema, orient="row"
    )


def part_bytes(df: pl.DataFrame) -> bytes:
    """Rows (`ROW_COLUMNS`) as the bytes of a part file."""
    import polars as pl

    cols = [
        pl.col(n).dt.replace_time_zone("UTC") if t == "Datetime" else pl.col(n)
        for n, t in TABLE_COLUMNS
    ]
    df = df.sort(["created_utc", "run_id", "column_index"]).select(cols)
    return parquet_bytes(df, statistics=True)


def _write(dfd: int, df: pl.DataFrame) -> str:
    """A new part file of ``df`` in the partition held as ``dfd``; its name.  The Parquet
    bytes are made in memory first (`parquet_bytes`): a full file system is an OSError."""
    data = part_bytes(df)
    name = _part_name()
    with atomic_write(name, replace=False, dir_fd=dfd) as f:
        f.write(data)
    return name


@dataclass
class Added:
    """A part file `append` wrote: its partition (``names``: ``summary``'s directories below
    the store's root), its name, and how many of those directories it made (the innermost)."""

    names: tuple[str, ...]
    part: str
    made: int


def append(
    root: Path, df: pl.DataFrame, tidy: bool = True, added: list[Added] | None = None
) -> list[tuple[str, str]]:
    """Add rows (`ROW_COLUMNS`) to the table under ``root`` (the store): one new part file in
    each partition they belong to, written atomically; a partition that has grown beyond
    `COMPACT_AT` files is compacted (``tidy``; else left for `tidy_up`).  Returns the
    partitions written; ``added``: each part file written is recorded there (`remove`
    takes them back).  OSError or BadInput when the table cannot be written (a link planted
    in its path, a directory another user could redirect: safe.py, a read-only or full
    store): a directory made for the failed part is removed again."""
    import polars as pl

    done = []
    for (bench, month), part in df.group_by(["benchmark", "month"], maintain_order=True):
        names = (TABLE_DIR, f"benchmark={encode(str(bench))}", f"month={month}")
        made = _missing(root, names)
        try:
            with safe.held(root, names, create=True) as dfd:
                now = datetime.now(timezone.utc).replace(tzinfo=None)
                stamped = part.with_columns(pl.lit(now, pl.Datetime("us")).alias("indexed_utc"))
                name = _write(dfd, stamped)
                many = sum(1 for n in os.listdir(dfd) if _is_part(n)) > COMPACT_AT
        except BaseException:
            _unmake(root, names, made)
            raise
        if added is not None:
            added.append(Added(names, name, made))
        done.append(names[1:])
        if many and tidy:
            compact(root, names[1:])
    return done


def tidy_up(root: Path, partitions: list[tuple[str, str]]) -> None:
    """Compact those of ``partitions`` that have grown beyond `COMPACT_AT` files (`append`
    with ``tidy=False`` left them); a failure leaves them as they are (still correct)."""
    for names in partitions:
        try:
            with safe.held(root, (TABLE_DIR, *names)) as dfd:
                many = sum(1 for n in os.listdir(dfd) if _is_part(n)) > COMPACT_AT
            if many:
                compact(root, names)
        except (OSError, BadInput):
            pass


def remove(root: Path, added: list[Added]) -> None:
    """Take back the part files `append` wrote (``added``), and the directories it made for
    them where they are empty: a run that was not kept leaves nothing in the table."""
    for a in reversed(added):
        with contextlib.suppress(OSError, BadInput), safe.held(root, a.names) as dfd:
            os.unlink(a.part, dir_fd=dfd)
        _unmake(root, a.names, a.made)


def _missing(root: Path, names: tuple[str, ...]) -> int:
    """How many of the directories ``root/names...`` are missing (the innermost ones)."""
    path = root
    for i, name in enumerate(names):
        path = path / name
        if not os.path.lexists(path):
            return len(names) - i
    return 0


def _unmake(root: Path, names: tuple[str, ...], made: int) -> None:
    """Remove the innermost ``made`` directories of ``root/names...`` where they are empty
    (innermost first, each through the directory above it held open)."""
    for j in range(len(names) - 1, len(names) - 1 - made, -1):
        try:
            with safe.held(root, names[:j]) as fd:
                os.rmdir(names[j], dir_fd=fd)
        except (OSError, BadInput):
            return


def _is_part(name: str) -> bool:
    return name.endswith(".parquet") and not name.startswith((".", "_"))


@contextlib.contextmanager
def _claim(dfd: int) -> Iterator[bool]:
    """A partition's compaction claimed (a directory ``.compacting`` made with mkdir: one
    compactor at a time; a claim older than `_CLAIM_STALE_S` was left by a killed one)."""
    name = ".compacting"
    for _ in range(2):
        try:
            os.mkdir(name, 0o700, dir_fd=dfd)
        except FileExistsError:
            try:
                age = time.time() - os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mtime
            except OSError:
                continue
            if age > _CLAIM_STALE_S:
                with contextlib.suppress(OSError):
                    os.rmdir(name, dir_fd=dfd)
                continue
            yield False
            return
        try:
            yield True
        finally:
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=dfd)
        return
    yield False


def compact(
    root: Path, names: tuple[str, ...], keep: set[str] | None = None, drop: set[str] = frozenset()
) -> bool:
    """Rewrite a partition (``names``: its ``benchmark=``, ``month=`` directories) as one
    file: the rows of its readable part files, one set per run (the latest), without the runs
    in ``drop`` (and, given ``keep``, without the runs not in it); the merged file is written
    (atomically) before the files merged in are unlinked, so a reader meanwhile sees a run
    twice at worst, never not at all.  False when another writer is compacting it."""
    import polars as pl

    with safe.held(root, (TABLE_DIR, *names)) as dfd, _claim(dfd) as mine:
        if not mine:
            return False
        files = sorted(n for n in os.listdir(dfd) if _is_part(n))
        frames, merged = [], []
        for name in files:
            try:
                frames.append(_read_part(Path(f"/proc/self/fd/{dfd}") / name, name))
            except BadInput:
                pass  # a damaged file: its runs are indexed again from their directories
            merged.append(name)
        if frames:
            df = _latest(_naive(pl.concat(frames, how="vertical")))
            if keep is not None:
                df = df.filter(pl.col("run_id").is_in(list(keep)))
            if drop:
                df = df.filter(~pl.col("run_id").is_in(list(drop)))
            if df.height:
                _write(dfd, df)
        for name in merged:
            with contextlib.suppress(OSError):
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    os.unlink(name, dir_fd=dfd)
    return True


# ------------------------------------------------------------------------------- reading


def _read_part(path: Path, shown_as: str | Path) -> pl.DataFrame:
    """One part file's rows in the types and order of `TABLE_COLUMNS` (a column the file
    lacks null), checked: Parquet, the required columns filled, each known column of its
    type.  BadInput (one line naming ``shown_as``) when it cannot be used."""
    import polars as pl
    from polars.exceptions import PanicException

    try:
        raw = read_bytes(path, "a part of the summary table", PART_LIMIT, follow=False)
    except BadInput as e:
        raise BadInput(f"{shown_as}: {e.message.split(': ', 1)[-1]}") from None
    try:
        df = pl.read_parquet(io.BytesIO(raw))
    except (Exception, PanicException) as e:  # polars' errors, and its panics on bad input
        raise BadInput(f"{shown_as}: not a readable parquet file ({type(e).__name__})") from None
    types = dict(TABLE_COLUMNS)
    for name in _REQUIRED:
        if name not in df.columns:
            raise BadInput(f"{shown_as}: no column '{name}'")
        if df[name].null_count():
            raise BadInput(f"{shown_as}: column '{name}' has empty values")
    written = _written()
    if df.schema == written:
        return df  # as this latscope writes it: nothing to convert
    for name, dtype in df.schema.items():
        if name in types and not fits(dtype, types[name]):
            raise BadInput(f"{shown_as}: column '{name}' is {dtype}, not {types[name]}")
    cols = []
    for name, want in written.items():
        if name not in df.columns:
            cols.append(pl.lit(None, want).alias(name))
        elif isinstance(want, pl.Datetime):
            c = pl.col(name)
            if getattr(df.schema[name], "time_zone", None):
                cols.append(c.dt.convert_time_zone("UTC"))
            else:
                cols.append(c.cast(pl.Datetime("us")).dt.replace_time_zone("UTC"))
        else:
            cols.append(pl.col(name).cast(want, strict=False))
    return df.select(cols)


def _written() -> pl.Schema:
    """The schema of a part file as `_write` writes it (times in UTC)."""
    import polars as pl

    kinds = dtypes(utc=True)
    return pl.Schema({name: kinds[t] for name, t in TABLE_COLUMNS})


def _naive(df: pl.DataFrame) -> pl.DataFrame:
    """Rows of part files (`_read_part`) with their times naive, in UTC, as `frame` has them."""
    import polars as pl

    return df.with_columns(
        pl.col(n).dt.replace_time_zone(None) for n, t in TABLE_COLUMNS if t == "Datetime"
    )


def _latest(df: pl.DataFrame) -> pl.DataFrame:
    """One set of rows per run: those indexed last (a run indexed twice, by a race of two
    writers or again after its files changed, is read once)."""
    import polars as pl

    if df.height == 0:
        return df
    last = pl.col("indexed_utc").fill_null(datetime(1970, 1, 1))
    df = df.filter(last == last.max().over("run_id"))
    return df.unique(["run_id", "column_index"], keep="first", maintain_order=True)


@dataclass
class Table:
    rows: pl.DataFrame  # ROW_COLUMNS, one set per run
    partitions: dict[str, list[tuple[str, str]]]  # run id -> the partitions holding it
    damaged: list[Skipped]
    mend: set[tuple[str, str]] = field(default_factory=set)  # partitions with a damaged file


def _listdir(dfd: int) -> list[tuple[str, int]]:
    out = []
    for name in sorted(os.listdir(dfd)):
        try:
            out.append((name, os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode))
        except OSError:
            continue
    return out


def read(root: Path, benchmark: str | None = None) -> Table:
    """Every row of the table under ``root`` (``benchmark``: of that benchmark's partitions
    only).  A part file, or an entry where a partition should be, that cannot be used is in
    ``damaged`` (one line each) and left out; a table that does not exist is empty."""
    import polars as pl

    damaged: list[Skipped] = []
    mend: set[tuple[str, str]] = set()
    frames: list[pl.DataFrame] = []
    where: dict[str, list[tuple[str, str]]] = {}
    top = root / TABLE_DIR
    try:
        rfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return Table(frame([]), {}, damaged)
    try:
        tfd = _open_dir(rfd, TABLE_DIR)
    except OSError as e:
        if e.errno not in (errno.ENOENT,):
            damaged.append(Skipped(top, _why(e, top)))
        return Table(frame([]), {}, damaged)
    finally:
        os.close(rfd)
    try:
        want = f"benchmark={encode(benchmark)}" if benchmark is not None else None
        for bname, bmode in _listdir(tfd):
            if bname.startswith((".", "_")) or (want is not None and bname != want):
                continue
            if not bname.startswith("benchmark=") or not stat.S_ISDIR(bmode):
                damaged.append(Skipped(top / bname, _foreign(bmode, "benchmark=NAME")))
                continue
            bench = unquote(bname.split("=", 1)[1])
            try:
                bfd = _open_dir(tfd, bname)
            except OSError as e:
                damaged.append(Skipped(top / bname, _why(e, top / bname)))
                continue
            try:
                for mname, mmode in _listdir(bfd):
                    if mname.startswith((".", "_")):
                        continue
                    if not mname.startswith("month=") or not stat.S_ISDIR(mmode):
                        damaged.append(Skipped(top / bname / mname, _foreign(mmode, "month=M")))
                        continue
                    before = len(damaged)
                    _read_partition(
                        bfd, top / bname / mname, (bname, mname), bench, frames, where, damaged
                    )
                    if len(damaged) > before:
                        mend.add((bname, mname))
            finally:
                os.close(bfd)
    finally:
        os.close(tfd)
    if not frames:
        return Table(frame([]), where, damaged, mend)
    return Table(_latest(pl.concat(frames, how="vertical")), where, damaged, mend)


def _read_partition(
    bfd: int,
    path: Path,
    names: tuple[str, str],
    bench: str,
    frames: list[pl.DataFrame],
    where: dict[str, list[tuple[str, str]]],
    damaged: list[Skipped],
) -> None:
    import polars as pl

    month = names[1].split("=", 1)[1]
    for attempt in range(3):
        try:
            mfd = _open_dir(bfd, names[1])
        except OSError as e:
            damaged.append(Skipped(path, _why(e, path)))
            return
        try:
            got, bad, vanished = [], [], False
            for name, mode in _listdir(mfd):
                if not _is_part(name):
                    continue
                if not stat.S_ISREG(mode):
                    bad.append(Skipped(path / name, _foreign(mode, "a part file")))
                    continue
                try:
                    got.append(_read_part(Path(f"/proc/self/fd/{mfd}") / name, path / name))
                except BadInput as e:
                    if "no such file" in e.message and attempt < 2:
                        vanished = True  # merged by a compaction meanwhile: read it again
                        break
                    bad.append(Skipped(path / name, e.message.split(": ", 1)[-1]))
        finally:
            os.close(mfd)
        if not vanished:
            break
    damaged.extend(bad)
    if not got:
        return
    df = _naive(pl.concat(got, how="vertical"))
    df = df.with_columns(pl.lit(bench).alias("benchmark"), pl.lit(month).alias("month"))
    frames.append(df.select([n for n, _ in ROW_COLUMNS]))
    for rid in df["run_id"].unique().to_list():
        where.setdefault(rid, []).append(names)


def _why(e: OSError, path: Path) -> str:
    with contextlib.suppress(OSError):
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return "a symbolic link, not a directory of the summary table (never followed)"
    if e.errno == errno.ELOOP:
        return "a symbolic link, not a directory of the summary table (never followed)"
    if e.errno == errno.ENOTDIR:
        return "not a directory of the summary table"
    return f"cannot be read ({e.strerror})"


def _foreign(mode: int, want: str) -> str:
    if stat.S_ISLNK(mode):
        return f"a symbolic link, not {want} (never followed)"
    if stat.S_ISDIR(mode):
        return f"a directory, not {want}"
    return f"not {want} of the summary table"


def rows_of(
    meta: Mapping[str, Any], summary: pl.DataFrame, host: str | None, fingerprint: str
) -> pl.DataFrame:
    """A run's rows of the table (`ROW_COLUMNS`): its summary.parquet rows (`summary`, as
    `index.read` gives them) with what run.json says of the run (``meta``: tags, status,
    parameters) and its host."""
    import json

    import polars as pl

    from ..env.compat import brief
    from .index import run_columns

    run = run_columns(dict(meta))
    env = meta.get("env")
    created = run["created_utc"]
    if meta.get("params") is None:  # run.json without them: the sample file's, as summarized
        run.pop("params")
    run.update(
        schema_version=TABLE_VERSION,
        created_utc=created.replace(tzinfo=None) if created else None,
        month=month_of(created),
        host=host,
        tags=json.dumps(meta.get("tags") or {}, sort_keys=True),
        status=meta.get("status") or "complete",
        env_brief=json.dumps(brief(env), sort_keys=True) if isinstance(env, dict) else None,
        fingerprint=fingerprint,
        indexed_utc=None,
    )
    if created is None:
        run.pop("created_utc")
    kinds = dtypes(utc=False)
    types = dict(ROW_COLUMNS)
    df = summary.with_columns(pl.lit(v, kinds[types[k]]).alias(k) for k, v in run.items())
    return df.select(pl.col(n).cast(kinds[t], strict=False) for n, t in ROW_COLUMNS)


def fingerprint(d: str | Path, names: tuple[str, ...]) -> str:
    """The type, size, modification and change times and inode of each file of a run
    directory (``-`` for one that is missing): what `catalog` compares to trust a row."""
    parts = []
    base = os.fspath(d)
    for name in names:
        try:
            st = os.lstat(f"{base}/{name}")
        except OSError:
            parts.append("-")
            continue
        parts.append(
            f"{stat.S_IFMT(st.st_mode):o}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
        )
    return "/".join(parts)
