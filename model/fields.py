"""The Kafka model's state: every field declared once, and what is derived from them.

The fields of the published specification (each replica's log, HWM, leader epoch,
believed leader and cached ISR; the quorum ISR; the LeaderAndIsr requests, one per
epoch; the next record id) and those of the Kafka features (docs/model.md): a crashed
broker's mark, a believed leader's purgatory start, the crash and disk-loss counters,
and the acknowledged, committed and readable records (history variables that only
properties read). Each feature's fields exist only where the configuration switches
the feature on, so the core machine's state is the specification's.

Declaration order is the packed layout's (``layout.py``): a replica's log, then its
numbers, the last one the least significant; the shared fields low bits first.

The derived readings below (``alive``, ``true_leader_is``, ``expose``...) are what
several families and properties share; the readable classes add the same for people.
``KAFKA`` is the protocol; its families are declared in ``controller.py``,
``leadership.py``, ``leader.py``, ``follower.py`` and ``brokers.py``.
"""

from __future__ import annotations


from .config import ModelConfig, Revision
from .protocol import Fact, Protocol
from .schema import NONE, Broker, Brokers, Count, Field, Ids, LogKind, Maybe, RequestsKind, Tally
from .state import QuorumState


def kafka(cfg: ModelConfig) -> bool:
    return not cfg.core


def crashes(cfg: ModelConfig) -> bool:
    return not cfg.core and cfg.crashes > 0


def disk_losses(cfg: ModelConfig) -> bool:
    return not cfg.core and cfg.disk_loss > 0


def power_losses(cfg: ModelConfig) -> bool:
    return not cfg.core and cfg.power_loss > 0


def unflushed(cfg: ModelConfig) -> bool:
    """A log's suffix may sit in the page cache only (``--flush os``), lost with the power."""
    return power_losses(cfg) and cfg.flush == "os"


def goes_down(cfg: ModelConfig) -> bool:
    """Brokers go down (a crash or a power loss): each keeps a crash mark while down."""
    return crashes(cfg) or power_losses(cfg)


def restarts(cfg: ModelConfig) -> bool:
    """Brokers that went down come back (``--no-restarts``: every outage is permanent)."""
    return goes_down(cfg) and cfg.restarts


def effective_min_isr(cfg: ModelConfig) -> int:
    """The min ISR that brokers and controller apply. From Kafka 3.7 it is min(min.insync.replicas,
    replication factor) (``Partition.effectiveMinIsr``, KAFKA-15583, commit edc7e10a745; the KRaft
    controller's ``getTopicEffectiveMinIsr`` since ELR, KAFKA-15581). Before, the setting as it is:
    above the replication factor, every acks=all write is refused (NotEnoughReplicas); any value
    above it acts as rf + 1 does, which keeps the number within the symbolic encoding's widths."""
    return min(cfg.min_isr, cfg.rf) if strict_min_isr(cfg) else min(cfg.min_isr, cfg.rf + 1)


def write_quorum(cfg: ModelConfig) -> int:
    """In-sync replicas an acknowledged write needs: the min ISR for acks=all (the leader checks
    its ISR against it), the leader alone otherwise."""
    return effective_min_isr(cfg) if cfg.acks == "all" else 1


def purgatory(cfg: ModelConfig) -> bool:
    """acks=all: a leader's produce requests wait in its purgatory for the HWM."""
    return not cfg.core and cfg.acks == "all"


def acknowledges(cfg: ModelConfig) -> bool:
    return not cfg.core and cfg.acks != "0"


def consumer(cfg: ModelConfig) -> bool:
    return not cfg.core and cfg.consumer


def fenced(cfg: ModelConfig) -> bool:
    return cfg.revision is Revision.KIP_320


def restart_fencing(cfg: ModelConfig) -> bool:
    """KIP-380 (Kafka 2.2): broker epochs fence a restarted broker from its past."""
    return cfg.release is not None and cfg.release.restart_fencing


def strict_min_isr(cfg: ModelConfig) -> bool:
    """KAFKA-15583 (Kafka 3.7): the HWM stays put while the ISR is below min ISR."""
    return cfg.release is not None and cfg.release.strict_min_isr


def alter_partition(cfg: ModelConfig) -> bool:
    """KRaft mode (``--kraft``, 3.3+; KIP-497): an ISR change is the leader's AlterPartition
    request, pending until the controller applies it; meanwhile the leader counts the maximal ISR."""
    return kafka(cfg) and bool(cfg.kraft)


