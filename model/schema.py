"""The state schema: what a field is, once, for every representation of a state.

A model's state is a list of fields, each declared once (``fields.py`` for the Kafka
model) with its name, its kind, whether every replica has one, when a configuration
keeps it, its initial value and its place in ITF. Everything that represents a state
is derived from these declarations:

* the readable state (``state.py``): one dataclass attribute per field;
* the packed int of the scalar engines (``layout.py``): one mixed-radix digit or bit
  field per field, in declaration order;
* the vector kernel's keys (``kernel_tables.py``): a replica's fields together as one
  index among the combinations that can exist, each shared field one component;
* the Z3 variables (``symbolic_space.py``) and the ITF codec (``traces/itf.py``);
* symmetry: the kinds whose values are broker ids are relabelled (``Kind.brokers``).

A kind says what values a field takes and how each representation holds them. In the
views that actions and properties read (``ops.py``), every value is a number: ``None``
is ``NONE`` (-1), a set of brokers or of record ids is a bit mask, a count per record is
one number of base-``TALLY_BASE`` digits (``Tally``), a log and the request sequence are
values of their own (``Log``, ``Requests``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

NONE = -1  # no leader, no epoch, not crashed: the specification's None and Nil


def _none(value: int) -> int | None:
    return None if value == NONE else value


class Kind:
    """A field's values. ``size(cfg)``: how many there are (the packed radix); ``code`` and
    ``value`` convert a readable value to its number (``0..size-1``) and back."""

    brokers = False  # its values name brokers: symmetry relabels them
    number = True  # a plain number in the views (else a value object: logs, requests)

    def size(self, cfg: Any) -> int:
        raise NotImplementedError

    def code(self, value: Any, cfg: Any) -> int:
        return value

    def value(self, code: int, cfg: Any) -> Any:
        return code

    def view(self, value: Any) -> int:
        """The readable value as the views see it (``None`` is ``NONE``)."""
        return value

    def readable(self, view: int) -> Any:
        return view

    def relabel(self, code: int, perm: tuple[int, ...]) -> int:
        """The code with broker i renamed ``perm[i]`` (kinds that name brokers)."""
        return code

    def code_of_view(self, v: Any) -> Any:
        """The code of a view value (ints or NumPy arrays alike)."""
        return v

    def view_of_code(self, c: Any) -> Any:
        return c


@dataclass(frozen=True)
class Count(Kind):
    """An integer 0..hi(cfg): a counter, an offset, a record id bound."""

    hi: Callable[[Any], int]

    def size(self, cfg: Any) -> int:
        return self.hi(cfg) + 1


@dataclass(frozen=True)
class Maybe(Kind):
    """``None`` or an integer 0..hi(cfg); coded value + 1, so ``None`` is 0."""

    hi: Callable[[Any], int]

    def size(self, cfg: Any) -> int:
        return self.hi(cfg) + 2

    def code(self, value: int | None, cfg: Any) -> int:
        return 0 if value is None else value + 1

    def value(self, code: int, cfg: Any) -> int | None:
        return None if code == 0 else code - 1

    def view(self, value: int | None) -> int:
        return NONE if value is None else value

    def readable(self, view: int) -> int | None:
        return _none(view)

    def code_of_view(self, v: Any) -> Any:
        return v + 1

    def view_of_code(self, c: Any) -> Any:
        return c - 1


class Broker(Maybe):
    """``None`` or a broker id."""

    brokers = True

    def __init__(self) -> None:
        super().__init__(lambda cfg: cfg.rf - 1)

    def relabel(self, code: int, perm: tuple[int, ...]) -> int:
        return 0 if code == 0 else perm[code - 1] + 1


def relabel_mask(mask: int, perm: tuple[int, ...]) -> int:
    out = 0
    for r, new in enumerate(perm):
        if mask >> r & 1:
            out |= 1 << new
    return out


def members(mask: int) -> frozenset[int]:
    return frozenset(i for i in range(mask.bit_length()) if mask >> i & 1)


def mask_of(items: frozenset[int] | set[int]) -> int:
    out = 0
    for i in items:
        out |= 1 << i
    return out


class _Mask(Kind):
    """A set of small ints (brokers, record ids), as a bit mask: its code and its view."""

    def code(self, value: frozenset[int], cfg: Any) -> int:
        return mask_of(value)

    def value(self, code: int, cfg: Any) -> frozenset[int]:
        return members(code)

    def view(self, value: frozenset[int]) -> int:
        return mask_of(value)

    def readable(self, view: int) -> frozenset[int]:
        return members(view)


class Brokers(_Mask):
    """A set of brokers, as a bit mask."""

    brokers = True

    def size(self, cfg: Any) -> int:
        return 1 << cfg.rf

    def relabel(self, code: int, perm: tuple[int, ...]) -> int:
        return relabel_mask(code, perm)


@dataclass(frozen=True)
class Ids(_Mask):
    """A set of record ids below hi(cfg), as a bit mask (history variables)."""

    hi: Callable[[Any], int]

    def size(self, cfg: Any) -> int:
        return 1 << self.hi(cfg)


TALLY_BASE = 4  # a Tally's counts are 0..3: one digit of base 4 per record


@dataclass(frozen=True)
class Tally(Kind):
    """A small count per record id below n(cfg), most of them 0: the producer's retries of each
    record. Its number has record k's count as base-``TALLY_BASE`` digit k; readable, it is the
    pairs (record, count) of the records counted, in record order (a map in ITF). The base is
    fixed so that the readable value and its number convert without a configuration."""

    n: Callable[[Any], int]

    def size(self, cfg: Any) -> int:
        return TALLY_BASE ** self.n(cfg)

    def code(self, value: tuple[tuple[int, int], ...], cfg: Any) -> int:
        return self.view(value)

    def value(self, code: int, cfg: Any) -> tuple[tuple[int, int], ...]:
        return self.readable(code)

    def view(self, value: tuple[tuple[int, int], ...]) -> int:
        if any(not (0 <= k and 0 < c < TALLY_BASE) for k, c in value):
            raise ValueError(f"counts are 1 to {TALLY_BASE - 1} per record")
        return sum(c * TALLY_BASE ** k for k, c in dict(value).items())

    @staticmethod
    def count(value: tuple[tuple[int, int], ...], k: int) -> int:
        """Record k's count in a readable value (0 where it is not listed)."""
        return dict(value).get(k, 0)

    def readable(self, view: int) -> tuple[tuple[int, int], ...]:
        out, k = [], 0
        while view:
            view, c = divmod(view, TALLY_BASE)
            if c:
                out.append((k, c))
            k += 1
        return tuple(out)


