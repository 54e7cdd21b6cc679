"""Two loops of the vector search compiled by Numba: NumPy runs each as many passes over a
chunk, where one compiled pass does (measured on the rf 4 search, bench/README):

* ``sorted_firsts``: a chunk's hashed fingerprints sorted, each kept once with its group's
  least priority. Hashed fingerprints are uniform, so a counting pass on their top bits
  puts them in buckets of about four, each then sorted by insertion: 14 to 28 ns a
  fingerprint against 39 to 75 for ``radix_argsort`` and ``first_in_groups``.
* ``gallop``: where sorted fingerprints fall among the visited set's. A chunk's fall some
  thirty values apart: a galloping search from the last place reads the set almost in
  order, 32 ns a fingerprint against 95 for the sampled search (``VisitedSet.locate``).
  Where they fall further apart its steps miss the caches, and the sampled search wins.

The search imports this module only for inputs big enough to repay Numba's import (0.3 s)
and, the first time on a machine, the compilation (1.4 s, cached beside this file).
Each loop gives exactly what the NumPy code it stands for gives (tests/test_vector_loops.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

BUCKET_SHIFT = 2  # 2 to 4 a bucket: as fast as or faster than 1-2, 4-8 or 8-16 (1,000 to 1.5 M fingerprints), measured


def load(kernel: Any = None, symmetry: bool = False) -> None:
    """Load both loops (compiling them on a machine that has not yet), and with ``symmetry``
    the kernel's compiled canonical forms where the search uses them
    (``VectorKernel.compiles_canonical``): what the search's first big chunk pays otherwise.
    bench/ calls it before reading its memory baseline, as it builds the tables: Numba's
    125 MiB are a fixed cost, like theirs, not bytes of any state."""
    one = np.zeros(1, dtype=np.uint64)
    gallop(one, one)
    for prio_type in (np.uint32, np.int64):  # the priorities' two widths (``VectorSearch._priorities``)
        sorted_firsts(one, one.astype(prio_type))
    if kernel is not None and kernel.compiles_canonical(symmetry):
        kernel.canonical_and_orbits(kernel.initial_keys(), compiled=True)


def sorted_firsts(fp: np.ndarray, prio: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``first_in_groups(fp, radix_argsort(fp), prio)`` for uniform fingerprints: the index of
    each distinct value's first occurrence, its least priority, and the values, sorted."""
    bits = max(1, len(fp).bit_length() - BUCKET_SHIFT)
    return _sorted_firsts(fp, prio, bits)


@njit(cache=True, nogil=True)
def _sorted_firsts(fp, prio, bits):  # pragma: no cover - compiled
    m = len(fp)
    shift = np.uint64(64 - bits)
    start = np.zeros((1 << bits) + 1, np.int64)  # per bucket its first slot, then its next free one
    for i in range(m):
        start[np.int64(fp[i] >> shift) + 1] += 1
    for b in range(1 << bits):
        start[b + 1] += start[b]
    values = np.empty(m, np.uint64)
    order = np.empty(m, np.int64)
    for i in range(m):  # in index order: a bucket keeps its members' order (stable)
        b = np.int64(fp[i] >> shift)
        values[start[b]] = fp[i]
        order[start[b]] = i
        start[b] += 1
    lo = 0
    for b in range(1 << bits):  # each bucket by insertion, stable: equal values keep their order
        hi = start[b]
        for j in range(lo + 1, hi):
            x, o, k = values[j], order[j], j - 1
            while k >= lo and values[k] > x:
                values[k + 1], order[k + 1] = values[k], order[k]
                k -= 1
            values[k + 1], order[k + 1] = x, o
        lo = hi
    index = np.empty(m, np.int64)
    least = np.empty(m, prio.dtype)
    g = -1
    for j in range(m):
        o = order[j]
        if g < 0 or values[j] != values[g]:
            g += 1
            values[g], index[g], least[g] = values[j], o, prio[o]
        elif prio[o] < least[g]:
            least[g] = prio[o]
    return index[: g + 1], least[: g + 1], values[: g + 1]


def gallop(values: np.ndarray, fp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted ``fp``: ``np.searchsorted(values, fp)`` and a mask of those not in ``values``."""
    pos = np.empty(len(fp), dtype=np.int64)
    fresh = np.empty(len(fp), dtype=bool)
    _gallop(values, fp, pos, fresh)
    return pos, fresh


@njit(cache=True, nogil=True)
def _gallop(values, fp, pos, fresh):  # pragma: no cover - compiled
    n = len(values)
    lo = 0
    for i in range(len(fp)):
        x = fp[i]
        hi, step = lo, 1
        while hi < n and values[hi] < x:  # values[lo - 1] < x: double the stride till past x
            lo = hi + 1
            hi = lo + step
            step <<= 1
        hi = min(hi, n)
        while lo < hi:  # then halve it: the first value not below x
            mid = (lo + hi) >> 1
            if values[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        pos[i] = lo
        fresh[i] = lo >= n or values[lo] != x
