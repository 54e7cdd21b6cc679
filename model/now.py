"""Start from a partition's state now: what ``kafka-topics.sh --describe`` shows of it.

A describe line gives the controller's view of one partition: its leader (or none), its
replicas, its ISR and, from 3.7 in KRaft, its eligible leader replicas; a live cluster
also says which brokers are up. ``PartitionNow`` holds that, in the describe's own
words, so that a configuration carrying it prints, hashes and pickles as one string.

The check then starts from every state of the model that shows the same: the states,
reached with no record written yet, whose controller names that leader, that ISR and
that ELR, and whose brokers are up or down as shown (a describe file does not say who is
down: both are left open, as for a replica out of the ISR that may lag or be dead).
Among those, the states reached in the fewest steps are taken, their past let go (the
controller's newest request alone, renumbered from epoch 0), so that the configuration's
bounds (crashes, leader elections) count from now: a partition with broker 3 down can
still lose ``--crashes`` more brokers and elect ``--max-leader-epoch`` more leaders. Records written before now
are outside the model; the verdicts are about records written from now on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from .config import ConfigError
from .fields import NONE
from .ops_int import state_predicate
from .readings import alive, quorum_leader
from .state import Request

_LINE = re.compile(
    r"Partition:\s*(\d+)\s+Leader:\s*(none|-?\d+)\s+Replicas:\s*([\d,]+)\s+Isr:\s*([\d,]*)"
    r"(?:\s+Elr:\s*([\d,]*|N/A))?(?:\s+Down:\s*([\d,]*|\?))?"
)
SEARCH_ELECTIONS = 4  # leader elections the search for a shown state may hold
MAX_DEPTH, SLACK = 10, 2  # steps the search takes at most, and past the first state found
CONTROLLER = ("quorum_isr", "requests", "elr")  # the shared fields a start keeps: the controller's state


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(b) for b in text.split(",") if b)


def _words(ids) -> str:
    return ",".join(str(b) for b in ids)


@dataclass(frozen=True, slots=True)
class PartitionNow:
    """One partition as a describe shows it, in broker ids; ``elr`` and ``down`` None: not shown."""

    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...] | None = None
    down: tuple[int, ...] | None = None

    def text(self) -> str:
        """The describe's words, one line: what a configuration stores."""
        shown = [("Partition", str(self.partition)), ("Leader", "none" if self.leader is None else str(self.leader)),
                 ("Replicas", _words(self.replicas)), ("Isr", _words(self.isr))]
        shown += [(name, _words(ids)) for name, ids in (("Elr", self.elr), ("Down", self.down)) if ids is not None]
        return " ".join(f"{name}: {value}" if value else f"{name}:" for name, value in shown)

    @classmethod
    def parse(cls, text: str) -> "PartitionNow":
        m = _LINE.fullmatch(text.strip())
        if not m:
            raise ConfigError(f"not a partition's state as a describe shows it: {text[:80]!r}")
        leader = None if m.group(2) in ("none", "-1") else int(m.group(2))
        elr = None if m.group(5) in (None, "N/A") else _ids(m.group(5))
        down = None if m.group(6) in (None, "?") else _ids(m.group(6))
        return cls(int(m.group(1)), leader, _ids(m.group(3)), _ids(m.group(4)), elr, down).checked()

    def checked(self) -> "PartitionNow":
        """Itself, or ConfigError naming what a describe could not show."""
        shown = set(self.replicas)
        where = f"partition {self.partition}"
        if len(shown) != len(self.replicas):
            raise ConfigError(f"{where}: a broker is listed twice in Replicas {_words(self.replicas)}")
        for name, ids in (("Leader", () if self.leader is None else (self.leader,)), ("Isr", self.isr),
                          ("Elr", self.elr or ()), ("Down", self.down or ())):
            if not set(ids) <= shown:
                raise ConfigError(f"{where}: {name} {_words(ids)} names a broker that is not a replica "
                                  f"({_words(self.replicas)})")
        if self.leader is not None and self.leader not in self.isr:
            raise ConfigError(f"{where}: leader {self.leader} is not in the ISR {_words(self.isr)}")
        return self

    def index(self, broker: int) -> int:
        """The model's replica for a broker: its place in Replicas."""
        return self.replicas.index(broker)

    def members(self, ids) -> frozenset[int]:
        return frozenset(self.index(b) for b in ids)

    def predicate(self, elr_kept: bool):
        """Whether a state shows this: the controller's leader, ISR and ELR, and who is down
        (written against the operations interface, as the properties are)."""
        leader = NONE if self.leader is None else self.index(self.leader)

        def holds(s: Any, x: Any) -> Any:
            shown = [quorum_leader(s, x) == leader, x.same(s.quorum_isr, x.brokers(*self.members(self.isr)))]
            if elr_kept and self.elr is not None:
                shown.append(x.same(s.elr, x.brokers(*self.members(self.elr))))
            if self.down is not None:
                down = self.members(self.down)
                shown += [alive(s, r) if r not in down else x.not_(alive(s, r)) for r in range(len(self.replicas))]
            return x.and_(*shown)

        return holds


