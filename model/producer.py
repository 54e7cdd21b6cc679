"""The producer's requests: answers, timeouts and retries (``--retries``, ``--max-in-flight``, ``--idempotent``).

Where the producer's requests are tracked (``fields.producer_requests``), a record is in
flight from the step a leader appends it until the producer hears the answer: with
``acks=all`` the leader's HWM passing it (``LeaderIncHighWatermark``), with ``acks=1``
the leader's immediate answer reaching the producer (``ProducerAcknowledged``). At most
``max.in.flight.requests.per.connection`` records are in flight. A request the leader
refuses (NotEnoughReplicas, NotLeaderOrFollower, OutOfOrderSequence) is a send that has
not happened yet; one that reached a leader but whose answer never comes, because the
leader failed or the answer was lost, ends in ``ProducerTimeout``. With retries left the
producer queues the record again, ahead of records it has not sent
(``RecordAccumulator.reenqueue``), and sends it to whichever broker it believes leads.

Without idempotence a retry appends the record again, wherever an earlier copy went:
duplicates, and with more than one request in flight, a retry behind a later record.
With idempotence (``enable.idempotence``; Kafka's default from 3.0 where acks, retries
and max-in-flight allow it) record ids are the producer's sequence numbers, and the
leader checks each against the producer state it keeps, which is what its log says
(rebuilt from the log after truncation; ``ProducerAppendInfo.checkSequence``): a record
whose id is in its log is a duplicate, answered with the first copy's outcome
(DuplicateSequence; ``ProducerStateEntry.findDuplicateBatch`` looks at the last 5
batches, which covers every record the model's producer can still retry: at most 5 are in
flight); a record is appended only right after the log's last one, or to a log with no
record of the producer (``NO_PRODUCER_EPOCH``: any sequence is accepted); anything else
is OutOfOrderSequence. The producer retries in sequence order (``insertInSequenceOrder``).
"""

from __future__ import annotations

from .actions import BROKER, FAULT, Param
from .fields import KAFKA, attempts_bounded, effective_min_isr, idempotence, producer_requests, retrying
from .readings import expose, in_maximal_isr, leads, true_leader_is
from .leader import answered, enough_replicas, in_sequence
from .schema import TALLY_BASE, Tally


def RECORD(name: str = "record") -> Param:
    return Param(name, lambda cfg: range(cfg.max_records))


def resends(s, x, record: int):
    """How many times the producer has queued this record again (``--delivery-timeout``)."""
    return x.digit(s.resent, record, TALLY_BASE)


def _first_failed(s, x, record: int):
    """Record is queued for a retry; with idempotence, the lowest queued (retried in sequence order)."""
    queued = x.has(s.failed, record)
    if not idempotence(s.cfg):
        return queued
    return x.and_(queued, x.not_(x.any_(x.has(s.failed, k) for k in range(record))))


@KAFKA.family(
    params=(RECORD(),),
    when=lambda c: producer_requests(c) and c.acks == "1",
    describe=lambda b, a, p: f"the producer receives the leader's answer for m{p['record']}: written (acks=1)",
    short=lambda b, a, p: f"producer: m{p['record']} acknowledged",
)
def ProducerAcknowledged(s, x, record):
    """acks=1: the leader answered at the append; the answer reaches the producer."""
    yield x.has(s.inflight, record)
    answered(s, x, record, True)


def _timeout_words(b, a, p) -> str:
    m = f"m{p['record']}"
    if p["record"] in a.failed:
        return f"the producer's request for {m} times out (or fails); {m} is queued to be sent again (retry {a.retries})"
    attempts = Tally.count(b.resent, p["record"]) + 1  # with --delivery-timeout: its bound may be what is reached
    after = f" after {attempts} attempts" if attempts > 1 else ""
    return (f"the producer's request for {m} times out (or fails); no retries left{after}: the producer reports {m} "
            f"as failed")


@KAFKA.family(
    params=(RECORD(),),
    when=producer_requests,
    role=FAULT,
    describe=_timeout_words,
    short=lambda b, a, p: f"producer: m{p['record']} times out" + (", retry queued" if p["record"] in a.failed else ""),
)
def ProducerTimeout(s, x, record):
    """No answer in time (request.timeout.ms): the leader failed, or the answer was lost; a copy
    may be in a log already. With retries left the record is queued again."""
    yield x.has(s.inflight, record)
    s.inflight = x.drop(s.inflight, record)
    if retrying(s.cfg):
        left = s.retries < s.cfg.retries
        if attempts_bounded(s.cfg):  # Sender.canRetry: delivery.timeout.ms not reached
            left = x.and_(left, resends(s, x, record) < s.cfg.retries_per_record)
            s.resent = x.ite(left, s.resent + TALLY_BASE ** record, s.resent)
        s.failed = x.put(s.failed, record, left)
        s.retries = x.ite(left, s.retries + 1, s.retries)


def _retry_words(b, a, p) -> str:
    r, m = p["replica"], f"m{p['record']}"
    log = a.replicas[r].log
    return (f"the producer sends {m} again, to broker {r} (leader at epoch {a.replicas[r].leader_epoch} in its own "
            f"view), which appends {log[-1]} at offset {len(log) - 1}")


@KAFKA.family(
    params=(BROKER("replica"), RECORD()),
    when=retrying,
    describe=_retry_words,
    short=lambda b, a, p: f"producer retries m{p['record']} to broker {p['replica']}",
)
def ProducerRetry(s, x, replica, record):
    r, log = replica, s.log[replica]
    yield _first_failed(s, x, record)
    yield leads(s, r)
    yield x.size(s.inflight) < s.cfg.max_in_flight
    yield x.length(log) < s.cfg.logsize
    if s.cfg.acks == "all":
        yield enough_replicas(s, x, r)
    if idempotence(s.cfg):
        yield x.not_(x.has(x.ids(log), record))  # else DuplicateSequence (ProducerRetryDuplicate)
        yield in_sequence(s, x, log, record)  # else OutOfOrderSequence
    log = x.append(log, record, s.leader_epoch[r])
    s.log[r] = log
    s.failed = x.drop(s.failed, record)
    s.inflight = x.put(s.inflight, record)
    expose(s, x, x.ids_below(log, s.hw[r]), true_leader_is(s, x, r))


@KAFKA.family(
    params=(BROKER("replica"), RECORD()),
    when=idempotence,
    describe=lambda b, a, p: (f"the producer sends m{p['record']} again, to broker {p['replica']}, which has it "
                              f"already: DuplicateSequence, not written again; the producer is told m{p['record']} "
                              f"is written"),
    short=lambda b, a, p: f"broker {p['replica']} drops duplicate m{p['record']}",
)
def ProducerRetryDuplicate(s, x, replica, record):
    """Idempotence: the leader finds the retried sequence among its producer state's batches and
    answers with the first copy's outcome once that copy is committed (with acks=all: its HWM
    past it with min.insync.replicas in the maximal ISR, as for the first copy's delayed produce)."""
    r, log = replica, s.log[replica]
    yield _first_failed(s, x, record)
    yield leads(s, r)
    if s.cfg.acks == "all":
        yield enough_replicas(s, x, r)
    if s.cfg.acks == "all":
        yield x.has(x.ids_below(log, s.hw[r]), record)
        yield x.count(in_maximal_isr(s, x, r, f) for f in range(s.cfg.rf)) >= effective_min_isr(s.cfg)
    else:
        yield x.has(x.ids(log), record)
    s.failed = x.drop(s.failed, record)
    s.deduplicated = x.put(s.deduplicated, record)
    answered(s, x, record, True)


__all__ = ["RECORD"]