def unclean_elections(cfg: ModelConfig) -> bool:
    """Unclean election switched on and honoured: KRaft ignored the topic's setting before 3.9
    (KAFKA-12670), electing only cleanly."""
    if not kafka(cfg) or not cfg.unclean_election:
        return False
    return not (cfg.kraft and cfg.release is not None and not cfg.release.kraft_unclean)


def stale_epoch_refused(cfg: ModelConfig) -> bool:
    """KIP-903 (3.5): the controller refuses to add a replica to the ISR under the broker
    epoch of its previous life (without it, KAFKA-14139: a replaced disk rejoins empty)."""
    return alter_partition(cfg) and cfg.release.stale_epoch_refused


def eligible_leaders(cfg: ModelConfig) -> bool:
    """KIP-966 (KRaft, ``--elr``): the controller keeps eligible leader replicas."""
    return kafka(cfg) and bool(cfg.elr)


def producer_requests(cfg: ModelConfig) -> bool:
    """The producer's requests are tracked (``--retries``, ``--max-in-flight``): a record is in flight
    from its append until its answer, and a request that fails or times out may be sent again."""
    limits = cfg.max_records is not None and cfg.max_in_flight < cfg.max_records
    return acknowledges(cfg) and (cfg.retries > 0 or limits)


def retrying(cfg: ModelConfig) -> bool:
    return producer_requests(cfg) and cfg.retries > 0


def attempts_bounded(cfg: ModelConfig) -> bool:
    """``--delivery-timeout``: each record's retries are counted, and bounded (``Sender.canRetry``)."""
    return retrying(cfg) and cfg.delivery_timeout is not None


def idempotence(cfg: ModelConfig) -> bool:
    """enable.idempotence: the leader checks each record's sequence against its log (``ProducerAppendInfo``)."""
    return retrying(cfg) and cfg.idempotence


def offsets(cfg: ModelConfig) -> bool:
    """A consumer group member reads, processes and commits its offset (``--commit``)."""
    return consumer(cfg) and cfg.commit is not None


def consumer_crashes(cfg: ModelConfig) -> bool:
    return offsets(cfg) and cfg.consumer_crashes > 0


def _records(cfg: ModelConfig) -> int:
    return cfg.max_records


def _epochs(cfg: ModelConfig) -> int:
    return cfg.max_leader_epoch


NO_IDS: frozenset[int] = frozenset()

