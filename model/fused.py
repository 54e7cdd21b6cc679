"""The Kafka model's hand-fused scalar successor function: the scalar engines' hot path.

``make_successors(layout, catalogue)`` returns ``successors(state)``: every enabled
``(action index, next state)`` of a packed state, in emission order. It is an
override of the definitions in ``controller.py``, ``leadership.py``, ``leader.py``,
``follower.py`` and ``brokers.py``, written as one flat loop for speed: it reads the
replicas' fields once per state with an unrolled look-up, caches what depends on the
controller's state alone, and builds each successor by adding deltas to the packed
int. The derived form (``ops_int.DerivedSuccessors``, which runs the definitions) is
the reference; ``tests/test_conformance.py`` holds this one to it, action by
action and in the same order, on whole spaces and on arbitrary states, and
``bench/bench_vector.py`` measures both.

Why one function of some 300 lines: every call and every attribute look-up is paid once
per state, hundreds of thousands of times a second. The definitions themselves, run
through the derived form, take some 40 times as long (``bench/bench_vector.py --runs
scalar,derived kip320-rf3-sym``: 1.55 s against 63.4 s on a loaded 2-core machine).
"""

from __future__ import annotations

from typing import Callable

from .actions import Catalogue
from .config import Revision
from .layout import Layout, replica_reader
from .fields import (alter_partition, effective_min_isr, eligible_leaders, producer_requests, restart_fencing,
                     stale_epoch_refused, strict_min_isr, unclean_elections, unflushed)
from .ops_int import Decoded, DerivedSuccessors

Successors = Callable[[int], list[tuple[int, int]]]
# the families this loop covers
FUSED = frozenset("""
    ControllerElectLeader ControllerShrinkIsr ControllerFailover ControllerUncleanElect ControllerElectLastLeader
    BecomeLeader BecomeFollower LeaderWrite LeaderIncHighWatermark LeaderShrinkIsr LeaderExpandIsr
    ControllerAlterPartition FollowerFetch BrokerCrash BrokerCrashDiskLoss BrokerRestart PowerLoss OsFlush
""".split())


class LocalInfo(dict):
    """local -> (hw, epoch, leader, isr, log length, log, meta, life, since, flushed, proposal),
    filled on demand; life is 0 while alive, 1 + the crash mark once crashed (the crash mark's
    code); proposal is the follower a pending AlterPartition adds or removes, or -1."""

    def __init__(self, layout: Layout) -> None:
        super().__init__()
        self.L = layout
        names = ("hw", "leader_epoch", "leader", "isr", "crash_mark", "leader_since", "flushed", "proposal")
        self.view = [layout.meta_view[n] for n in names]

    def __missing__(self, local: int) -> tuple[int, ...]:
        L = self.L
        meta, log = local & L.meta_mask, local >> L.meta_bits
        hw, ep, ld, isr, mark, since, flushed, proposal = (v[meta] for v in self.view)
        value = self[local] = (hw, ep, ld, isr, L.logs.length[log], log, meta, mark + 1, since, flushed, proposal)
        return value


def make_successors(L: Layout, cat: Catalogue) -> Successors | None:
    """The fused successor function, or None where the definitions must run instead: where the
    producer's requests are tracked (``producer.py``), which changes LeaderWrite and the HWM step.
    Families the loop does not cover but leaves alone (the consumer group, ``consumer.py``) run
    from their definitions after it, being last in emission order."""
    if producer_requests(L.config):
        return None
    loop = _fused_loop(L, cat)
    order = cat.emission_order()
    tail = [a for a in order if cat.family_of[a].name not in FUSED]
    if not tail:
        return loop
    if order[len(order) - len(tail):] != tail:
        return None  # not last: the loop's order could not be kept
    derived = DerivedSuccessors(L, cat)

    def successors(s: int) -> list[tuple[int, int]]:
        out = loop(s)
        decoded = Decoded(L, s)
        for a in tail:
            t = derived.run(decoded, a)
            if t is not None:
                out.append((a, t))
        return out

    return successors


