"""Traces of the vector search: a stored state's path, rebuilt from its level's parents and
actions and replayed on the scalar model (which checks the kernel at every step)."""

from __future__ import annotations

from typing import Any

from isrcheck.model.kernel import VectorKernel

from .result import Path


def path_to(search: Any, depth: int, row: int) -> Path:
    """Walk parents back to the initial state, then replay the path on the scalar model:
    from the kept levels' keys, or, where only the initial level is kept, by replaying the
    actions from its key."""
    rows, actions = [], []
    while depth >= 0:
        rows.append(row)
        actions.append(int(search.actions[depth][row]))
        row = int(search.parents[depth][row])
        depth -= 1
    rows.reverse()
    actions.reverse()
    if search.keep_levels:
        # a column range: a level may be a file of the search out of core (not yet saved)
        chain = [VectorKernel.int_of_key(search.keys[d][:, r : r + 1][:, 0]) for d, r in enumerate(rows)]
        return _path(search.kernel, search.model, search.symmetry, chain, actions[1:])
    return replayed(search.kernel, search.model, search.symmetry, VectorKernel.int_of_key(search.keys[0][:, rows[0]]),
                    actions[1:])


def replayed(kernel: VectorKernel, model: Any, symmetry: bool, root: int, actions: list[int]) -> Path:
    """The path of an initial key and the actions a search took from it: each action taken
    from the stored (canonical) state, as the search took it."""
    norm = kernel.canonical_of_scalar if symmetry else kernel.key_of_scalar
    chain, state = [root], kernel.scalar_of_key(root)
    for a in actions:
        chain.append(norm(model.step(state, a)))
        state = kernel.scalar_of_key(chain[-1])
    return _path(kernel, model, symmetry, chain, actions)


def _path(kernel: VectorKernel, model: Any, symmetry: bool, chain: list[int], actions: list[int]) -> Path:
    """Stored keys along a path, replayed on the scalar model."""
    if symmetry:
        return Path.replay(model, chain, kernel.canonical_of_scalar)
    states = [kernel.scalar_of_key(k) for k in chain]
    for i, a in enumerate(actions, start=1):
        if model.step(states[i - 1], a) != states[i]:  # pragma: no cover - a kernel bug
            raise AssertionError(f"the vector kernel's step {i} ({model.describe(a)}) disagrees with the model")
    return Path(tuple(states), tuple(actions))
