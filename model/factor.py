"""Expressions over several components computed as one table look-up (the vector kernel).

A traced expression whose components meet (a follower's log against its leader's, a
replica's epoch against the request sequence's) reads each component through a few
single-component nodes, its leaves. Whatever the expression computes depends on each
component only through the tuple of its leaves' values: its *feature*, and a slot has
far fewer distinct features than values. Where the product of the components' feature
counts is small, the whole expression becomes a table over that product, computed
when the plan is built: per batch, one gather per component (of the feature's offset
into the table) and one from the table, however many operations the definition wrote.
Expressions over too many combinations keep their shape, their arguments factored.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .trace import Node, Tracer, _compact

LIMIT = 1 << 16  # entries of a factored expression's table


class Factorer:
    """Factors the nodes of one tracer; each node once."""

    def __init__(self, tracer: Tracer, limit: int = LIMIT, tick: Callable[[], None] | None = None) -> None:
        self.t = tracer
        self.limit = limit
        self.tick = tick or (lambda: None)  # the run's limits (``Model.tick``): a table can take gigabytes
        self.done: dict[int, Any] = {}
        self.features: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}  # (comp, leaf ids) -> (codes, representatives)
        self.tables: dict[int, np.ndarray] = {}  # a factored node's id -> its table (every value it can take)

    def __call__(self, node: Any) -> Any:
        if type(node) is not Node or node.table is not None:
            return node
        out = self.done.get(node.id)
        if out is None:
            out = self.done[node.id] = self._factor(node)
        return out

    def settle(self) -> None:
        """Forget the features' codes (megabytes at the Kafka model's 7,705 slots): the nodes
        made from them stay, and a later expression reading the same leaves gets those."""
        self.features.clear()

    def _factor(self, node: Node) -> Any:
        leaves, inner = _leaves(node)
        by_comp = _by_comp(leaves)
        if inner < 2 and len(leaves) <= len(by_comp):  # one operation on one leaf each: already as cheap
            return node
        comps = sorted(by_comp)
        keyed = self._feature_leaves(comps, by_comp)
        if keyed is None and node.fn in (np.logical_and, np.logical_or):
            return self._grouped(node)
        if keyed is None:
            args = [self(a) for a in node.args]
            if all(a is b for a, b in zip(args, node.args)):
                return node
            return self.t.node(("refactored", node.key), node.fn, *args)
        feats = [self._feature(c, keyed[c]) for c in comps]
        sizes = [len(reps) for _, reps in feats]
        size = int(np.prod(sizes, dtype=np.int64))
        values: dict[int, Any] = {}  # each component's leaves along an axis of its own: the operations broadcast
        for axis, (comp, (_, reps)) in enumerate(zip(comps, feats)):
            shape = [1] * len(comps)
            shape[axis] = sizes[axis]
            for leaf in by_comp[comp]:
                values[leaf.id] = leaf.table[reps].reshape(shape)
        table = np.broadcast_to(np.asarray(_evaluate(node, values, self.tick)), sizes).reshape(-1)
        dtype = _index_type(size)
        index: Any = None
        stride = size
        for comp, (codes, _), n in zip(comps, feats, sizes):
            stride //= n
            offset = self.t._intern(("feature", comp, tuple(leaf.id for leaf in keyed[comp]), stride), None, (),
                                    frozenset([comp]), (codes.astype(np.int64) * stride).astype(dtype))
            index = offset if index is None else self.t.node("add", np.add, index, offset)
        if table.dtype.kind == "i":
            table = _compact(table.astype(np.int64))
        out = self.t.node(("factored", node.id), lambda i, t=table: t.take(i), index)
        self.tables[out.id] = table
        return out

    def _grouped(self, node: Node) -> Any:
        """A conjunction (or disjunction) too wide for one table, as few tables as fit: its
        terms (the chain of the same operation flattened) gathered in groups, each group one
        table. A property such as weak-isr, five terms over pairs and triples of replicas,
        reads three tables where it read five."""
        fn = node.fn
        terms: list[Any] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if type(n) is Node and n.fn is fn and n.table is None:
                stack.extend(reversed(n.args))
            else:
                terms.append(n)
        groups: list[Any] = []
        for term in sorted(terms, key=lambda n: (-len(n.comps), n.id) if type(n) is Node else (0, 0)):
            for i, g in enumerate(groups):
                joined = self.t.node(fn.__name__, fn, g, term)
                if self._fits(joined):
                    groups[i] = joined
                    break
            else:
                groups.append(term)
        out = self(groups[0])
        for g in groups[1:]:
            out = self.t.node(("refactored", fn.__name__), fn, out, self(g))
        return out

    def _fits(self, node: Any) -> bool:
        """Whether one table can hold ``node`` (within the limit)."""
        if type(node) is not Node or node.table is not None:
            return True
        by_comp = _by_comp(_leaves(node)[0])
        return self._feature_leaves(sorted(by_comp), by_comp) is not None

    def _feature_leaves(self, comps: list[str], by_comp: dict[str, list[Node]]) -> dict[str, list[Node]] | None:
        """Per component, the nodes its feature codes: the fields under its leaves where the
        table stays within the limit (expressions reading the same fields then share the
        feature's gather: ``ep < 1`` and ``ep < 2`` both read the epoch), else the leaves
        themselves; None where even those make too big a table."""
        chosen = {c: _fields(by_comp[c]) for c in comps}
        sizes = {c: len(self._feature(c, chosen[c])[1]) for c in comps}
        exact: dict[str, int] = {}  # the leaves' own feature sizes, coded only when needed
        while math.prod(sizes.values()) > self.limit:  # Python ints: an int64 product wraps (seven components at rf 5)
            exact = exact or {c: len(self._feature(c, by_comp[c])[1]) for c in comps}
            wider = [c for c in comps if chosen[c] is not by_comp[c] and sizes[c] > exact[c]]
            if not wider:
                return None
            c = max(wider, key=lambda c: sizes[c] / exact[c])
            chosen[c], sizes[c] = by_comp[c], exact[c]
        return chosen

    def _feature(self, comp: str, leaves: list[Node]) -> tuple[np.ndarray, np.ndarray]:
        """Per value of the component, the code of its leaves' values; per code, a value that has it."""
        key = (comp, tuple(leaf.id for leaf in leaves))
        known = self.features.get(key)
        if known is None:
            codes, reps = _dense_codes([np.asarray(leaf.table, dtype=np.int64) for leaf in leaves])
            known = self.features[key] = (_compact(codes), reps)
        return known


def _dense_codes(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the code of its tuple of column values (dense, in sorted order); per code, a row
    that has it. Counting sort of one mixed-radix number where it is small (it is: leaves
    take few values), NumPy's unique otherwise."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    span = 1
    for col in columns:
        lo = int(col.min())
        width = int(col.max()) - lo + 1
        if span * width > 1 << 62:  # renumber the tuples so far densely: the key stays one int64
            _, key = np.unique(key, return_inverse=True)
            key = key.reshape(-1).astype(np.int64)
            span = int(key.max()) + 1
        span *= width
        key = key * width + (col - lo)
    if span > max(1 << 12, 4 * len(key)):  # a counting sort over a span much wider than the rows costs more
        _, reps, codes = np.unique(key, return_index=True, return_inverse=True)
        return codes.reshape(-1), reps
    seen = np.zeros(span, dtype=bool)
    seen[key] = True
    rank = np.cumsum(seen) - 1
    codes = rank[key]
    reps = np.empty(int(rank[-1]) + 1, dtype=np.int64)
    reps[codes] = np.arange(len(key))  # any row of a code will do: they agree on every leaf
    return codes, reps


def _by_comp(leaves: list[Node]) -> dict[str, list[Node]]:
    by_comp: dict[str, list[Node]] = {}
    for leaf in leaves:
        (comp,) = leaf.comps
        by_comp.setdefault(comp, []).append(leaf)
    return by_comp


def _leaves(node: Node) -> tuple[list[Node], int]:
    """The single-component nodes an expression reads (by id) and how many operations it
    computes above them."""
    leaves: dict[int, Node] = {}
    inner: set[int] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.table is not None:
            leaves.setdefault(n.id, n)
        elif n.id not in inner:
            inner.add(n.id)
            stack.extend(a for a in reversed(n.args) if type(a) is Node)
    return sorted(leaves.values(), key=lambda n: n.id), len(inner)


def _fields(leaves: list[Node]) -> list[Node]:
    """The nodes with no node arguments (fields, and tables of their own) under some leaves."""
    found: dict[int, Node] = {}
    visited: set[int] = set()
    stack = list(leaves)
    while stack:
        n = stack.pop()
        if n.id in visited:
            continue
        visited.add(n.id)
        below = [a for a in n.args if type(a) is Node]
        if below:
            stack.extend(below)
        else:
            found[n.id] = n
    return sorted(found.values(), key=lambda n: n.id)


def _evaluate(node: Any, values: dict[int, Any], tick: Callable[[], None]) -> Any:
    if type(node) is not Node:
        return node
    v = values.get(node.id)
    if v is None:
        tick()
        v = values[node.id] = node.fn(*[_evaluate(a, values, tick) for a in node.args])
    return v


def _index_type(size: int) -> Any:
    """An integer type that holds every offset below ``size``: sums of offsets never overflow it."""
    for t in (np.int8, np.int16, np.int32):
        if size - 1 <= np.iinfo(t).max:
            return t
    return np.int64
