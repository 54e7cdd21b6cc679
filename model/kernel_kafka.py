"""The vector kernel's Kafka model: the tables and action families that the core lacks.

The Kafka features of PROTOCOL.md (producer acks, the consumer, crashes, disk loss,
unclean election) over batches, with the rules of ``successors.py``'s Kafka branches:
the controller's failover and leaderless shrink, unclean election past a deposed
leader, crashes that keep the log and the HWM checkpoint, restarts fenced one epoch
below the quorum's (KIP-380). The families the core shares (becoming leader or
follower, writes, the HWM, ISR changes, fetches) take their Kafka conditions in
``kernel_batch.py``; this module adds the tables they read and the families of their
own. Tests compare every successor with the scalar model's on whole state spaces.
"""

from __future__ import annotations

import numpy as np

from .kernel_tables import UNREPRESENTABLE, CoreTables

NO_EPOCH = 127  # a record epoch above every leadership start: no record there


def add_kafka_tables(T: CoreTables) -> None:
    """Per-local tables of what the Kafka families read: id masks of a log's records below
    the HWM (what becomes readable or committed), the record at the HWM (what an HWM step
    acknowledges), where the local's own epoch starts in its log, and the local a crash,
    a disk loss or a restart leaves."""
    ne, ls1, n_meta = T.max_epoch + 1, T.ls1, T.n_meta
    logs = T.logs
    ids = np.array([sum(1 << (c // ne) for c in g) for g in logs], dtype=np.int64)
    prefix_ids = np.array([[ids[T.log_index[g[: min(h, len(g))]]] for h in range(ls1)] for g in logs], np.int64)
    T.L_PREFIX_IDS = prefix_ids[T.L_LOG, T.L_HW]
    T.L_LOG_IDS = ids[T.L_LOG]
    # record code at each offset of each log, -1 past its end: [log, offset]
    T.LOG_REC_AT = np.array([[g[o] if o < len(g) else -1 for o in range(ls1)] for g in logs], dtype=np.int64)
    at_hw = T.LOG_REC_AT[T.L_LOG, T.L_HW]
    T.L_HW_ID_BIT = np.where(at_hw >= 0, 1 << np.maximum(at_hw, 0) // ne, 0)
    T.L_HW_REC_EPOCH = np.where(at_hw >= 0, at_hw % ne, NO_EPOCH)
    T.L_ISR_POP = np.array([bin(m).count("1") for m in range(T.n_isr)], dtype=np.int64)[T.L_ISR]
    # offset of the local's epoch's first record in its log (its end when it has none)
    start = np.array(
        [[next((o for o, c in enumerate(g) if c % ne >= e), len(g)) for e in range(ne)] for g in logs], np.int64
    )
    T.L_EPOCH_START = start[T.L_LOG, np.maximum(T.L_EP, 0)]
    T.L_CRASHED = T.L_LH * n_meta  # in-memory state lost: no epoch, no leader, no ISR
    T.L_RESTART_LH = T.L_LOG * ls1 + np.minimum(T.L_HW, T.L_LEN)
    # a restarted broker's meta by quorum epoch + 1: fenced at quorum epoch - 1 (none below 1)
    T.RESTART_META = np.array(
        [T.meta_index.get((q - 1, -1, 0), UNREPRESENTABLE) if q > 0 else 0 for q in range(-1, T.max_epoch + 1)],
        dtype=np.int64,
    )
    # the leader named by the next-to-last request (-1 when none): a deposed last ISR member
    prev = T.RQ_SLOT[np.arange(T.n_rq), np.maximum(T.RQ_NLE.astype(np.int64) - 2, 0)].astype(np.int64)
    T.RQ_PREV_LEAD = np.where(T.RQ_NLE >= 2, T.SLOT_LD[prev], -1).astype(np.int64)


class KafkaFamilies:
    """The Kafka model's own families, mixed into ``kernel_batch.Expander``."""

    def _expose(self, c, rows: np.ndarray, ids: np.ndarray, true_leader: np.ndarray, changes: list) -> None:
        """Record ids now below a believed leader's HWM: readable by some consumer, and
        committed when that leader is the true leader (the history fields); added to ``changes``."""
        T = self.T
        if "readable" in T.bound:
            old = c.readable[rows]
            changes.append(("readable", old, old | ids))
        old = c.committed[rows]
        changes.append(("committed", old, np.where(true_leader, old | ids, old)))

    def _kafka_controller(self, c, out) -> None:
        """Elect, shrink, fail over and (where allowed) elect uncleanly, in one LeaderAndIsr each."""
        T, B = self.T, self.base
        cfg = T.layout.config
        room = c.nle <= T.max_epoch
        if not room.any():
            return
        nle = c.nle.astype(np.int64)
        qlead = c.qlead.astype(np.int64)
        alive = [x == 0 for x in c.life]
        has = [(c.qisr >> r & 1) != 0 for r in range(T.rf)]

        def emit(rows, action, leader, isr):
            slot = T.SLOT_OF[(leader + 1) * T.n_isr + isr]
            out.emit(rows, action, [("rq", c.rq[rows], self._append(c, rows, nle, slot)), ("qisr", c.qisr[rows], isr)])

        for r in range(T.rf):
            rows = np.flatnonzero(room & has[r] & (qlead != r) & alive[r])
            if len(rows):
                emit(rows, B["ControllerElectLeader"] + r, np.full(len(rows), r), c.qisr[rows])
        for r in range(T.rf):
            bit = 1 << r
            # a follower leaves the ISR (never the last member: ZooKeeper-era Kafka keeps it) ...
            follower = room & has[r] & (qlead != r) & ((c.qisr & ~bit) != 0)
            # ... and the leader only when no other ISR member is alive (else a failover)
            others_down = np.ones(len(room), dtype=bool)
            for f in range(T.rf):
                if f != r:
                    others_down &= ~has[f] | ~alive[f]
            rows = np.flatnonzero(follower | (room & (qlead == r) & others_down))
            if len(rows):
                q = c.qisr[rows]
                lead = qlead[rows] == r
                ni = np.where(lead & (q == bit), q, q & ~bit)
                ni = np.where(ni == 0, q, ni)
                emit(rows, B["ControllerShrinkIsr"] + r, np.where(lead, -1, qlead[rows]), ni)
        lead_bit = np.where(qlead >= 0, 1 << np.maximum(qlead, 0), 0)
        for r in range(T.rf):
            rows = np.flatnonzero(room & (qlead >= 0) & (qlead != r) & has[r] & alive[r])
            if len(rows):
                emit(rows, B["ControllerFailover"] + r, np.full(len(rows), r), c.qisr[rows] & ~lead_bit[rows])
        if not cfg.unclean_election:
            return
        prev = T.RQ_PREV_LEAD[c.rq]
        deposed = np.where((qlead < 0) & (prev >= 0) & (c.qisr == 1 << np.maximum(prev, 0)), prev, -1)
        clean = np.zeros(len(room), dtype=bool)  # a live ISR member the controller counts
        for r in range(T.rf):
            clean |= has[r] & alive[r] & (deposed != r)
        for r in range(T.rf):
            rows = np.flatnonzero(room & ~clean & alive[r] & (deposed != r))
            if len(rows):
                emit(rows, B["ControllerUncleanElect"] + r, np.full(len(rows), r), np.full(len(rows), 1 << r))

    def _crash_restart(self, c, out) -> None:
        """A broker crashes (its log and HWM checkpoint stay on disk, or the disk is lost too),
        or restarts once the controller has moved leadership and the ISR away from it."""
        T, B = self.T, self.base
        cfg = T.layout.config
        if not cfg.crashes:
            return
        has_since = "since0" in T.bound
        room = c.crashes < cfg.crashes
        disk_room = room & (c.disk < cfg.disk_loss)
        qep1 = c.nle.astype(np.int64)  # quorum epoch + 1
        for r in range(T.rf):
            alive = c.life[r] == 0
            for family, enabled, local in (
                ("BrokerCrash", room & alive, T.L_CRASHED),
                ("BrokerCrashDiskLoss", disk_room & alive, None),
            ):
                rows = np.flatnonzero(enabled)
                if not len(rows):
                    continue
                loc = c.loc[r][rows]
                new_loc = local[loc] if local is not None else np.zeros(len(rows), dtype=np.int64)
                changes = [
                    (f"local{r}", loc, new_loc),
                    (f"life{r}", c.life[r][rows], c.nid[rows] + 1),
                    ("crashes", c.crashes[rows], c.crashes[rows] + 1),
                ]
                if has_since:
                    changes.append((f"since{r}", c.since[r][rows], np.zeros(len(rows), dtype=np.int64)))
                if local is None:
                    changes.append(("disk", c.disk[rows], c.disk[rows] + 1))
                out.emit(rows, B[family] + r, changes)
        for r in range(T.rf):
            bit = 1 << r
            in_isr = (c.qisr & bit) != 0
            rows = np.flatnonzero((c.life[r] != 0) & (c.qlead != r) & ~(in_isr & (c.qisr != bit)))
            if len(rows):
                loc = c.loc[r][rows]
                new_loc = T.L_RESTART_LH[loc] * T.n_meta + T.RESTART_META[qep1[rows]]
                none = np.zeros(len(rows), dtype=np.int64)
                changes = [(f"local{r}", loc, new_loc), (f"life{r}", c.life[r][rows], none)]
                if has_since:  # a new incarnation leads nothing
                    changes.append((f"since{r}", c.since[r][rows], none))
                out.emit(rows, B["BrokerRestart"] + r, changes)
