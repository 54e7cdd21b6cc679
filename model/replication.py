"""The Kafka replication model: what ``check-model`` checks, at one configuration.

The protocol of ``kafka.py`` (the published specification's machine, and the Kafka
features on top of it unless ``core``), whose scalar engines run the hand-fused
successor function of ``fused.py``.
"""

from __future__ import annotations

from functools import lru_cache

from .config import ConfigError, ModelConfig
from .fused import make_successors
from .kafka import KAFKA
from .machine import BuildLimits, Model, fingerprint
from .now import MAX_DEPTH, check_now, now_text, parse_now, rebase, search_config, shown_in


class ReplicationModel(Model):
    """One partition's replication protocol for one configuration; ``limits``: a run's (``Model``)."""

    def __init__(self, config: ModelConfig, limits: BuildLimits | None = None) -> None:
        super().__init__(KAFKA, config.validate().require_bounded(), fused=make_successors, limits=limits)
        if config.now is not None:
            check_now(config)

    def init_states(self) -> list[int]:
        """A new partition's state, or the states its ``now`` shows (``now.py``), rebased, in
        this model's packing (sorted: the same run each time)."""
        if self.config.now is None:
            return super().init_states()
        if self._starts is None:
            found = _starts(self.config)
            if not found:
                raise ConfigError(f"no state of the model shows {self.config.now} (within {MAX_DEPTH} steps)")
            self._starts = sorted({self.encode(state) for state in found})
        return self._starts

    _starts: list[int] | None = None


@lru_cache(maxsize=8)  # the command line and the model ask for the same search
def _shown(config: ModelConfig, now: str) -> tuple:
    searched = ReplicationModel(search_config(config))
    return tuple(r for r in (rebase(state, searched.schema) for state in shown_in(searched, parse_now(now))) if r)


def _starts(config: ModelConfig) -> tuple:
    return _shown(search_config(config), config.now)


def with_now(config: ModelConfig, partitions) -> ModelConfig:
    """The configuration that starts from the partitions' states now: its leader epoch bound
    raised, where needed, to hold the epochs the start states hold."""
    now = now_text(partitions)
    check_now(config.with_changes(now=now))
    found = _shown(search_config(config), now)
    if not found:
        raise ConfigError(f"no state of the model shows {now}; the release checked "
                          f"({config.kafka_version}) cannot reach it within {MAX_DEPTH} steps")
    needed = max(len(state.requests) for state in found) - 1
    return config.with_changes(now=now, max_leader_epoch=max(config.max_leader_epoch, needed))


__all__ = ["ReplicationModel", "fingerprint", "with_now"]
