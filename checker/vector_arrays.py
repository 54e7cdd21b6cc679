"""Array routines of the vector search: small-integer sorts, and the
properties' first deciding states among stored levels (what a checkpoint must say)."""

from __future__ import annotations

from typing import Any

import numpy as np


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
