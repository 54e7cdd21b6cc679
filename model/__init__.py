"""State machines of Kafka partition replication: configuration, encoding, actions."""

from .actions import Action, Catalogue
from .config import ACKS, REVISIONS, ConfigError, ModelConfig, Revision
from .replication import ReplicationModel, fingerprint
from .state import PartitionState, QuorumState, Record, ReplicaState, Request

__all__ = [
    "ACKS",
    "REVISIONS",
    "Action",
    "Catalogue",
    "ConfigError",
    "ModelConfig",
    "PartitionState",
    "QuorumState",
    "Record",
    "ReplicaState",
    "ReplicationModel",
    "Request",
    "Revision",
    "fingerprint",
]
