"""A report's figures drawn on several CPUs (report/drawing.py): the same PNG bytes as drawn
one after another; the figures of a child that fails or hangs are drawn by the parent; no
child outlives `drawn`, whatever happens."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from latscope.report import drawing

if not hasattr(os, "fork") or not hasattr(os, "memfd_create"):
    pytest.skip("figures are drawn in forked processes on Linux only", allow_module_level=True)


def _maker(k: int, parent: int, child_does: str = ""):  # noqa: ANN202
    def make():  # noqa: ANN202
        if os.getpid() != parent and child_does == "fail":
            raise RuntimeError("a child that fails")
        if os.getpid() != parent and child_does == "hang":
            time.sleep(3600)
        from latscope.plots.common import new_figure

        # a small figure (2 x 1.5 inches, half the CPU of a report's 5 x 3.6): what is
        # drawn stands in for a report's figure, with a line, ticks, labels and a title
        fig = new_figure(1, 1, size=(2.0, 1.5))
        ax = fig.axes[0]
        ax.plot(np.arange(100), np.sin(np.arange(100) / (k + 1)))
        ax.set_title(f"figure {k}")
        return fig

    return make


FORKED: list[int] = []


@pytest.fixture(autouse=True)
def _record_forks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every child `drawn` forks, by pid (in the parent)."""
    real = os.fork
    FORKED.clear()

    def fork() -> int:
        pid = real()
        if pid:
            FORKED.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)


def _no_children() -> bool:
    """Every child forked is gone and reaped (waitpid knows none of them)."""
    assert FORKED, "no child was forked"
    for pid in FORKED:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False
    return True


def test_figures_drawn_in_children_are_the_bytes_drawn_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(drawing, "_workers", lambda n: min(n, 3))
    makers = [_maker(k, os.getpid()) for k in range(5)]
    done: list[int] = []
    shared = drawing.drawn(makers, 50, progress=done.append)
    alone = [drawing._draw(m, 50) for m in makers]
    assert shared == alone
    assert sorted(done) == list(range(5))
    assert all(png.startswith(b"\x89PNG") for png, _, _ in shared)
    assert _no_children()


@pytest.mark.parametrize("child_does", ["fail", "hang"])
def test_a_child_that_fails_or_hangs_has_its_share_drawn_here(
    monkeypatch: pytest.MonkeyPatch, child_does: str
) -> None:
    monkeypatch.setattr(drawing, "_workers", lambda n: 2)
    monkeypatch.setattr(drawing, "MIN_WAIT_S", 1.0)
    parent = os.getpid()
    makers = [_maker(k, parent, child_does) for k in range(4)]
    got = drawing.drawn(makers, 50)
    assert got == [drawing._draw(_maker(k, parent), 50) for k in range(4)]
    assert _no_children()


def test_an_error_here_leaves_no_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drawing, "_workers", lambda n: 2)
    monkeypatch.setattr(drawing, "MIN_WAIT_S", 1.0)
    parent = os.getpid()

    def boom():  # noqa: ANN202
        if os.getpid() == parent:
            raise KeyboardInterrupt  # a Ctrl-C while this process draws its share
        time.sleep(3600)

    with pytest.raises(KeyboardInterrupt):
        drawing.drawn([boom, _maker(1, parent, "hang")], 50)
    assert _no_children()
