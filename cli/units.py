"""Numbers, durations and sizes as users type them: ``3``; ``90s``, ``5m``, ``1h30m``; ``512M``, ``2G``.

Only the ASCII digits 0-9 count (Python's ``float`` would read ``٣`` or ``２`` too),
and both are bounded, so that a typo of twenty nines is refused rather than read as
"no limit" or overflowing to infinity.
"""

from __future__ import annotations

import re

MAX_DURATION = 366 * 24 * 3600.0  # seconds: a year; no check is meant to run longer
MAX_SIZE = 1 << 50  # bytes: 1024T (1 PiB), far above any machine's memory
_NUMBER = r"[0-9]{1,30}(?:\.[0-9]{1,30})?"
_DIGITS = re.compile(r"[0-9]{1,30}")
_NEGATIVE = re.compile(r"-[0-9]{1,30}")
_DURATION = re.compile(rf"({_NUMBER})(ms|s|m|h)")
_SIZE = re.compile(rf"({_NUMBER})\s*([kmgt]?)(i?b?)", re.IGNORECASE)


def whole_number(text: str, wrong: str = "not a valid integer") -> int:
    """An integer written in the digits 0-9 alone, at most 30 of them, as Kafka's tools read
    one: no sign, no space, no other script's digits (``int`` takes ``+3``, `` 3``, ``3\\n``,
    ``-0`` and ``٣``, each a typo or a paste, never meant). ValueError in one line otherwise:
    ``-N is negative``, or ``'TEXT' is WRONG`` with what to write instead."""
    if _DIGITS.fullmatch(text):
        return int(text)
    if _NEGATIVE.fullmatch(text) and int(text):  # -0 is no negative number: a typo, as +3 is
        raise ValueError(f"{text} is negative")
    raise ValueError(f"{text[:40]!r} is {wrong}{digits_hint(text)}")


def digits_hint(text: str) -> str:
    """What is wrong with a number's text, as ``': use the digits 0-9'``; '' when nothing says more."""
    digits = "".join(ch for ch in text if ch.isdigit())
    if not digits.isascii():
        return ": use the digits 0-9"
    if len(digits) > 30:
        return ": more than 30 digits"
    if digits and not text.isdigit() and set(text) - set(digits) <= set("+- \t\n\r\f\v"):
        return ": the digits 0-9 alone, without a sign or spaces"
    return ""


def parse_duration(text: str) -> float:
    """Seconds in a duration; a bare number is seconds. Raises ValueError."""
    text = text.strip().lower()
    if re.fullmatch(_NUMBER, text):
        total = float(text)
    else:
        pos, total = 0, 0.0
        for m in _DURATION.finditer(text):
            if m.start() != pos:
                break
            total += float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]
            pos = m.end()
        if pos != len(text) or pos == 0:
            total = 0.0
    if total <= 0:
        raise ValueError(f"{text!r} is not a duration such as 90s, 5m or 1h30m")
    if total > MAX_DURATION:
        raise ValueError(f"{text!r} is longer than a year (8784h)")
    return total


def parse_size(text: str) -> int:
    """Bytes in a size; K, M, G, T are binary multiples. Raises ValueError."""
    m = _SIZE.fullmatch(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a size such as 512M or 2G")
    size = int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " "))
    if size > MAX_SIZE:
        raise ValueError(f"{text!r} is more than 1024T")
    if size < 1:
        raise ValueError(f"{text!r} is less than one byte")
    return size
