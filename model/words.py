"""Small formatting helpers for the Kafka words that narrations and views share."""

from __future__ import annotations

from typing import Any


def fmt_isr(isr: frozenset[int]) -> str:
    return "{" + ", ".join(str(r) for r in sorted(isr)) + "}"


def fmt_log(ps: Any, r: int) -> str:
    return "[" + " ".join(str(x) for x in ps.replicas[r].log) + "]"


def fmt_ids(ids: frozenset[int]) -> str:
    return ", ".join(f"m{i}" for i in sorted(ids))
