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

The number of logs grows as ``(records * epochs) ** log size``: tens of millions at
bounds the command line allows. So ``count_logs`` and ``table_bytes`` size the tables
before any is built (a run refuses what its memory limit cannot hold), and building
calls ``tick`` every few thousand logs (a run stops at its time or memory limit, or
on Ctrl-C, while its tables are being built).
"""

from __future__ import annotations

from math import perm
from typing import Any, Callable

Tick = Callable[[], None]  # raises to stop table building: see ``Model.tick``
CHUNK = 1 << 14  # logs built between two ticks (some tenths of a second at most)


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


def no_tick() -> None:
    """Table building without limits to watch."""


def all_logs(
    n_codes: int, log_size: int, distinct_ids: int | None = None, tick: Tick = no_tick
) -> list[tuple[int, ...]]:
    """Every sequence of record codes up to the log size, shortest first, each length in
    lexicographic order; with ``distinct_ids`` (the number of epochs) only those whose
    record ids are distinct, never listing the others (there can be a million times more)."""
    logs: list[tuple[int, ...]] = [()]
    level: list[tuple[int, ...]] = [()]
    step = max(1, CHUNK // n_codes)
    every = range(n_codes)
    for _ in range(log_size):
        longer: list[tuple[int, ...]] = []
        for lo in range(0, len(level), step):
            if distinct_ids:
                longer += [
                    g + (c,) for g in level[lo : lo + step] for used in (_id_mask(g, distinct_ids),)
                    for c in every if not used >> (c // distinct_ids) & 1
                ]
            else:
                longer += [g + (c,) for g in level[lo : lo + step] for c in every]
            tick()
        logs += longer
        level = longer
    return logs


def count_logs(n_codes: int, log_size: int, distinct_ids: int | None = None) -> int:
    """How many logs ``all_logs`` lists, without listing them."""
    if not distinct_ids:
        return sum(n_codes**k for k in range(log_size + 1))
    ids = n_codes // distinct_ids
    return sum(perm(ids, k) * distinct_ids**k for k in range(log_size + 1))


def _entries_per_log(n_codes: int, n_epochs: int, log_size: int) -> int:
    """List entries a ``LogTable`` keeps per log: length, ids and last epoch; code_at,
    prefix and ids_below (width each); append (a code each); epoch start and end."""
    return 3 + 3 * (log_size + 1) + n_codes + 2 * n_epochs


def table_bytes(n_logs: int, n_codes: int, n_epochs: int, log_size: int) -> int:
    """Resident bytes of a ``LogTable`` of ``n_logs`` logs: 8 per list entry (the small ints
    are shared), and per log its tuple, its index (an int object), its entry in the
    list of logs and in the index dict (measured within 10% at 70 thousand to 3 million logs)."""
    per_log = 8 * _entries_per_log(n_codes, n_epochs, log_size) + 16 * ((40 + 8 * log_size + 15) // 16) + 32 + 72
    return n_logs * per_log


def arrays_bytes(n_logs: int, n_codes: int, n_epochs: int, log_size: int) -> int:
    """Bytes of ``LogArrays`` (beside the table they copy): 8 per entry, and the matching
    table of every pair of logs."""
    return 8 * n_logs * _entries_per_log(n_codes, n_epochs, log_size) + 8 * n_logs * n_logs


def _id_mask(codes, n_epochs: int) -> int:
    mask = 0
    for c in codes:
        mask |= 1 << (c // n_epochs)
    return mask


class LogTable:
    """Look-up tables of one list of logs (see the module docstring)."""

    def __init__(
        self, logs: list[tuple[int, ...]], n_records: int, n_epochs: int, log_size: int, tick: Tick = no_tick
    ) -> None:
        self.logs = logs
        self.n = n = len(logs)
        self.index: dict[tuple[int, ...], int] = {}
        for lo in range(0, n, CHUNK):
            self.index.update(zip(logs[lo : lo + CHUNK], range(lo, min(n, lo + CHUNK))))
            tick()
        self.n_epochs = n_epochs
        self.n_codes = n_records * n_epochs
        self.log_size = log_size
        self.width = log_size + 1
        self.length: list[int] = []
        self.code_at: list[int] = []
        self.append: list[int] = []
        self.prefix: list[int] = []
        self.ids: list[int] = []
        self.ids_below: list[int] = []
        self.last_epoch: list[int] = []
        self.epoch_start: list[int] = []
        self.epoch_end: list[int] = []
        for lo in range(0, n, CHUNK):
            self._extend(logs[lo : lo + CHUNK])
            tick()
        self._matching: dict[int, int] = {}
        self.matching_size = n * n

    def _extend(self, logs: list[tuple[int, ...]]) -> None:
        """Every table's rows for these logs, appended."""
        ne, nc, ls, index = self.n_epochs, self.n_codes, self.log_size, self.index
        self.length += [len(g) for g in logs]
        self.code_at += [g[o] if o < len(g) else -1 for g in logs for o in range(ls + 1)]
        self.append += [index.get(g + (c,), -1) if len(g) < ls else -1 for g in logs for c in range(nc)]
        self.prefix += [index.get(g[:t], -1) if t <= len(g) else -1 for g in logs for t in range(ls + 1)]
        self.ids += [_id_mask(g, ne) for g in logs]
        self.ids_below += [_id_mask(g[: min(k, len(g))], ne) for g in logs for k in range(ls + 1)]
        self.last_epoch += [g[-1] % ne if g else -1 for g in logs]
        self.epoch_start += [
            next((o for o, c in enumerate(g) if c % ne >= e), len(g)) for g in logs for e in range(ne)
        ]
        self.epoch_end += [kip101_lookup(g, e, ne) for g in logs for e in range(ne)]

    def matching(self, leader: int, follower: int) -> int:
        """KIP-279's truncation point of a follower log against a leader log (cached)."""
        key = leader * self.n + follower
        v = self._matching.get(key)
        if v is None:
            v = self._matching[key] = first_nonmatching_offset(self.logs[leader], self.logs[follower])
        return v

    def arrays(self, tick: Tick = no_tick) -> "LogArrays":
        return LogArrays(self, tick)


class LogArrays:
    """The same tables as int64 NumPy arrays, for batches of log indices (NumPy is imported
    here only: the scalar engines never need it)."""

    def __init__(self, t: LogTable, tick: Tick = no_tick) -> None:
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
        # ``matching`` for every pair, ``[leader * n + follower]``, a few leaders at a time
        self.matching = np.empty(t.n * t.n, dtype=np.int64)
        step = max(1, CHUNK // max(1, t.n))
        for lo in range(0, t.n, step):
            hi = min(t.n, lo + step)
            self.matching[lo * t.n : hi * t.n] = [
                first_nonmatching_offset(a, b) for a in t.logs[lo:hi] for b in t.logs
            ]
            tick()
