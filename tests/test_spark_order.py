"""The order of the Spark engine's levels on the vector kernel (``checker/spark_order.py``):
exact de-duplication and search, with real order values and with ones forced to tie."""

from __future__ import annotations

import random

import numpy as np
import pytest

from isrcheck.checker import spark_order
from isrcheck.model.kernel import ints_of_keys, keys_of_ints

REAL = spark_order.order_of


def few_values(keys: np.ndarray) -> np.ndarray:
    """Order values with four values only: nearly every key ties with another."""
    return REAL(keys) & np.uint64(3)


def near_values(keys: np.ndarray) -> np.ndarray:
    """Order values that tie only for keys whose low words are close: the parents p and
    p ^ 1024 below, never two random keys."""
    return REAL(keys) & ~np.uint64(0x7FF)


# A key of one word is its own order value (tested below): ties need two words or more.
CASES = [(1, "real"), (2, "real"), (2, "ties"), (2, "near"), (3, "real"), (3, "ties")]


def use(kind: str, monkeypatch):
    if kind != "real":
        monkeypatch.setattr(spark_order, "order_of", few_values if kind == "ties" else near_values)
    return spark_order.order_of


def in_order(ints: list[int], words: int, order) -> list[int]:
    """The integers in the levels' order: order value, then the key."""
    keys = keys_of_ints(ints, words)
    values = order(keys)
    return [k for _, k in sorted(zip(values.tolist(), ints))]


def some_keys(rng: random.Random, words: int, n: int, kind: str = "real") -> list[int]:
    """Keys whose words vary alone and together, as kernel keys do; for "near", wide keys only
    (small ones would tie with each other there, and hide the parents' ties)."""
    shifts = [0] if kind == "near" else [0, 3, 64 * words - 5]
    return [rng.getrandbits(64 * words) >> rng.choice(shifts) for _ in range(n)]


def test_a_key_of_one_word_is_its_own_order_value_and_one_word_apart_never_ties():
    keys = keys_of_ints([5, 1 << 63, 7], 1)
    assert REAL(keys).tolist() == [5, 1 << 63, 7]
    for words in (2, 3):
        base = keys_of_ints([123456789] * words, words)
        for w in range(words):
            other = base.copy()
            other[w] ^= np.uint64(1 << 40)
            assert REAL(other)[0] != REAL(base)[0]


@pytest.mark.parametrize("runs", [False, True])  # the sort chosen: radix or timsort; the result is the same
@pytest.mark.parametrize("words, kind", CASES)
def test_distinct_keys_come_in_the_levels_order_each_with_its_first_parent(words, kind, runs, monkeypatch):
    order = use(kind, monkeypatch)
    rng = random.Random(words)
    pairs = [(k, p) for k, p in zip(some_keys(rng, words, 300, kind), some_keys(rng, words, 300, kind))]
    pairs += pairs[:50]  # duplicates
    pairs += [(k, p ^ 1) for k, p in pairs[:80]]  # the same key, other parents
    pairs += [(k, p ^ (1 << 10)) for k, p in pairs[:80]]  # ... whose order values tie under few_values
    keys, parents = spark_order.smallest_parents(keys_of_ints([k for k, _ in pairs], words),
                                                 keys_of_ints([p for _, p in pairs], words), runs)
    rank = {p: i for i, p in enumerate(in_order(sorted({p for _, p in pairs}), words, order))}
    first: dict[int, int] = {}
    for key, parent in pairs:
        if key not in first or rank[parent] < rank[first[key]]:
            first[key] = parent
    assert ints_of_keys(keys) == in_order(sorted(first), words, order)
    assert ints_of_keys(parents) == [first[k] for k in ints_of_keys(keys)]


@pytest.mark.parametrize("words, kind", CASES)
def test_visited_chunks_join_into_runs_in_order_and_remove_exactly_the_visited_candidates(words, kind, monkeypatch):
    """A level's chunks are slices of one sorted array, joined back into one run a level;
    candidates in any run are dropped, whichever side is the larger."""
    order = use(kind, monkeypatch)
    rng = random.Random(words)
    universe = sorted(set(some_keys(rng, words, 3000)))
    levels = [in_order(rng.sample(universe, size), words, order) for size in (1, 40, 900, 7)]
    chunks = [keys_of_ints(level[i : i + 64], words) for level in levels for i in range(0, len(level), 64)]
    runs = list(spark_order.sorted_runs(chunks))
    assert len(runs) <= len(levels) < len(chunks)
    for keys, values in runs:
        assert values.tolist() == order(keys).tolist()
        assert ints_of_keys(keys) == in_order(ints_of_keys(keys), words, order)
    visited = set().union(*levels)
    for size in (3, 100, 2000):
        candidates = in_order(rng.sample(universe, size), words, order)
        keys = keys_of_ints(candidates, words)
        fresh = np.ones(len(candidates), dtype=bool)
        for run in runs:
            spark_order.drop_seen(run, (keys, order(keys)), fresh)
        assert [c for c, f in zip(candidates, fresh) if f] == [c for c in candidates if c not in visited]
