"""A chunk's successors on the vector search: each distinct state once with its first
discovery (``distinct``), then those the visited set lacks (``unvisited``), and the first
of them to decide each property (``first_deciding``). The one-process search runs both on every chunk; a worker of the split
search (``bfs_vector_shard.py``) runs ``unvisited`` on the states it owns, its own
chunks' and those its peers send."""

from __future__ import annotations

from typing import Any

import numpy as np

from .vector_arrays import NO_PRIO, New, first_in_groups, radix_argsort


def distinct(kernel: Any, symmetry: bool, successors: list[np.ndarray], compiled: bool) -> list:
    """[fingerprints sorted, priorities, orbit sizes, keys, index] of ``[keys, priorities]``
    (that list is emptied): each distinct state once with its least priority; its key is
    ``keys[:, index]`` (both None when exact: the fingerprint is the key). Lists, handed
    over and emptied, so that each array goes once no longer needed, not when the caller
    returns (a chunk's successors are megabytes). ``compiled``: sorted, and made canonical, by
    the compiled loops (``VisitedSet.use_compiled``: only ever on hashed fingerprints)."""
    keys, prio = successors
    successors.clear()
    orbits = None
    if symmetry:
        keys, orbits = kernel.canonical_and_orbits(keys, compiled)
    fp = kernel.fingerprints(keys)
    # one-word keys come in long sorted runs (the frontier is in key order, an action changes
    # few components, and the canonical relabelling is mostly the identity): timsort merges
    # them, 2 to 4 times faster than NumPy's quicksort (the main job's successors, kip-320's);
    # hashed fingerprints have no runs, and there a radix sort is twice the quicksort's speed
    # (rf 3 to 5, two-word keys), measured per chunk
    if compiled:
        from .vector_loops import sorted_firsts  # Numba, imported where it pays

        index, prio, fp = sorted_firsts(fp, prio)
    else:
        order = np.argsort(fp, kind="stable") if kernel.exact else radix_argsort(fp)
        index, prio, fp = first_in_groups(fp, order, prio)
        del order
    if orbits is not None:  # a byte each (at most rf!): gathered now, so the chunk-long array goes
        orbits = orbits.take(index).astype(np.min_scalar_type(kernel.symmetry().full_group))
    if kernel.exact:
        keys = index = None  # the fingerprints are the keys: the successors' go now
    return [fp, prio, orbits, keys, index]


def unvisited(kernel: Any, visited_set: Any, pending: list, found: list) -> New:
    """Of distinct states (``distinct``'s list, emptied; with ``index`` None, ``keys`` are
    theirs column for column), those ``visited_set`` lacks, with the least priority of one
    that decides each ``pending`` property (``first_deciding``): none passed where the search
    checks the level's states once merged (``VectorSearch.checked_when_stored``)."""
    fp, prio, orbits, keys, index = found
    found.clear()
    pos, fresh = visited_set.locate(fp)
    if not fresh.all():  # gathered by take: a boolean index is 4 to 6 times slower here, measured
        keep = np.flatnonzero(fresh)
        fp, pos, prio = fp.take(keep), pos.take(keep), prio.take(keep)
        orbits = None if orbits is None else orbits.take(keep)
        if index is not None:
            index = index.take(keep)
        elif keys is not None:
            keys = keys.take(keep, axis=1)
        del keep
    if kernel.exact:
        keys = fp[None, :]
    elif index is not None:
        keys = keys.take(index, axis=1)  # wide keys: the new states' only, gathered once
    del index
    if visited_set.n < 1 << 32:  # a chunk's parts are held till the level's merge: 4 bytes
        pos = pos.astype(np.uint32)
    return New(fp, pos, prio, keys, first_deciding(kernel, pending, keys, prio), orbits)


def first_deciding(kernel: Any, pending: list, keys: np.ndarray, prio: np.ndarray) -> np.ndarray:
    """Per ``pending`` property (name, batch predicate, expected value), the least priority of a
    state among ``keys`` that decides it (NO_PRIO: none)."""
    deciding = np.full(len(pending), NO_PRIO, dtype=np.int64)
    if pending and len(prio):
        values = kernel.evaluate(keys, [pred for _, pred, _ in pending])
        for i, ((_, _, always), holds) in enumerate(zip(pending, values)):
            decides = holds != always
            if decides.any():
                deciding[i] = prio[decides].min()
    return deciding
