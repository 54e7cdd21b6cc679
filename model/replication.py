"""The Kafka replication model: what ``check-model`` checks, at one configuration.

The protocol of ``kafka.py`` (the published specification's machine, and the Kafka
features on top of it unless ``core``), whose scalar engines run the hand-fused
successor function of ``fused.py``.
"""

from __future__ import annotations

from .config import ModelConfig
from .fused import make_successors
from .kafka import KAFKA
from .machine import BuildLimits, Model, fingerprint


class ReplicationModel(Model):
    """One partition's replication protocol for one configuration; ``limits``: a run's (``Model``)."""

    def __init__(self, config: ModelConfig, limits: BuildLimits | None = None) -> None:
        super().__init__(KAFKA, config.validate().require_bounded(), fused=make_successors, limits=limits)



__all__ = ["ReplicationModel", "fingerprint"]
