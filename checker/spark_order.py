"""The order of kernel keys in the Spark engine's levels: by a 64-bit value, then by key.

Keys wider than one word (rf 4 and beyond) sorted and searched as NumPy records cost
most of a Spark run (profiled at rf 4: record ``searchsorted`` and a four-row
``lexsort`` took 50 of 74 CPU s in the tasks). So every array of keys the engine keeps
sorted is sorted by ``order_of(key)``, one uint64, and by the key itself only where
two keys share it: sorts and searches run on one word, and keys are compared where
order values tie. A key of one word is its own order value, so those levels are in
key order, as before.

Exact throughout: order values are never taken for keys. Where two different keys
(or two different parents of one key) share an order value, a slower exact path
decides: a sort on every word, or a look at each key with that order value.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from .vector_arrays import group_starts, radix_argsort

U64 = np.uint64
_MIX = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)  # odd: each a bijection


def order_of(keys: np.ndarray) -> np.ndarray:
    """The uint64 a key is first ordered by: its only word, or its low word mixed with the
    others (an odd multiplier each, so keys differing in one word never tie)."""
    if keys.shape[0] == 1:
        return keys[0]
    out = keys[0].copy()
    for w in range(1, keys.shape[0]):
        out ^= keys[w] * U64(_MIX[(w - 1) % len(_MIX)])
    return out


def sort_key(key: np.ndarray, order: int) -> tuple[int, ...]:
    """One key (a column) as a tuple that compares in the levels' order."""
    return (int(order), *(int(w) for w in key[::-1]))


def smallest_parents(keys: np.ndarray, parents: np.ndarray, runs: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys in the levels' order, each with the first of its parents in that order.
    ``runs``: the keys come as runs already in that order (an anti-join's candidates, each
    record sorted), which timsort merges: 3 to 6 times faster than the radix sort there.

    One sort, by the keys' order values, and each group's least parent order value by
    ``minimum.reduceat``: a two-row ``lexsort`` took 3.9 of the Python workers' 20 CPU s on
    kip320-rf3-e3, measured. Where a group of one order value holds different keys, or
    different parents share its least parent order value, the exact sort decides (``_exact``)."""
    n = keys.shape[1]
    if n == 0:
        return keys, parents
    ko = order_of(keys)
    # one word: successors of a frontier in key order come in sorted runs, which timsort merges;
    # a chunk's successors' mixed order values of wider keys have none: the radix sort is faster
    by = np.argsort(ko, kind="stable") if runs or keys.shape[0] == 1 else radix_argsort(ko)
    ko = ko.take(by)
    starts = group_starts(ko)
    if len(starts) == n:  # every key once
        return keys.take(by, axis=1), parents.take(by, axis=1)
    if keys.shape[0] > 1 and _differ_within(keys, ko, by):
        return _exact(keys, parents)
    po = order_of(parents).take(by)  # only order values gathered whole: keys and parents once a group
    least = np.minimum.reduceat(po, starts)
    hits = np.flatnonzero(po == np.repeat(least, np.diff(np.append(starts, n))))
    first = by.take(hits.take(np.searchsorted(hits, starts)))  # each group's first member with its least
    if parents.shape[0] > 1 and len(hits) > len(starts):  # least order values shared: the same parent?
        group = np.searchsorted(starts, hits, side="right") - 1
        if np.any(parents.take(by.take(hits), axis=1) != parents.take(first.take(group), axis=1)):
            return _exact(keys, parents)
    return keys.take(first, axis=1), parents.take(first, axis=1)


def _differ_within(keys: np.ndarray, ko: np.ndarray, by: np.ndarray) -> bool:
    """Whether two neighbours of the sorted order values ``ko`` (``keys`` in the order ``by``)
    share one with different keys."""
    tie = np.flatnonzero(ko[1:] == ko[:-1])
    return bool(np.any(keys.take(by.take(tie), axis=1) != keys.take(by.take(tie + 1), axis=1)))


def in_order(keys: np.ndarray) -> np.ndarray:
    """Distinct keys sorted in the levels' order (timsort: runs already in order merge in linear time)."""
    ko = order_of(keys)
    by = np.argsort(ko, kind="stable")
    if keys.shape[0] > 1 and _differ_within(keys, ko.take(by), by):
        by = np.lexsort((*keys, ko))
    return keys.take(by, axis=1)


def _exact(keys: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``smallest_parents`` by a sort on every word: where order values tie."""
    by = np.lexsort((*parents, order_of(parents), *keys, order_of(keys)))  # the last row sorts first
    keys, parents = keys[:, by], parents[:, by]
    first = np.ones(keys.shape[1], dtype=bool)
    np.any(keys[:, 1:] != keys[:, :-1], axis=0, out=first[1:])
    return keys[:, first], parents[:, first]


def locate(table: np.ndarray, table_order: np.ndarray, queries: np.ndarray,
           query_order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position, found) of each query key in ``table`` (in the levels' order): one search on
    the order values, the keys compared there, and further along where order values tie."""
    n = table.shape[1]
    if n == 0:
        return np.zeros(queries.shape[1], dtype=np.int64), np.zeros(queries.shape[1], dtype=bool)
    pos = np.minimum(np.searchsorted(table_order, query_order), n - 1)
    tie = table_order[pos] == query_order
    if table.shape[0] == 1:  # a key of one word is its own order value
        return pos, tie
    found = tie & np.all(table[:, pos] == queries, axis=0)
    for i in np.flatnonzero(tie & ~found).tolist():  # another key with this order value first
        j = int(pos[i]) + 1
        while j < n and table_order[j] == query_order[i]:
            if np.array_equal(table[:, j], queries[:, i]):
                pos[i], found[i] = j, True
                break
            j += 1
    return pos, found


def sorted_runs(chunks: list[np.ndarray]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(keys, order values) of consecutive chunks joined while they stay in order: a partition's
    share of a level arrives as slices of one sorted array, so a search costs one lookup a
    level, not one a chunk."""
    run: list[np.ndarray] = []
    orders: list[np.ndarray] = []
    for chunk in chunks:
        order = order_of(chunk)
        if run and sort_key(chunk[:, 0], order[0]) <= sort_key(run[-1][:, -1], orders[-1][-1]):
            yield _joined(run, orders)
            run, orders = [], []
        run.append(chunk)
        orders.append(order)
    if run:
        yield _joined(run, orders)


def _joined(run: list[np.ndarray], orders: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    if len(run) == 1:
        return run[0], orders[0]
    keys = np.concatenate(run, axis=1)
    return keys, (keys[0] if keys.shape[0] == 1 else np.concatenate(orders))  # one word: its own order


def drop_seen(run: tuple[np.ndarray, np.ndarray], mine: tuple[np.ndarray, np.ndarray], fresh: np.ndarray) -> None:
    """Clear ``fresh`` where the candidates ``mine`` are in ``run`` (both (keys, order values),
    in order), searching the smaller in the larger (late levels meet few candidates)."""
    if run[0].shape[1] >= mine[0].shape[1]:
        fresh &= ~locate(*run, *mine)[1]
    else:
        pos, found = locate(*mine, *run)
        fresh[pos[found]] = False