def _fused_loop(L: Layout, cat: Catalogue) -> Successors:  # noqa: C901 - one flat hot loop on purpose
    cfg = L.config
    rf = L.rf
    R = range(rf)
    kafka = not cfg.core
    rev = cfg.revision
    fenced = rev is Revision.KIP_320
    hw_trunc = rev is Revision.HW_TRUNCATION
    kip101 = rev is Revision.KIP_101
    acks_all = kafka and cfg.acks == "all"
    acks_one = kafka and cfg.acks == "1"
    min_isr = effective_min_isr(cfg)
    strict = strict_min_isr(cfg)  # Kafka 3.7+: no HWM advance under min ISR
    kip380 = restart_fencing(cfg)  # Kafka 2.2+: a restarted broker is fenced at the quorum's epoch - 1
    unclean = unclean_elections(cfg)  # (KRaft before 3.9 ignores the setting)
    max_crashes = cfg.crashes if kafka else 0
    max_disk = cfg.disk_loss if kafka else 0
    max_power = cfg.power_loss if kafka else 0
    in_cache = unflushed(cfg)  # --flush os: a log suffix may be in the page cache only
    elr_on = eligible_leaders(cfg)  # KIP-966: the controller keeps eligible leader replicas
    asks = alter_partition(cfg)  # KIP-497: ISR changes are AlterPartition requests, the maximal ISR counts
    kip903 = stale_epoch_refused(cfg)  # a restart makes a pending request to add it ineligible

    SH = L.local_shift
    read_replicas = replica_reader([LocalInfo(L)] * rf, SH, L.local_mask)
    MB = L.meta_bits
    U = L.unit
    U_HW, U_EP, U_LD, U_ISR, U_SINCE, U_LIFE, U_FL, U_ASK = (
        U[n] for n in ("hw", "leader_epoch", "leader", "isr", "leader_since", "crash_mark", "flushed", "proposal")
    )
    track_since = L.radix["leader_since"] > 1
    POP = L.popcount
    N_ISR = L.n_isr
    MEMBERS = [tuple(r for r in R if m >> r & 1) for m in range(N_ISR)]
    NOT_MEMBERS = [tuple(r for r in R if not m >> r & 1) for m in range(N_ISR)]
    SLOT_LEADER = [L.slot_leader(v) for v in range((rf + 1) * N_ISR)]
    SLOT_ISR = [L.slot_isr(v) for v in range((rf + 1) * N_ISR)]

    T = L.logs
    LS, W, NE, NREC = L.log_size, T.width, L.n_epochs, T.n_codes
    MR, ME = L.max_records, L.max_epoch
    CODE_AT, APPEND, PREFIX, IDS_BELOW = T.code_at, T.append, T.prefix, T.ids_below
    LAST_EPOCH, EPOCH_END, EPOCH_START = T.last_epoch, T.epoch_end, T.epoch_start
    matching = T.matching

    F = L.shared
    NID_SH, NID_M = F["next_record_id"].shift, F["next_record_id"].mask
    QI_SH, QI_M = F["quorum_isr"].shift, F["quorum_isr"].mask
    NLE_SH, NLE_M = F["requests"].shift, F["requests"].mask
    SLOT_SH = [f.shift for f in L.slots]
    SLOT_M = L.slots[0].mask
    NID_UNIT, NLE_UNIT = 1 << NID_SH, 1 << NLE_SH
    # the controller's state (quorum ISR, request count, slots) is one contiguous block
    CTRL_SH = QI_SH
    CTRL_M = (1 << (SLOT_SH[-1] + L.slots[-1].bits - QI_SH)) - 1
    assert NLE_SH == QI_SH + F["quorum_isr"].bits and SLOT_SH[0] == NLE_SH + F["requests"].bits
    ELR_SH = F["elr"].shift if elr_on else 0  # the ELR, declared after the requests, ends the block
    if elr_on:
        assert ELR_SH == SLOT_SH[-1] + L.slots[-1].bits
        CTRL_M = (1 << (ELR_SH + F["elr"].bits - QI_SH)) - 1
    CR_SH, CR_M = (F["crashes"].shift, F["crashes"].mask) if "crashes" in F else (0, 0)
    DL_SH, DL_M = (F["disk_losses"].shift, F["disk_losses"].mask) if "disk_losses" in F else (0, 0)
    PL_SH, PL_M = (F["power_losses"].shift, F["power_losses"].mask) if "power_losses" in F else (0, 0)
    AK_SH = F["acked"].shift if "acked" in F else 0
    CM_SH, CM_M = (F["committed"].shift, F["committed"].mask) if "committed" in F else (0, 0)
    RB_SH, RB_M = (F["readable"].shift, F["readable"].mask) if "readable" in F else (0, 0)
    consumer, history = "readable" in F, "committed" in F
    DEAD_META_BASE = L.meta_of(crash_mark=0)  # the crash mark adds nid * U_LIFE

    base = cat.base
    A_ELECT, A_CSHRINK = base["ControllerElectLeader"], base["ControllerShrinkIsr"]
    A_FAILOVER, A_UNCLEAN = base.get("ControllerFailover", -1), base.get("ControllerUncleanElect", -1)
    A_BLEAD, A_BFOLLOW = base["BecomeLeader"], base["BecomeFollower"]
    A_WRITE, A_INCHW = base["LeaderWrite"], base["LeaderIncHighWatermark"]
    A_SHRINK, A_EXPAND, A_FETCH = base["LeaderShrinkIsr"], base["LeaderExpandIsr"], base["FollowerFetch"]
    A_CRASH, A_DISK, A_RESTART = base.get("BrokerCrash", -1), base.get("BrokerCrashDiskLoss", -1), base.get("BrokerRestart", -1)
    can_restart = A_RESTART >= 0  # --no-restarts: the family is not in the catalogue
    A_POWER, A_FLUSH = base.get("PowerLoss", -1), base.get("OsFlush", -1)
    A_LAST, A_ALTER = base.get("ControllerElectLastLeader", -1), base.get("ControllerAlterPartition", -1)
    OUTAGES = [(m, MEMBERS[m], POP[m]) for m in range(1, 1 << rf)]  # PowerLoss's parameter: a set of brokers
    NEP1 = ME + 1

    def expose(t: int, ids: int, true_leader: bool) -> int:
        """Record ids now below a believed leader's HWM: readable by some consumer, and
        committed when that leader is the true leader (history variables)."""
        if consumer:
            c = (t >> RB_SH) & RB_M
            t += ((c | ids) - c) << RB_SH
        if true_leader and history:
            c = (t >> CM_SH) & CM_M
            t += ((c | ids) - c) << CM_SH
        return t

    def elr_delta(elr: int, qisr: int, ni: int) -> int:
        """The ELR's change when the ISR goes from qisr to ni (``readings.set_quorum_isr``)."""
        if not elr_on:
            return 0
        nelr = (elr | qisr) & ~ni if POP[ni] < min_isr else 0
        return (nelr - elr) << ELR_SH

    class QuorumCache(dict):
        """controller state -> what the successor function needs of it, computed once per
        distinct controller state: (quorum ISR, request count, quorum leader, quorum epoch,
        controller moves, unclean moves, quorum members, requests newest first, deposed,
        ELR, last-known-leader moves, unclean vetoes)."""

        def __missing__(self, key: int) -> tuple:
            qisr = key & QI_M
            nle = (key >> (NLE_SH - QI_SH)) & NLE_M
            slots = [(key >> (SLOT_SH[e] - QI_SH)) & SLOT_M for e in range(nle)]
            qlead = SLOT_LEADER[slots[-1]] if nle else -1
            elr = (key >> (ELR_SH - QI_SH)) & N_ISR - 1 if elr_on else 0
            # with ELR, the leader when the ISR first emptied (``readings.last_known_leader_is``)
            lkl = -1
            if elr_on and nle >= 2 and not qisr:  # ... or its sole ISR member when it had no leader
                lkl, members = SLOT_LEADER[slots[-2]], MEMBERS[SLOT_ISR[slots[-2]]]
                if lkl < 0 and len(members) == 1:
                    lkl = members[0]
            # (action, delta, broker that must be alive or -1, brokers that must all be down)
            ctrl: list[tuple[int, int, int, int]] = []
            unclean_moves: list[tuple[int, int, int]] = []
            last_moves: list[tuple[int, int, int]] = []
            if nle <= ME:
                ssh = SLOT_SH[nle]
                for r in MEMBERS[qisr]:
                    if r != qlead:  # (the ELR drops the new leader: a no-op, the two being disjoint)
                        ctrl.append((A_ELECT + r, NLE_UNIT + (((r + 1) * N_ISR + qisr) << ssh) - ((elr & 1 << r) << ELR_SH),
                                     r, 0))
                if elr_on and not qisr:  # the ISR empty: a live ELR member, its ISR itself alone
                    for r in MEMBERS[elr]:
                        if r == qlead:
                            continue
                        ni = 1 << r
                        ctrl.append((A_ELECT + r, NLE_UNIT + (((r + 1) * N_ISR + ni) << ssh) + (ni << QI_SH)
                                     - (ni << ELR_SH), r, 0))
                for r in R:
                    bit = 1 << r
                    if qlead == r:
                        nl, ni = -1, (qisr if qisr == bit and not elr_on else qisr & ~bit)
                        down = qisr & ~bit if kafka else 0  # Kafka: only when no other ISR member is alive
                    elif qisr & bit and not (kafka and qisr == bit and not elr_on):  # ZooKeeper keeps the last member
                        nl, ni, down = qlead, qisr & ~bit, 0
                    else:
                        continue
                    delta = NLE_UNIT + (((nl + 1) * N_ISR + ni) << ssh) + ((ni - qisr) << QI_SH) + elr_delta(elr, qisr, ni)
                    ctrl.append((A_CSHRINK + r, delta, -1, down))
                if kafka and qlead >= 0:
                    # Kafka's failover: in one LeaderAndIsr, a live ISR member leads and the old leader leaves
                    ni = qisr & ~(1 << qlead)
                    d = NLE_UNIT + ((ni - qisr) << QI_SH) + elr_delta(elr, qisr, ni)
                    for r in MEMBERS[ni]:
                        ctrl.append((A_FAILOVER + r, d + (((r + 1) * N_ISR + ni) << ssh), r, 0))
                if unclean:
                    for r in R:
                        ni = 1 << r
                        unclean_moves.append((A_UNCLEAN + r, NLE_UNIT + (((r + 1) * N_ISR + ni) << ssh)
                                              + ((ni - qisr) << QI_SH) - (elr << ELR_SH), r))
                if lkl >= 0 and not elr:  # KIP-966's last known leader, the ISR and ELR both empty
                    ni = 1 << lkl
                    last_moves.append((A_LAST + lkl, NLE_UNIT + (((lkl + 1) * N_ISR + ni) << ssh) + (ni << QI_SH), lkl))
            # the last ISR member that the controller has just failed as leader counts as down
            deposed = -1
            if nle >= 2 and qlead < 0 and SLOT_LEADER[slots[-2]] >= 0 and qisr == 1 << SLOT_LEADER[slots[-2]]:
                deposed = SLOT_LEADER[slots[-2]]
            # newest first: a replica applies only requests above its epoch, so scans stop early
            leader_reqs = tuple(
                (SLOT_LEADER[v], e, SLOT_ISR[v]) for e, v in reversed(list(enumerate(slots))) if SLOT_LEADER[v] >= 0
            )
            # with ELR an unclean election waits while an ELR member, or the last known leader
            # (the ISR and the ELR empty), is alive: brokers any of which vetoes it
            vetoes = (MEMBERS[elr] if elr else (lkl,) if lkl >= 0 else ()) if elr_on else ()
            value = self[key] = (qisr, nle, qlead, nle - 1, tuple(ctrl), tuple(unclean_moves), MEMBERS[qisr],
                                 leader_reqs, deposed, elr, tuple(last_moves), vetoes)
            return value

    QUORUM = QuorumCache()

    def successors(s: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        app = out.append
        nid = (s >> NID_SH) & NID_M
        (qisr, nle, qlead, qep, ctrl, unclean_moves, qmembers, leader_reqs, deposed, elr, last_moves,
         vetoes) = QUORUM[(s >> CTRL_SH) & CTRL_M]
        hw, ep, ld, isr, ln, lg, meta, life, since, fl, ask = zip(*read_replicas(s))

        # ---- controller: elect, shrink (failure detection), fail over, elect uncleanly -------------
        for a, d, need, down in ctrl:
            if need >= 0 and life[need]:
                continue
            if down and any(not life[r] for r in MEMBERS[down]):
                continue
            app((a, s + d))
        if unclean_moves and all(life[r] for r in vetoes):
            for r in qmembers:
                if not life[r] and r != deposed:
                    break  # a live ISR member the controller counts: only a clean election
            else:
                for a, d, r in unclean_moves:
                    if not life[r] and r != deposed:
                        app((a, s + d))
        if last_moves:
            for a, d, r in last_moves:
                if not life[r]:
                    app((a, s + d))

        # ---- BecomeLeader: a replica applies a newer request naming itself ------------------------
        oldest = min(ep)
        for r, e, ni in leader_reqs:
            if e <= oldest:
                break
            if e > ep[r] and not life[r]:
                dmeta = (e - ep[r]) * U_EP + (r - ld[r]) * U_LD + (ni - isr[r]) * U_ISR
                if asks:
                    dmeta -= (ask[r] + 1) * U_ASK  # KRaft's metadata replaces a pending AlterPartition
                if track_since and ld[r] != r:
                    dmeta += (e - since[r]) * U_SINCE  # a new leadership: its purgatory starts empty
                t = s + (dmeta << SH[r])
                if kafka:
                    t = expose(t, IDS_BELOW[lg[r] * W + hw[r]], r == qlead and e == qep)
                app((A_BLEAD + r * NEP1 + e, t))

        # ---- BecomeFollower: apply a newer request naming another leader, truncate -----------------
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
                if hw_trunc:
                    to = hw[r]
                elif kip101 and ln[r]:
                    to = EPOCH_END[lg[lead] * NE + LAST_EPOCH[lg[r]]]
                    if to < 0:
                        to = hw[r]
                elif kip101:
                    to = 0
                else:
                    to = matching(lg[lead], lg[r])
                if to > ln[r]:
                    continue  # the specification disables a truncation past the log end
                ng = PREFIX[lg[r] * W + to]
                nh = to if to < hw[r] else hw[r]
                dmeta = (nh - hw[r]) * U_HW + (e - ep[r]) * U_EP + (lead - ld[r]) * U_LD + (ni - isr[r]) * U_ISR
                if asks:
                    dmeta -= (ask[r] + 1) * U_ASK
                if in_cache and to < fl[r]:
                    dmeta += (to - fl[r]) * U_FL  # what is on disk is cut with the log
                if track_since:
                    dmeta -= (since[r] + 1) * U_SINCE  # NotLeader: the pending produces fail
                app((A_BFOLLOW + (r * rf + lead) * NEP1 + e, s + ((((ng - lg[r]) << MB) + dmeta) << SH[r])))

        # ---- LeaderWrite: a believed leader appends a record stamped with its epoch ---------------
        if nid < MR:
            for r in R:
                if ld[r] == r and ln[r] < LS:
                    if acks_all and POP[isr[r]] < min_isr:
                        continue  # NotEnoughReplicas: the write is rejected
                    ng = APPEND[lg[r] * NREC + nid * NE + ep[r]]
                    t = s + NID_UNIT + ((ng - lg[r]) << (SH[r] + MB))
                    if kafka:
                        if acks_one:
                            t |= (1 << nid) << AK_SH  # a set: no carry into the next field
                        t = expose(t, IDS_BELOW[ng * W + hw[r]], r == qlead and ep[r] == qep)
                    app((A_WRITE + r, t))

        # ---- LeaderIncHighWatermark ---------------------------------------------------------------
        for r in R:
            h = hw[r]
            maximal = isr[r] | 1 << ask[r] if asks and ask[r] >= 0 else isr[r]  # KIP-497: and one being added
            if fenced:
                if h >= ln[r] or (kafka and ld[r] != r):
                    continue
                ok = True
                for f in MEMBERS[maximal]:
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
            if not ok or (strict and POP[isr[r]] < min_isr):
                continue
            t = s + (U_HW << SH[r])
            if kafka:
                if acks_all and h < ln[r]:
                    code = CODE_AT[lg[r] * W + h]
                    if code % NE >= since[r] and POP[maximal] >= min_isr:
                        # appended during this leadership: its delayed produce completes (with
                        # a smaller ISR the producer gets NotEnoughReplicasAfterAppend instead)
                        t |= (1 << (code // NE)) << AK_SH
                t = expose(t, IDS_BELOW[lg[r] * W + h + 1], r == qlead and ep[r] == qep)
            app((A_INCHW + r, t))

        # ---- ISR changes by the true leader -------------------------------------------------------
        if qlead >= 0 and ld[qlead] == qlead and ep[qlead] == qep:
            r = qlead
            ci, end, h = isr[r], ln[r], hw[r]
            pending = asks and ask[r] >= 0  # one AlterPartition at a time
            for f in () if pending else MEMBERS[ci]:
                if f == r:
                    continue
                if fenced:
                    lagging = ld[f] != r or ep[f] != ep[r] or ln[f] < end
                else:
                    lagging = not (ld[f] == r and (end == 0 or end <= ln[f]))
                if lagging and asks:
                    app((A_SHRINK + r * rf + f, s + (((f + 1) * U_ASK) << SH[r])))
                elif lagging:
                    ni = ci & ~(1 << f)
                    app((A_SHRINK + r * rf + f, s + ((ni - qisr) << QI_SH) + (((ni - ci) * U_ISR) << SH[r])
                         + elr_delta(elr, qisr, ni)))
            for f in () if pending else NOT_MEMBERS[ci]:
                if ld[f] != r:
                    continue
                if fenced and kafka:
                    # Kafka 2.1+: the follower's log end has reached the HWM and the start of
                    # the leader's epoch (Partition.isFollowerInSync)
                    if ep[f] != ep[r] or ln[f] < h or ln[f] < EPOCH_START[lg[r] * NE + ep[r]]:
                        continue
                elif fenced:
                    if ep[f] != ep[r] or (h > 0 and h > ln[f]):
                        continue
                    if h != end and not (h < end and CODE_AT[lg[r] * W + h] % NE == ep[r]):
                        continue
                elif h > 0 and not (h <= end and h <= ln[f]):
                    continue
                if asks:
                    app((A_EXPAND + r * rf + f, s + (((f + 1) * U_ASK) << SH[r])))
                    continue
                ni = ci | (1 << f)
                app((A_EXPAND + r * rf + f, s + ((ni - qisr) << QI_SH) + (((ni - ci) * U_ISR) << SH[r])
                     + elr_delta(elr, qisr, ni)))
            if pending:  # the controller applies it: the ISR, the quorum's, no new epoch
                f = ask[r]
                ni = ci ^ (1 << f)
                app((A_ALTER + r, s + ((ni - qisr) << QI_SH) + ((((ni - ci) * U_ISR) - (f + 1) * U_ASK) << SH[r])
                     + elr_delta(elr, qisr, ni)))

        # ---- FollowerFetch: copy the next record from the believed leader --------------------------
        for f in R:
            lead = ld[f]
            if lead < 0 or lead == f or ld[lead] != lead:
                continue
            if fenced and ep[f] != ep[lead]:
                continue
            o = ln[f]
            if o >= ln[lead] or o >= LS:
                continue
            ng = APPEND[lg[f] * NREC + CODE_AT[lg[lead] * W + o]]
            nh = hw[lead] if hw[lead] < o + 1 else o + 1
            app((A_FETCH + f * rf + lead, s + ((((ng - lg[f]) << MB) + (nh - hw[f]) * U_HW) << SH[f])))

        if not max_crashes and not max_power:
            return out

        # ---- crashes (the log and the HWM checkpoint stay, or the disk is lost too), restarts -----
        crashes = (s >> CR_SH) & CR_M
        if crashes < max_crashes:
            for r in R:
                if not life[r]:
                    dead = DEAD_META_BASE + nid * U_LIFE + hw[r] * U_HW + (fl[r] * U_FL if in_cache else 0)
                    app((A_CRASH + r, s + (1 << CR_SH) + ((dead - meta[r]) << SH[r])))
            if max_disk and (s >> DL_SH) & DL_M < max_disk:
                for r in R:
                    if not life[r]:
                        wiped = DEAD_META_BASE + nid * U_LIFE
                        app((A_DISK + r, s + (1 << CR_SH) + (1 << DL_SH) + ((wiped - meta[r] - (lg[r] << MB)) << SH[r])))
        for r in R if can_restart else ():
            if not life[r] or (kip380 and (r == qlead or (qisr >> r & 1 and (qisr != 1 << r or elr_on)))):
                # KIP-380: the controller handles a bounce as a failure first: leadership
                # moves away and the broker leaves the ISR, unless it is the last member (ZooKeeper)
                continue
            nh = hw[r] if hw[r] < ln[r] else ln[r]
            back = nh * U_HW + (qep if kip380 and qep > 0 else 0) * U_EP  # epoch qep - 1: KIP-380 fencing
            if in_cache:
                back += fl[r] * U_FL
            unclean_shutdown = (elr >> r & 1) << r << ELR_SH  # KIP-966: it leaves the ELR
            t = s + ((back - meta[r]) << SH[r]) - unclean_shutdown
            if kip903:  # KIP-903: a pending request to add it is refused, its leader rolls back
                for lead in R:
                    if ask[lead] == r and lead != r and not isr[lead] >> r & 1:
                        t -= ((r + 1) * U_ASK) << SH[lead]
            app((A_RESTART + r, t))
        if max_power:
            # ---- power losses: several brokers at once, each down with what it had flushed ------
            room = max_power - ((s >> PL_SH) & PL_M)
            for m, members, n in OUTAGES:
                if n > room or any(life[r] for r in members):
                    continue
                t = s + (n << PL_SH)
                for r in members:
                    keep = fl[r] if in_cache else ln[r]
                    nh = keep if in_cache and hw[r] > keep else hw[r]
                    dead = DEAD_META_BASE + nid * U_LIFE + nh * U_HW + (keep * U_FL if in_cache else 0)
                    t += ((dead - meta[r] + ((PREFIX[lg[r] * W + keep] - lg[r]) << MB)) << SH[r])
                app((A_POWER + m - 1, t))
            if in_cache:
                for r in R:  # the OS writes a broker's page cache back
                    if fl[r] < ln[r]:
                        app((A_FLUSH + r, s + (((ln[r] - fl[r]) * U_FL) << SH[r])))
        return out

    return successors
