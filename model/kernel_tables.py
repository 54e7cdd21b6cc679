"""The vector kernel's tables: a denser state key than the packed int, derived from the schema.

Why a second encoding: the packed int of ``layout.py`` spends bits on combinations no
reachable state has (67 bits for the core at rf 3), and NumPy wants keys that fit one
uint64 word. Here a state is a few small integers, its components:

* one **slot** per replica: an index into the table of the combinations of the
  replica's fields that the protocol's facts allow (``Protocol.facts``: a believed
  leader is in its cached ISR, a crashed broker holds nothing in memory...), with its
  log an index into the table of logs whose record ids are distinct;
* one component per shared field: its code, and for the request sequence an index into
  the table of sequences of the requests the request facts allow.

A table per replica field (``field[name][slot]``) gives the views their values; the
combined index of a replica's field codes (a mixed radix, the log most significant)
maps back to a slot (``slot_of``), -1 where no slot has it. An action that leaves the
tables raises ``KernelDomainError``: a fact that stopped holding fails loudly.
``kernel_keys.py`` packs the components into keys.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernel_keys import BitFields, KernelUnsupported, MixedRadix
from .logs import LogTable, all_logs, arrays_bytes, count_logs, table_bytes
from .ops import NONE
from .trace import TraceOps, Tracer
from .schema import LogKind, RequestsKind

MAX_TABLE_BYTES = 256 << 20  # tables beyond this are not worth building (the state space would be huge)
COMBINE_BLOCK = 1 << 20  # a replica's combinations filtered by the facts this many at a time
DENSE_SLOTS = 1 << 24  # combined indices up to this map to slots by a table, beyond by a search


class KernelTables:
    """Every table of the vector kernel for one model (one protocol at one configuration)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.schema = model.schema
        self.config = cfg = model.config
        self.protocol = model.protocol
        self.rf = rf = cfg.rf
        self.n_isr = 1 << rf
        self.kafka_like = any(isinstance(f.kind, LogKind) for f in self.schema.fields)
        if self.kafka_like:
            self.n_epochs = cfg.max_leader_epoch + 1
            self.max_epoch, self.max_records, self.log_size = cfg.max_leader_epoch, cfg.max_records, cfg.logsize
            self.log_table = self._log_table(model)
            self.logs = self.log_table.arrays(model.tick)
        else:
            self.n_epochs = 1
            self.logs = None
        bits = max(rf, getattr(cfg, "max_records", 0) or 0, 1)
        self.popcount = np.array([bin(m).count("1") for m in range(1 << bits)], dtype=np.int64)
        self.x = TraceOps(Tracer(self))  # over plain arrays: the facts over combinations
        self._replicas()
        self._requests()
        self.bound: dict[str, int] = {f"slot{r}": self.n_slots for r in range(rf)}
        self.shared_view: dict[str, np.ndarray] = {}  # per shared field, its view value per code
        for f in self.schema.shared_fields:
            if f.kept(cfg):
                self.bound[f.name] = self.n_rq if isinstance(f.kind, RequestsKind) else f.kind.size(cfg)
                codes = np.arange(self.bound[f.name], dtype=np.int64)
                self.shared_view[f.name] = codes if not f.kind.number else f.kind.view_of_code(codes)
        self.names = list(self.bound)
        self.codec = self._codec()
        self.words = self.codec.words
        self.key_bits = self.codec.bits

    def _log_table(self, model: Any) -> LogTable:
        """The logs whose record ids are distinct (all, if the protocol says nothing of ids),
        counted first: tables too big for the kernel, or for the memory the run's limit
        leaves, are refused before they are built (the scalar kernel may then run)."""
        cfg, ne = self.config, self.n_epochs
        distinct = ne if self.protocol.distinct_log_ids(cfg) else None
        codes = cfg.max_records * ne
        n = count_logs(codes, cfg.logsize, distinct)
        if 8 * n * n > MAX_TABLE_BYTES:
            raise KernelUnsupported(f"the vector kernel's log tables would take {8 * n * n >> 20:,} MiB")
        need = table_bytes(n, codes, ne, cfg.logsize) + arrays_bytes(n, codes, ne, cfg.logsize)
        room = model.room()
        if room is not None and need > room:
            raise KernelUnsupported(
                f"the vector kernel's log tables would take {need >> 20:,} MiB, more than the memory limit leaves"
            )
        logs = all_logs(codes, cfg.logsize, distinct, model.tick)
        return LogTable(logs, cfg.max_records, ne, cfg.logsize, model.tick)

    def _codec(self) -> BitFields | MixedRadix:
        """Bit fields where they fit one word (fastest to read), else one mixed-radix word,
        else bit fields in as many words as they need (up to four)."""
        fields = BitFields(self.bound)
        if fields.words == 1:
            return fields
        try:
            return MixedRadix(self.bound)
        except KernelUnsupported:
            return fields

    # ---- a replica's combinations -------------------------------------------------------------------
    def _domain(self, f) -> np.ndarray:
        if isinstance(f.kind, LogKind):
            return np.arange(self.logs.n, dtype=np.int64)
        return f.kind.view_of_code(np.arange(f.kind.size(self.config), dtype=np.int64))

    def _replicas(self) -> None:
        """Every combination of a replica's kept fields that the facts allow, built field by
        field (each fact applied once its fields are there, so intermediate tables stay small)."""
        cfg, schema = self.config, self.schema
        kept = [f for f in schema.replica_fields if f.kept(cfg)]
        constants = {f.name: schema.init_view(f) for f in schema.replica_fields if not f.kept(cfg)}
        columns: dict[str, np.ndarray] = {}
        pending = list(self.protocol.facts)
        for f in kept:
            present = set(columns) | set(constants) | {f.name}
            ready = [fact for fact in pending if set(fact.fields) <= present]
            pending = [fact for fact in pending if fact not in ready]
            columns = self._combined_with(columns, f.name, self._domain(f), ready, constants, len(kept))
        self.replica_fields = kept
        self.field = columns
        self.n_slots = n = len(columns[kept[0].name]) if kept else 1
        self.unit: dict[str, int] = {}
        self.radix: dict[str, int] = {}
        unit = 1
        for f in reversed(kept):
            self.radix[f.name] = len(self._domain(f))
            self.unit[f.name] = unit
            unit *= self.radix[f.name]
        self.combined_size = unit
        self.code = {f.name: self.code_of(f.name, columns[f.name]) for f in kept}  # per field, its code per slot
        self.COMBINED = self.combined(columns) + np.zeros(n, dtype=np.int64)
        if unit <= DENSE_SLOTS:
            # one entry past the end holds -1: slot_of clips every index outside to it (-1 wraps there)
            self.slot_table: np.ndarray | None = np.full(unit + 1, -1, dtype=np.int64)
            self.slot_table[self.COMBINED] = np.arange(n, dtype=np.int64)
        else:
            self.slot_table = None
            assert (np.diff(self.COMBINED) > 0).all(), "combinations come in combined-index order"

    def _combined_with(self, columns: dict[str, np.ndarray], name: str, dom: np.ndarray, facts: list,
                       constants: dict[str, Any], fields: int) -> dict[str, np.ndarray]:
        """The combinations so far times a field's domain, less those the facts now ready reject,
        a block of rows at a time: the product before the facts filter it is never held whole
        (at rf 5 with three records and epochs to 4 it took 930 MiB before the combinations were
        refused, measured), and combinations past the tables' bound or the memory left are refused
        as soon as they are found, in combined-index order as before."""
        n = len(next(iter(columns.values()))) if columns else 1
        step = max(1, COMBINE_BLOCK // len(dom))
        room = self.model.room()
        out: dict[str, list[np.ndarray]] = {k: [] for k in [*columns, name]}
        found = 0
        for lo in range(0, max(n, 1), step):  # once where nothing is left: the columns stay, empty
            block = {k: np.repeat(v[lo : lo + step], len(dom)) for k, v in columns.items()}
            block[name] = np.tile(dom, min(step, n - lo))
            for fact in facts:
                ok = fact.holds({**constants, **block}, self.x, self.config)
                if not isinstance(ok, np.ndarray):
                    ok = np.full(len(block[name]), bool(ok))
                block = {k: v[ok] for k, v in block.items()}
            found += len(block[name])
            held = found * 8 * (fields + 2)
            if held > MAX_TABLE_BYTES:
                raise KernelUnsupported(f"a replica's combinations would take more than {MAX_TABLE_BYTES >> 20} MiB")
            if room is not None and held > room:
                raise KernelUnsupported(
                    f"a replica's combinations would take {held >> 20:,} MiB or more, more than the memory limit leaves"
                )
            for k, v in block.items():
                out[k].append(v)
            self.model.tick()
        return {k: np.concatenate(v) for k, v in out.items()}

    def code_of(self, name: str, view: Any) -> Any:
        f = self.schema.field(name)
        return view if not f.kind.number else f.kind.code_of_view(view)

    def combined(self, values: dict[str, Any]) -> Any:
        """The combined index of a replica's field values (views)."""
        total: Any = 0
        for f in self.replica_fields:
            total = total + self.code_of(f.name, values[f.name]) * self.unit[f.name]
        return total

    def slot_of(self, combined: Any) -> Any:
        """The slot of combined indices, -1 where no allowed combination has it."""
        combined = np.asarray(combined, dtype=np.int64)
        if self.slot_table is not None:
            return self.slot_table.take(np.clip(combined, -1, self.combined_size))
        pos = np.searchsorted(self.COMBINED, combined)
        pos = np.minimum(pos, self.n_slots - 1)
        return np.where(self.COMBINED[pos] == combined, pos, -1)

    # ---- the request sequence -------------------------------------------------------------------------
    def _requests(self) -> None:
        self.requests_field = next(
            (f for f in self.schema.shared_fields if f.kept(self.config) and isinstance(f.kind, RequestsKind)), None
        )
        self.n_rq = 1
        if self.requests_field is None:
            return
        rf, me, n_isr = self.rf, self.max_epoch, self.n_isr
        pairs = [(ld, isr) for ld in range(-1, rf) for isr in range(n_isr)]
        v = {"leader": np.array([p[0] for p in pairs]), "isr": np.array([p[1] for p in pairs])}
        ok = np.ones(len(pairs), dtype=bool)
        for fact in self.protocol.request_facts:
            ok &= np.asarray(fact.holds(v, self.x, self.config), dtype=bool)
        self.slots = [p for p, keep in zip(pairs, ok) if keep]
        self.slot_index = {s: i for i, s in enumerate(self.slots)}
        self.n_slot = n_slot = len(self.slots)  # also the "absent" marker in RQ_SLOT
        self.SLOT_LD = np.array([s[0] for s in self.slots] + [NONE], dtype=np.int64)
        self.SLOT_ISR = np.array([s[1] for s in self.slots] + [0], dtype=np.int64)
        self.REQUEST_SLOT_OF = np.full((rf + 1) * n_isr, -1, dtype=np.int64)
        for i, (ld, isr) in enumerate(self.slots):
            self.REQUEST_SLOT_OF[(ld + 1) * n_isr + isr] = i
        self.rq_pow = np.array([n_slot**k for k in range(me + 3)], dtype=np.int64)
        self.rq_off = np.concatenate([[0], np.cumsum(self.rq_pow)]).astype(np.int64)  # first index of length k
        self.n_rq = n_rq = int(self.rq_off[me + 2])
        if n_rq * (me + 4) * 8 > MAX_TABLE_BYTES:
            raise KernelUnsupported(f"the table of request sequences would take {n_rq * (me + 4) * 8 >> 20:,} MiB "
                                    f"(a power of --max-leader-epoch: a lower bound makes it smaller)")
        rq_slot = np.full((n_rq, me + 1), n_slot, dtype=np.int64)
        rq_nle = np.zeros(n_rq, dtype=np.int64)
        for k in range(me + 2):
            lo, n = int(self.rq_off[k]), int(self.rq_pow[k])
            digits = np.arange(n, dtype=np.int64)
            rq_nle[lo : lo + n] = k
            for i in range(k):
                rq_slot[lo : lo + n, i] = digits % n_slot
                digits //= n_slot
        self.RQ_SLOT = rq_slot
        self.RQ_SLOT_T = [np.ascontiguousarray(rq_slot[:, e]) for e in range(me + 1)]
        self.RQ_NLE = rq_nle
        last = rq_slot[np.arange(n_rq), np.maximum(rq_nle - 1, 0)]
        self.RQ_QLEAD = np.where(rq_nle > 0, self.SLOT_LD[last], NONE)
