"""Named predicates over partition states, each with its expectation and a one-line doc."""

from .catalog import BY_NAME, NAMES, PROPERTIES, Predicate, Property, UnknownProperty, select

__all__ = ["BY_NAME", "NAMES", "PROPERTIES", "Predicate", "Property", "UnknownProperty", "select"]