FIELDS = (
    # a replica: its log on disk, and its in-memory view of the partition
    Field("log", LogKind(), True, lambda c: (), "replicaLog", "its records (id, epoch), offset by offset"),
    Field("hw", Count(lambda c: c.logsize), True, lambda c: 0, "replicaState.hw", "its high watermark"),
    Field("flushed", Count(lambda c: c.logsize), True, lambda c: 0, "replicaState.flushed",
          "how much of its log is on disk (the rest is in the page cache; --flush os)",
          when=unflushed, default=None),
    Field("leader_epoch", Maybe(_epochs), True, lambda c: None, "replicaState.leaderEpoch",
          "the newest leader epoch it has applied (a restarted broker: one below the quorum's, KIP-380)"),
    Field("leader", Broker(), True, lambda c: None, "replicaState.leader", "the leader it believes in"),
    Field("isr", Brokers(), True, lambda c: frozenset(), "replicaState.isr", "its cached ISR"),
    Field("proposal", Broker(), True, lambda c: None, "replicaState.alterPartition",
          "as leader, the follower its pending AlterPartition adds to the ISR or removes from it (KIP-497)",
          when=alter_partition, default=None),
    Field("crash_mark", Maybe(_records), True, lambda c: None, "replicaState.crashMark",
          "while crashed, the next record id at its crash (None while alive)",
          when=goes_down, default=None, itf_when=kafka),
    Field("leader_since", Maybe(_epochs), True, lambda c: None, "replicaState.leaderSince",
          "the epoch its current leadership began: its purgatory holds what it appended since (acks=all)",
          when=purgatory, default=None, itf_when=kafka),
    # shared: the producer's counter, the controller's truth, the features' counters and histories
    Field("next_record_id", Count(_records), False, lambda c: 0, "nextRecordId", "the next record's id"),
    Field("quorum_isr", Brokers(), False, lambda c: frozenset(range(c.rf)), "quorumState.isr", "the quorum ISR"),
    Field("requests", RequestsKind(), False, lambda c: (), "leaderAndIsrRequests",
          "the LeaderAndIsr requests sent, one per epoch: their count is the next leader epoch"),
    Field("elr", Brokers(), False, lambda c: frozenset(), "quorumState.elr",
          "the controller's eligible leader replicas (KIP-966): left the ISR while it was below min ISR",
          when=eligible_leaders, default=frozenset()),
    Field("crashes", Count(lambda c: c.crashes), False, lambda c: 0, "crashes", "broker crashes so far",
          when=crashes, default=0, itf_when=kafka, shown="counter", label="crashes"),
    Field("disk_losses", Count(lambda c: c.disk_loss), False, lambda c: 0, "diskLosses",
          "crashes that wiped the broker's disk so far", when=disk_losses, default=0, itf_when=kafka,
          shown="counter", label="disk losses"),
    Field("power_losses", Count(lambda c: c.power_loss), False, lambda c: 0, "powerLosses",
          "brokers that lost power so far", when=power_losses, default=0, shown="counter", label="power losses"),
    Field("acked", Ids(_records), False, lambda c: NO_IDS, "acked", "records acknowledged to the producer",
          when=acknowledges, default=NO_IDS, itf_when=kafka, shown="history", label="acknowledged"),
    Field("committed", Ids(_records), False, lambda c: NO_IDS, "committed",
          "records that were below the true leader's HWM", when=kafka, default=NO_IDS,
          shown="history", label="committed"),
    Field("readable", Ids(_records), False, lambda c: NO_IDS, "readable",
          "records a consumer could read (below a believed leader's HWM)", when=consumer, default=NO_IDS,
          itf_when=kafka, shown="history", label="readable"),
    # the producer's requests (--retries, --max-in-flight, --idempotent)
    Field("inflight", Ids(_records), False, lambda c: NO_IDS, "producer.inFlight",
          "records appended whose answer the producer still awaits", when=producer_requests, default=NO_IDS,
          shown="history", label="in flight"),
    Field("failed", Ids(_records), False, lambda c: NO_IDS, "producer.toRetry",
          "records whose request failed or timed out, to be sent again", when=retrying, default=NO_IDS,
          shown="history", label="to retry"),
    Field("retries", Count(lambda c: c.retries), False, lambda c: 0, "producer.retries", "retries so far",
          when=retrying, default=0, shown="counter", label="retries"),
    Field("resent", Tally(_records), False, lambda c: (), "producer.retriesPerRecord",
          "how many times each record was queued again (--delivery-timeout bounds it)", when=attempts_bounded,
          default=(), label="retries a record"),
    Field("deduplicated", Ids(_records), False, lambda c: NO_IDS, "producer.duplicates",
          "records whose retry a leader found in its log (DuplicateSequence: not written again)",
          when=idempotence, default=NO_IDS, shown="history", label="duplicates dropped"),
    # a consumer group member (--commit, --consumer-crashes, --auto-offset-reset)
    Field("position", Maybe(lambda c: c.logsize), False, lambda c: 0, "consumer.position",
          "the offset it fetches next (None: to be reset by auto.offset.reset)", when=offsets, default=0),
    Field("holding", Maybe(_records), False, lambda c: None, "consumer.holding",
          "the record it fetched and has not processed yet", when=offsets, default=None),
    Field("commit_offset", Maybe(lambda c: c.logsize), False, lambda c: None, "consumer.committedOffset",
          "its group's committed offset (durable: the offsets topic is assumed safe)", when=offsets, default=None),
    Field("processed", Ids(_records), False, lambda c: NO_IDS, "consumer.processed", "records it processed",
          when=offsets, default=NO_IDS, shown="history", label="processed"),
    Field("reprocessed", Ids(_records), False, lambda c: NO_IDS, "consumer.reprocessed",
          "records it processed more than once", when=offsets, default=NO_IDS, shown="history",
          label="processed twice"),
    Field("skipped", Ids(_records), False, lambda c: NO_IDS, "consumer.skipped",
          "records its committed offset or an offset reset passed without processing them", when=offsets,
          default=NO_IDS, shown="history", label="skipped"),
    Field("consumer_crashes", Count(lambda c: c.consumer_crashes), False, lambda c: 0, "consumer.crashes",
          "consumer crashes so far", when=consumer_crashes, default=0, shown="counter", label="consumer crashes"),
)


