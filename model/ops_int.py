"""The operations on Python ints, over the packed state of ``layout.py``: the reference.

``IntView`` reads a packed int's fields with shifts and table look-ups and turns the
updates an action assigns into the packed int of the next state (one delta per
field). Sets are bit masks, a log is its index in the layout's table of logs, and the
request sequence is the tuple of its packed slots. Running a family on it gives the
reference step (``step``), what replay and the conformance tests hold every other form
to; ``DerivedSuccessors`` lists every enabled action of a state this way, in emission
order: the scalar successor function derived from the definitions (``fused.py`` is the
hand-fused one that the scalar engines run for speed).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .actions import Catalogue
from .layout import Layout
from .ops import NONE, DefinitionError, Ops, View, run_guard
from .schema import Field, RequestsKind


class IntOps(Ops):
    """Python ints and bools; logs index ``layout.logs``."""

    def __init__(self, layout: Layout) -> None:
        self.L = layout
        self.T = layout.logs
        self.ne = layout.n_epochs
        self.n_isr = layout.n_isr
        self.pop = [bin(m).count("1") for m in range(1 << max(layout.rf, layout.max_records, 1))]

    # booleans and numbers
    def and_(self, *cs: Any) -> bool:
        return all(cs)

    def or_(self, *cs: Any) -> bool:
        return any(cs)

    def not_(self, c: Any) -> bool:
        return not c

    def ite(self, c: Any, a: Any, b: Any) -> Any:
        return a if c else b

    def min(self, a: int, b: int) -> int:
        return a if a < b else b

    def all_(self, cs: Iterable[Any]) -> bool:
        return all(cs)

    def any_(self, cs: Iterable[Any]) -> bool:
        return any(cs)

    def count(self, cs: Iterable[Any]) -> int:
        return sum(1 for c in cs if c)

    # sets: bit masks
    def has(self, S: int, i: int) -> bool:
        return i >= 0 and bool(S >> i & 1)

    def put(self, S: int, i: int, cond: Any = True) -> int:
        return S | (1 << i) if cond else S

    def drop(self, S: int, i: int) -> int:
        return S & ~(1 << i)

    def size(self, S: int) -> int:
        return self.pop[S]

    def empty(self, S: int) -> bool:
        return S == 0

    def only(self, S: int, i: int) -> bool:
        return S == 1 << i

    def union(self, A: int, B: int) -> int:
        return A | B

    def subset(self, A: int, B: int) -> bool:
        return not (A & ~B)

    def same(self, A: int, B: int) -> bool:
        return A == B

    def brokers(self, *members: int) -> int:
        return sum(1 << m for m in set(members))

    def any_from(self, S: int, k: int) -> bool:
        return bool(S >> k) if k >= 0 else bool(S)

    # logs: indices into the layout's table
    def length(self, log: int) -> int:
        return self.T.length[log]

    def _code(self, log: int, o: int) -> int:
        return self.T.code_at[log * self.T.width + o] if 0 <= o <= self.T.log_size else -1

    def id_at(self, log: int, o: int) -> int:
        c = self._code(log, o)
        return c // self.ne if c >= 0 else NONE

    def epoch_at(self, log: int, o: int) -> int:
        c = self._code(log, o)
        return c % self.ne if c >= 0 else NONE

    def append(self, log: int, rid: int, epoch: int) -> int:
        return self.T.append[log * self.T.n_codes + rid * self.ne + epoch]

    def copy_next(self, log: int, source: int) -> int:
        c = self._code(source, self.T.length[log])
        return self.T.append[log * self.T.n_codes + c] if c >= 0 else -1

    def prefix(self, log: int, t: int) -> int:
        return self.T.prefix[log * self.T.width + t]

    def ids(self, log: int) -> int:
        return self.T.ids[log]

    def ids_below(self, log: int, k: int) -> int:
        return self.T.ids_below[log * self.T.width + min(k, self.T.log_size)]

    def last_epoch(self, log: int) -> int:
        return self.T.last_epoch[log]

    def epoch_start(self, log: int, e: int) -> int:
        return self.T.epoch_start[log * self.ne + max(e, 0)]

    def matching_end(self, leader: int, follower: int) -> int:
        return self.T.matching(leader, follower)

    def epoch_end(self, leader: int, e: int) -> int:
        return self.T.epoch_end[leader * self.ne + e] if e >= 0 else NONE

    def agree_below(self, a: int, b: int, h: int) -> bool:
        w = self.T.width
        pa = self.T.prefix[a * w + h]
        return pa >= 0 and pa == self.T.prefix[b * w + h]

    # requests: the tuple of packed slots (leader + 1) * 2**rf + isr
    def sent(self, R: tuple[int, ...]) -> int:
        return len(R)

    def leader_of(self, R: tuple[int, ...], e: int) -> int:
        return R[e] // self.n_isr - 1 if 0 <= e < len(R) else NONE

    def isr_of(self, R: tuple[int, ...], e: int) -> int:
        return R[e] % self.n_isr if 0 <= e < len(R) else 0

    def last_leader(self, R: tuple[int, ...]) -> int:
        return R[-1] // self.n_isr - 1 if R else NONE

    def send(self, R: tuple[int, ...], leader: int, isr: int) -> tuple[int, ...]:
        return R + ((leader + 1) * self.n_isr + isr,)


class Decoded:
    """One packed state and the field values read from it so far (shared by the views of
    every action tried on it)."""

    __slots__ = ("layout", "state", "cache", "locals")

    def __init__(self, layout: Layout, state: int) -> None:
        self.layout, self.state, self.cache = layout, state, {}
        self.locals = [(state >> sh) & layout.local_mask for sh in layout.local_shift]

    def read(self, f: Field, r: int) -> Any:
        key = (f.name, r)
        v = self.cache.get(key)
        if v is None:
            v = self.cache[key] = self._read(f, r)
        return v

    def _read(self, f: Field, r: int) -> Any:
        L = self.layout
        if f.replica:
            local = self.locals[r]
            if f is L.log_field:
                return local >> L.meta_bits
            return L.meta_view[f.name][local & L.meta_mask]
        if not f.kept(L.config):
            return L.schema.init_view(f)
        if isinstance(f.kind, RequestsKind):
            return tuple(L.slots[e].get(self.state) for e in range(L.shared[f.name].get(self.state)))
        return f.kind.view_of_code(L.shared[f.name].get(self.state))


class IntView(View):
    """One action's view of a decoded state; ``next_state()`` applies its updates."""

    def __init__(self, decoded: Decoded, x: IntOps) -> None:
        super().__init__(decoded.layout.schema, x)
        self.__dict__["decoded"] = decoded

    def read(self, f: Field, r: int) -> Any:
        return self.decoded.read(f, r)

    def remember(self, key: Any, compute: Callable[[], Any]) -> Any:
        cache = self.decoded.cache
        v = cache.get(key)
        if v is None:
            v = cache[key] = compute()
        return v

    def next_state(self) -> int:
        d = self.decoded
        L, t = d.layout, d.state
        cfg = L.config
        for (name, r), v in self.updates.items():
            f = self.fields[name]
            old = d.read(f, r)
            if v == old:
                continue
            if not f.kept(cfg):
                raise DefinitionError(f"{name} is set to {v!r}, but this configuration does not keep it")
            if f.replica:
                sh = L.local_shift[r]
                if f is L.log_field:
                    if not 0 <= v < L.n_logs:
                        raise DefinitionError(f"an action leaves replica {r}'s log outside the table of logs")
                    t += (v - old) << (sh + L.meta_bits)
                else:
                    code = f.kind.code_of_view(v)
                    if not 0 <= code < L.radix[name]:
                        raise DefinitionError(f"{name} of replica {r} set to {v!r}, out of its range")
                    t += ((code - f.kind.code_of_view(old)) * L.unit[name]) << sh
            elif isinstance(f.kind, RequestsKind):
                if len(v) > len(L.slots):
                    raise DefinitionError("more requests than leader epochs")
                for e, slot in enumerate(v):
                    t += (slot - (old[e] if e < len(old) else 0)) << L.slots[e].shift
                t += (len(v) - len(old)) << L.shared[name].shift
            else:
                code, bf = f.kind.code_of_view(v), L.shared[name]
                if not 0 <= code <= bf.mask:
                    raise DefinitionError(f"{name} set to {v!r}, out of its range")
                t += (code - f.kind.code_of_view(old)) << bf.shift
        return t


class DerivedSuccessors:
    """The successor function and the step of one configuration, run from the definitions."""

    def __init__(self, layout: Layout, catalogue: Catalogue) -> None:
        self.layout = layout
        self.x = IntOps(layout)
        self.order = catalogue.emission_order()
        self.entries = [(catalogue.family_of[a].run, catalogue[a].args) for a in range(len(catalogue))]

    def run(self, decoded: Decoded, action: int) -> int | None:
        """The state after ``action``, or None where it is not enabled."""
        run, args = self.entries[action]
        view = IntView(decoded, self.x)
        if not run_guard(run, view, args, bool):
            return None
        return view.next_state()

    def step(self, state: int, action: int) -> int | None:
        return self.run(Decoded(self.layout, state), action)

    def __call__(self, state: int) -> list[tuple[int, int]]:
        decoded = Decoded(self.layout, state)
        out = []
        for a in self.order:
            t = self.run(decoded, a)
            if t is not None:
                out.append((a, t))
        return out


def state_predicate(layout: Layout, holds: Callable[[Any, Any], Any]) -> Callable[[int], bool]:
    """A property's definition as a predicate over packed states of this layout."""
    x = IntOps(layout)
    return lambda state: bool(holds(IntView(Decoded(layout, state), x), x))
