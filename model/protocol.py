"""A protocol: the one definition a model is made of.

Its state fields (``schema.py``), its readable state classes made from them
(``state.py``), and its action families in registry order (``actions.py``), declared
with ``Protocol.family``. The Kafka model is the protocol of ``fields.py`` with the
families of ``protocol_*.py``; the engine conformance tests declare toy protocols the
same way, and every engine runs both.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .actions import ROLES, SYSTEM, Describe, Family, Param
from .schema import Field
from .state import state_classes


RESERVED = {"x", "cfg", "schema", "fields", "updates", "keeps", "memo", "read", "get", "set", "remember",
            "decoded", "state", "tracer", "batch", "top", "rows", "count"}  # what a view is made of


def _plain(before: Any, after: Any, args: dict[str, int]) -> str:
    return ""


@dataclass(frozen=True)
class Fact:
    """An invariant of every reachable state about one replica's fields (or one request's
    leader and ISR), which the vector kernel's tables exploit: they hold only the
    combinations it allows, so that keys fit fewer bits. ``holds(v, x, cfg)`` reads the
    named fields' values from ``v`` (arrays over combinations; a field the configuration
    does not keep is its constant) with the operations ``x``. A fact that stops holding (a
    changed model) makes the kernel fail loudly, never silently."""

    doc: str
    fields: tuple[str, ...]
    holds: Callable[[dict[str, Any], Any, Any], Any]


class Protocol:
    """A model's definition: its state fields and its action families, in registry order.

    ``facts``: the reachable-state facts about a replica's fields; ``request_facts``: about
    a request's ``leader`` and ``isr``; ``distinct_log_ids``: the configurations in which no
    record id appears twice in a log (the vector kernel's table of logs leaves such logs out)."""

    def __init__(
        self,
        name: str,
        fields: tuple[Field, ...],
        replica_base: type = object,
        state_base: type = object,
        facts: tuple[Fact, ...] = (),
        request_facts: tuple[Fact, ...] = (),
        distinct_log_ids: Callable[[Any], bool] = lambda cfg: False,
    ) -> None:
        clash = {f.name for f in fields} & RESERVED
        if clash:
            raise ValueError(f"protocol {name}: field names {sorted(clash)} are the views' own attributes")
        self.name = name
        self.fields = fields
        self.families: list[Family] = []
        self.replica_class, self.state_class = state_classes(fields, replica_base, state_base)
        self.facts, self.request_facts, self.distinct_log_ids = facts, request_facts, distinct_log_ids

    @property
    def classes(self) -> tuple[type, type]:
        return self.replica_class, self.state_class

    def family(
        self,
        params: tuple[Param, ...] = (),
        when: Callable[[Any], bool] = lambda cfg: True,
        describe: Describe = _plain,
        short: Describe = _plain,
        emit: Callable[[dict[str, int]], tuple] | None = None,
        role: str = SYSTEM,
        fault_when: Callable[..., Any] | None = None,
    ) -> Callable[[Callable[..., Iterator[Any]]], Family]:
        """Declare the decorated generator function as the family of its name, after the
        families declared before it (that is its place in the emission order). ``role``:
        what weak fairness asks of it (``actions.ROLES``); ``fault_when(s, x, **params)``: the
        states where a system step is a fault instead (dropping a live broker, say)."""
        if role not in ROLES or (fault_when is not None and role != SYSTEM):
            raise ValueError(f"role {role!r}: one of {ROLES}, and only a system family has fault_when")

        def register(run: Callable[..., Iterator[Any]]) -> Family:
            if not inspect.isgeneratorfunction(run):
                raise TypeError(f"{run.__name__}: a family yields its guard's conjuncts (a generator function)")
            wanted = ["s", "x", *(p.name for p in params)]
            got = list(inspect.signature(run).parameters)
            if got != wanted:
                raise TypeError(f"{run.__name__}: parameters {got}, expected {wanted}")
            if any(f.name == run.__name__ for f in self.families):
                raise ValueError(f"family {run.__name__} is declared twice")
            fam = Family(run.__name__, params, run, when, describe, short, emit, role, fault_when)
            self.families.append(fam)
            return fam

        return register

    def by_name(self, name: str) -> Family:
        for f in self.families:
            if f.name == name:
                return f
        raise KeyError(name)
