"""The action catalogue: every parameterised action of a configuration, by index.

An action index names one action with all its parameters, so that a successor is
fully identified by ``(action index, next state)`` and a path is a list of small
ints that replay re-executes. Names follow the published specification.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import ModelConfig


@dataclass(frozen=True, slots=True)
class Action:
    name: str
    params: tuple[tuple[str, int], ...]

    @property
    def args(self) -> dict[str, int]:
        return dict(self.params)

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.name}({inner})"


# Families in catalogue order, each with its parameter names. Feature families are
# present only when their feature is on, so the core catalogue is the spec's.
CORE_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ControllerElectLeader", ("leader",)),
    ("ControllerShrinkIsr", ("replica",)),
    ("BecomeLeader", ("replica", "epoch")),
    ("BecomeFollower", ("replica", "leader", "epoch")),
    ("LeaderWrite", ("replica",)),
    ("LeaderIncHighWatermark", ("leader",)),
    ("LeaderShrinkIsr", ("leader", "follower")),
    ("LeaderExpandIsr", ("leader", "follower")),
    ("FollowerFetch", ("follower", "leader")),
)


def families(config: ModelConfig) -> list[tuple[str, tuple[str, ...]]]:
    fams = list(CORE_FAMILIES)
    if not config.core:
        fams.append(("ControllerFailover", ("leader",)))
        if config.unclean_election:
            fams.append(("ControllerUncleanElect", ("leader",)))
        if config.crashes:
            fams.append(("BrokerCrash", ("replica",)))
            if config.disk_loss:
                fams.append(("BrokerCrashDiskLoss", ("replica",)))
            fams.append(("BrokerRestart", ("replica",)))
    return fams


class Catalogue:
    """Index <-> Action for one configuration; ``base[name]`` is a family's first index."""

    def __init__(self, config: ModelConfig) -> None:
        ranges = {
            "replica": config.rf,
            "leader": config.rf,
            "follower": config.rf,
            "epoch": config.max_leader_epoch + 1,
        }
        self.actions: list[Action] = []
        self.base: dict[str, int] = {}
        for name, params in families(config):
            self.base[name] = len(self.actions)
            self._expand(name, params, ranges, ())
        self.index = {a: i for i, a in enumerate(self.actions)}

    def _expand(self, name: str, params: tuple[str, ...], ranges: dict[str, int], bound: tuple) -> None:
        if len(bound) == len(params):
            self.actions.append(Action(name, tuple(zip(params, bound))))
            return
        for v in range(ranges[params[len(bound)]]):
            self._expand(name, params, ranges, bound + (v,))

    def __len__(self) -> int:
        return len(self.actions)

    def __getitem__(self, index: int) -> Action:
        return self.actions[index]

    def lookup(self, name: str, params: dict[str, int]) -> int | None:
        """The index of a named action, or None when this configuration has no such action."""
        for i in range(self.base.get(name, len(self.actions)), len(self.actions)):
            a = self.actions[i]
            if a.name != name:
                break
            if a.args == params:
                return i
        return None
