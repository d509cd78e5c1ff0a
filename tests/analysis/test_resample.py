"""The block bootstrap's resampling weights (stats/resample.py)."""

import numpy as np
import pytest

from latscope.stats.resample import multinomial_weights


def _one_draw(nb: int, n_boot: int, seed: int) -> np.ndarray:
    """The weights counted from one (n_boot x nb) draw of picks, as they were first made."""
    picks = np.random.default_rng(seed).integers(0, nb, size=(n_boot, nb))
    picks += np.arange(n_boot)[:, None] * nb
    return np.bincount(picks.ravel(), minlength=n_boot * nb).reshape(n_boot, nb).astype(float)


@pytest.mark.parametrize("nb,n_boot", [(1000, 2000), (37, 999), (20, 500), (1, 7), (5000, 3)])
def test_weights_are_those_of_one_draw_counted_whole(nb: int, n_boot: int) -> None:
    """Drawn and counted a slice at a time, the weights are those of one draw of every pick:
    the same random stream, so a seeded interval is the same as before; each resample holds
    nb blocks."""
    w = multinomial_weights(nb, n_boot, np.random.default_rng(11))
    assert w.shape == (n_boot, nb) and w.dtype == np.float64
    assert np.array_equal(w, _one_draw(nb, n_boot, 11))
    assert np.array_equal(w.sum(axis=1), np.full(n_boot, float(nb)))
