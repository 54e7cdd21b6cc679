"""The vector kernel's compiled definitions: every action and property, traced once.

``Plan(T, catalogue)`` traces each action of the registry (``trace.py``): its guard's
conjuncts and its updates become nodes; an action whose guard is statically False in
this configuration is dropped. Updates become the components they change: a shared
field's new code, or a replica's new slot; expressions over several components become
one table look-up (``factor.py``), and where a replica's new fields depend on that
replica alone, its new slot is itself a table over its slots (one gather per batch).

``expand(keys)`` runs every action on a batch of keys. A ``Layer`` is some rows of the
batch and the node values computed there; an action evaluates its conjuncts in order,
and a conjunct that leaves few rows of a big layer narrows to a child layer, shared by
every action that narrows by the same conjuncts (``Layer.split``), so later conjuncts
and the update are computed over fewer rows; values no later action reads are dropped
(``Batch.forget``). The rows left take the update: new keys by
changing only the components it touches. A value outside the kernel's tables raises
``KernelDomainError``: a fact that stopped holding fails loudly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .actions import Catalogue
from .factor import Factorer
from .kernel_keys import KernelDomainError
from .ops import DefinitionError
from .trace import Node, TraceView, Tracer, tracing

U64 = np.uint64
NARROW_AT = 0.3  # a conjunct that keeps at most this share of a layer's rows narrows to a child layer ...
SMALL = 256  # ... unless the layer is this small: then it only masks rows (a child layer costs more)


class Layer:
    """Some rows of a batch, and what was computed there. The root layer (every row)
    decodes components with ``decode``; a child layer takes the rows ``sub`` of its
    parent ``below``. ``book``, shared by a batch's layers, lists per node id the
    entries that read it (a layer and the node's id where it holds its value, or
    the key of a mask or child layer of conjuncts including it): ``Batch.forget`` finds
    them at once."""

    __slots__ = ("rows", "sub", "below", "cache", "children", "decode", "n", "book")

    def __init__(self, rows: np.ndarray | None, sub: np.ndarray | None, below: "Layer | None",
                 decode: Callable[[str], np.ndarray] | None = None, size: int = 0) -> None:
        self.rows, self.sub, self.below, self.decode = rows, sub, below, decode
        self.n = size if rows is None else len(rows)
        self.book: dict[int, list] = {} if below is None else below.book
        self.cache: dict = {}
        self.children: dict = {}

    def all_rows(self) -> np.ndarray:
        return np.arange(self.n) if self.rows is None else self.rows

    def component(self, name: str) -> np.ndarray:
        key = ("#", name)
        v = self.cache.get(key)
        if v is None:
            v = self.decode(name) if self.below is None else self.below.component(name).take(self.sub)
            self.cache[key] = v
        return v

    def value(self, node: Any) -> Any:
        """A node's value at these rows (a constant stays one)."""
        if type(node) is not Node:
            return node
        nid = node.id
        v = self.cache.get(nid)
        if v is None:
            below = self.below
            if below is not None and nid in below.cache:
                v = below.cache[nid]
                if isinstance(v, np.ndarray):
                    v = v.take(self.sub)
            elif node.table is not None:
                (comp,) = node.comps
                v = node.table.take(self.component(comp))
            else:
                v = node.fn(*[self.value(a) for a in node.args])
            self.cache[nid] = v
            if below is not None:
                self.book.setdefault(nid, []).append((self, nid))
        return v

    def conjoined(self, node: Node, mask: np.ndarray, key: tuple) -> np.ndarray:
        """``node`` and ``mask`` (the conjuncts ``key`` but the last), remembered under ``key``."""
        v = self.cache.get(key)
        if v is None:
            v = self.cache[key] = self.value(node) & mask
            self._note(key)
        return v

    def split(self, mask: np.ndarray, key: tuple) -> tuple[int, "Layer | None"]:
        """How many rows ``mask`` keeps, and the child layer of those rows where narrowing to
        them pays (few rows of a big layer), else None; remembered under ``key`` (the ids of
        the conjuncts since this layer's), so actions narrowing by the same ones share it."""
        known = self.children.get(key)
        if known is not None:
            return known
        kept = int(np.count_nonzero(mask))
        child = None
        if 0 < kept <= self.n * NARROW_AT and self.n > SMALL:
            sub = np.flatnonzero(mask)
            child = Layer(sub if self.rows is None else self.rows[sub], sub, self)
        self.children[key] = (kept, child)
        self._note(key)
        return kept, child

    def _note(self, key: tuple) -> None:
        entry = (self, key)  # the root's entries too: a cycle through the book, broken by Batch.release
        for nid in key:
            self.book.setdefault(nid, []).append(entry)


