"""Errors a user can act on: each carries one line and the exit code the CLI returns."""

from __future__ import annotations

import signal


class LatscopeError(Exception):
    """A problem the user can fix (bad input: exit 2) or that this machine imposes (exit 3)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class BadInput(LatscopeError):
    def __init__(self, message: str) -> None:
        super().__init__(message, 2)


class Unsupported(LatscopeError):
    def __init__(self, message: str) -> None:
        super().__init__(message, 3)


class MeasurementFailed(LatscopeError):
    def __init__(self, message: str) -> None:
        super().__init__(message, 1)


class StoreFull(LatscopeError):
    """The store's file system is full (ENOSPC, EDQUOT): a write of the store failed, what it
    was writing is gone again, and the line says how much was needed and what to do (exit 1:
    a failed operation)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 1)


class StoreNotWritable(LatscopeError):
    """The store cannot be written here (a read-only file system, EROFS; no permission, EACCES
    or EPERM): what this machine does not permit (exit 3); views still read it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 3)


class Interrupted(LatscopeError):
    """Stopped by a signal (SIGINT, SIGTERM, SIGHUP: probe.stop_signals): the line says which
    and what became of the work (``what``); the exit status is 128 + the signal's number."""

    def __init__(self, what: str = "nothing was kept", signum: int = signal.SIGINT) -> None:
        self.what = what
        self.signum = int(signum)
        super().__init__(self._line(), 128 + self.signum)

    def _line(self) -> str:
        try:
            name = signal.Signals(self.signum).name
        except ValueError:
            name = f"signal {self.signum}"
        return f"interrupted by {name}; {self.what}"

    def retitle(self, signum: int | None = None, what: str | None = None) -> Interrupted:
        """The same stop, named after another signal and/or saying what else became of the
        work (e.g. what a suite kept before)."""
        if signum is not None:
            self.signum = int(signum)
            self.exit_code = 128 + self.signum
        if what is not None:
            self.what = what
        self.message = self._line()
        self.args = (self.message,)
        return self
