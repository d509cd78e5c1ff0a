"""Resampling blocks of a run: the non-overlapping block bootstrap (Carlstein 1986) that
``intervals.py`` (the mean's bootstrap-t) and ``compare.py`` (the bootstrap of differences)
share.

``block_bootstrap_quantiles`` uses a counting trick: per block, the number of samples at or
below each point of a rank grid around the estimate is tabulated once, and every resample is a
multinomial weighting of the blocks, i.e. one matrix product.
"""

from __future__ import annotations

import math

import numpy as np

from ._common import FloatArray, Prepared

#: At most this many blocks (block length grows with n beyond 1000 x block).
MAX_BLOCKS = 1000
#: At least this many blocks, or the block bootstrap is not worth its name.
MIN_BLOCKS = 20
#: Rank-grid points per bootstrapped quantile.
GRID_POINTS = 256
#: Width of the rank grid in bootstrap standard deviations either side of the estimate.
GRID_HALF_WIDTH_SD = 8.0


def block_plan(n: int, block_length: float) -> tuple[int, int, str | None]:
    """Block length actually used and number of blocks (the last may be shorter), plus a caveat
    when the run is too short for the dependence measured."""
    ell = max(1, math.ceil(block_length), math.ceil(n ** (1.0 / 3.0)), math.ceil(n / MAX_BLOCKS))
    caveat = None
    if n // ell < MIN_BLOCKS:
        wanted = ell
        ell = max(1, n // MIN_BLOCKS)
        if ell < wanted:
            caveat = (
                f"dependence reaches further than the run allows (wanted blocks of {wanted}, "
                f"used {ell}); the interval may be too narrow: measure more iterations"
            )
    return ell, math.ceil(n / ell), caveat


def block_sums(x: FloatArray, ell: int, nb: int) -> tuple[FloatArray, FloatArray]:
    """The sums of ``x`` over its ``nb`` consecutive blocks of ``ell`` (the last may be
    shorter), and their lengths."""
    n = x.size
    full = n // ell
    sums = np.empty(nb)
    lens = np.full(nb, float(ell))
    sums[:full] = x[: full * ell].reshape(full, ell).sum(axis=1)
    if nb > full:
        sums[full] = x[full * ell :].sum()
        lens[full] = n - full * ell
    return sums, lens


#: Counts made per slice of resamples: a slice's counters (8 bytes each) stay in the cache.
_COUNT_CELLS = 1 << 16


def multinomial_weights(nb: int, n_boot: int, rng: np.random.Generator) -> FloatArray:
    """How many times each block appears in each resample: shape (n_boot, nb).

    The picks are drawn and counted a slice of resamples at a time: the same draws in the same
    order as one ``rng.integers(0, nb, (n_boot, nb))`` (the same weights, tested), but the
    counting stays in the cache and no (n_boot x nb) array of picks is made: twice as fast
    for 1,000 blocks."""
    out = np.empty((n_boot, nb))
    rows = max(1, min(n_boot, _COUNT_CELLS // max(nb, 1)))
    offsets = np.arange(rows, dtype=np.int64)[:, None] * nb
    for i in range(0, n_boot, rows):
        r = min(rows, n_boot - i)
        picks = rng.integers(0, nb, size=(r, nb))
        picks += offsets[:r]
        out[i : i + r] = np.bincount(picks.ravel(), minlength=r * nb).reshape(r, nb)
    return out


def block_bootstrap_quantiles(
    prep: Prepared,
    probs: tuple[float, ...],
    ell: int,
    weights: FloatArray,
) -> FloatArray:
    """Bootstrap replicates of quantiles under the non-overlapping block bootstrap.

    ``weights[b, j]`` is how often block ``j`` (samples ``j*ell .. (j+1)*ell - 1``) appears in
    resample ``b``. Returns an array of shape ``(n_boot, len(probs))``. See the module docstring
    for the counting trick."""
    n = prep.n
    order, xs = prep.order, prep.sorted
    n_boot, nb = weights.shape
    lens = np.full(nb, float(ell))
    lens[-1] = n - ell * (nb - 1)
    n_star = weights @ lens
    out = np.empty((n_boot, len(probs)))
    for qi, p in enumerate(probs):
        k_hat = min(n - 1, max(0, int(p * (n - 1))))
        # Spread (in ranks) of the resampled count at the estimate: sets the grid range.
        below = np.bincount(order[: k_hat + 1] // ell, minlength=nb).astype(float)
        dev = below - lens * (k_hat + 1) / n
        sd = math.sqrt(float(np.sum((dev - dev.mean()) ** 2)))
        half = int(math.ceil(GRID_HALF_WIDTH_SD * sd)) + 2
        k_lo, k_hi = max(0, k_hat - half), min(n - 1, k_hat + half)
        step = max(1, math.ceil((k_hi - k_lo) / (GRID_POINTS - 1)))
        g = (k_hi - k_lo) // step + 1
        k_last = k_lo + (g - 1) * step
        base = np.bincount(order[: k_lo + 1] // ell, minlength=nb).astype(float)
        ranks = np.arange(k_lo + 1, k_last + 1)
        gi = (ranks - k_lo + step - 1) // step  # first grid point counting this rank
        hist = np.bincount(
            (order[k_lo + 1 : k_last + 1] // ell) * g + gi, minlength=nb * g
        ).reshape(nb, g)
        cum = base[:, None] + np.cumsum(hist, axis=1)  # cum[j, i]: block j, rank <= grid i
        counts = weights @ cum  # (n_boot, g)
        target = p * n_star
        reached = counts >= target[:, None]
        first = np.argmax(reached, axis=1)
        first[~reached.any(axis=1)] = g - 1
        # The crossing lies in (grid[first-1], grid[first]]: exact when step == 1, otherwise
        # interpolated assuming the counts grow evenly over the ranks in between.
        prev = np.maximum(first - 1, 0)
        c_prev = counts[np.arange(n_boot), prev]
        c_at = counts[np.arange(n_boot), first]
        frac = np.clip((target - c_prev) / np.maximum(c_at - c_prev, 1e-12), 0.0, 1.0)
        j = np.clip(np.ceil(frac * step - 1e-9), 1, step).astype(np.int64)
        rank = np.where(first == 0, k_lo, k_lo + prev * step + j)
        out[:, qi] = xs[np.clip(rank, 0, n - 1)]
    return out
