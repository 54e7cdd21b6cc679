"""The Trace type: a replayed path in readable form, and the replay that guards it.

A trace is never shown or saved unless it re-executes on the model step by step:
the initial state is the model's, and each step's state is exactly what its named
action produces from the previous state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from isrcheck import MODEL_VERSION, __version__
from isrcheck.model import Action, ModelConfig, PartitionState, ReplicationModel
from isrcheck.model.state import EncodeError
from isrcheck.properties import verdict


class TraceError(ValueError):
    """A trace that cannot be read or does not replay; the message is one line, and short:
    what it quotes from a file (an action's name, a value) is cut at ``MAX_MESSAGE``."""

    MAX_MESSAGE = 600

    def __init__(self, message: str) -> None:
        cut = self.MAX_MESSAGE
        super().__init__(message if len(message) <= cut else message[: cut - 3] + "...")


@dataclass(frozen=True, slots=True)
class Step:
    action: Action | None  # None for the initial state
    state: PartitionState


@dataclass(frozen=True, slots=True)
class Trace:
    config: ModelConfig
    steps: tuple[Step, ...]
    property_name: str | None = None
    expectation: str | None = None  # "always": a counterexample; "sometimes": a witness
    doc: str = ""
    model_version: str = MODEL_VERSION
    written_by: str = __version__  # the isrcheck release that wrote it: kept, so that a re-encoding matches
    # a lasso (a liveness counterexample) goes on for ever: ``loop_action`` leads from the last
    # state back to steps[loop]; without one the run stays at its last state (loop: its index)
    loop: int | None = None
    loop_action: Action | None = None

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def is_counterexample(self) -> bool:
        return verdict.is_counterexample(self.expectation)


def trace_from_path(
    model: ReplicationModel,
    states: tuple[int, ...] | list[int],
    actions: tuple[int, ...] | list[int],
    property_name: str | None = None,
    expectation: str | None = None,
    doc: str = "",
    loop: int | None = None,
    loop_action: int | None = None,
) -> Trace:
    """Decode a path of packed states (checked to replay first), a lasso's with its loop."""
    check_packed_replay(model, states, actions)
    check_loop(model, states, loop, loop_action)
    like = Trace(model.config, (), property_name, expectation, doc, loop=loop,
                 loop_action=None if loop_action is None else model.describe(loop_action))
    return _decoded(model, states, actions, like)


def check_loop(model: ReplicationModel, states, loop: int | None, loop_action: int | None) -> None:
    """A lasso's loop: it starts at a state of the trace, and its closing step leads from the
    last state back there (without one, the loop is the last state's own: it stays)."""
    if loop is None:
        if loop_action is not None:
            raise TraceError("the trace has a loop action but no loop")
        return
    if not 0 <= loop < len(states):
        raise TraceError(f"loop {loop} is not the index of one of its {len(states)} states")
    if loop_action is None:
        if loop != len(states) - 1:
            raise TraceError(f"loop {loop} has no closing action: only the last state may loop on itself")
    elif model.step(states[-1], loop_action) != states[loop]:
        raise TraceError(f"the loop's closing step ({model.describe(loop_action)}) does not lead back to state {loop}")


def _decoded(model: ReplicationModel, states, actions, like: Trace) -> Trace:
    """``like`` with its steps the model's decoding of a path that replays."""
    steps = [Step(None, model.decode(states[0]))]
    for a, s in zip(actions, states[1:]):
        steps.append(Step(model.describe(a), model.decode(s)))
    return replace(like, config=model.config, steps=tuple(steps))


def check_packed_replay(model: ReplicationModel, states, actions) -> None:
    if len(states) != len(actions) + 1:
        raise TraceError("a trace needs one more state than actions")
    if states[0] not in model.init_states():
        raise TraceError("state 0 is not an initial state of the model")
    for i, (a, s) in enumerate(zip(actions, states[1:]), start=1):
        if model.step(states[i - 1], a) != s:
            raise TraceError(f"step {i} ({model.describe(a)}) does not lead to the recorded state")


def replay(trace: Trace, model: ReplicationModel | None = None) -> list[int]:
    """Re-execute a readable trace on its model; return the packed states or raise TraceError."""
    return _replay_path(trace, model or ReplicationModel(trace.config))[0]


def replayed(trace: Trace, model: ReplicationModel) -> tuple[Trace, list[int]]:
    """The trace as the model itself decodes the path it replays, and its packed states:
    what is shown and re-encoded comes from the model, not from the file read."""
    packed, actions = _replay_path(trace, model)
    closing = None
    if trace.loop_action is not None:
        closing = model.catalogue.lookup(trace.loop_action.name, trace.loop_action.args)
        if closing is None:
            raise TraceError(f"the loop: unknown action {trace.loop_action}")
    check_loop(model, packed, trace.loop, closing)
    loop_action = None if closing is None else model.describe(closing)
    return _decoded(model, packed, actions, replace(trace, loop_action=loop_action)), packed


def _replay_path(trace: Trace, model: ReplicationModel) -> tuple[list[int], list[int]]:
    if trace.model_version != MODEL_VERSION:
        raise TraceError(
            f"trace was written by model version {trace.model_version}, this isrcheck has {MODEL_VERSION}"
        )
    packed = []
    for i, step in enumerate(trace.steps):
        try:
            packed.append(model.encode(step.state))
        except EncodeError as e:
            raise TraceError(f"state {i}: {e}") from None
    actions = []
    for i, step in enumerate(trace.steps[1:], start=1):
        if step.action is None:
            raise TraceError(f"state {i} has no action")
        index = model.catalogue.lookup(step.action.name, step.action.args)
        if index is None:
            raise TraceError(f"state {i}: unknown action {step.action}")
        actions.append(index)
    if not trace.steps:
        raise TraceError("the trace has no states")
    if trace.steps[0].action is not None:
        raise TraceError("state 0 must have no action")
    check_packed_replay(model, packed, actions)
    return packed, actions
