"""Array routines of the vector search: a chunk's new states and their merge into a level,
small-integer sorts, and the properties' first deciding states among stored levels (what a
checkpoint must say)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


NO_PRIO = np.iinfo(np.int64).max  # no priority: no state found


class New(NamedTuple):
    """New states, sorted by fingerprint, with what travels with them."""

    fp: np.ndarray  # fingerprints (the keys' single word when exact)
    pos: np.ndarray  # where each fingerprint sorts among the visited ones
    prio: np.ndarray  # parent's row * actions + the action's rank: the scalar BFS's order of discovery
    keys: np.ndarray  # (words, n); a view of fp when exact
    # per pending property, the smallest priority of a state here that decides it (NO_PRIO: none).
    # Enough to find the first deciding state of a level: a state's verdicts are its own, so the
    # state whose first discovery comes first holds the least priority any of its copies hold;
    # and no visited state decides a pending property (it was checked when stored)
    deciding: np.ndarray
    orbits: np.ndarray | None  # orbit sizes under symmetry


def held_bytes(new: New) -> int:
    """Bytes a chunk's or a level's new states hold: one-word keys are a view of the
    fingerprints, counted once."""
    view = np.may_share_memory(new.keys, new.fp)
    return sum(a.nbytes for a in new if a is not None and not (view and a is new.keys))


def merged(parts: list[New], exact: bool) -> New:
    """The chunks' new states as one, sorted by fingerprint, each state once with its first
    discovery. ``parts`` is emptied, and each field's parts are let go once gathered: the
    merge holds the fields not yet gathered, the sort's order and one field's copies, not
    every part, its concatenation and the result at once (the level's peak in memory)."""
    if len(parts) == 1:
        return parts.pop()
    deciding = np.minimum.reduce([p.deciding for p in parts])
    columns = {name: [getattr(p, name) for p in parts] for name in ("fp", "pos", "prio", "keys", "orbits")}
    parts.clear()
    if exact:
        columns.pop("keys")  # views of the fingerprints
    fp = _gathered(columns, "fp")
    # the parts are sorted runs: timsort merges them, 4 to 10 times faster than NumPy's quicksort
    # here (measured on 2 to 12 runs of 16,000 to 500,000); a group's members are one state
    order = np.argsort(fp, kind="stable")
    sorted_fp = fp.take(order)
    del fp
    starts = group_starts(sorted_fp)
    fp = sorted_fp.take(starts)
    del sorted_fp
    prio = _gathered(columns, "prio", order)
    prio = np.minimum.reduceat(prio, starts) if len(starts) else prio
    index = order.take(starts)
    del order, starts
    pos = _gathered(columns, "pos", index)
    keys = fp[None, :] if exact else _gathered(columns, "keys", index)
    orbits = None if columns["orbits"][0] is None else _gathered(columns, "orbits", index)
    return New(fp, pos, prio, keys, deciding, orbits)


class LevelParts:
    """A level's new states as its chunks come in, merged as a binary counter adds: two parts
    of as many chunks each become one, a state both found kept once with its first discovery.
    A level is then held about once, not once for every chunk that found a state (1.8 entries
    a state on main-job-r3's widest levels, measured), and its last merge gathers that much.
    The pairs' merges cost more than one merge of every part: 1.7 to 1.8 s against 1.2 to 1.3
    in main-job-r3's 23 s (one thread, measured)."""

    def __init__(self, exact: bool) -> None:
        self.exact = exact
        self.parts: list[New] = []
        self.chunks: list[int] = []  # chunks merged into each part

    def add(self, part: New) -> None:
        self.parts.append(part)
        self.chunks.append(1)
        while len(self.chunks) > 1 and self.chunks[-1] == self.chunks[-2]:
            pair = self.parts[-2:]
            del self.parts[-2:]
            self.parts.append(merged(pair, self.exact))
            self.chunks[-2:] = [2 * self.chunks[-1]]

    @property
    def held_bytes(self) -> int:
        return sum(held_bytes(p) for p in self.parts)

    @property
    def entries(self) -> int:
        return sum(len(p.fp) for p in self.parts)

    def merged(self) -> New:
        """The level, each state once; the parts are let go."""
        self.chunks.clear()
        return merged(self.parts, self.exact)


def _gathered(columns: dict[str, list], name: str, index: np.ndarray | None = None) -> np.ndarray:
    """A field's parts concatenated along the states (and taken at ``index``), the parts let go."""
    whole = np.concatenate(columns.pop(name), axis=-1)
    return whole if index is None else whole.take(index, axis=-1)


def group_starts(sorted_values: np.ndarray) -> np.ndarray:
    """Where each run of equal values begins."""
    first = np.ones(len(sorted_values), dtype=bool)
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=first[1:])
    return np.flatnonzero(first)


def first_in_groups(values: np.ndarray, order: np.ndarray, prio: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For ``values[order]`` sorted: the index (into values) of one member of each group of
    equal values, the group's smallest priority, and its value (sorted: read from the
    sorted copy in order, not gathered again at random)."""
    ordered = values.take(order)
    starts = group_starts(ordered)
    firsts = ordered.take(starts)
    del ordered  # before the priorities are gathered: one chunk-long copy at a time
    if not len(starts):
        return starts, prio[:0], firsts
    return order.take(starts), np.minimum.reduceat(prio.take(order), starts), firsts


def radix_argsort(values: np.ndarray) -> np.ndarray:
    """A stable argsort of non-negative integers, by 16-bit digits from the lowest (NumPy's
    stable argsort of uint16 is a counting sort), each pass gathering its digits in the order
    so far. On this machine's NumPy (whose sorts are not SIMD) it is 1.5 to 1.9 times faster
    than ``np.argsort`` on 64-bit fingerprints, 0.1 to 1.2 million of them, measured; a
    level's priorities take two passes up to about fifty million states."""
    top = int(values.max()) if len(values) else 0
    order = np.argsort(values.astype(np.uint16), kind="stable")
    shift = 16
    while top >> shift:
        digit = (values >> shift).astype(np.uint16)
        order = order[np.argsort(digit[order], kind="stable")]
        shift += 16
    return order


def derived_found(kernel: Any, keys: list[np.ndarray], pending: list[tuple[str, Any, bool]]) -> dict[str, tuple[int, int]]:
    """Each property's first deciding state among saved levels, as the search found it (a
    state is checked when stored, in storage order): what a manifest's ``found`` must say."""
    found: dict[str, tuple[int, int]] = {}
    for depth, level in enumerate(keys):
        todo = [p for p in pending if p[0] not in found]
        if not todo:
            break
        values = kernel.evaluate(level, [pred for _, pred, _ in todo])
        for (name, _, always), holds in zip(todo, values):
            rows = np.flatnonzero(holds != always)
            if len(rows):
                found[name] = (depth, int(rows[0]))
    return found