class LogKind(Kind):
    """A replica's log: a sequence of records (id, epoch) of at most the log size.
    Its number is an index into the table of logs of the representation (``logs.py``)."""

    number = False

    def size(self, cfg: Any) -> int:
        raise TypeError("a log's radix is its representation's table size")


class RequestsKind(Kind):
    """The LeaderAndIsr requests sent, one per leader epoch in epoch order: their count is
    the next leader epoch, and each names a leader (or none) and an ISR."""

    number = False
    brokers = True

    def size(self, cfg: Any) -> int:
        raise TypeError("requests are packed as a count and one slot per epoch")


ALWAYS: Callable[[Any], bool] = lambda cfg: True  # noqa: E731
NO_DEFAULT: Any = object()


@dataclass(frozen=True)
class Field:
    """One state variable, declared once.

    ``init``: its value in the initial state, a function of the configuration.
    ``when``: the configurations that keep it; elsewhere it holds ``default`` (also the
    readable state's default) and takes no bits. ``itf``: where ITF holds it (``var`` or
    ``var.key``; per-replica fields sit in a map from replica to value or record), and
    ``itf_when`` the configurations whose traces write it (default ``when``). ``shown``
    and ``label``: how the trace views show it."""

    name: str
    kind: Kind
    replica: bool
    init: Callable[[Any], Any]
    itf: str
    doc: str
    when: Callable[[Any], bool] = ALWAYS
    default: Any = NO_DEFAULT
    itf_when: Callable[[Any], bool] | None = None
    shown: str = ""  # how trace views show a shared field: "history" (a set of ids) or "counter" (of its bound)
    label: str = ""  # the words views use for it

    def __post_init__(self) -> None:
        if self.when is not ALWAYS and self.default is NO_DEFAULT:
            raise TypeError(f"field {self.name}: a field that only some configurations keep needs a default")

    def kept(self, cfg: Any) -> bool:
        return self.when(cfg)

    def in_itf(self, cfg: Any) -> bool:
        return (self.itf_when or self.when)(cfg)


@dataclass(frozen=True)
class Schema:
    """The fields of one configuration: every declared field, and which of them it keeps."""

    fields: tuple[Field, ...]
    config: Any
    kept: tuple[Field, ...] = field(init=False)

    by_name: dict[str, Field] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kept", tuple(f for f in self.fields if f.kept(self.config)))
        object.__setattr__(self, "by_name", {f.name: f for f in self.fields})

    @property
    def replica_fields(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.replica)

    @property
    def shared_fields(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if not f.replica)

    def keeps(self, name: str) -> bool:
        return self.by_name[name].kept(self.config)

    def field(self, name: str) -> Field:
        return self.by_name[name]

    def init_value(self, f: Field) -> Any:
        """A field's readable initial value (its constant ``default`` where it is not kept)."""
        return f.init(self.config) if f.kept(self.config) else f.default

    def init_view(self, f: Field) -> Any:
        """A field's initial value as the views see it."""
        v = self.init_value(f)
        return f.kind.view(v) if f.kind.number else v
