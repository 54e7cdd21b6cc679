"""The model's leader epochs read as the real cluster's.

Every leader and ISR change of the model's controller uses one leader epoch; a real
controller may use more (it elected a broker whose crash it had not yet seen, then failed
it) or fewer (it took two of the model's steps in one change, or, on KRaft from metadata
version 3.6, it shrinks the ISR without a new epoch). The first time a model epoch is
seen on the real cluster, the real epoch is recorded; later comparisons of leader epochs,
and of the epochs records were written in, go through that correspondence, so that one
renumbering is reported once, at the step where it arose, and not at every step after.
"""

from __future__ import annotations

from typing import Any

from .observe import matches


class EpochMap:
    def __init__(self) -> None:
        self.real: dict[int, int | None] = {}  # model epoch -> real epoch; None: merged into a later step

    def expected(self, model: int) -> int:
        """The real epoch that ``model`` would have if nothing renumbered since the last epoch seen."""
        known = [e for e, r in self.real.items() if e < model and r is not None]
        base_model, base_real = (max(known), self.real[max(known)]) if known else (-1, -1)
        skipped = sum(1 for e, r in self.real.items() if base_model < e < model and r is None)
        return base_real + (model - base_model) - skipped

    def agrees(self, name: str, want: Any, seen: Any) -> bool:
        if name == "leader epoch" and want is not None:
            if self.real.get(want) is not None:
                return seen == self.real[want]
            newest = max((r for r in self.real.values() if r is not None), default=-1)
            return seen is not None and seen > newest  # a new epoch, numbered as the real controller chose
        if name.startswith("log of") and want is not None:
            want = [(rid, self.real.get(e) if self.real.get(e) is not None else self.expected(e)) for rid, e in want]
        return matches(name, want, seen)

    def record(self, model: int, real: int) -> bool:
        """Note that the real cluster is at ``real`` where the model is at ``model``; False if
        that is not the epoch expected (the real controller made more or fewer changes)."""
        if model in self.real:
            return True
        expected = self.expected(model)
        self.real[model] = real
        return real == expected

    def skip(self, model: int) -> None:
        self.real.setdefault(model, None)
