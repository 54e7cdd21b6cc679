"""The vector kernel's compiled definitions: every action and property, traced once.

``Plan(T, catalogue)`` traces each action of the registry (``trace.py``): its guard's
conjuncts and its updates become nodes; an action whose guard is statically False in
this configuration is dropped. Updates become the components they change: a shared
field's new code, or a replica's new slot; where a replica's new fields depend on that
replica alone, its new slot is itself a table over its slots (one gather per batch).

``expand(keys)`` runs every action on a batch of keys. A ``Layer`` is some rows of the
batch and the node values computed there; an action evaluates its conjuncts in order,
and a conjunct that leaves few rows of a big layer narrows to a child layer, shared by
every action that narrows by the same node (``Layer.split``), so later conjuncts and
the update are computed over fewer rows. The rows left take the update: new keys by
changing only the components it touches. A value outside the kernel's tables raises
``KernelDomainError``: a fact that stopped holding fails loudly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .actions import Catalogue
from .kernel_keys import KernelDomainError
from .ops import DefinitionError
from .trace import Node, TraceView, Tracer, tracing

U64 = np.uint64
NARROW_AT = 0.3  # a conjunct that keeps at most this share of a layer's rows narrows to a child layer ...
SMALL = 256  # ... unless the layer is this small: then it only masks rows (a child layer costs more)


class Layer:
    """Some rows of a batch, and what was computed there. The root layer (every row)
    decodes components with ``decode``; a child layer takes the rows ``sub`` of its
    parent ``below``."""

    __slots__ = ("rows", "sub", "below", "cache", "children", "decode", "size")

    def __init__(self, rows: np.ndarray | None, sub: np.ndarray | None, below: "Layer | None",
                 decode: Callable[[str], np.ndarray] | None = None, size: int = 0) -> None:
        self.rows, self.sub, self.below, self.decode, self.size = rows, sub, below, decode, size
        self.cache: dict = {}
        self.children: dict = {}

    @property
    def n(self) -> int:
        return self.size if self.rows is None else len(self.rows)

    def all_rows(self) -> np.ndarray:
        return np.arange(self.size) if self.rows is None else self.rows

    def component(self, name: str) -> np.ndarray:
        key = ("#", name)
        v = self.cache.get(key)
        if v is None:
            v = self.decode(name) if self.below is None else self.below.component(name)[self.sub]
            self.cache[key] = v
        return v

    def value(self, node: Any) -> Any:
        """A node's value at these rows (a constant stays one)."""
        if type(node) is not Node:
            return node
        v = self.cache.get(node.id)
        if v is None:
            below = self.below
            if below is not None and node.id in below.cache:
                v = below.cache[node.id]
                if isinstance(v, np.ndarray):
                    v = v[self.sub]
            elif node.table is not None:
                (comp,) = node.comps
                v = node.table[self.component(comp)]
            else:
                v = node.fn(*[self.value(a) for a in node.args])
            self.cache[node.id] = v
        return v

    def split(self, mask: np.ndarray, key: Any) -> tuple[int, "Layer | None"]:
        """How many rows ``mask`` keeps, and the child layer of those rows where narrowing to
        them pays (few rows of a big layer), else None; remembered under ``key`` (a node's
        id, or None for a mask of one action's own), so actions narrowing by it share it."""
        if key is not None:
            known = self.children.get(key)
            if known is not None:
                return known
        kept = int(np.count_nonzero(mask))
        child = None
        if 0 < kept <= self.n * NARROW_AT and self.n > SMALL:
            sub = np.flatnonzero(mask)
            child = Layer(sub if self.rows is None else self.rows[sub], sub, self)
        if key is not None:
            self.children[key] = (kept, child)
        return kept, child


class Batch:
    """Keys (words, n) and their components, each decoded once on first use."""

    def __init__(self, T: Any, keys: np.ndarray) -> None:
        self.T, self.keys = T, keys
        self.n = keys.shape[1]
        codec = T.codec
        self.root = Layer(None, None, None, lambda name: codec.get(keys, name, {}), self.n)

    def component(self, name: str) -> np.ndarray:
        return self.root.component(name)

    def release(self) -> None:
        """Drop the narrowed layers at once: a layer and its children refer to each other,
        and the garbage collector would free those cycles (and their arrays) only much later."""
        stack = [self.root]
        while stack:
            layer = stack.pop()
            stack.extend(child for _, child in layer.children.values() if child is not None)
            layer.children.clear()
            layer.below = None


