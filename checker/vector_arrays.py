"""Array routines of the vector search: a chunk's new states and their merge into a level,
small-integer sorts, and the properties' first deciding states among stored levels (what a
checkpoint must say)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class New(NamedTuple):
    """New states, sorted by fingerprint, with what travels with them."""

    fp: np.ndarray  # fingerprints (the keys' single word when exact)
    pos: np.ndarray  # where each fingerprint sorts among the visited ones
    prio: np.ndarray  # parent's row * actions + the action's rank: the scalar BFS's order of discovery
    keys: np.ndarray  # (words, n)
    decides: np.ndarray  # (pending properties, n): the state decides that property
    orbits: np.ndarray | None  # orbit sizes under symmetry


def merged(parts: list[New]) -> New:
    """The chunks' new states as one, sorted by fingerprint, each state once with its first
    discovery. ``parts`` is emptied: each field is gathered, and its parts let go, in turn,
    so that the level is in memory about once, not three times."""
    if len(parts) == 1:
        return parts.pop()
    fp = np.concatenate([p.fp for p in parts])
    # sorted runs; a group's members are the same state, so any sort will do
    index, prio = first_in_groups(fp, np.argsort(fp), np.concatenate([p.prio for p in parts]))
    columns = [list(p) for p in parts]
    parts.clear()
    out = []
    for i, name in enumerate(New._fields):
        if name == "fp":
            out.append(fp[index])
        elif name == "prio":
            out.append(prio)
        elif columns[0][i] is None:
            out.append(None)
        else:
            out.append(np.concatenate([c[i] for c in columns], axis=-1).take(index, axis=-1))
        for c in columns:
            c[i] = None
    return New._make(out)


def first_in_groups(values: np.ndarray, order: np.ndarray, prio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``values[order]`` sorted: the index (into values) of one member of each group of
    equal values, and the group's smallest priority."""
    sorted_values = values[order]
    first = np.ones(len(order), dtype=bool)
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    if not len(starts):
        return starts, prio[:0]
    return order[starts], np.minimum.reduceat(prio[order], starts)


def argsort_small(values: np.ndarray) -> np.ndarray:
    """argsort of non-negative int64 values, by 16-bit digits (NumPy's stable argsort of
    uint16 is a radix sort): two passes cover the priorities of levels of up to about
    fifty million states, at less than half the cost of a comparison sort."""
    order = np.arange(len(values))
    top = int(values.max()) if len(values) else 0
    shift = 0
    while top >> shift:
        digit = ((values[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
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
        comps = kernel.components(level)
        for name, pred, always in todo:
            rows = np.flatnonzero(np.asarray(pred(comps)) != always)
            if len(rows):
                found[name] = (depth, int(rows[0]))
    return found
