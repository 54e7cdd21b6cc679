"""Small formatting helpers for the Kafka words that narrations and views share."""

from __future__ import annotations

from typing import Any


def fmt_isr(isr: frozenset[int]) -> str:
    return "{" + ", ".join(str(r) for r in sorted(isr)) + "}"


def elr_change(before: Any, after: Any) -> str:
    """'', or the controller's new eligible leader replicas (KIP-966) in a narration's words."""
    if before.elr == after.elr:
        return ""
    return f"; eligible leader replicas (ELR) {fmt_isr(after.elr)}"


def fmt_log(ps: Any, r: int) -> str:
    return "[" + " ".join(str(x) for x in ps.replicas[r].log) + "]"


def fmt_ids(ids: frozenset[int]) -> str:
    return ", ".join(f"m{i}" for i in sorted(ids))
