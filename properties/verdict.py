"""What decides a property and what its verdict is: one place for every engine and report.

An ``always`` property must hold in every reachable state: a state where it fails
decides it (violated, with that state's trace as the counterexample). A ``sometimes``
property is a witness that the bounded space is not vacuous: a state where it holds
decides it (it holds, with that state's trace as the example). A search that explored
the whole bounded space without a deciding state decides the rest the other way; a
proof for every depth decides an ``always`` property ``proved`` and a ``sometimes``
one never happening.
"""

from __future__ import annotations

from typing import Any, Literal

ALWAYS, SOMETIMES = "always", "sometimes"
Status = Literal["holds", "violated", "proved", "unknown"]


def always(prop: Any) -> bool:
    """``prop`` must hold everywhere (else it is a witness); engines keep this per property
    and compare it with a predicate's value: a state decides ``prop`` where they differ."""
    return prop.expectation == ALWAYS


def decides(prop: Any, holds: bool) -> bool:
    """A state where the predicate has this value decides the property."""
    return holds != always(prop)


def status(prop: Any, decided: bool, exhausted: bool) -> Status:
    """The verdict of a search: a deciding state found, or the whole bounded space explored."""
    if decided:
        return "violated" if always(prop) else "holds"
    if exhausted:
        return "holds" if always(prop) else "violated"
    return "unknown"


def proved(prop: Any) -> Status:
    """The verdict of a proof that no deciding state is reachable at any depth."""
    return "proved" if always(prop) else "violated"


def outcome(prop: Any, status_: str) -> str:
    """The verdict as users read it: holds, proved or violated for an ``always`` property;
    witnessed or never for a ``sometimes`` one; unknown while the search is incomplete."""
    if status_ == "unknown":
        return "unknown"
    if always(prop):
        return status_
    return "witnessed" if status_ == "holds" else "never"


def good(prop: Any, status_: str) -> bool:
    """The verdict a build wants: an ``always`` property holds, a ``sometimes`` one is
    witnessed, and a question (``Property.question``) is answered either way."""
    said = outcome(prop, status_)
    return said in ("holds", "proved", "witnessed") or (said == "never" and getattr(prop, "question", False))


def is_counterexample(expectation: str | None) -> bool:
    """A deciding trace of a property of this expectation shows it broken."""
    return expectation == ALWAYS


def trace_kind(expectation: str | None) -> str:
    """What a deciding trace is called: a counterexample or a witness."""
    return "counterexample" if is_counterexample(expectation) else "witness"


def holds_within_bounds(prop: Any, status_: str) -> bool:
    """An ``always`` property that holds (or is proved): what CI asks of a durability claim."""
    return always(prop) and status_ in ("holds", "proved")


def broken(prop: Any, status_: str) -> bool:
    """An ``always`` property found violated: a counterexample to show."""
    return always(prop) and status_ == "violated"
