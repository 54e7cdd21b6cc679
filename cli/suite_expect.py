"""A suite's expected verdicts: the words allowed for each kind of property, read once."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from isrcheck.cli.common import UsageFailure
from isrcheck.properties import BY_NAME, verdict

ALWAYS_WORDS = "holds, violated, violated-within N"
SOMETIMES_WORDS = "witnessed (or holds), witnessed-within N, never (or violated)"
_VERDICT = re.compile(r"(holds|violated|witnessed|never)(?:-within\s+([0-9]+))?")
MAX_WITHIN = 1_000_000  # states: far beyond any trace a bounded search returns


class SuiteError(UsageFailure):
    """A malformed suite: one line, ``FILE:LINE: what is wrong; what is allowed``."""


@dataclass(frozen=True)
class Expected:
    """An expected verdict: ``status`` is the engine's word (holds|violated), ``within`` a bound in states."""

    text: str
    status: str
    within: int | None
    line: int


def read_expected(prop: str, text: str, path: Any, line: int) -> Expected:
    """The verdict that ``text`` (at line ``line`` of the suite ``path``) expects of ``prop``;
    a SuiteError saying what is allowed for that kind of property where it is no such verdict."""
    always = verdict.always(BY_NAME[prop])
    m = _VERDICT.fullmatch(text.strip())
    word, within = (m.group(1), m.group(2)) if m else ("", None)
    allowed = ALWAYS_WORDS if always else SOMETIMES_WORDS
    ok = bool(m) and (
        (always and word in ("holds", "violated") and not (within and word == "holds"))
        or (not always and (within is None or word == "witnessed"))
    )
    if not ok:
        kind = "an always" if always else "a sometimes"
        raise SuiteError(f"{path}:{line}: expect {prop} = {text!r}: {prop} is {kind} property; allowed: {allowed}")
    if within is not None and (len(within) > 7 or not 1 <= int(within) <= MAX_WITHIN):
        raise SuiteError(f"{path}:{line}: expect {prop} = {text!r}: N in {word}-within N counts states, "
                         f"from 1 to {MAX_WITHIN:,}; allowed: {allowed}")
    status = {"witnessed": "holds", "never": "violated"}.get(word, word)
    return Expected(text.strip(), status, int(within) if within else None, line)
