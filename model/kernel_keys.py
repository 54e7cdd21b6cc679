"""How the vector kernel packs a state's components into uint64 keys: two codecs.

A state is a few small integers (``kernel_tables.py``: one slot per replica, one
component per shared field). A codec turns arrays of those into keys, reads them back,
and applies an action's changes to a batch of keys:

* ``BitFields``: each component a bit field of its own, never split across words; one
  word when they fit, else as many as they need, up to MAX_WORDS. Reading is a shift and a mask.
* ``MixedRadix``: the whole state one number in a mixed radix. Denser: the Kafka main
  job needs more than 64 bits as bit fields and fits one word this way, so its visited
  set stays exact. Every change is an addition of ``(new - old) * unit``, as in the
  scalar model's packed int; uint64 arithmetic wraps, and the sum lands in range.

``KernelTables`` uses bit fields where they fit one word, else a mixed radix where it
fits, else bit fields in two words or more; both are exact inverses of ``encode`` (the tests
convert every reachable state both ways).
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np

U64 = np.uint64
MAX_WORDS = 4  # nothing here or in the search is specific to two words; wider keys: the scalar kernel


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


class BitFields:
    """Each component its own bit field: ``bounds`` gives each one's number of values, in key order."""

    def __init__(self, bounds: dict[str, int]) -> None:
        self.fields = self._pack([(name, bits_for(n - 1)) for name, n in bounds.items()])
        self.field = {f.name: f for f in self.fields}
        self.words = self.fields[-1].word + 1
        self.bits = sum(f.bits for f in self.fields)

    @staticmethod
    def _pack(widths: list[tuple[str, int]]) -> list[KeyField]:
        """Assign fields to 64-bit words in order, never splitting one; KernelUnsupported past MAX_WORDS."""
        fields, word, shift = [], 0, 0
        for name, bits in widths:
            if shift + bits > 64:
                word, shift = word + 1, 0
            fields.append(KeyField(name, word, shift, bits))
            shift += bits
        if word >= MAX_WORDS:
            total = sum(b for _, b in widths)
            raise KernelUnsupported(f"a state needs {word + 1} words of 64 bits ({total} bits, no field split "
                                    f"between words), more than the vector kernel's {MAX_WORDS}")
        return fields

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
            delta = np.bitwise_xor(old, value, dtype=np.int64).view(U64)  # a new array: shifted in place
            delta <<= U64(f.shift)
            keys[f.word] ^= delta


class MixedRadix:
    """One word: every component a digit of one mixed-radix number, the first the least
    significant. KernelUnsupported if it exceeds 64 bits."""

    words = 1

    def __init__(self, bounds: dict[str, int]) -> None:
        self.radix = dict(bounds)
        self.unit: dict[str, int] = {}
        total = 1
        for name, n in bounds.items():
            self.unit[name] = total
            total *= n
        if total > 1 << 64:
            raise KernelUnsupported(f"a state needs {total.bit_length()} bits in a mixed radix")
        self.bits = (total - 1).bit_length()

    def get(self, keys: np.ndarray, name: str, cache: dict) -> np.ndarray:
        return ((keys[0] // U64(self.unit[name])) % U64(self.radix[name])).astype(np.int64)

    def encode(self, values: dict, n: int) -> np.ndarray:
        key = np.zeros(n, dtype=U64)
        for name in self.radix:
            key += np.asarray(values[name]).astype(U64) * U64(self.unit[name])
        return key[None, :]

    def update(self, keys: np.ndarray, changes: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        key = keys[0]
        for name, old, value in changes:
            delta = np.subtract(value, old, dtype=np.int64).view(U64)  # modulo 2^64, as the key's sum
            delta *= U64(self.unit[name])
            key += delta
