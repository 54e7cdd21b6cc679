"""The transition relation in Z3, action by action beside successors.py.

Each action of the catalogue is a guarded update: ``guard(s)`` and the new value
of the names it changes; ``trans`` adds the explicit frame (every other name
keeps its value) and selects one action per step with an Int ``act`` that is the
catalogue index, so a Z3 model decodes to the same ``Action(name, params)`` that
``model.step`` replays. Read beside successors.py: the rules, quirks and Kafka
features are the same, in the same words, and tests/test_z3_encoding.py holds the
two to each other in both directions.

In the unbounded mode (``max_leader_epoch`` None) the actions that take an epoch
parameter read it from a per-step Int ``epoch``, the controller elects without an
epoch bound and leaders write without a record-id bound. With a ``horizon`` (runs
of at most that many states, as BMC unrolls them) the unbounded mode is encoded
with bounds that no such run can reach, which is exact for those runs and lets
the bit-vector encoding and its SAT solver do the work.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from .actions import Catalogue, families
from .config import ModelConfig, Revision
from .symbolic_logs import Updates, add_id, epoch_start, expose, first_nonmatching, kip101_lookup, last_epoch, log_ids
from .symbolic_state import FALSE, NO, TRUE, Space, SymState, ite_chain



@dataclass(frozen=True, slots=True)
class SymAction:
    """A catalogue action; ``symbolic_epoch``: its epoch parameter is the step's ``epoch``."""

    name: str
    params: tuple[tuple[str, int], ...]
    symbolic_epoch: bool = False

    def args(self, epoch: int | None = None) -> dict[str, int]:
        out = dict(self.params)
        if self.symbolic_epoch:
            assert epoch is not None
            out["epoch"] = epoch
        return out


def _min(a: z3.ArithRef, b: z3.ArithRef | int) -> z3.ArithRef:
    return z3.If(a < b, a, b)


def _popcount(sp: Space, bits: list[z3.BoolRef]) -> z3.ArithRef:
    return z3.Sum([z3.If(b, sp.c(1), sp.c(0)) for b in bits])


