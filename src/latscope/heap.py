"""Memory the C heap holds free, given back to the system between the big steps of a command
(`give_back`): after a CSV's blocks are read, after each column's analysis.

glibc's malloc takes a block below its mmap threshold from its heap, and raises that
threshold (up to 32 MiB) each time a larger block is freed; the arrays of a big column's
analysis (its transform's plan, windows, masks) and of a CSV's blocks then leave the heap
with tens of MB that are free but still resident, counted in the process's memory until
``malloc_trim`` returns them. Where the C library has no ``malloc_trim`` (macOS, musl,
Windows) nothing is done: nothing else changes, the peak is only higher."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError, TypeError):  # no such call, or no C library to load
        return None


def give_back() -> None:
    """Return the C heap's free pages to the system (glibc's ``malloc_trim(0)``; elsewhere
    nothing). It takes a few milliseconds; what is in use stays where it is."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
