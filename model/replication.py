"""The Kafka replication model: what ``check-model`` checks, at one configuration.

The protocol of ``kafka.py`` (the published specification's machine, and the Kafka
features on top of it unless ``core``), whose scalar engines run the hand-fused
successor function of ``fused.py``.
"""

from __future__ import annotations

from .config import ModelConfig
from .fused import make_successors
from .kafka import KAFKA
from .machine import Model, fingerprint


class ReplicationModel(Model):
    """One partition's replication protocol for one configuration."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(KAFKA, config.validate().require_bounded(), fused=make_successors)



__all__ = ["ReplicationModel", "fingerprint"]
