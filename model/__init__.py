"""State machines of Kafka partition replication: configuration, schema, actions, encodings."""

from .actions import Action, Catalogue
from .config import ACKS, REVISIONS, ConfigError, ModelConfig, Revision
from .fields import PartitionState, ReplicaState
from .replication import ReplicationModel, fingerprint
from .state import QuorumState, Record, Request

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
