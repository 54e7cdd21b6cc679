"""Durations and sizes as users type them: ``90s``, ``5m``, ``1h30m``; ``512M``, ``2G``."""

from __future__ import annotations

import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)", re.IGNORECASE)


def parse_duration(text: str) -> float:
    """Seconds in a duration; a bare number is seconds. Raises ValueError."""
    text = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]
        pos = m.end()
    if pos != len(text) or pos == 0 or total <= 0:
        raise ValueError(f"{text!r} is not a duration such as 90s, 5m or 1h30m")
    return total


def parse_size(text: str) -> int:
    """Bytes in a size; K, M, G, T are binary multiples. Raises ValueError."""
    m = _SIZE.fullmatch(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a size such as 512M or 2G")
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " "))