@dataclass
class _Change:
    """How an action changes one component: the node (or constant) of its new code, a
    replica's new slot (-1 where the new fields leave the tables). ``checked``: the new
    codes are known to be in range (a table with none outside); ``checks``: a replica's
    field codes that its slot cannot vouch for, checked per batch."""

    comp: str
    new: Any
    bound: int
    checked: bool = False
    checks: list[tuple[Any, int]] = field(default_factory=list)  # (code, bound) to check per batch


@dataclass
class _Action:
    index: int
    conjuncts: list[Node]
    changes: list[_Change]


class Plan:
    """The registry's actions and the properties, traced for one kernel's tables ``T``."""

    def __init__(self, T: Any, catalogue: Catalogue) -> None:
        self.T = T
        self.tracer = Tracer(T)
        self.actions: list[_Action] = []
        for a in range(len(catalogue)):
            traced = self._trace_action(catalogue.family_of[a].run, catalogue[a].args, a)
            if traced is not None:
                self.actions.append(traced)

    # ---- tracing ------------------------------------------------------------------------------
    def _trace_action(self, run: Callable, args: dict[str, int], index: int) -> _Action | None:
        view = TraceView(self.tracer)
        conjuncts: list[Node] = []
        with tracing(self.tracer):
            for cond in run(view, view.x, **args):
                if view.updates:
                    raise DefinitionError(f"{run.__name__} yields a guard after assigning a field")
                if type(cond) is not Node:
                    if not cond:
                        return None  # statically disabled here
                    continue
                conjuncts.append(cond)
            changes = self._changes(view)
        return _Action(index, conjuncts, changes)

    def _changes(self, view: TraceView) -> list[_Change]:
        T, cfg = self.T, self.T.config
        out: list[_Change] = []
        per_replica: dict[int, list[tuple[str, Any]]] = {}
        for (name, r), value in view.updates.items():
            f = view.fields[name]
            if not f.kept(cfg):
                continue  # a constant here: the definition assigns it its value
            code = value if not f.kind.number else f.kind.code_of_view(value)
            if f.replica:
                per_replica.setdefault(r, []).append((name, code))
            else:
                out.append(_Change(name, code, T.bound[name], _within(code, T.bound[name])))
        for r, fields in per_replica.items():
            comp = f"slot{r}"
            if all(type(c) is not Node or c.comps == {comp} for _, c in fields):
                table = self._slot_table(comp, fields)
                out.append(_Change(comp, table, T.n_slots, _within(table, T.n_slots)))
            else:
                slot, checks = self._slot_node(comp, fields)
                out.append(_Change(comp, slot, T.n_slots, checks=checks))
        return out

    def _slot_node(self, comp: str, fields: list[tuple[str, Any]]) -> tuple[Node, list[tuple[Any, int]]]:
        """A replica's new slot where some new fields depend on other components too, and the
        checks its mixed codes need per batch. The combined index starts from a table over
        the replica's slots (its index with the updated fields zeroed, plus the new codes
        that depend on it alone; -1 where one of those is out of range) and adds each mixed
        field's code times its unit."""
        T, t = self.T, self.tracer
        base = T.COMBINED.copy()
        bad = np.zeros(T.n_slots, dtype=bool)
        mixed = []
        for name, code in fields:
            base -= T.code[name] * T.unit[name]
            if type(code) is Node and code.comps != {comp}:
                mixed.append((name, code))
                continue
            new = (code.table if type(code) is Node else np.full(T.n_slots, code)).astype(np.int64)
            bad |= (new < 0) | (new >= T.radix[name])
            base += new * T.unit[name]
        base[bad] = -(1 << 62)  # slot_of gives -1 there
        combined: Any = t._intern(("slot-base", comp, len(t.nodes)), None, (), frozenset([comp]), base)
        for name, code in mixed:
            unit = T.unit[name]
            combined = t.node(("add_code", unit), lambda c, v, u=unit: c + np.asarray(v, dtype=np.int64) * u, combined, code)
        slot = t.node("slot_of", T.slot_of, combined)
        return slot, [(code, T.radix[name]) for name, code in mixed]

    def _slot_table(self, comp: str, fields: list[tuple[str, Any]]) -> Node:
        """A replica's new slot as a table over its slots (-1 where it leaves the tables)."""
        T = self.T
        combined = T.COMBINED.copy()
        bad = np.zeros(T.n_slots, dtype=bool)
        for name, code in fields:
            new = (code.table if type(code) is Node else np.full(T.n_slots, code)).astype(np.int64)
            bad |= (new < 0) | (new >= T.radix[name])
            combined += (new - T.code[name]) * T.unit[name]
        slots = np.where(bad, -1, T.slot_of(np.where(bad, 0, combined)))
        return self.tracer._intern(("slot-update", comp, len(self.tracer.nodes)), None, (), frozenset([comp]), slots)

    def trace_property(self, holds: Callable) -> Any:
        view = TraceView(self.tracer)
        with tracing(self.tracer):
            return holds(view, view.x)

    # ---- running ---------------------------------------------------------------------------------
    def expand(self, keys: np.ndarray, action_dtype: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every successor of every state: (keys (words, m), parent row (int64), action index)."""
        batch = Batch(self.T, keys)
        try:
            return self._expand(batch, keys, action_dtype)
        finally:
            batch.release()

    def _expand(self, batch: Batch, keys: np.ndarray, action_dtype: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        T = self.T
        parts: list[tuple[np.ndarray, np.ndarray, int]] = []
        for act in self.actions:
            layer, mask = batch.root, None
            for c in act.conjuncts:
                cond = layer.value(c)
                if mask is not None:
                    cond = cond & mask
                kept, child = layer.split(cond, c.id if mask is None else None)
                if not kept:
                    break
                if child is not None:
                    layer, mask = child, None
                elif kept < layer.n:
                    mask = cond
            else:
                rows = layer.all_rows() if mask is None else layer.all_rows()[mask]
                new = keys[:, rows]
                T.codec.update(new, self._component_changes(act, layer, mask))
                parts.append((new, rows, act.index))
        if not parts:
            return np.empty((T.words, 0), U64), np.empty(0, np.int64), np.empty(0, action_dtype)
        out_keys = np.concatenate([p[0] for p in parts], axis=1)
        out_rows = np.concatenate([p[1] for p in parts])
        actions = np.concatenate([np.full(len(p[1]), p[2], dtype=action_dtype) for p in parts])
        return out_keys, out_rows, actions

    def _component_changes(self, act: _Action, layer: Layer, mask: Any) -> list[tuple[str, np.ndarray, Any]]:
        T = self.T

        def at(node: Any) -> Any:
            v = layer.value(node)
            return v[mask] if mask is not None and isinstance(v, np.ndarray) else v

        out = []
        for ch in act.changes:
            old = layer.component(ch.comp)
            if mask is not None:
                old = old[mask]
            for code, bound in ch.checks:
                _check(at(code), bound, act.index, ch.comp)
            new = at(ch.new)
            if not ch.checked:
                _check(new, ch.bound, act.index, ch.comp)
            out.append((ch.comp, old, new))
        return out


def _within(code: Any, bound: int) -> bool:
    """A constant, or a table, all of whose values are codes below ``bound``."""
    if type(code) is Node:
        return code.table is not None and bool(((code.table >= 0) & (code.table < bound)).all())
    return 0 <= code < bound


def _check(values: Any, bound: int, action: int, what: str) -> None:
    if isinstance(values, np.ndarray):
        bad = values.size and (values.min() < 0 or values.max() >= bound)
    else:
        bad = not 0 <= values < bound
    if bad:
        raise KernelDomainError(f"an enabled action (index {action}) sets {what} outside the kernel's tables")


def evaluate(plan: Plan, node: Any, batch: Batch) -> np.ndarray:
    """A traced property over every row of a batch: a bool array. The batch keeps what it
    computed for the next property of the same batch (``release`` it after the last)."""
    value = batch.root.value(node)
    if not isinstance(value, np.ndarray):
        return np.full(batch.n, bool(value))
    return value
