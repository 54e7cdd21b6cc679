"""The symbolic engine: bounded model checking and proofs with Z3.

BMC unrolls the transition relation (model/symbolic.py) one step at a time on one
incremental solver and asks, after every step, whether a pending property's goal
(properties/symbolic.py) can hold in the newest state: the first depth at which it
can is the length of a shortest counterexample, the same figure BFS reports. A
Z3 model is decoded into readable states and catalogue actions, encoded with the
explicit model and replayed with ``model.step`` before it is reported; a path that
does not replay is an engine bug and raises ``Z3EngineBug``.

Proofs (``prove``): after BMC has checked every path of k-1 steps, the induction
step for k (k steps from any state of the domain where the property held, all
states distinct, into a violation) is tried on a second incremental solver. When
it is unsatisfiable the property holds at every depth for these constants:
``proved``. Properties proved earlier in the run are assumed as lemmas. When the
step stays satisfiable, the last counterexample to induction is kept in Kafka words.
``prove="spacer"`` asks Z3's Spacer (constrained Horn clauses) for an inductive
invariant instead. Both BMC and induction first assume the structural lemmas that
Houdini proves (z3_lemmas.py), which prunes unreachable states from both.

Unbounded epochs and records (``ModelConfig.unbounded``): BMC encodes runs of at
most ``max_depth`` states with bounds that no such run reaches (exact for them);
induction and Spacer use unbounded integers and arrays. Their counterexamples
replay on the smallest bounded configuration that holds them (``replay_config``).

Statistics: ``states`` and ``generated`` are 0 (nothing is enumerated); ``depth``
is the deepest depth BMC fully checked, in states. Symmetry reduction is ignored.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Sequence

import z3

from isrcheck.model import Action, ModelConfig, PartitionState
from isrcheck.model.machine import Model, model_for
from isrcheck.model.kafka import KAFKA
from isrcheck.model.symbolic import SymbolicModel
from isrcheck.model.symbolic_space import SymState
from isrcheck.properties import Property, verdict
from isrcheck.properties.symbolic import goal
from isrcheck.traces.trace import TraceError, check_packed_replay

from .engine import CheckOptions, Limits, Observer, Progress, peak_rss
from .result import CheckResult, Path, PropertyResult, Stats
from .z3_cti import InductionCounterexample
from .z3_lemmas import NO_LEMMAS, Lemmas, houdini

DEFAULT_DEPTH = 30  # states, when --max-depth is not given: beyond the rf 2/3 core diameters (18 to 26)
PROVE_METHODS = ("none", "induction", "spacer")
LEMMA_TIMEOUT = 30.0  # seconds for finding the structural lemmas (none are used past it)


class Z3EngineBug(AssertionError):
    """A Z3 counterexample that does not replay on the explicit model: the encodings disagree."""


class SymbolicProgress(Progress):
    def line(self) -> str:
        return f"BMC depth {self.depth} checked, {self.seconds:.1f} s"


@dataclass
class RawTrace:
    """A decoded Z3 path, before it is encoded and replayed on an explicit model."""

    states: list[PartitionState]
    actions: list[tuple[str, dict[str, int]]]


@dataclass
class _Pending:
    prop: Property
    selector: z3.BoolRef  # the induction hypothesis literal for this property
    cti: InductionCounterexample | None = None
    proof: dict = field(default_factory=dict)


class Z3Engine:
    name = "z3"

    def __init__(
        self,
        prove: str = "induction",
        prove_timeout: float | None = 60.0,
        default_depth: int = DEFAULT_DEPTH,
        lemmas: bool = True,
    ):
        self.lemmas = lemmas
        if prove not in PROVE_METHODS:
            raise ValueError(f"unknown proof method {prove!r}; choose one of {', '.join(PROVE_METHODS)}")
        self.prove = prove
        self.prove_timeout = prove_timeout
        self.default_depth = default_depth

    def check(
        self,
        model: Model | ModelConfig,
        properties: Sequence[Property],
        options: CheckOptions,
        observer: Observer | None = None,
    ) -> CheckResult:
        """``model`` is the explicit model, or the ModelConfig of an unbounded configuration."""
        return _Run(self, model, list(properties), options, observer or Observer()).run()


class _Run:
    def __init__(self, engine: Z3Engine, model, properties: list[Property], options: CheckOptions, observer: Observer):
        self.engine = engine
        self.config: ModelConfig = model if isinstance(model, ModelConfig) else model.config
        self.explicit = None if isinstance(model, ModelConfig) else model
        protocol = KAFKA if self.explicit is None else self.explicit.protocol
        self.properties = properties
        self.options = options
        self.observer = observer
        self.max_depth = max(1, options.max_depth if options.max_depth is not None else engine.default_depth)
        # BMC of the unbounded mode unrolls runs of at most max_depth states: bounded
        # numbers that no such run can reach encode it exactly; proofs need real Ints.
        unbounded = self.config.unbounded
        self.sym = SymbolicModel(self.config, horizon=self.max_depth if unbounded else None, protocol=protocol)
        self.proof_sym = SymbolicModel(self.config, protocol=protocol) if unbounded else self.sym
        self.started = time.monotonic()
        self.limits = Limits(options, self.started)
        self.prove_budget = engine.prove_timeout
        self.prove_spent = 0.0
        self.stop = ""
        self.results = {p.name: PropertyResult(p.name, p.expectation) for p in properties}
        self.raw: dict[str, RawTrace] = {}

    # ---- time ----------------------------------------------------------------------
    def _remaining(self) -> float | None:
        """What is left of the time limit, counted as every engine's is: from the run's start
        (``Limits``), so the seconds spent building the formulas are spent from it too."""
        if self.limits.deadline is None:
            return None
        return max(0.001, self.limits.deadline - time.monotonic())

    def _check(self, solver: z3.Solver, *assumptions, budget: float | None = None) -> z3.CheckSatResult:
        limits = [x for x in (self._remaining(), budget) if x is not None]
        limit = min(limits) if limits else None
        solver.set("timeout", int(limit * 1000) if limit is not None else 0)
        started = time.monotonic()
        # Spacer and a check in its preprocessing can overrun their timeout by seconds (issue 55:
        # 12.7 s on a 10 s limit): the context is interrupted half a second past it, as Ctrl-C would
        backstop = threading.Timer(limit + 0.5, solver.ctx.interrupt) if limit is not None else None
        if backstop is not None:
            backstop.daemon = True
            backstop.start()
        try:
            result = solver.check(*assumptions)
        finally:
            if backstop is not None:
                backstop.cancel()
        if result == z3.unknown:
            # Z3 catches Ctrl-C during a check and cancels it; a timeout cancels too, but late
            reason = solver.reason_unknown()
            early = limit is None or time.monotonic() - started < 0.9 * limit
            if ("cancel" in reason or "interrupt" in reason) and early:
                self.observer.request_stop("interrupted")
        return result

    def _should_stop(self) -> str:
        self.stop = self.stop or self.observer.should_stop() or self.limits.exceeded()
        return self.stop

    def _lemmas(self, sym: SymbolicModel) -> Lemmas:
        if not self.engine.lemmas or sym.protocol is not KAFKA:  # the candidates are the Kafka model's
            return NO_LEMMAS
        remaining = self._remaining()
        return houdini(sym, LEMMA_TIMEOUT if remaining is None else min(LEMMA_TIMEOUT, remaining))

    # ---- the run ----------------------------------------------------------------------
    def run(self) -> CheckResult:
        sym = self.sym
        self.lemmas = self._lemmas(sym)
        self.proof_lemmas = self.lemmas if self.proof_sym is sym else NO_LEMMAS
        if self.proof_sym is not sym and self.engine.prove == "induction":
            self.proof_lemmas = self._lemmas(self.proof_sym)
        bmc = sym.space.solver()
        path: list[SymState] = [sym.fresh("s0")]
        steps: list[tuple[z3.ArithRef, z3.ArithRef]] = []
        bmc.add(sym.init(path[0]))
        pending = [_Pending(p, z3.Bool(f"hyp.{p.name}")) for p in self.properties]
        induction = _Induction(self) if self.engine.prove == "induction" else None
        depth = 0
        for k in range(self.max_depth):
            if self._should_stop():
                break
            if k:
                s = sym.fresh(f"s{k}")
                act, epoch = sym.step_vars(k)
                bmc.add(sym.trans(path[-1], s, act, epoch), sym.domain(s), *self.lemmas.at(s))
                path.append(s)
                steps.append((act, epoch))
            undecided = []
            violations = {pend.prop.name: goal(pend.prop, path[-1]).formula for pend in pending}
            for pend in pending:
                bmc.push()
                bmc.add(violations[pend.prop.name])
                answer = self._check(bmc)
                if answer == z3.sat:
                    self.raw[pend.prop.name] = _decode(self.sym, bmc.model(), path, steps)
                    self.results[pend.prop.name].status = verdict.status(pend.prop, decided=True, exhausted=False)
                bmc.pop()
                if answer == z3.unknown:
                    self.stop = self.stop or self.observer.should_stop() or "time limit"
                    break
                if answer == z3.unsat:
                    undecided.append(pend)
            if self.stop:
                break
            for pend in undecided:  # no violation at this depth: a valid constraint from now on
                bmc.add(z3.Not(violations[pend.prop.name]))
            pending = undecided
            depth = k + 1
            self.observer.progress(SymbolicProgress(0, 0, depth, 0, time.monotonic() - self.started))
            if induction is not None and pending:
                pending = induction.step(k + 1, pending)
            if not pending:
                break
        exhausted = not self.stop and depth == self.max_depth
        for pend in pending:
            if pend.prop.name not in self.raw:  # decided in the round that was cut short
                self._finish(pend, exhausted, depth)
        return self._result(depth, exhausted)

    def _finish(self, pend: _Pending, exhausted: bool, depth: int) -> None:
        r = self.results[pend.prop.name]
        within = f"no {'violation' if verdict.always(pend.prop) else 'witness'} up to depth {depth}"
        if self.options.max_depth is None:
            within += f" (default depth of --engine z3: {self.engine.default_depth} states)"
        if exhausted:  # the bound was searched; a stop can still come during the proofs
            r.status = verdict.status(pend.prop, decided=False, exhausted=True)
        elif self.stop:
            within += f"; stopped: {self.stop}"
        if exhausted and self.engine.prove == "spacer" and self._should_stop():
            r.note = f"{within}; no proof tried: stopped ({self.stop})"
            return
        if exhausted and self.engine.prove == "spacer":
            from .z3_spacer import spacer_proof

            pend.proof = spacer_proof(self.proof_sym, pend.prop, self._check, self.prove_budget)
            if pend.proof["outcome"] == "proved":
                self._proved(pend, r)
                return
        if pend.proof:  # how far the proof got, also when the search was stopped
            r.proof = dict(pend.proof)
            if pend.cti is not None:
                r.proof["cti"] = "\n".join(pend.cti.lines(pend.prop.name))
            r.note = f"{within}; proof {pend.proof['outcome']}: {pend.proof.get('reason', '')}".rstrip(": ")
        else:
            r.note = within

    def _proved(self, pend: _Pending, r: PropertyResult) -> None:
        r.proof = dict(pend.proof)
        r.status = verdict.proved(pend.prop)
        if verdict.always(pend.prop):
            r.note = f"{r.proof['method']}: {r.proof.get('reason', '')}".rstrip(": ")
        else:
            r.note = f"never happens at any depth: {r.proof['method']}, {r.proof.get('reason', '')}".rstrip(", ")

    def _result(self, depth: int, exhausted: bool) -> CheckResult:
        replay_model = self.explicit
        replay_config = None
        if self.raw and replay_model is None:
            if self.config.unbounded:
                replay_config = _replay_config(self.config, self.raw.values())
            replay_model = model_for(self.sym.protocol.name, replay_config or self.config)
        for name, raw in self.raw.items():
            self.results[name].path = _replay(replay_model, raw, name)
        stats = Stats(states=0, generated=0, depth=depth, seconds=time.monotonic() - self.started, peak_memory=peak_rss())
        return CheckResult(
            engine="z3",
            complete=not self.stop,
            properties=[self.results[p.name] for p in self.properties],
            stats=stats,
            exhausted=exhausted,
            stop_reason=self.stop,
            symmetry=False,
            replay_config=replay_config,
        )


class _Induction:
    """k-induction with the simple-path constraint on its own incremental solver."""

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.sym = run.proof_sym
        self.solver = self.sym.space.solver()
        self.states: list[SymState] = []
        self.steps: list[tuple[z3.ArithRef, z3.ArithRef]] = []
        self.proved: list[Property] = []
        self.active = True
        self._add_state()

    def _add_state(self) -> None:
        sym, k = self.sym, len(self.states)
        t = sym.fresh(f"i{k}")
        self.solver.add(sym.domain(t), *self.run.proof_lemmas.at(t))
        if self.states:
            act, epoch = sym.step_vars(1000 + k)
            self.solver.add(sym.trans(self.states[-1], t, act, epoch))
            self.solver.add(*self.run.proof_lemmas.requests_at(self.states[-1], [epoch]))
            self.steps.append((act, epoch))
            for u in self.states:  # simple path: every state differs from every earlier one
                self.solver.add(z3.Or([a != b for a, b in zip(u.terms(), t.terms())]))
        self.states.append(t)

    def step(self, k: int, pending: list[_Pending]) -> list[_Pending]:
        """Try the k-step induction for each pending property (BMC has checked depth k-1)."""
        run = self.run
        if not self.active:
            return pending
        while len(self.states) <= k:
            last = self.states[-1]
            for pend in pending:  # the hypothesis: the property holds in every state but the last
                self.solver.add(z3.Implies(pend.selector, goal(pend.prop, last).safe()))
            for prop in self.proved:
                self.solver.add(goal(prop, last).safe())
            self._add_state()
        remaining = []
        for pend in pending:
            budget = None if run.prove_budget is None else run.prove_budget - run.prove_spent
            if budget is not None and budget <= 0:
                self._give_up("timeout", pend, k)
                remaining.append(pend)
                continue
            self.solver.push()
            self.solver.add(goal(pend.prop, self.states[k]).formula)
            started = time.monotonic()
            answer = run._check(self.solver, pend.selector, budget=budget)
            run.prove_spent += time.monotonic() - started
            if answer == z3.sat:
                pend.cti = self._counterexample(self.solver.model(), k)
                pend.proof = self._outcome("failed", k, f"the {k}-step induction has a counterexample (below)")
            self.solver.pop()
            if answer == z3.unsat:
                pend.proof = self._outcome("proved", k, f"{k}-induction with the simple-path constraint")
                run._proved(pend, run.results[pend.prop.name])
                self._add_lemma(pend.prop)
                continue
            if answer == z3.unknown:
                self._give_up(run._should_stop() or "timeout", pend, k)
            remaining.append(pend)
        return remaining

    def _outcome(self, outcome: str, k: int, reason: str) -> dict:
        return {
            "method": "induction",
            "outcome": outcome,
            "k": k,
            "seconds": round(self.run.prove_spent, 3),
            "assumed": [p.name for p in self.proved],
            "reason": reason,
        }

    def _give_up(self, why: str, pend: _Pending, k: int) -> None:
        self.active = False
        budget = self.run.prove_budget
        limit = f" (--prove-timeout {budget:g} s)" if why == "timeout" and budget is not None else ""
        pend.proof = self._outcome("unknown", k, f"{why}{limit} during the {k}-step induction")
        pend.cti = None

    def _add_lemma(self, prop: Property) -> None:
        self.proved.append(prop)
        for t in self.states:
            self.solver.add(goal(prop, t).safe())

    def _counterexample(self, m: z3.ModelRef, k: int) -> InductionCounterexample:
        raw = _decode(self.sym, m, self.states[: k + 1], self.steps[:k])
        actions = tuple(Action(name, tuple(params.items())) for name, params in raw.actions)
        return InductionCounterexample(k, tuple(raw.states), actions)


def _decode(sym: SymbolicModel, m: z3.ModelRef, path: list[SymState], steps) -> RawTrace:
    """The readable states and (action name, parameters) of a path in a Z3 model."""
    space = sym.space
    states = [space.decode(m, s) for s in path]
    actions = [sym.decode_action(space.num(m, act), space.num(m, epoch)) for act, epoch in steps]
    return RawTrace(states, actions)


def _replay_config(config: ModelConfig, raws) -> ModelConfig:
    """The smallest bounded configuration in which unbounded-mode traces replay: their
    epochs and record ids stay within it, and its bounds only ever disable actions."""
    epochs = max(max(ps.next_leader_epoch for ps in raw.states) for raw in raws)
    records = max(max(ps.next_record_id for ps in raw.states) for raw in raws)
    return config.with_changes(max_leader_epoch=max(epochs - 1, 0), max_records=max(records, 1))


def _replay(model: Model, raw: RawTrace, name: str) -> Path:
    """Encode a decoded Z3 path with the explicit model and re-execute it step by step."""
    try:
        states = [model.encode(ps) for ps in raw.states]
    except ValueError as e:
        raise Z3EngineBug(f"engine bug: the Z3 path for {name} has a state the explicit model cannot hold: {e}") from e
    actions = []
    for i, (act_name, params) in enumerate(raw.actions, start=1):
        index = model.catalogue.lookup(act_name, params)
        if index is None:
            raise Z3EngineBug(f"engine bug: the Z3 path for {name} names an action the model lacks at step {i}")
        actions.append(index)
    try:
        check_packed_replay(model, states, actions)
    except TraceError as e:
        raise Z3EngineBug(
            f"engine bug: the Z3 counterexample for {name} does not replay on the explicit model: {e}; "
            "the symbolic and explicit transitions disagree"
        ) from e
    return Path(tuple(states), tuple(actions))
