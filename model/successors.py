"""The successor function: the hot path of every explicit engine.

``make_successors(layout, catalogue)`` returns a closure ``successors(state)``
that lists ``(action index, next state)`` for every enabled action, in catalogue
order. It reads fields with shifts and table lookups and builds each successor by
adding deltas to the packed int, so it allocates one tuple per successor and a few
short lists per state.

The actions are those of the published specification (hachikuji/kafka-specification),
re-encoded here, with the four protocol revisions' truncation and fencing rules.
In the Kafka model (``config.core`` false) the features of PROTOCOL.md are added
(producer acks, consumers, crashes, disk loss, unclean election) and three points
where the specification abstracts Kafka follow Kafka instead (see ``kafka_rules``).
"""

from __future__ import annotations

from typing import Callable

from .actions import Catalogue
from .config import Revision
from .layout import Layout, replica_reader

Successors = Callable[[int], list[tuple[int, int]]]


def first_nonmatching_offset(leader_log: tuple[int, ...], follower_log: tuple[int, ...]) -> int:
    """KIP-279 truncation point: one past the largest offset where both logs hold the same record."""
    if not leader_log:
        return 0
    best = -1
    for o, rec in enumerate(follower_log):
        if o < len(leader_log) and leader_log[o] == rec:
            best = o
    return best + 1


def kip101_lookup(leader_log: tuple[int, ...], epoch: int, n_epochs: int) -> int:
    """KIP-101 OffsetForLeaderEpoch answer, or -1 where the follower falls back to its HWM."""
    if not leader_log:
        return -1
    if leader_log[-1] % n_epochs == epoch:
        return len(leader_log)
    for o, rec in enumerate(leader_log):
        if rec % n_epochs > epoch:
            return o
    return -1


