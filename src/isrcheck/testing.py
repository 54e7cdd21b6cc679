"""Hypothesis strategies over the model, for property tests in a user's own code.

Someone writing a Kafka client, a broker change or a monitoring rule can use the model
as an oracle: draw a configuration, draw a run of the replication protocol under it,
and assert what their code must make of every state on the way. Hypothesis shrinks a
failing run as it shrinks any example: fewer steps, and at each step an action the model
lists earlier.

    from hypothesis import given
    from isrcheck.testing import model_for, runs

    @given(runs(model_for(rf=3, min_isr=2)))
    def test_a_live_leader_s_lag_is_never_negative(run):
        for state in run.states:
            assert all(len(r.log) >= r.hw for i, r in enumerate(state.replicas) if r.leader == i)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model import releases
from isrcheck.properties import BY_NAME
from isrcheck.traces import Trace, trace_from_path

__all__ = ["Run", "configs", "model_for", "runs", "holds"]


@lru_cache(maxsize=32)
def _model(config: ModelConfig) -> ReplicationModel:
    return ReplicationModel(config)


def model_for(config: ModelConfig | None = None, **settings: Any) -> ReplicationModel:
    """The model of a configuration (``ModelConfig``'s field names: ``rf=3, min_isr=2``),
    validated and built once per configuration."""
    config = (config or ModelConfig()).with_changes(**settings).validate()
    return _model(config)


def configs(rf: st.SearchStrategy[int] | None = None, **fixed: Any) -> st.SearchStrategy[ModelConfig]:
    """Small valid Kafka configurations (their models build in well under a second): rf 1 to 3,
    acks, min.insync.replicas up to rf, clean or unclean election, 0 to 2 crashes (some
    losing their disk), a release from 0.10 to the newest, one or two records. ``fixed``:
    field values every configuration keeps."""

    @st.composite
    def draw(draw_: Any) -> ModelConfig:
        n = draw_(rf if rf is not None else st.integers(1, 3))
        crashes = draw_(st.integers(0, 2))
        values = dict(
            rf=n, acks=draw_(st.sampled_from(["all", "1", "0"])), min_isr=draw_(st.integers(1, n)),
            unclean_election=draw_(st.booleans()), crashes=crashes, disk_loss=draw_(st.integers(0, crashes)),
            kafka_version=draw_(st.sampled_from(releases.VERSIONS)), max_records=draw_(st.integers(1, 2)),
            max_leader_epoch=2,
        )
        values.update(fixed)
        values.setdefault("log_size", values["max_records"])
        return ModelConfig(**values).validate()

    return draw()


@dataclass(frozen=True)
class Run:
    """A run of the protocol: the packed states and actions, and the states as records."""

    model: ReplicationModel
    packed: tuple[int, ...]
    actions: tuple[int, ...]

    @property
    def states(self) -> list[Any]:
        """Each state as the model's records (``replicas``, each with ``log``, ``hwm``, ...)."""
        return [self.model.decode(s) for s in self.packed]

    @property
    def steps(self) -> list[str]:
        """Each action as the traces name it, such as ``BrokerCrash(replica=2)``."""
        return [str(self.model.describe(a)) for a in self.actions]

    def trace(self) -> Trace:
        """The run as a trace: ``traces.itf.save`` writes it, ``view-trace`` shows it."""
        return trace_from_path(self.model, self.packed, self.actions)


def runs(model: ReplicationModel, max_steps: int = 40) -> st.SearchStrategy[Run]:
    """Runs of up to ``max_steps`` actions from the initial state, each step one of the actions
    enabled there (a run ends early where none is). Hypothesis shrinks a run to fewer steps and
    to the actions the model lists first."""

    @st.composite
    def draw(draw_: Any) -> Run:
        s = model.init_states()[0]
        states, actions = [s], []
        for _ in range(draw_(st.integers(0, max_steps))):
            enabled = model.successors(s)
            if not enabled:
                break
            a, s = draw_(st.sampled_from(enabled))
            states.append(s)
            actions.append(a)
        return Run(model, tuple(states), tuple(actions))

    return draw()


def holds(model: ReplicationModel, prop: str, state: int) -> bool:
    """Whether a state property (``committed-survive``, ``acked-survive``, ...) holds in a packed state."""
    return bool(BY_NAME[prop].compile(model)(state))
