"""isrcheck: a model checker for Kafka-style partition replication."""

__version__ = "0.1.0"

# Bumped whenever the meaning of a saved trace or checkpoint changes (state encoding,
# action catalogue, protocol semantics), so old files are refused instead of misread.
MODEL_VERSION = "4"  # 4: the configuration gained fairness, traces a loop (lassos); 3: restarts

