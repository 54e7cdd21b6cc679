"""Two toy protocols with exact state counts: the engines' conformance suite runs them all.

They are written as the Kafka model is (``fields.py``, ``actions.py``): fields, families
whose generators yield guards and assign updates, properties with a definition each;
every engine derives its form from them. Their reachable spaces are small enough to
count by hand (``tests/test_engine_conformance.py`` pins the counts):

* ``COUNTERS``: two shared counters ``a`` and ``b``, each raised by one up to ``limit``:
  (limit + 1)**2 states, the deepest ``2 * limit + 1`` states from the initial one;
* ``TOKENS``: one token among ``rf`` interchangeable brokers: a broker grabs it when
  nobody holds it (and is then marked visited) and releases it: 2**rf + rf * 2**(rf - 1)
  states, 2 * rf + 1 of them up to symmetry, the deepest 2 * rf + 1 states deep.

They live in the package so that Spark's executors can import them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from .actions import BROKER
from .machine import Model
from .protocol import Protocol
from .schema import NONE, Broker, Count, Field


@dataclass(frozen=True, slots=True)
class ToyConfig:
    """The constants of a toy: its brokers and its counters' bound. The other attributes are
    the ones the engines read of any configuration (no logs, no epochs, no records)."""

    rf: int = 3
    limit: int = 3
    max_records: int = 0
    log_size: int = 0
    max_leader_epoch: int = 0
    core: bool = True
    fairness: str = "weak"  # the liveness toys' (LOOP, and TOKENS' all-visited-eventually)
    finish_anytime: bool = True  # LOOP: Finish is enabled in both of its states, not only at bit 0

    @property
    def unbounded(self) -> bool:
        return False

    @property
    def logsize(self) -> int:
        return self.log_size

    def validate(self) -> "ToyConfig":
        return self

    def require_bounded(self) -> "ToyConfig":
        return self

    def with_changes(self, **changes: Any) -> "ToyConfig":
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        return f"toy, rf {self.rf}, limit {self.limit}"


COUNTERS = Protocol("toy-counters", (
    Field("a", Count(lambda c: c.limit), False, lambda c: 0, "a", "the first counter"),
    Field("b", Count(lambda c: c.limit), False, lambda c: 0, "b", "the second counter"),
))


@COUNTERS.family(short=lambda before, after, p: "a + 1")
def IncA(s, x):
    yield s.a < s.cfg.limit
    s.a = s.a + 1


@COUNTERS.family(short=lambda before, after, p: "b + 1")
def IncB(s, x):
    yield s.b < s.cfg.limit
    s.b = s.b + 1


TOKENS = Protocol("toy-tokens", (
    Field("visited", Count(lambda c: 1), True, lambda c: 0, "visited", "1 once the broker has held the token"),
    Field("holder", Broker(), False, lambda c: None, "holder", "the broker holding the token"),
))


@TOKENS.family(params=(BROKER("broker"),), short=lambda before, after, p: f"{p['broker']} grabs")
def Grab(s, x, broker):
    yield s.holder == NONE
    s.holder = broker
    s.visited[broker] = 1


@TOKENS.family(params=(BROKER("broker"),), short=lambda before, after, p: f"{p['broker']} releases")
def Release(s, x, broker):
    yield s.holder == broker
    s.holder = NONE


@dataclass(frozen=True)
class ToyProperty:
    """A toy's property: the same record shape the engines read of the Kafka model's."""

    name: str
    expectation: str
    holds: Any
    doc: str = ""

    trigger: Any = None  # a liveness toy: where ``holds`` must eventually follow (checker/liveness.py)
    beyond = None
    hopeless = None

    @property
    def liveness(self) -> bool:
        return self.trigger is not None

    @property
    def graph(self) -> bool:  # state properties are checked state by state, liveness over the graph
        return self.liveness

    def applies(self, config: Any) -> bool:
        return True

    def compile(self, model: Any) -> Any:
        from .ops_int import state_predicate

        return state_predicate(model.layout, self.holds)


COUNTER_PROPERTIES = (
    ToyProperty("sum-bounded", "always", lambda s, x: s.a + s.b <= 2 * s.cfg.limit),
    ToyProperty("a-below-limit", "always", lambda s, x: s.a < s.cfg.limit),
    ToyProperty("both-full", "sometimes", lambda s, x: x.and_(s.a == s.cfg.limit, s.b == s.cfg.limit)),
)
TOKEN_PROPERTIES = (
    ToyProperty("holder-visited", "always",
                lambda s, x: x.all_(x.implies(s.holder == r, s.visited[r] == 1) for r in range(s.cfg.rf))),
    ToyProperty("one-visited", "always", lambda s, x: x.count(s.visited[r] == 1 for r in range(s.cfg.rf)) < 2),
    ToyProperty("all-visited", "sometimes", lambda s, x: x.all_(s.visited[r] == 1 for r in range(s.cfg.rf))),
)
TOKEN_LIVENESS = ToyProperty(  # a livelock under weak fairness: one broker grabs and releases for ever
    "all-visit-eventually", "always", lambda s, x: x.all_(s.visited[r] == 1 for r in range(s.cfg.rf)),
    trigger=lambda s, x: True,
)
COUNTER_BY_NAME = {p.name: p for p in COUNTER_PROPERTIES}
TOKEN_BY_NAME = {p.name: p for p in TOKEN_PROPERTIES}


LOOP = Protocol("toy-loop", (
    Field("bit", Count(lambda c: 1), False, lambda c: 0, "bit", "flipped by Flip for ever"),
    Field("done", Count(lambda c: 1), False, lambda c: 0, "done", "1 once Finish ran"),
))


@LOOP.family(short=lambda before, after, p: "flip")
def Flip(s, x):
    yield s.done == 0
    s.bit = 1 - s.bit


@LOOP.family(short=lambda before, after, p: "finish")
def Finish(s, x):
    yield s.done == 0
    if not s.cfg.finish_anytime:
        yield s.bit == 0
    s.done = 1


LOOP_FINISHES = ToyProperty("finishes", "always", lambda s, x: s.done == 1, trigger=lambda s, x: True)


def loop_model(config: ToyConfig) -> Model:
    """Two states that Flip alternates between, and Finish, which leaves them for good:
    weak fairness forces Finish when it stays enabled (``finish_anytime``), and lets the
    flipping go on for ever when Flip disables it every other step."""
    return Model(LOOP, config)


def counters_model(config: ToyConfig) -> Model:
    return Model(COUNTERS, config)


def tokens_model(config: ToyConfig) -> Model:
    return Model(TOKENS, config)
