"""Real Kafka clusters for isrcheck: fetch a release's jars, start a cluster on 127.0.0.1,
replay a model trace on it and compare what the brokers do with what the model says.

This package knows the model and the traces; nothing in ``model``, ``properties`` or
``checker`` imports it.
"""


class ClusterError(Exception):
    """A real cluster could not be had or driven as asked; the message is one line."""
