"""How the vector kernel packs a state's components into uint64 keys: two codecs.

A state is a few small integers (``kernel_tables.py``: one local per replica, the Kafka
model's per-replica life and leadership start, the next record id, the quorum ISR, the
request sequence, the Kafka counters and histories). A codec turns arrays of those into
keys, reads them back, applies an action's changes to a batch of keys, and relabels keys
for symmetry:

* ``BitFields``: each component a bit field of its own, never split across words; one
  word when they fit, else two. The core machine's keys.
* ``MixedRadix``: the whole state one number in a mixed radix, each replica's (local,
  life, leadership start) taken together among the combinations that can exist. Denser:
  the Kafka main job needs 74 bits as bit fields and fits one word this way, so its
  visited set is exact. Every change is an addition of ``(new - old) * unit``, as in the
  scalar model's packed int; uint64 arithmetic wraps, and the sum lands in range.

The Kafka model uses ``MixedRadix`` wherever the product of the radices fits 64 bits,
``BitFields`` otherwise; both are exact inverses of ``encode`` (the tests convert every
reachable state both ways).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

U64 = np.uint64
MAX_WORDS = 2


class KernelUnsupported(ValueError):
    """The vector kernel cannot run this configuration; the message says why (one line)."""


class KernelDomainError(AssertionError):
    """An enabled action produced a value outside the kernel's tables (a kernel or model bug)."""


@dataclass(frozen=True, slots=True)
class KeyField:
    name: str
    word: int
    shift: int
    bits: int

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1


def bits_for(max_value: int) -> int:
    return max(1, int(max_value).bit_length())


def pack_fields(widths: list[tuple[str, int]]) -> list[KeyField]:
    """Assign fields to 64-bit words in order, never splitting one; KernelUnsupported past MAX_WORDS."""
    fields, word, shift = [], 0, 0
    for name, bits in widths:
        if shift + bits > 64:
            word, shift = word + 1, 0
        fields.append(KeyField(name, word, shift, bits))
        shift += bits
    if word >= MAX_WORDS:
        total = sum(b for _, b in widths)
        raise KernelUnsupported(f"a state needs {total} bits, more than the vector kernel's {64 * MAX_WORDS}")
    return fields


def _replica_of(name: str) -> tuple[str, int]:
    """("local", 2) of "local2"; ("nid", -1) of a shared component."""
    head = name.rstrip("0123456789")
    return (head, int(name[len(head):])) if head != name else (name, -1)


