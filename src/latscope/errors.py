"""Errors a user can act on: each carries one line and the exit code the CLI returns."""

from __future__ import annotations


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


class Interrupted(LatscopeError):
    def __init__(self, message: str = "interrupted; nothing was kept") -> None:
        super().__init__(message, 130)