class KafkaReplica:
    """What the readable replica record derives."""

    __slots__ = ()
    crash_mark: int | None
    log: tuple

    @property
    def alive(self) -> bool:
        return self.crash_mark is None

    @property
    def leo(self) -> int:
        return len(self.log)


class KafkaState:
    """What the readable state derives: the quorum's leader and epoch are the newest request's."""

    __slots__ = ()
    replicas: tuple
    requests: tuple
    quorum_isr: frozenset[int]

    @property
    def next_leader_epoch(self) -> int:
        return len(self.requests)

    @property
    def quorum(self) -> QuorumState:
        last = self.requests[-1] if self.requests else None
        return QuorumState(last.leader_epoch if last else None, last.leader if last else None, self.quorum_isr)

    def presumes_leadership(self, replica: int) -> bool:
        return self.replicas[replica].leader == replica

    def is_true_leader(self, replica: int) -> bool:
        rs, q = self.replicas[replica], self.quorum
        return q.leader == replica and rs.leader == replica and rs.leader_epoch == q.leader_epoch

    def true_leader(self) -> int | None:
        q = self.quorum.leader
        return q if q is not None and self.is_true_leader(q) else None


def _known_leader(v, x):
    e, ld, isr = v["leader_epoch"], v["leader"], v["isr"]
    return x.or_(
        x.and_(e == NONE, ld == NONE, x.empty(isr)),  # has heard of no leader
        x.and_(e != NONE, ld != NONE, x.has(isr, ld)),  # a leader is in the ISR it was told
    )


def _restarted(v, x):
    return x.and_(v["leader_epoch"] != NONE, v["leader"] == NONE, x.empty(v["isr"]))


FACTS = (
    Fact("a replica's leader, epoch and ISR come from one request, whose leader is in its ISR; "
         "a restarted broker is fenced at an epoch before it has heard of a leader (KIP-380)",
         ("leader_epoch", "leader", "isr"),
         lambda v, x, cfg: x.or_(_known_leader(v, x), x.and_(restarts(cfg), _restarted(v, x)))),
    Fact("what is on disk is a prefix of the log", ("log", "flushed"),
         lambda v, x, cfg: True if not unflushed(cfg) else v["flushed"] <= x.length(v["log"])),
    Fact("in the Kafka model a replica's HWM is within its log: every step that moves either keeps it so",
         ("log", "hw"), lambda v, x, cfg: x.or_(cfg.core, v["hw"] <= x.length(v["log"]))),
    Fact("a purgatory starts no later than the leadership it belongs to",
         ("leader_epoch", "leader", "leader_since"),
         lambda v, x, cfg: x.or_(v["leader_since"] == NONE,
                                 x.and_(v["leader"] != NONE, v["leader_since"] <= v["leader_epoch"]))),
    Fact("a crashed broker holds nothing in memory: no epoch, leader, ISR, purgatory or pending AlterPartition",
         ("leader_epoch", "leader", "isr", "crash_mark", "leader_since", "proposal"),
         lambda v, x, cfg: x.or_(v["crash_mark"] == NONE, x.and_(v["leader_epoch"] == NONE, v["leader"] == NONE,
                                                                x.empty(v["isr"]), v["leader_since"] == NONE,
                                                                v["proposal"] == NONE))),
    Fact("only a leader has an AlterPartition pending", ("leader", "proposal"),
         lambda v, x, cfg: x.or_(v["proposal"] == NONE, v["leader"] != NONE)),
)
REQUEST_FACTS = (
    Fact("a request names no leader, or a leader in its ISR (elections pick ISR members)", ("leader", "isr"),
         lambda v, x, cfg: x.or_(v["leader"] == NONE, x.has(v["isr"], v["leader"]))),
)

def _distinct_ids(cfg: ModelConfig) -> bool:
    """Only a retry without idempotence writes a record id twice."""
    return not retrying(cfg) or idempotence(cfg)


KAFKA = Protocol("kafka", FIELDS, KafkaReplica, KafkaState, FACTS, REQUEST_FACTS, distinct_log_ids=_distinct_ids)
ReplicaState, PartitionState = KAFKA.classes


__all__ = ["FIELDS", "KAFKA", "NONE", "PartitionState", "ReplicaState"]
