"""The producer's and the consumer's lanes: what both trace views draw beside the brokers.

Where the configuration tracks the producer's requests (``fields.producer_requests``:
``--retries``, ``--max-in-flight``) the producer has a lane: its records in flight,
those queued for a retry, the retries used, the duplicates a leader dropped
(idempotence) and the records acknowledged. Where a consumer group member reads,
processes and commits (``fields.offsets``: ``--commit``) the consumer has one: its
position, the record in hand, the committed offset, what it processed, processed twice
or skipped, and its crashes. Each lane also names the step's event for it, in a few
words: what the step's action (or, for an ``acks=all`` answer, the leader's HWM) did
to the producer or the consumer.

The fields a lane shows leave the generic history block (``view_data._step`` asks
``in_lane``), so nothing is shown twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from isrcheck.model import Action, ModelConfig, PartitionState
from isrcheck.model.fields import attempts_bounded, consumer_crashes, idempotence, offsets, producer_requests, retrying
from isrcheck.model.schema import Tally

PRODUCER, CONSUMER = "producer", "consumer"


@dataclass(frozen=True, slots=True)
class LaneFact:
    """One value of a lane: ``text`` for a number or an offset; for a set of record ids,
    ``ids`` (its members now), with ``added`` and ``removed`` since the previous step."""

    key: str  # the field's name, e.g. inflight
    label: str  # e.g. "in flight"
    text: str
    changed: bool
    ids: tuple[int, ...] | None = None
    added: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class LaneEvent:
    kind: str  # a word or two: sent, answered, timed out, retried, duplicate dropped, fetched, ...
    text: str  # the details, e.g. "m0 is queued to be sent again"


@dataclass(frozen=True, slots=True)
class ClientLane:
    name: str  # PRODUCER or CONSUMER
    event: LaneEvent | None  # what this step did to it (None: nothing)
    facts: tuple[LaneFact, ...]

    @property
    def changed(self) -> bool:
        return self.event is not None or any(f.changed for f in self.facts)


def lane_names(cfg: ModelConfig) -> tuple[str, ...]:
    """The lanes a configuration's traces show."""
    return tuple(n for n, keeps in ((PRODUCER, producer_requests), (CONSUMER, offsets)) if keeps(cfg))


def _fields(name: str) -> tuple[str, ...]:
    if name == PRODUCER:
        return ("inflight", "failed", "retries", "resent", "deduplicated", "acked")
    return ("position", "holding", "commit_offset", "processed", "reprocessed", "skipped", "consumer_crashes")


def in_lane(cfg: ModelConfig, field: str) -> bool:
    """Whether a lane shows the field (so that the history block leaves it out)."""
    return any(field in _fields(n) for n in lane_names(cfg))


def _m(ids) -> str:
    return ", ".join(f"m{i}" for i in sorted(ids))


def _ids(key: str, label: str, now: frozenset[int], was: frozenset[int] | None) -> LaneFact:
    added = tuple(sorted(now - was)) if was is not None else ()
    removed = tuple(sorted(was - now)) if was is not None else ()
    return LaneFact(key, label, _m(now) or "none", bool(added or removed), tuple(sorted(now)), added, removed)


def _value(key: str, label: str, ps: PartitionState, before: PartitionState | None, text: str) -> LaneFact:
    return LaneFact(key, label, text, before is not None and getattr(before, key) != getattr(ps, key))


def _set(key: str, label: str, ps: PartitionState, before: PartitionState | None) -> LaneFact:
    return _ids(key, label, getattr(ps, key), None if before is None else getattr(before, key))


def _producer_facts(cfg: ModelConfig, ps: PartitionState, before: PartitionState | None) -> list[LaneFact]:
    facts = [_set("inflight", "in flight", ps, before)]
    if retrying(cfg):
        facts.append(_set("failed", "to retry", ps, before))
        facts.append(_value("retries", "retries", ps, before, f"{ps.retries}/{cfg.retries}"))
    if attempts_bounded(cfg):
        each = ", ".join(f"m{i} {Tally.count(ps.resent, i)}/{cfg.retries_per_record}" for i in range(cfg.max_records))
        facts.append(_value("resent", "retries a record", ps, before, each))
    if idempotence(cfg):
        facts.append(_set("deduplicated", "duplicates dropped", ps, before))
    facts.append(_set("acked", "acknowledged", ps, before))
    return facts


