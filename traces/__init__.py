"""Traces: the readable, replayed form of a path; ITF JSON; Kafka-words narration."""

from .trace import Step, Trace, TraceError, replay, trace_from_path

__all__ = ["Step", "Trace", "TraceError", "replay", "trace_from_path"]
