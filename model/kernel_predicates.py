"""Batch forms of the properties' predicates, over a decoded batch (``Components``).

Each one must agree with the property's compiled scalar predicate (``properties/
compiled.py``) and its readable reference on every state, reachable or not: the
tests compare them on whole state spaces and on random representable states. They
are built from the kernel's tables, so a property costs a few look-ups and masks per
state.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .kernel_batch import Components
from .kernel_tables import CoreTables

BatchPredicate = Callable[[Components], np.ndarray]
CORE_PROPERTIES = ("weak-isr", "strong-isr", "leader-in-isr", "log-matching")


def batch_predicate(T: CoreTables, name: str) -> BatchPredicate | None:
    """The batch predicate of a property (True where it holds), or None when there is none
    (the core machine has no history fields, so no predicate reads them there)."""
    builders: dict[str, Callable[[], BatchPredicate]] = {
        "weak-isr": lambda: _isr(T, strong=False),
        "strong-isr": lambda: _isr(T, strong=True),
        "leader-in-isr": lambda: _leader_in_isr,
        "log-matching": lambda: _log_matching(T),
        "committed-survive": lambda: _history_in_leader(T, "committed"),
        "acked-survive": lambda: _history_in_leader(T, "acked"),
        "read-within-hwm": lambda: _history_in_leader(T, "readable"),
        "record-committed": lambda: lambda c: c.committed != 0,
        "consumer-reads": lambda: lambda c: c.readable != 0,
        "leader-failover": lambda: _leader_failover(T),
        "write-after-crash": lambda: _write_after_crash,
    }
    build = builders.get(name)
    if build is None or (not T.kafka and name not in CORE_PROPERTIES):
        return None
    return build()


def _isr(T: CoreTables, strong: bool) -> BatchPredicate:
    bad = T.__dict__.get("_isr_disagreement")
    if bad is None:
        bad = T.__dict__["_isr_disagreement"] = T.isr_disagreement()
    n_logs, rf = T.n_logs, T.rf
    crashes = T.n_life > 1

    def disagreements(c: Components) -> list[list[np.ndarray]]:
        """[r1][r2]: r1 leads and r2's log lacks its records below the HWM (shared by both ISR forms)."""
        d = c.__dict__.get("disagree")
        if d is None:
            logs = [T.L_LOG[x] for x in c.loc]
            d = [[bad[r1][c.loc[r1] * n_logs + logs[r2]] for r2 in range(rf)] for r1 in range(rf)]
            c.__dict__["disagree"] = d
        return d

    def holds(c: Components) -> np.ndarray:
        d = disagreements(c)
        broken = np.zeros(len(c.qisr), dtype=bool)
        if strong and crashes:  # the last ISR member stays electable while down (``electable``)
            last = (c.qisr & (c.qisr - 1)) == 0
        for r1 in range(rf):
            members = c.qisr if strong else c.isr[r1]
            for r2 in range(rf):
                counted = (members >> r2 & 1) != 0
                if crashes:  # crashed members are not elected
                    counted &= (c.life[r2] == 0) | last if strong else c.life[r2] == 0
                broken |= d[r1][r2] & counted
        return ~broken

    return holds


def _leader_in_isr(c: Components) -> np.ndarray:
    q = c.qlead.astype(np.int64)
    return (q < 0) | ((c.qisr >> np.maximum(q, 0) & 1) != 0)


def _log_matching(T: CoreTables) -> BatchPredicate:
    pairs = [(a, b) for a in range(T.rf) for b in range(a + 1, T.rf)]

    def holds(c: Components) -> np.ndarray:
        ok = np.ones(len(c.qisr), dtype=bool)
        logs = [T.L_LOG[x] for x in c.loc]
        for a, b in pairs:
            h = np.minimum(c.hw[a], c.hw[b]).astype(np.int64)
            pa = T.PREFIX_AT[logs[a] * T.ls1 + h]
            ok &= (h == 0) | ((pa >= 0) & (pa == T.PREFIX_AT[logs[b] * T.ls1 + h]))
        return ok

    return holds


def true_leader(T: CoreTables, c: Components) -> tuple[np.ndarray, np.ndarray]:
    """(has one, its local) per state: the quorum leader when it believes it leads in the quorum's epoch."""
    d = c.__dict__.get("true_leader")
    if d is None:
        q = c.qlead.astype(np.int64)
        qep = c.nle.astype(np.int64) - 1
        loc = np.zeros(len(q), dtype=np.int64)
        for r in range(T.rf):
            loc = np.where(q == r, c.loc[r], loc)
        has = (q >= 0) & (T.L_LD[loc] == q) & (T.L_EP[loc] == qep)
        d = c.__dict__["true_leader"] = (has, loc)
    return d


def _history_in_leader(T: CoreTables, field: str) -> BatchPredicate:
    """Every record id of a history field is in the true leader's log (ids sit at one offset)."""

    def holds(c: Components) -> np.ndarray:
        ids = getattr(c, field)
        has, loc = true_leader(T, c)
        return (ids == 0) | ~has | ((ids & ~T.L_LOG_IDS[loc]) == 0)

    return holds


def _leader_failover(T: CoreTables) -> BatchPredicate:
    ne, ls = T.max_epoch + 1, T.log_size

    def holds(c: Components) -> np.ndarray:
        has, loc = true_leader(T, c)
        q = c.qlead.astype(np.int64)
        found = np.zeros(len(q), dtype=bool)
        for o in range(ls):
            code = T.LOG_REC_AT[T.L_LOG[loc], o]
            rid, epoch = np.maximum(code, 0) // ne, np.maximum(code, 0) % ne
            writer = T.SLOT_LD[T.RQ_SLOT[c.rq, epoch].astype(np.int64)]
            found |= (code >= 0) & ((c.committed >> rid & 1) != 0) & (writer != q)
        return has & (c.committed != 0) & found

    return holds


def _write_after_crash(c: Components) -> np.ndarray:
    found = np.zeros(len(c.qisr), dtype=bool)
    for life in c.life:
        found |= (life != 0) & ((c.acked >> np.maximum(life - 1, 0)) != 0)
    return (c.acked != 0) & found