class SymbolicModel:
    """The symbolic twin of ``ReplicationModel`` for one configuration."""

    def __init__(self, config: ModelConfig, horizon: int | None = None) -> None:
        self.config = config.validate()
        self.space = Space(config, horizon)
        self.kafka = not config.core
        self.revision = config.revision
        self.fenced = self.revision is Revision.KIP_320
        if self.space.unbounded:
            self.actions = []
            for name, params in families(config):
                fixed = tuple(p for p in params if p != "epoch")
                self._expand(name, fixed, "epoch" in params, ())
        else:
            bounded = config.with_changes(max_leader_epoch=self.space.me)
            self.actions = [SymAction(a.name, a.params) for a in Catalogue(bounded)]

    def _expand(self, name: str, params: tuple[str, ...], symbolic_epoch: bool, bound: tuple) -> None:
        if len(bound) == len(params):
            self.actions.append(SymAction(name, tuple(zip(params, bound)), symbolic_epoch))
            return
        for v in range(self.config.rf):
            self._expand(name, params, symbolic_epoch, bound + (v,))

    # ---- states and steps --------------------------------------------------------
    def fresh(self, prefix: str) -> SymState:
        return self.space.fresh(prefix)

    def step_vars(self, k: int) -> tuple[z3.ArithRef, z3.ArithRef]:
        """The action selector and the epoch parameter of step k (into state k)."""
        sp = self.space
        act = z3.Int(f"act{k}") if sp.unbounded else z3.BitVec(f"act{k}", len(self.actions).bit_length() + 1)
        return act, sp.number(f"epoch{k}")

    def init(self, s: SymState) -> z3.BoolRef:
        return self.space.init(s)

    def domain(self, s: SymState) -> z3.BoolRef:
        return self.space.domain(s)

    def trans(self, s: SymState, t: SymState, act: z3.ExprRef, epoch: z3.ExprRef) -> z3.BoolRef:
        """T(s, t): the selected action's guard holds in s and t is its update of s.

        The frame is explicit, per name: the next value is the selected action's update
        when that action names it, else the current value (a name changes only through
        an action that updates it). Written per name rather than per action, the
        relation is the same and Z3 propagates it several times faster.
        """
        names = self.space.names
        cases = [act >= 0, act < len(self.actions)]
        changes: dict[str, list[tuple[int, z3.ExprRef]]] = {n: [] for n in names}
        for i, a in enumerate(self.actions):
            guard, upd = self.guarded_update(s, a, epoch)
            cases.append(z3.Implies(act == i, guard))
            for n, value in upd.items():
                changes[n].append((i, value))
        for n in names:
            value = s.v[n]
            for i, new in reversed(changes[n]):
                value = z3.If(act == i, new, value)
            cases.append(t.v[n] == value)
        return z3.And(cases)

    def decode_action(self, act: int, epoch: int) -> tuple[str, dict[str, int]]:
        a = self.actions[act]
        return a.name, a.args(epoch)

    # ---- the actions -----------------------------------------------------------------
    def guarded_update(self, s: SymState, a: SymAction, epoch: z3.ArithRef) -> tuple[z3.BoolRef, Updates]:
        p = dict(a.params)
        e = epoch if a.symbolic_epoch else p.get("epoch")
        method = getattr(self, "_" + a.name)
        guard, upd = method(s, p, e)
        if a.symbolic_epoch:
            guard = z3.And(e >= 0, guard)
        return guard, upd

    def _can_elect(self, s: SymState) -> z3.BoolRef:
        me = self.space.me
        return TRUE if me is None else s.nle <= me

    def _new_request(self, s: SymState, upd: Updates, leader, isr: list[z3.BoolRef]) -> None:
        """Send a LeaderAndIsr request with a fresh epoch (the quorum's new state)."""
        sp = self.space
        upd["nle"] = s.nle + 1
        if sp.me is None:
            upd["req.lead"] = z3.Store(s.v["req.lead"], s.nle, leader)
            for m in range(sp.rf):
                upd[f"req.isr{m}"] = z3.Store(s.v[f"req.isr{m}"], s.nle, isr[m])
            return
        for e in range(sp.me + 1):
            here = s.nle == e
            upd[f"req{e}.lead"] = z3.If(here, leader, s.v[f"req{e}.lead"])
            for m in range(sp.rf):
                upd[f"req{e}.isr{m}"] = z3.If(here, isr[m], s.v[f"req{e}.isr{m}"])

    def _ControllerElectLeader(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r = p["leader"]
        guard = z3.And(self._can_elect(s), s.q(r), s.qlead != r, s.alive(r))
        upd: Updates = {}
        self._new_request(s, upd, r, [s.q(m) for m in range(self.space.rf)])
        return guard, upd

    def _ControllerShrinkIsr(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r, rf = p["replica"], self.space.rf
        leads = s.qlead == r
        only_r = z3.And(s.q(r), *[z3.Not(s.q(m)) for m in range(rf) if m != r])
        others = z3.Or([s.q(m) for m in range(rf) if m != r]) if rf > 1 else FALSE
        if self.kafka:
            # a failed leader leaves the partition leaderless only when no other ISR member
            # is alive (otherwise ControllerFailover elects one); a failed follower leaves
            # the ISR, but the last ISR member stays (ZooKeeper-era Kafka)
            others_down = z3.And([z3.Implies(s.q(m), z3.Not(s.alive(m))) for m in range(rf) if m != r])
            leader_fails = z3.And(leads, others_down)
            follower_fails = z3.And(z3.Not(leads), s.q(r), others)
        else:
            leader_fails = leads
            follower_fails = z3.And(z3.Not(leads), s.q(r))
        guard = z3.And(self._can_elect(s), z3.Or(leader_fails, follower_fails))
        new_isr = [z3.And(leads, only_r) if m == r else s.q(m) for m in range(rf)]
        upd: Updates = {f"q{m}": new_isr[m] for m in range(rf)}
        self._new_request(s, upd, z3.If(leads, NO, s.qlead), new_isr)
        return guard, upd

    def _ControllerFailover(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        """Kafka's failover: the controller sees the leader fail and, in the same request,
        elects a live ISR member and drops the old leader from the ISR."""
        r, rf = p["leader"], self.space.rf
        guard = z3.And(self._can_elect(s), s.qlead != NO, s.qlead != r, s.q(r), s.alive(r))
        new_isr = [z3.And(s.q(m), s.qlead != m) for m in range(rf)]
        upd: Updates = {f"q{m}": new_isr[m] for m in range(rf)}
        self._new_request(s, upd, r, new_isr)
        return guard, upd

    def _ControllerUncleanElect(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r, rf = p["leader"], self.space.rf

        def deposed(m: int) -> z3.BoolRef:
            """The last ISR member, just failed as leader: the controller counts it as down."""
            only_m = z3.And(s.q(m), *[z3.Not(s.q(x)) for x in range(rf) if x != m])
            return z3.And(s.nle >= 2, s.qlead == NO, s.req_lead(s.nle - 2) == m, only_m)

        no_live_isr = z3.And([z3.Implies(s.q(m), z3.Or(z3.Not(s.alive(m)), deposed(m))) for m in range(rf)])
        guard = z3.And(self._can_elect(s), no_live_isr, s.alive(r), z3.Not(deposed(r)))
        new_isr = [z3.BoolVal(m == r) for m in range(rf)]
        upd: Updates = {f"q{m}": new_isr[m] for m in range(rf)}
        self._new_request(s, upd, r, new_isr)
        return guard, upd

    def _BecomeLeader(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r, rf = p["replica"], self.space.rf
        guard = z3.And(e < s.nle, s.req_lead(e) == r, e > s.lep(r), s.alive(r))
        upd: Updates = {f"r{r}.lep": self.space.c(e) if isinstance(e, int) else e, f"r{r}.ld": self.space.c(r)}
        for m in range(rf):
            upd[f"r{r}.isr{m}"] = s.req_isr(e, m)
        if self.space.track_since:  # a new leadership: its purgatory starts empty
            upd[f"r{r}.since"] = z3.If(s.ld(r) != r, upd[f"r{r}.lep"], s.since(r))
        if self.kafka:
            expose(s, upd, s.hw(r), s.length(r), log_ids(s, r), e == s.nle - 1)
        return guard, upd

    def _BecomeFollower(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r, lead, rf, ls = p["replica"], p["leader"], self.space.rf, self.space.ls
        if r == lead:
            return FALSE, {}
        guard = [s.alive(r), e > s.lep(r), e < s.nle, s.req_lead(e) == lead]
        rev = self.revision
        if self.fenced:
            guard += [s.ld(lead) == lead, s.lep(lead) == e]
        if self.kafka and rev is not Revision.HW_TRUNCATION:
            guard.append(s.alive(lead))  # the truncation point needs an answer from the leader
        if self.fenced or rev is Revision.KIP_279:
            to = first_nonmatching(s, lead, r)
        elif rev is Revision.HW_TRUNCATION:
            to = s.hw(r)
        else:
            lookup = kip101_lookup(s, lead, last_epoch(s, r))
            to = z3.If(s.length(r) == 0, 0, z3.If(lookup < 0, s.hw(r), lookup))
        guard.append(to <= s.length(r))  # a truncation past the log end is disabled
        upd: Updates = {f"r{r}.len": to, f"r{r}.hw": _min(to, s.hw(r))}
        for o in range(ls):
            keep = o < to
            upd[f"r{r}.id{o}"] = z3.If(keep, s.rid(r, o), 0)
            upd[f"r{r}.ep{o}"] = z3.If(keep, s.rep(r, o), 0)
        upd[f"r{r}.lep"] = self.space.c(e) if isinstance(e, int) else e
        upd[f"r{r}.ld"] = self.space.c(lead)
        for m in range(rf):
            upd[f"r{r}.isr{m}"] = s.req_isr(e, m)
        if self.space.track_since:
            upd[f"r{r}.since"] = self.space.c(NO)  # NotLeader: the pending produces fail
        return z3.And(guard), upd

    def _LeaderWrite(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r, sp, cfg = p["replica"], self.space, self.config
        guard = [s.ld(r) == r, s.length(r) < sp.ls]
        if sp.mr is not None:
            guard.append(s.nid < sp.mr)
        if self.kafka and cfg.acks == "all":
            guard.append(_popcount(sp, [s.isr(r, m) for m in range(sp.rf)]) >= cfg.min_isr)  # else NotEnoughReplicas
        n = s.length(r)
        upd: Updates = {"nid": s.nid + 1, f"r{r}.len": n + 1}
        new_ids = []
        for o in range(sp.ls):
            at = n == o
            upd[f"r{r}.id{o}"] = z3.If(at, s.nid, s.rid(r, o))
            upd[f"r{r}.ep{o}"] = z3.If(at, s.lep(r), s.rep(r, o))
            new_ids.append(upd[f"r{r}.id{o}"])
        if self.kafka:
            if cfg.acks == "1":
                add_id(s, upd, "acked", s.nid, TRUE)
            true_leader = z3.And(s.qlead == r, s.lep(r) == s.qep)
            expose(s, upd, s.hw(r), n + 1, new_ids, true_leader)
        return z3.And(guard), upd

    def _LeaderIncHighWatermark(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r, sp, cfg = p["leader"], self.space, self.config
        h, rf = s.hw(r), sp.rf
        if self.fenced:
            guard = [h < s.length(r)]
            if self.kafka:
                guard.append(s.ld(r) == r)
            for f in range(rf):
                ok = z3.And(s.ld(r) == r, s.ld(f) == r, s.lep(f) == s.lep(r), h < s.length(f))
                guard.append(z3.Implies(s.isr(r, f), ok))
        else:
            guard = [s.ld(r) == r, h < sp.ls]
            for f in range(rf):
                guard.append(z3.Implies(s.isr(r, f), z3.And(s.ld(f) == r, h < s.length(f))))
        upd: Updates = {f"r{r}.hw": h + 1}
        if self.kafka:
            if cfg.acks == "all":
                rec_id = ite_chain(h, [s.rid(r, o) for o in range(sp.ls)], self.space.c(0))
                rec_ep = ite_chain(h, [s.rep(r, o) for o in range(sp.ls)], self.space.c(NO))
                enough = _popcount(sp, [s.isr(r, m) for m in range(rf)]) >= cfg.min_isr
                # appended during this leadership: its delayed produce completes (with a
                # smaller ISR the producer gets NotEnoughReplicasAfterAppend instead)
                add_id(s, upd, "acked", rec_id, z3.And(h < s.length(r), rec_ep >= s.since(r), enough))
            true_leader = z3.And(s.qlead == r, s.lep(r) == s.qep)
            expose(s, upd, h + 1, s.length(r), log_ids(s, r), true_leader)
        return z3.And(guard), upd

    def _LeaderShrinkIsr(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r, f, rf = p["leader"], p["follower"], self.space.rf
        if f == r:
            return FALSE, {}
        if self.fenced:
            lagging = z3.Or(s.ld(f) != r, s.lep(f) != s.lep(r), s.length(f) < s.length(r))
        else:
            lagging = z3.Not(z3.And(s.ld(f) == r, z3.Or(s.length(r) == 0, s.length(r) <= s.length(f))))
        guard = z3.And(s.true_leader_is(r), s.isr(r, f), lagging)
        new = [FALSE if m == f else s.isr(r, m) for m in range(rf)]
        return guard, self._set_isr(r, new)

    def _LeaderExpandIsr(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r, f, rf, ls = p["leader"], p["follower"], self.space.rf, self.space.ls
        h, end = s.hw(r), s.length(r)
        if self.fenced and self.kafka:
            # Kafka 2.1+: the follower's log end has reached the HWM and the start of the
            # leader's epoch (Partition.isFollowerInSync)
            caught_up = z3.And(
                s.lep(f) == s.lep(r), s.length(f) >= h, s.length(f) >= epoch_start(s, r, s.lep(r))
            )
        elif self.fenced:
            at_h = ite_chain(h, [s.rep(r, o) for o in range(ls)], self.space.c(NO))
            caught_up = z3.And(
                s.lep(f) == s.lep(r),
                z3.Not(z3.And(h > 0, h > s.length(f))),
                z3.Or(h == end, z3.And(h < end, at_h == s.lep(r))),  # HWM reached this epoch's start
            )
        else:
            caught_up = z3.Or(h <= 0, z3.And(h <= end, h <= s.length(f)))
        guard = z3.And(s.true_leader_is(r), z3.Not(s.isr(r, f)), s.ld(f) == r, caught_up)
        new = [TRUE if m == f else s.isr(r, m) for m in range(rf)]
        return guard, self._set_isr(r, new)

    def _set_isr(self, r: int, new: list[z3.BoolRef]) -> Updates:
        """The true leader's ISR change: its cached ISR and the quorum's, no new epoch."""
        upd: Updates = {}
        for m, b in enumerate(new):
            upd[f"r{r}.isr{m}"] = b
            upd[f"q{m}"] = b
        return upd

    def _FollowerFetch(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        f, lead, ls = p["follower"], p["leader"], self.space.ls
        o = s.length(f)
        guard = [s.ld(f) == lead, s.ld(lead) == lead, o < s.length(lead), o < ls]
        if self.fenced:
            guard.append(s.lep(f) == s.lep(lead))
        rec_id = ite_chain(o, [s.rid(lead, i) for i in range(ls)], self.space.c(0))
        rec_ep = ite_chain(o, [s.rep(lead, i) for i in range(ls)], self.space.c(0))
        upd: Updates = {f"r{f}.len": o + 1, f"r{f}.hw": _min(s.hw(lead), o + 1)}
        for i in range(ls):
            at = o == i
            upd[f"r{f}.id{i}"] = z3.If(at, rec_id, s.rid(f, i))
            upd[f"r{f}.ep{i}"] = z3.If(at, rec_ep, s.rep(f, i))
        return z3.And(guard), upd

    def _forget(self, s: SymState, upd: Updates, r: int) -> None:
        """A crash: in-memory partition state is lost; the crash mark is the next record id."""
        upd[f"r{r}.lep"] = self.space.c(NO)
        upd[f"r{r}.ld"] = self.space.c(NO)
        for m in range(self.space.rf):
            upd[f"r{r}.isr{m}"] = FALSE
        upd[f"r{r}.alive"] = FALSE
        upd[f"r{r}.mark"] = s.nid
        if self.space.track_since:
            upd[f"r{r}.since"] = self.space.c(NO)

    def _BrokerCrash(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r = p["replica"]
        guard = z3.And(s.crashes < self.space.crashes, s.alive(r))
        upd: Updates = {"crashes": s.crashes + 1}
        self._forget(s, upd, r)  # the log and the HWM checkpoint stay on disk
        return guard, upd

    def _BrokerCrashDiskLoss(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r, sp = p["replica"], self.space
        guard = z3.And(s.crashes < sp.crashes, s.disks < sp.disk_loss, s.alive(r))
        upd: Updates = {"crashes": s.crashes + 1, "disks": s.disks + 1, f"r{r}.len": self.space.c(0)}
        upd[f"r{r}.hw"] = self.space.c(0)
        for o in range(sp.ls):
            upd[f"r{r}.id{o}"] = self.space.c(0)
            upd[f"r{r}.ep{o}"] = self.space.c(0)
        self._forget(s, upd, r)
        return guard, upd

    def _BrokerRestart(self, s: SymState, p: dict, e) -> tuple[z3.BoolRef, Updates]:
        r, rf = p["replica"], self.space.rf
        only_r = z3.And(s.q(r), *[z3.Not(s.q(m)) for m in range(rf) if m != r])
        # KIP-380: only after the controller moved leadership away and removed the broker
        # from the ISR (unless it is the last member)
        guard = z3.And(z3.Not(s.alive(r)), s.qlead != r, z3.Or(z3.Not(s.q(r)), only_r))
        upd: Updates = {
            f"r{r}.hw": _min(s.hw(r), s.length(r)),
            f"r{r}.lep": z3.If(s.qep > 0, s.qep - 1, NO),  # ignores requests of its previous life
            f"r{r}.ld": self.space.c(NO),
            f"r{r}.alive": TRUE,
            f"r{r}.mark": self.space.c(0),
        }
        if self.space.track_since:
            upd[f"r{r}.since"] = self.space.c(NO)
        for m in range(rf):
            upd[f"r{r}.isr{m}"] = FALSE
        return guard, upd
