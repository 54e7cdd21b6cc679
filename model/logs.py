"""Replica logs as indices into a table of logs, with every log operation as a look-up.

Both explicit representations number the logs a replica can hold: the scalar packed
int every sequence of records up to the log size (``layout.py``), the vector kernel
only those with distinct record ids (``kernel_tables.py``, a reachable-state fact).
``LogTable`` builds, for such a list, what the actions and properties ask of a log
(``ops.py``): its length, the record at an offset, the log after an append or a
truncation, the ids below an offset, where an epoch starts, and the two truncation
points of the protocol revisions. A record is coded ``id * epochs + epoch``.

Tables are flat lists (NumPy arrays with ``arrays()``), indexed ``log * width + arg``;
-1 marks what does not exist (an offset past the end, a log outside the table).
"""

from __future__ import annotations

from itertools import product
from typing import Any


def first_nonmatching_offset(leader_log: tuple[int, ...], follower_log: tuple[int, ...]) -> int:
    """KIP-279 truncation point: one past the largest offset where both logs hold the same record."""
    if not leader_log:
        return 0
    best = -1
    for o, rec in enumerate(follower_log):
        if o < len(leader_log) and leader_log[o] == rec:
            best = o
    return best + 1


def kip101_lookup(leader_log: tuple[int, ...], epoch: int, n_epochs: int) -> int:
    """KIP-101 OffsetForLeaderEpoch answer, or -1 where the follower falls back to its HWM."""
    if not leader_log:
        return -1
    if leader_log[-1] % n_epochs == epoch:
        return len(leader_log)
    for o, rec in enumerate(leader_log):
        if rec % n_epochs > epoch:
            return o
    return -1


def all_logs(n_codes: int, log_size: int, distinct_ids: int | None = None) -> list[tuple[int, ...]]:
    """Every sequence of record codes up to the log size, shortest first; with
    ``distinct_ids`` (the number of epochs) only those whose record ids are distinct."""
    logs: list[tuple[int, ...]] = [()]
    for length in range(1, log_size + 1):
        logs.extend(product(range(n_codes), repeat=length))
    if distinct_ids:
        logs = [g for g in logs if len({c // distinct_ids for c in g}) == len(g)]
    return logs


def _id_mask(codes, n_epochs: int) -> int:
    mask = 0
    for c in codes:
        mask |= 1 << (c // n_epochs)
    return mask


class LogTable:
    """Look-up tables of one list of logs (see the module docstring)."""

    def __init__(self, logs: list[tuple[int, ...]], n_records: int, n_epochs: int, log_size: int) -> None:
        self.logs = logs
        self.index = {g: i for i, g in enumerate(logs)}
        self.n = n = len(logs)
        self.n_epochs = ne = n_epochs
        self.n_codes = nc = n_records * n_epochs
        self.log_size = ls = log_size
        self.width = ls + 1
        self.length = [len(g) for g in logs]
        self.code_at = [g[o] if o < len(g) else -1 for g in logs for o in range(ls + 1)]
        self.append = [self.index.get(g + (c,), -1) if len(g) < ls else -1 for g in logs for c in range(nc)]
        self.prefix = [self.index.get(g[:t], -1) if t <= len(g) else -1 for g in logs for t in range(ls + 1)]
        self.ids = [_id_mask(g, ne) for g in logs]
        self.ids_below = [_id_mask(g[: min(k, len(g))], ne) for g in logs for k in range(ls + 1)]
        self.last_epoch = [g[-1] % ne if g else -1 for g in logs]
        self.epoch_start = [
            next((o for o, c in enumerate(g) if c % ne >= e), len(g)) for g in logs for e in range(ne)
        ]
        self.epoch_end = [kip101_lookup(g, e, ne) for g in logs for e in range(ne)]
        self._matching: dict[int, int] = {}
        self.matching_size = n * n

    def matching(self, leader: int, follower: int) -> int:
        """KIP-279's truncation point of a follower log against a leader log (cached)."""
        key = leader * self.n + follower
        v = self._matching.get(key)
        if v is None:
            v = self._matching[key] = first_nonmatching_offset(self.logs[leader], self.logs[follower])
        return v

    def matching_table(self) -> list[int]:
        """``matching`` for every pair, ``[leader * n + follower]``."""
        logs = self.logs
        return [first_nonmatching_offset(a, b) for a in logs for b in logs]

    def arrays(self) -> "LogArrays":
        return LogArrays(self)


class LogArrays:
    """The same tables as int64 NumPy arrays, for batches of log indices (NumPy is imported
    here only: the scalar engines never need it)."""

    def __init__(self, t: LogTable) -> None:
        import numpy as np

        def arr(values: Any) -> Any:
            return np.asarray(values, dtype=np.int64)

        self.table = t
        # int64 scalars: index arithmetic with them never overflows the small types of a batch
        self.n, self.n_epochs, self.n_codes, self.log_size, self.width = (
            np.int64(v) for v in (t.n, t.n_epochs, t.n_codes, t.log_size, t.width)
        )
        self.length = arr(t.length)
        self.code_at = arr(t.code_at)
        self.append = arr(t.append)
        self.prefix = arr(t.prefix)
        self.ids = arr(t.ids)
        self.ids_below = arr(t.ids_below)
        self.last_epoch = arr(t.last_epoch)
        self.epoch_start = arr(t.epoch_start)
        self.epoch_end = arr(t.epoch_end)
        self.matching = arr(t.matching_table())