class Batch:
    """Keys (words, n) and their components, each decoded once on first use."""

    def __init__(self, T: Any, keys: np.ndarray) -> None:
        self.T, self.keys = T, keys
        self.n = keys.shape[1]
        codec = T.codec
        self.root = Layer(None, None, None, lambda name: codec.get(keys, name, {}), self.n)

    def component(self, name: str) -> np.ndarray:
        return self.root.component(name)

    def evaluate(self, node: Any) -> np.ndarray:
        """A traced property over every row: a bool array. The batch keeps what it computed
        for the next property it evaluates."""
        value = self.root.value(node)
        return value if isinstance(value, np.ndarray) else np.full(self.n, bool(value))

    def forget(self, nodes: list[int]) -> None:
        """Drop what no later action reads: these nodes' values, and the masks and layers of
        conjuncts including them."""
        root = self.root
        book, cache = root.book, root.cache
        for nid in nodes:
            cache.pop(nid, None)
            for layer, key in book.pop(nid, ()):
                layer.cache.pop(key, None)
                if type(key) is tuple:
                    _, child = layer.children.pop(key, (0, None))
                    if child is not None:
                        _release(child)

    def release(self) -> None:
        _release(self.root)
        self.root.book.clear()


def _release(top: Layer) -> None:
    """Drop a layer's narrowed layers at once: a layer and its children refer to each other,
    and the garbage collector would free those cycles (and their arrays) only much later."""
    stack = [top]
    while stack:
        layer = stack.pop()
        stack.extend(child for _, child in layer.children.values() if child is not None)
        layer.children.clear()
        layer.cache.clear()
        layer.below = None


@dataclass
class _Change:
    """How an action changes one component: the node (or constant) of its new code, a
    replica's new slot (-1 where the new fields leave the tables). ``checked``: the new
    codes are known to be in range (a table with none outside), else checked per batch."""

    comp: str
    new: Any
    bound: int
    checked: bool = False


@dataclass
class _Action:
    index: int
    conjuncts: list[Node]
    changes: list[_Change]
    dead: list[int] = field(default_factory=list)  # nodes no later action reads: dropped after this one

    def reads(self) -> set[int]:
        """Every node this action may compute (a node with a table is a gather: its arguments are not)."""
        seen: set[int] = set()
        stack = [*self.conjuncts, *(ch.new for ch in self.changes)]
        while stack:
            n = stack.pop()
            if type(n) is Node and n.id not in seen:
                seen.add(n.id)
                if n.table is None:
                    stack.extend(n.args)
        return seen


