"""Kafka words for steps and violations: what an engineer reads in a counterexample.

Each action family declares its own narration (``model/controller.py`` and the other
family modules), each property its explanation (``properties/explain.py``); this module
looks them up for a step or a trace.
"""

from __future__ import annotations

from isrcheck.model import Action, Record
from isrcheck.model.kafka import KAFKA
from isrcheck.model.words import fmt_isr, fmt_log
from isrcheck.properties import BY_NAME
from isrcheck.properties.explain import Diagnosis

from .trace import Trace

__all__ = ["Diagnosis", "describe_step", "diagnose", "explain_violation", "explain_witness", "fmt_isr", "fmt_log",
           "lost_records", "short_step"]


def describe_step(before, action: Action, after) -> str:
    """One sentence for one step, in the words of Kafka's operators."""
    return _words("describe", before, action, after)


def short_step(before, action: Action, after) -> str:
    """A few words for one step, for a timeline where describe_step's sentence is too long."""
    return _words("short", before, action, after)


def _words(which: str, before, action: Action, after) -> str:
    try:
        fam = KAFKA.by_name(action.name)
    except KeyError:
        return str(action)
    return getattr(fam, which)(before, after, action.args) or str(action)


def diagnose(trace: Trace) -> Diagnosis:
    """What a trace's last state shows (the property's explanation), else the property's doc."""
    prop = BY_NAME.get(trace.property_name or "")
    found = prop.explain([s.state for s in trace.steps]) if prop is not None and prop.explain else None
    return found or Diagnosis(trace.doc)


def explain_violation(trace: Trace) -> str:
    """What is wrong in the last state of a counterexample, naming the records and brokers."""
    return diagnose(trace).text


def explain_witness(trace: Trace) -> str:
    """What a witness's last state shows, naming the records and brokers where it can."""
    return diagnose(trace).text


def lost_records(trace: Trace) -> tuple[Record, ...]:
    return diagnose(trace).records