class BitFields:
    """Each component its own bit field: ``bounds`` gives each one's number of values, in key order."""

    def __init__(self, bounds: dict[str, int]) -> None:
        self.fields = pack_fields([(name, bits_for(n - 1)) for name, n in bounds.items()])
        self.field = {f.name: f for f in self.fields}
        self.words = self.fields[-1].word + 1
        self.bits = sum(f.bits for f in self.fields)

    def get(self, keys: np.ndarray, name: str, cache: dict) -> np.ndarray:
        f = self.field[name]
        return (keys[f.word].view(np.int64) >> f.shift) & f.mask

    def encode(self, values: dict, n: int) -> np.ndarray:
        keys = np.zeros((self.words, n), dtype=U64)
        for f in self.fields:
            keys[f.word] |= np.asarray(values[f.name]).astype(U64) << U64(f.shift)
        return keys

    def update(self, keys: np.ndarray, changes: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        """Apply (component, old values, new values) to keys (words, m) in place."""
        for name, old, value in changes:
            f = self.field[name]
            keys[f.word] ^= ((old ^ value).astype(U64)) << U64(f.shift)

    def images(self, keys: np.ndarray, tables, rf: int, replica_names: list[str]) -> Iterator[np.ndarray]:
        """Keys relabelled by each permutation after the identity."""
        perms, local_t, isr_t, rq_t = tables
        moved = {f"{name}{r}" for name in ("local", *replica_names) for r in range(rf)} | {"qisr", "rq"}
        kept = np.zeros(self.words, dtype=U64)
        for f in self.fields:
            if f.name not in moved:
                kept[f.word] |= U64(f.mask << f.shift)
        fixed = keys & kept[:, None]
        small = {name: self.get(keys, name, {}).astype(np.int32 if self.field[name].bits > 8 else np.uint8)
                 for name in moved}
        for k in range(1, len(perms)):
            p = perms[k]
            out = fixed.copy()

            def put(name: str, values: np.ndarray) -> None:
                f = self.field[name]
                out[f.word] |= values.astype(U64) << U64(f.shift)

            put("qisr", isr_t[k][small["qisr"]])
            put("rq", rq_t[k][small["rq"]])
            for i in range(rf):
                put(f"local{p[i]}", local_t[k][small[f"local{i}"]])
                for name in replica_names:
                    put(f"{name}{p[i]}", small[f"{name}{i}"])
            yield out


class MixedRadix:
    """One word: replica slots (a valid (local, life, since) combination each) and the shared
    components as digits of one mixed-radix number. KernelUnsupported if it exceeds 64 bits."""

    words = 1

    def __init__(self, bounds: dict[str, int], replicas: np.ndarray, rf: int) -> None:
        """``replicas``: every (local, life, since) combination a replica may be in, shape (n, 3)."""
        self.rf = rf
        self.n_local, self.n_life, self.n_since = (bounds["local0"], bounds.get("life0", 1), bounds.get("since0", 1))
        self.replicas = replicas.astype(np.int64)
        self.slot_of = np.full(self.n_local * self.n_life * self.n_since, -1, dtype=np.int64)
        self.slot_of[self._combined(*self.replicas.T)] = np.arange(len(replicas))
        digits = [(f"slot{r}", len(replicas)) for r in range(rf)]
        digits += [(name, n) for name, n in bounds.items() if _replica_of(name)[1] < 0]
        self.radix = dict(digits)
        self.unit: dict[str, int] = {}
        total = 1
        for name, n in digits:
            self.unit[name] = total
            total *= n
        if total > 1 << 64:
            raise KernelUnsupported(f"a state needs {total.bit_length()} bits in a mixed radix")
        self.bits = (total - 1).bit_length()
        self._relabelled: np.ndarray | None = None  # built on the first relabelling

    def _combined(self, local, life, since):
        return (np.asarray(local) * self.n_life + life) * self.n_since + since

    def _digit(self, keys: np.ndarray, name: str) -> np.ndarray:
        return ((keys[0] // U64(self.unit[name])) % U64(self.radix[name])).astype(np.int64)

    def get(self, keys: np.ndarray, name: str, cache: dict) -> np.ndarray:
        head, r = _replica_of(name)
        if r < 0:
            return self._digit(keys, name)
        slot = cache.get(r)
        if slot is None:
            slot = cache[r] = self._digit(keys, f"slot{r}")
        return self.replicas[slot, ("local", "life", "since").index(head)]

    def slots(self, values: dict, r: int) -> np.ndarray:
        """The slot of replica r's (local, life, since); -1 where that combination cannot exist."""
        n = len(values[f"local{r}"])
        life = values.get(f"life{r}", np.zeros(n, dtype=np.int64))
        since = values.get(f"since{r}", np.zeros(n, dtype=np.int64))
        return self.slot_of[self._combined(values[f"local{r}"], life, since)]

    def encode(self, values: dict, n: int) -> np.ndarray:
        key = np.zeros(n, dtype=U64)
        for r in range(self.rf):
            slot = self.slots(values, r)
            if (slot < 0).any():
                raise ValueError(f"replica {r}: a (local, life, leadership start) combination outside the kernel's tables")
            key += slot.astype(U64) * U64(self.unit[f"slot{r}"])
        for name in self.radix:
            if not name.startswith("slot"):
                key += np.asarray(values[name]).astype(U64) * U64(self.unit[name])
        return key[None, :]

    def update(self, keys: np.ndarray, changes: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        key = keys[0]
        per_replica: dict[int, dict[str, np.ndarray]] = {}
        for name, old, value in changes:
            head, r = _replica_of(name)
            if r < 0:
                key += (np.asarray(value).astype(U64) - np.asarray(old).astype(U64)) * U64(self.unit[name])
            else:
                per_replica.setdefault(r, {})[head] = value
        for r, new in per_replica.items():
            old_slot = self._digit(keys, f"slot{r}")
            current = self.replicas[old_slot]
            values = {f"{head}{r}": new.get(head, current[:, i]) for i, head in enumerate(("local", "life", "since"))}
            slot = self.slots(values, r)
            if (slot < 0).any():
                raise KernelDomainError(f"replica {r} leaves the kernel's combinations")
            key += (slot.astype(U64) - old_slot.astype(U64)) * U64(self.unit[f"slot{r}"])

    def images(self, keys: np.ndarray, tables, rf: int, replica_names: list[str]) -> Iterator[np.ndarray]:
        perms, local_t, isr_t, rq_t = tables
        key = keys[0]
        slots = [self._digit(keys, f"slot{r}") for r in range(rf)]
        qisr, rq = self._digit(keys, "qisr"), self._digit(keys, "rq")
        base = key.copy()
        for r in range(rf):
            base -= slots[r].astype(U64) * U64(self.unit[f"slot{r}"])
        base -= qisr.astype(U64) * U64(self.unit["qisr"]) + rq.astype(U64) * U64(self.unit["rq"])
        relabelled = self._relabelled_slots(local_t)
        for k in range(1, len(perms)):
            p = perms[k]
            out = base + isr_t[k][qisr].astype(U64) * U64(self.unit["qisr"]) + rq_t[k][rq].astype(U64) * U64(self.unit["rq"])
            for i in range(rf):
                out += relabelled[k][slots[i]].astype(U64) * U64(self.unit[f"slot{p[i]}"])
            yield out[None, :]

    def _relabelled_slots(self, local_t: np.ndarray) -> np.ndarray:
        """[perm, slot]: the slot of the same replica state with its brokers relabelled."""
        cached = self._relabelled
        if cached is None:
            local, life, since = self.replicas.T
            cached = self._relabelled = np.stack(
                [self.slot_of[self._combined(local_t[k][local], life, since)] for k in range(len(local_t))]
            )
            assert (cached >= 0).all(), "relabelling keeps a replica's combination valid"
        return cached