class Plan:
    """The registry's actions and the properties, traced for one kernel's tables ``T``."""

    def __init__(self, T: Any, catalogue: Catalogue) -> None:
        self.T = T
        self.tracer = Tracer(T)
        self.factor = Factorer(self.tracer, tick=getattr(T.model, "tick", None))
        self.actions: list[_Action] = []
        for a in range(len(catalogue)):
            traced = self._trace_action(catalogue.family_of[a].run, catalogue[a].args, a)
            if traced is not None:
                self.actions.append(traced)
        last = {nid: act for act in self.actions for nid in act.reads()}  # the last action reading a node
        for nid, act in last.items():
            act.dead.append(nid)
        self.factor.settle()

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
                conjuncts.append(self.factor(cond))
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
            code = self.factor(value if not f.kind.number else f.kind.code_of_view(value))
            if f.replica:
                per_replica.setdefault(r, []).append((name, code))
            else:
                out.append(_Change(name, code, T.bound[name], self._within(code, T.bound[name])))
        for r, fields in per_replica.items():
            slot = self._slot_node(f"slot{r}", fields)
            out.append(_Change(f"slot{r}", slot, T.n_slots, self._within(slot, T.n_slots)))
        return out

    def _slot_node(self, comp: str, fields: list[tuple[str, Any]]) -> Any:
        """A replica's new slot, factored as one expression (a table over its slots where every
        new field depends on that replica alone). The combined index starts from a table over
        the replica's slots (its index with the updated fields zeroed, plus the new codes that
        depend on it alone; -1 where one of those is out of range) and adds each mixed field's
        code times its unit; the slot is -1 where a mixed code is out of its field's range."""
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
        outside: Any = False
        for name, code in mixed:
            unit, radix = T.unit[name], T.radix[name]
            combined = t.node(("add_code", unit), lambda c, v, u=unit: c + np.asarray(v, dtype=np.int64) * u, combined, code)
            if not self._within(code, radix):
                out = t.node(("outside", radix), lambda v, r=radix: (v < 0) | (v >= r), code)
                outside = out if outside is False else t.node("logical_or", np.logical_or, outside, out)
        slot = t.node("slot_of", T.slot_of, combined)
        if outside is not False:
            slot = t.node("unless", lambda s, o: np.where(o, -1, s), slot, outside)
        return self.factor(slot)

    def _within(self, code: Any, bound: int) -> bool:
        """A constant, or a node whose every value (its table's, its factored table's) is a code below ``bound``."""
        if type(code) is not Node:
            return 0 <= code < bound
        table = code.table if code.table is not None else self.factor.tables.get(code.id)
        return table is not None and bool(((table >= 0) & (table < bound)).all())

    def trace_property(self, holds: Callable) -> Any:
        view = TraceView(self.tracer)
        with tracing(self.tracer):
            node = self.factor(holds(view, view.x))
        self.factor.settle()
        return node

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
            layer, mask, since = batch.root, None, ()
            for c in act.conjuncts:
                since += (c.id,)  # the conjuncts since this layer's: actions sharing them share the mask
                cond = layer.value(c) if mask is None else layer.conjoined(c, mask, since)
                kept, child = layer.split(cond, since)
                if not kept:
                    break
                if child is not None:
                    layer, mask, since = child, None, ()
                elif kept < layer.n:
                    mask = cond
            else:
                own = None
                if mask is not None:  # the update is computed on the rows that take it only
                    sub = np.flatnonzero(mask)
                    layer = own = Layer(sub if layer.rows is None else layer.rows[sub], sub, layer)
                rows = layer.all_rows()
                new = keys.take(rows, axis=1)
                T.codec.update(new, self._component_changes(act, layer))
                parts.append((new, rows, act.index))
                if own is not None:
                    _release(own)
            batch.forget(act.dead)
        if not parts:
            return np.empty((T.words, 0), U64), np.empty(0, np.int64), np.empty(0, action_dtype)
        out_keys = np.concatenate([p[0] for p in parts], axis=1)
        out_rows = np.concatenate([p[1] for p in parts])
        actions = np.concatenate([np.full(len(p[1]), p[2], dtype=action_dtype) for p in parts])
        return out_keys, out_rows, actions

    def _component_changes(self, act: _Action, layer: Layer) -> list[tuple[str, np.ndarray, Any]]:
        """(component, old codes, new codes) of the rows of ``layer``, checked against the tables."""
        out = []
        for ch in act.changes:
            new = layer.value(ch.new)
            if not ch.checked:
                _check(new, ch.bound, act.index, ch.comp)
            out.append((ch.comp, layer.component(ch.comp), new))
        return out


def _check(values: Any, bound: int, action: int, what: str) -> None:
    if isinstance(values, np.ndarray):
        bad = values.size and (values.min() < 0 or values.max() >= bound)
    else:
        bad = not 0 <= values < bound
    if bad:
        raise KernelDomainError(f"an enabled action (index {action}) sets {what} outside the kernel's tables")