def _consumer_facts(cfg: ModelConfig, ps: PartitionState, before: PartitionState | None) -> list[LaneFact]:
    facts = [
        _value("position", "position", ps, before, "reset pending" if ps.position is None else str(ps.position)),
        _value("holding", "in hand", ps, before, "none" if ps.holding is None else f"m{ps.holding}"),
        _value("commit_offset", "committed offset", ps, before,
               "none" if ps.commit_offset is None else str(ps.commit_offset)),
        _set("processed", "processed", ps, before),
        _set("reprocessed", "processed twice", ps, before),
        _set("skipped", "skipped", ps, before),
    ]
    if consumer_crashes(cfg):
        facts.append(_value("consumer_crashes", "crashes", ps, before, f"{ps.consumer_crashes}/{cfg.consumer_crashes}"))
    return facts


def _producer_event(action: Action, before: PartitionState, ps: PartitionState) -> LaneEvent | None:
    a, name = action.args, action.name
    new_acks = ps.acked - before.acked
    if name == "LeaderWrite":
        r = a["replica"]
        rec = ps.replicas[r].log[-1]
        return LaneEvent("sent", f"m{rec.id} to broker {r}, appended as {rec} at offset {len(ps.replicas[r].log) - 1}")
    if name == "ProducerAcknowledged":
        return LaneEvent("answered", f"m{a['record']} is written (acks=1)")
    if name == "ProducerTimeout":
        m = f"m{a['record']}"
        if a["record"] in ps.failed:
            return LaneEvent("timed out", f"{m} is queued to be sent again (retry {ps.retries})")
        return LaneEvent("timed out", f"{m}: no retries left, reported as failed")
    if name == "ProducerRetry":
        r = a["replica"]
        rec = ps.replicas[r].log[-1]
        return LaneEvent("retried", f"m{a['record']} sent again to broker {r}, appended as {rec} at offset "
                                    f"{len(ps.replicas[r].log) - 1}")
    if name == "ProducerRetryDuplicate":
        return LaneEvent("duplicate dropped", f"broker {a['replica']} has m{a['record']} already (DuplicateSequence): "
                                              f"not written again, answered as written")
    if new_acks:  # acks=all: the leader's HWM passed a record in flight, its delayed produce answers
        return LaneEvent("answered", f"{_m(new_acks)} is written: the leader's HWM passed it")
    return None


def _consumer_event(action: Action, before: PartitionState, ps: PartitionState) -> LaneEvent | None:
    a, name = action.args, action.name
    skipped = ps.skipped - before.skipped
    skip = f"; {_m(skipped)} skipped" if skipped else ""
    if name == "ConsumerFetch":
        return LaneEvent("fetched", f"m{ps.holding} at offset {before.position} from broker {a['replica']}")
    if name == "ConsumerProcess":
        again = " again (processed twice)" if ps.reprocessed - before.reprocessed else ""
        return LaneEvent("processed", f"m{before.holding}{again}")
    if name == "ConsumerCommit":
        return LaneEvent("committed", f"offset {ps.commit_offset}")
    if name == "ConsumerCrash":
        lost = f"lost m{before.holding} in hand; " if before.holding is not None else ""
        if before.commit_offset is not None:
            start = f"restarts at committed offset {before.commit_offset}"
        elif ps.position is None:
            start = "no committed offset, reset pending"
        else:
            start = f"no committed offset, restarts at offset {ps.position}"
        return LaneEvent("crashed", lost + start + skip)
    if name == "ConsumerOffsetReset":
        return LaneEvent("offset reset", f"to offset {ps.position} (auto.offset.reset){skip}")
    return None


def client_lanes(cfg: ModelConfig, before: PartitionState | None, ps: PartitionState,
                 action: Action | None) -> tuple[ClientLane, ...]:
    """The step's lanes, in the order producer, consumer (none where the configuration keeps neither)."""
    lanes = []
    for name in lane_names(cfg):
        producer = name == PRODUCER
        facts = (_producer_facts if producer else _consumer_facts)(cfg, ps, before)
        event = None
        if before is not None and action is not None:
            event = (_producer_event if producer else _consumer_event)(action, before, ps)
        lanes.append(ClientLane(name, event, tuple(facts)))
    return tuple(lanes)