def parse_now(text: str) -> tuple[PartitionNow, ...]:
    """A configuration's ``now``: partitions' states joined by ' | '."""
    return tuple(PartitionNow.parse(part) for part in text.split("|"))


def now_text(partitions) -> str:
    return " | ".join(p.text() for p in partitions)


def check_now(config: Any) -> None:
    """ConfigError where a configuration's ``now`` cannot be a state of its model."""
    if config.unbounded:
        raise ConfigError("a partition's state now needs bounded leader epochs: drop --max-leader-epoch unbounded")
    for p in parse_now(config.now):
        if len(p.replicas) != config.rf:
            raise ConfigError(f"partition {p.partition} has {len(p.replicas)} replicas "
                              f"({_words(p.replicas)}), and the check is of --rf {config.rf}")
        if p.down and not config.crashes:
            raise ConfigError(f"partition {p.partition} shows broker(s) {_words(p.down)} down, and --crashes 0 "
                              "has no broker go down; give --crashes 1 or more")
        if p.elr and not config.elr:
            raise ConfigError(f"partition {p.partition} shows Elr {_words(p.elr)}, and the release checked "
                              f"({config.kafka_version}{', KRaft' if config.kraft else ', ZooKeeper'}) has no "
                              "eligible leader replicas")


def search_config(config: Any) -> Any:
    """The configuration whose states are searched for one that shows the partitions: any
    broker may be down, and up to SEARCH_ELECTIONS leader elections held."""
    return config.with_changes(now=None, crashes=config.rf if config.crashes else 0, max_leader_epoch=SEARCH_ELECTIONS)


def shown_in(searched: Any, partitions) -> tuple[Any, ...]:
    """The readable states of the searched model (``search_config``), with no record written,
    that show one of the partitions: for each partition and set of brokers down, those
    reached in the fewest steps. The search goes SLACK steps past the first such state, far
    enough for the other explanations of a replica out of the ISR (down, or up and behind)
    to be found too."""
    elr_kept = searched.schema.keeps("elr")
    quiet = state_predicate(searched.layout, lambda s, x: s.next_record_id == 0)
    shows = [state_predicate(searched.layout, p.predicate(elr_kept)) for p in partitions]
    frontier = searched.init_states()
    seen, found, depth, last = set(frontier), {}, 0, MAX_DEPTH
    while frontier and depth <= last:
        for s in frontier:
            for i in (i for i, pred in enumerate(shows) if pred(s)):
                state = searched.decode(s)
                key = (i, frozenset(r for r, rs in enumerate(state.replicas) if not rs.alive))
                if key not in found:
                    found[key], last = (depth, []), min(last, depth + SLACK)
                if found[key][0] == depth:
                    found[key][1].append(state)
        frontier = [t for s in frontier for _, t in searched.successors(s)
                    if t not in seen and not seen.add(t) and quiet(t)]
        depth += 1
    return tuple(state for _, states in found.values() for state in states)


def rebase(state: Any, schema: Any) -> Any | None:
    """The state as it stands now, its past let go: the controller's newest request alone (and
    the one before, where the newest names no leader: ELR's last known leader is read there),
    renumbered from epoch 0, and what the run has counted so far (faults, retries) back at its
    initial value, so that the configuration's bounds count from now. None where a broker
    still acts on a request let go."""
    past = state.requests
    drop = len(past) - (2 if len(past) >= 2 and past[-1].leader is None else 1)
    replicas = []
    for rs in state.replicas:
        if any(e is not None and e < drop for e in (rs.leader_epoch, rs.leader_since)):
            return None
        replicas.append(replace(rs, leader_epoch=_less(rs.leader_epoch, drop), leader_since=_less(rs.leader_since, drop)))
    requests = tuple(Request(r.leader_epoch - drop, r.leader, r.isr) for r in past[drop:])
    counted = {f.name: schema.init_value(f) for f in schema.shared_fields if f.name not in CONTROLLER}
    return replace(state, replicas=tuple(replicas), requests=requests, **counted)


def _less(epoch: int | None, drop: int) -> int | None:
    return None if epoch is None else epoch - drop