def make_successors(L: Layout, cat: Catalogue) -> Successors:  # noqa: C901 - one flat hot loop on purpose
    cfg = L.config
    rf = L.rf
    R = range(rf)
    kafka = L.kafka
    rev = cfg.revision
    fenced = rev is Revision.KIP_320
    hw_trunc = rev is Revision.HW_TRUNCATION
    kip101 = rev is Revision.KIP_101
    # Kafka-model rules (see module docstring): only a believed leader advances its HWM,
    # the last ISR member stays in the quorum ISR, crashed brokers take no step.
    kafka_rules = kafka
    acks_all = kafka and cfg.acks == "all"
    acks_one = kafka and cfg.acks == "1"
    min_isr = cfg.min_isr
    unclean = kafka and cfg.unclean_election
    max_crashes = cfg.crashes if kafka else 0
    max_disk = cfg.disk_loss if kafka else 0
    consumer = kafka and cfg.consumer

    SH = L.local_shift
    LM = L.local_mask
    INFO = L.local_info()
    read_replicas = replica_reader([INFO] * rf, SH, LM)
    MB = L.meta_bits
    U_HW, U_EP, U_LD, U_ISR, U_SINCE = L.u_hw, L.u_epoch, L.u_leader, L.u_isr, L.u_since
    track_since = L.n_since > 1
    POP = L.popcount
    MEMBERS = [tuple(r for r in R if m >> r & 1) for m in range(L.n_isr)]
    NOT_MEMBERS = [tuple(r for r in R if not m >> r & 1) for m in range(L.n_isr)]
    N_ISR = L.n_isr
    SLOT_LEADER = [L.slot_leader(v) for v in range((rf + 1) * N_ISR)]
    SLOT_ISR = [L.slot_isr(v) for v in range((rf + 1) * N_ISR)]

    LS = L.log_size
    LS1 = LS + 1
    MR = L.max_records
    ME = L.max_epoch
    NE = L.n_epochs
    NREC = L.n_records
    LOG_REC_AT = L.log_rec_at
    LOG_APPEND = L.log_append
    LOG_TRUNC = L.log_trunc
    LOG_LAST_EPOCH = L.log_last_epoch
    PREFIX_IDS = L.log_prefix_ids
    NLOGS = L.n_logs

    NID_SH = L.f_next_id.shift
    NID_M = L.f_next_id.mask
    NLE_SH = L.f_next_epoch.shift
    NLE_M = L.f_next_epoch.mask
    QI_SH = L.f_quorum_isr.shift
    QI_M = L.f_quorum_isr.mask
    SLOT_SH = [f.shift for f in L.f_slots]
    SLOT_M = L.f_slots[0].mask
    NID_UNIT = 1 << NID_SH
    NLE_UNIT = 1 << NLE_SH

    if kafka:
        CR_SH, CR_M = L.f_crashes.shift, L.f_crashes.mask
        DL_SH, DL_M = L.f_disk_losses.shift, L.f_disk_losses.mask
        AK_SH = L.f_acked.shift
        CM_SH, CM_M = L.f_committed.shift, L.f_committed.mask
        RB_SH, RB_M = (L.f_readable.shift, L.f_readable.mask) if L.f_readable else (0, 0)
        DEAD_META_BASE = L.meta_of(0, -1, -1, 0, 1)  # life 1; the crash mark adds nid * U_LIFE
        U_LIFE = L.u_life

    # Truncation tables, computed once per (leader log, follower log) pair on demand.
    logs = L.logs
    class TruncationCache(dict):
        """leader log * n_logs + follower log -> KIP-279 truncation point, filled on demand."""

        def __missing__(self, key: int) -> int:
            v = self[key] = first_nonmatching_offset(logs[key // NLOGS], logs[key % NLOGS])
            return v

    FNM = TruncationCache()

    LOOKUP101 = [kip101_lookup(logs[g], e, NE) for g in range(NLOGS) for e in range(NE)]
    # offset where a leader's epoch e starts in its log: its first record of epoch >= e, else its end
    EPOCH_START = [
        next((o for o, c in enumerate(logs[g]) if c % NE >= e), len(logs[g])) for g in range(NLOGS) for e in range(NE)
    ]

    A_ELECT = cat.base["ControllerElectLeader"]
    A_CSHRINK = cat.base["ControllerShrinkIsr"]
    A_BLEAD = cat.base["BecomeLeader"]
    A_BFOLLOW = cat.base["BecomeFollower"]
    A_WRITE = cat.base["LeaderWrite"]
    A_INCHW = cat.base["LeaderIncHighWatermark"]
    A_SHRINK = cat.base["LeaderShrinkIsr"]
    A_EXPAND = cat.base["LeaderExpandIsr"]
    A_FETCH = cat.base["FollowerFetch"]
    A_UNCLEAN = cat.base.get("ControllerUncleanElect", -1)
    A_FAILOVER = cat.base.get("ControllerFailover", -1)
    A_CRASH = cat.base.get("BrokerCrash", -1)
    A_DISK = cat.base.get("BrokerCrashDiskLoss", -1)
    A_RESTART = cat.base.get("BrokerRestart", -1)
    NEP1 = ME + 1

    def expose(t: int, ids: int, true_leader: bool) -> int:
        """Record ids now below a believed leader's HWM: readable by some consumer, and
        committed when that leader is the true leader (history variables)."""
        if consumer:
            c = (t >> RB_SH) & RB_M
            t += ((c | ids) - c) << RB_SH
        if true_leader:
            c = (t >> CM_SH) & CM_M
            t += ((c | ids) - c) << CM_SH
        return t

    class QuorumCache(dict):
        """controller state (quorum ISR, next epoch, request slots) -> what the successor
        function needs of it, computed once per distinct controller state."""

        def __missing__(self, key: int) -> tuple:
            sh = QI_SH
            qisr = key & QI_M
            nle = (key >> (NLE_SH - sh)) & NLE_M
            slots = [(key >> (SLOT_SH[e] - sh)) & SLOT_M for e in range(nle)]
            qlead = SLOT_LEADER[slots[-1]] if nle else -1
            qep = nle - 1
            ctrl: list[tuple[int, int, int]] = []  # (action, delta, replica that must be alive or -1)
            leader_down: tuple[int, int, int] | None = None  # Kafka: (action, delta, ISR that must all be down)
            unclean_moves: list[tuple[int, int, int]] = []
            if nle <= ME:
                base = NLE_UNIT
                ssh = SLOT_SH[nle]
                for r in MEMBERS[qisr]:
                    if r != qlead:
                        ctrl.append((A_ELECT + r, base + (((r + 1) * N_ISR + qisr) << ssh), r))
                for r in R:
                    bit = 1 << r
                    if qlead == r:
                        nl = -1
                        ni = qisr if qisr == bit else qisr & ~bit
                        if kafka_rules and ni == 0:
                            ni = qisr
                    elif qisr & bit:
                        nl = qlead
                        ni = qisr & ~bit
                        if kafka_rules and ni == 0:
                            continue  # the last ISR member stays in the ISR (ZooKeeper-era Kafka)
                    else:
                        continue
                    move = (A_CSHRINK + r, base + (((nl + 1) * N_ISR + ni) << ssh) + ((ni - qisr) << QI_SH), -1)
                    if kafka_rules and qlead == r:
                        # Kafka leaves a partition leaderless only when no other ISR member is
                        # alive; otherwise its failover elects one in the same step (below)
                        leader_down = (move[0], move[1], qisr & ~bit)
                    else:
                        ctrl.append(move)
                if kafka_rules and qlead >= 0:
                    # Kafka's failover: the controller sees the leader fail and, in the same
                    # LeaderAndIsr, elects a live ISR member and drops the old leader
                    ni = qisr & ~(1 << qlead)
                    for r in MEMBERS[ni]:
                        ctrl.append((A_FAILOVER + r, base + (((r + 1) * N_ISR + ni) << ssh) + ((ni - qisr) << QI_SH), r))
                if unclean:
                    for r in R:
                        ni = 1 << r
                        d = base + (((r + 1) * N_ISR + ni) << ssh) + ((ni - qisr) << QI_SH)
                        unclean_moves.append((A_UNCLEAN + r, d, r))
            # The last ISR member that the controller has just failed as leader (the ISR keeps
            # it): the controller counts it as down, so an unclean election may pass it by.
            deposed = -1
            if nle >= 2 and qlead < 0 and SLOT_LEADER[slots[-2]] >= 0 and qisr == 1 << SLOT_LEADER[slots[-2]]:
                deposed = SLOT_LEADER[slots[-2]]
            # newest first: a replica applies only requests above its epoch, so scans stop early
            leader_reqs = tuple(
                (SLOT_LEADER[v], e, SLOT_ISR[v]) for e, v in reversed(list(enumerate(slots))) if SLOT_LEADER[v] >= 0
            )
            value = (qisr, nle, qlead, qep, tuple(ctrl), leader_down, tuple(unclean_moves), MEMBERS[qisr], leader_reqs, deposed)
            self[key] = value
            return value

    QUORUM = QuorumCache()
    CTRL_SH = L.controller_shift
    CTRL_M = L.controller_mask

    def successors(s: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        app = out.append
        nid = (s >> NID_SH) & NID_M
        qisr, nle, qlead, qep, ctrl, leader_down, unclean_moves, qmembers, leader_reqs, deposed = QUORUM[
            (s >> CTRL_SH) & CTRL_M
        ]
        hw, ep, ld, isr, ln, lg, meta, life, since = zip(*read_replicas(s))

        # ---- controller: elect, shrink (failure detection), unclean elect ----------
        for a, d, need in ctrl:
            if need < 0 or not life[need]:
                app((a, s + d))
        if leader_down is not None:
            a, d, others = leader_down
            for r in MEMBERS[others]:
                if not life[r]:
                    break
            else:
                app((a, s + d))
        if unclean_moves:
            for r in qmembers:
                if not life[r] and r != deposed:
                    break  # a live ISR member the controller counts: only a clean election
            else:
                for a, d, r in unclean_moves:
                    if not life[r] and r != deposed:
                        app((a, s + d))

        # ---- BecomeLeader: a replica applies a newer request naming itself ----------
        oldest = min(ep)
        for r, e, ni in leader_reqs:
            if e <= oldest:
                break
            if e > ep[r] and not life[r]:
                dmeta = (e - ep[r]) * U_EP + (r - ld[r]) * U_LD + (ni - isr[r]) * U_ISR
                if track_since and ld[r] != r:
                    dmeta += (e - since[r]) * U_SINCE  # a new leadership: its purgatory starts empty
                t = s + (dmeta << SH[r])
                if kafka:
                    t = expose(t, PREFIX_IDS[lg[r] * LS1 + hw[r]], r == qlead and e == qep)
                app((A_BLEAD + r * NEP1 + e, t))

        # ---- BecomeFollower: apply a newer request naming another leader, truncate --
        for lead, e, ni in leader_reqs:
            if e <= oldest:
                break
            if fenced and (ld[lead] != lead or ep[lead] != e):
                continue
            if kafka and not hw_trunc and life[lead]:
                continue  # the truncation point needs an answer from the leader
            for r in R:
                if r == lead or e <= ep[r] or life[r]:
                    continue
                if fenced:
                    to = FNM[lg[lead] * NLOGS + lg[r]]
                elif hw_trunc:
                    to = hw[r]
                elif ln[r] == 0:
                    to = 0
                elif kip101:
                    to = LOOKUP101[lg[lead] * NE + LOG_LAST_EPOCH[lg[r]]]
                    if to < 0:
                        to = hw[r]
                else:
                    to = FNM[lg[lead] * NLOGS + lg[r]]
                if to > ln[r]:
                    continue  # the specification disables a truncation past the log end
                ng = LOG_TRUNC[lg[r] * LS1 + to]
                nh = to if to < hw[r] else hw[r]
                dmeta = (nh - hw[r]) * U_HW + (e - ep[r]) * U_EP + (lead - ld[r]) * U_LD + (ni - isr[r]) * U_ISR
                if track_since:
                    dmeta -= (since[r] + 1) * U_SINCE  # NotLeader: the pending produces fail
                app((A_BFOLLOW + (r * rf + lead) * NEP1 + e, s + ((((ng - lg[r]) << MB) + dmeta) << SH[r])))

        # ---- LeaderWrite: a believed leader appends a record stamped with its epoch --
        if nid < MR:
            for r in R:
                if ld[r] == r and ln[r] < LS:
                    if acks_all and POP[isr[r]] < min_isr:
                        continue  # NotEnoughReplicas: the write is rejected
                    ng = LOG_APPEND[lg[r] * NREC + nid * NE + ep[r]]
                    t = s + NID_UNIT + ((ng - lg[r]) << (SH[r] + MB))
                    if kafka:
                        if acks_one:
                            t |= (1 << nid) << AK_SH  # a set: no carry into the next field
                        t = expose(t, PREFIX_IDS[ng * LS1 + hw[r]], r == qlead and ep[r] == qep)
                    app((A_WRITE + r, t))

        # ---- LeaderIncHighWatermark ------------------------------------------------
        for r in R:
            h = hw[r]
            if fenced:
                if h >= ln[r]:
                    continue
                if kafka_rules and ld[r] != r:
                    continue
                ok = True
                for f in MEMBERS[isr[r]]:
                    if ld[r] != r or ld[f] != r or ep[f] != ep[r] or h >= ln[f]:
                        ok = False
                        break
            else:
                if ld[r] != r or h >= LS:
                    continue
                ok = True
                for f in MEMBERS[isr[r]]:
                    if ld[f] != r or h >= ln[f]:
                        ok = False
                        break
            if not ok:
                continue
            t = s + (U_HW << SH[r])
            if kafka:
                if acks_all and h < ln[r]:
                    code = LOG_REC_AT[lg[r] * LS + h]
                    if code % NE >= since[r] and POP[isr[r]] >= min_isr:
                        # appended during this leadership: its delayed produce completes (with
                        # a smaller ISR the producer gets NotEnoughReplicasAfterAppend instead)
                        t |= (1 << (code // NE)) << AK_SH
                t = expose(t, PREFIX_IDS[lg[r] * LS1 + h + 1], r == qlead and ep[r] == qep)
            app((A_INCHW + r, t))

        # ---- ISR changes by the true leader (QuorumUpdateLeaderAndIsr) --------------
        if qlead >= 0 and ld[qlead] == qlead and ep[qlead] == qep:
            r = qlead
            ci = isr[r]
            end = ln[r]
            h = hw[r]
            for f in MEMBERS[ci]:
                if f == r:
                    continue
                if fenced:
                    lagging = ld[f] != r or ep[f] != ep[r] or ln[f] < end
                else:
                    lagging = not (ld[f] == r and (end == 0 or end <= ln[f]))
                if lagging:
                    ni = ci & ~(1 << f)
                    app((A_SHRINK + r * rf + f, s + ((ni - qisr) << QI_SH) + (((ni - ci) * U_ISR) << SH[r])))
            for f in NOT_MEMBERS[ci]:
                if ld[f] != r:
                    continue
                if fenced and kafka_rules:
                    # Kafka 2.1+: the follower's log end has reached the HWM and the start of
                    # the leader's epoch (Partition.isFollowerInSync)
                    if ep[f] != ep[r] or ln[f] < h or ln[f] < EPOCH_START[lg[r] * NE + ep[r]]:
                        continue
                elif fenced:
                    if ep[f] != ep[r] or (h > 0 and h > ln[f]):
                        continue
                    if h != end and not (h < end and LOG_REC_AT[lg[r] * LS + h] % NE == ep[r]):
                        continue
                elif h > 0 and not (h <= end and h <= ln[f]):
                    continue
                ni = ci | (1 << f)
                app((A_EXPAND + r * rf + f, s + ((ni - qisr) << QI_SH) + (((ni - ci) * U_ISR) << SH[r])))

        # ---- FollowerFetch: copy the next record from the believed leader -----------
        for f in R:
            lead = ld[f]
            if lead < 0 or ld[lead] != lead:
                continue
            if fenced and ep[f] != ep[lead]:
                continue
            o = ln[f]
            if o >= ln[lead] or o >= LS:
                continue
            ng = LOG_APPEND[lg[f] * NREC + LOG_REC_AT[lg[lead] * LS + o]]
            nh = hw[lead] if hw[lead] < o + 1 else o + 1
            app((A_FETCH + f * rf + lead, s + ((((ng - lg[f]) << MB) + (nh - hw[f]) * U_HW) << SH[f])))

        if not kafka:
            return out

        # ---- Kafka features: crash, crash with disk loss, restart --------------------
        if max_crashes:
            crashes = (s >> CR_SH) & CR_M
            if crashes < max_crashes:
                dl = (s >> DL_SH) & DL_M
                for r in R:
                    if life[r]:
                        continue
                    # in-memory state is lost; the log and the HWM checkpoint stay on disk
                    dead = DEAD_META_BASE + nid * U_LIFE + hw[r] * U_HW
                    app((A_CRASH + r, s + (1 << CR_SH) + ((dead - meta[r]) << SH[r])))
                    if dl < max_disk:
                        wiped = DEAD_META_BASE + nid * U_LIFE
                        t = s + (1 << CR_SH) + (1 << DL_SH) + ((wiped - meta[r] - (lg[r] << MB)) << SH[r])
                        app((A_DISK + r, t))
            for r in R:
                if not life[r] or r == qlead or (qisr >> r & 1 and qisr != 1 << r):
                    # KIP-380: the controller handles a bounce as a failure first: leadership
                    # moves away and the broker leaves the ISR, unless it is the last member
                    continue
                nh = hw[r] if hw[r] < ln[r] else ln[r]
                back = nh * U_HW + (qep if qep > 0 else 0) * U_EP  # epoch qep - 1: KIP-380 fencing
                app((A_RESTART + r, s + ((back - meta[r]) << SH[r])))
        return out

    return successors
