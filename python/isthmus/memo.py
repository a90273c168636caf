"""One cache type for the package: a thread-safe, bounded, least-recently-used memo.

Every dict that grows with use (compiled programs per device, launch steps per call key, grid
sizes, fused expressions, fingerprints, configs) is a :class:`BoundedMemo`, so a long-running
process that sees many shapes, dtypes or tuning candidates keeps a bounded number of entries
alive (CuPy's one ``memoize`` in isthmus' terms).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from . import knobs


class BoundedMemo:
    """A thread-safe mapping that keeps at most ``capacity`` entries, dropping the least recently
    used. ``capacity`` is a number or a function read at each store (default: the
    ``ISTHMUS_PROGRAM_MEMO`` knob, so programs kept per device follow the setting).

    ``table`` is the OrderedDict itself: a hot path (a declared op's call, a CUDA launch) reads a hit
    as ``get`` does, inline, without its call (``try: v = table[key]; table.move_to_end(key)``,
    ``except KeyError``: a miss); stores go through ``memo[key] = value``."""

    __slots__ = ("table", "_lock", "_capacity")

    def __init__(self, capacity: int | Callable[[], int] | None = None):
        self.table: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._capacity = knobs.program_memo_entries if capacity is None else capacity

    def get(self, key, default=None):
        # a hit (the hot path of every op call) takes no lock: reading the OrderedDict and moving
        # an entry to its end are each one operation under the GIL, and a key evicted between the
        # two is a miss (318 ns with the lock against 89 ns, measured on the isthmus host)
        data = self.table
        try:
            value = data[key]
            data.move_to_end(key)
        except KeyError:
            return default
        return value

    def __setitem__(self, key, value) -> None:
        capacity = self._capacity() if callable(self._capacity) else self._capacity
        with self._lock:
            self.table[key] = value
            self.table.move_to_end(key)
            while len(self.table) > max(1, capacity):
                self.table.popitem(last=False)

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self.table

    def __len__(self) -> int:
        return len(self.table)

    def clear(self) -> None:
        with self._lock:
            self.table.clear()
