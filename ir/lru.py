"""Bounded least-recently-used caches, process-wide and weakly keyed on their owners.

JAX bounds its caches per process (2,048 lowerings, 8,192 entries in each C++ dispatch
cache) and keys them weakly on the function, so a program compiled for a function that is
gone is dropped with it. `LRU` is that container for every layer of purejit (it lives in
the lowest one, importing nothing): one bounded table per kind of cache, split into
`Partition`s, one per owner (a jitted function), each used like a dict. When the table is
full, inserting evicts the least recently used entry of any owner, counts it in
`evictions` and tells that entry's partition (`on_evict`). A partition holds its entries
only while it lives: when its owner drops it, its entries leave the table.

`caches()` lists every table made, so statistics can report sizes and evictions.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Iterator

_TABLES: list[weakref.ref] = []


class LRU:
    """A bounded table of `(owner, key) -> value` entries, least recently used evicted first.

    Args:
        name: what the table holds (shown by statistics).
        maxsize: the bound, or a function returning it (read on every insert, so a bound
            taken from configuration applies at once); 0 or less keeps nothing.
    """

    def __init__(self, name: str, maxsize: int | Callable[[], int]):
        self.name = name
        self._maxsize = maxsize
        self._entries: OrderedDict[tuple, Any] = OrderedDict()
        self._parts: dict[int, weakref.ref] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self.evictions = 0
        _TABLES.append(weakref.ref(self))

    @property
    def maxsize(self) -> int:
        m = self._maxsize
        return int(m() if callable(m) else m)

    def __len__(self) -> int:
        return len(self._entries)

    def partition(self, on_evict: Callable[[Any, Any], None] | None = None) -> Partition:
        """A new owner's dict-like share of the table; `on_evict(key, value)` is called
        for each of its entries the bound evicts (not for those it deletes itself)."""
        part = Partition(self, next(self._ids), on_evict)
        with self._lock:
            self._parts[part._owner] = weakref.ref(part)
        # at interpreter exit nothing needs dropping
        weakref.finalize(part, self._drop_owner, part._owner, part._keys).atexit = False
        return part

    def clear(self) -> None:
        """Drop every entry of every owner (no eviction callbacks: nothing was evicted)."""
        with self._lock:
            parts = [r() for r in self._parts.values()]
        for part in parts:
            if part is not None:
                part.clear()
        with self._lock:
            self._entries.clear()

    def info(self) -> dict:
        """Entries, bound and evictions so far."""
        return {"entries": len(self), "maxsize": self.maxsize, "evictions": self.evictions}

    # --- used by Partition ----------------------------------------------------------------
    def _get(self, k: tuple, default):
        entries = self._entries
        v = entries.get(k, _MISSING)
        if v is _MISSING:
            return default
        try:
            entries.move_to_end(k)
        except KeyError:  # evicted by another thread meanwhile: still a hit for this call
            pass
        return v

    def _put(self, k: tuple, value) -> None:
        evicted = []
        with self._lock:
            self._entries[k] = value
            self._entries.move_to_end(k)
            bound = max(self.maxsize, 0)
            while len(self._entries) > bound:
                old, v = self._entries.popitem(last=False)
                self.evictions += 1
                evicted.append((old, v))
        for (owner, key), v in evicted:  # outside the lock: callbacks may use the table
            ref = self._parts.get(owner)
            part = ref() if ref is not None else None
            if part is not None:
                part._keys.pop(key, None)
                if part._on_evict is not None:
                    part._on_evict(key, v)

    def _drop_owner(self, owner: int, keys: dict) -> None:
        with self._lock:
            self._parts.pop(owner, None)
            for k in list(keys):
                self._entries.pop((owner, k), None)


_MISSING = object()


class Partition:
    """One owner's entries of an `LRU`, used as a dict (`get`, `[]`, `in`, `len`, `pop`,
    `clear`, `keys`, `values`, `items`); `get` and `[]` refresh an entry's recency."""

    __slots__ = ("_table", "_owner", "_on_evict", "_keys", "__weakref__")

    def __init__(self, table: LRU, owner: int, on_evict):
        self._table = table
        self._owner = owner
        self._on_evict = on_evict
        self._keys: dict = {}  # this owner's keys, in insertion order

    def get(self, key, default=None):
        return self._table._get((self._owner, key), default)

    def __getitem__(self, key):
        v = self._table._get((self._owner, key), _MISSING)
        if v is _MISSING:
            raise KeyError(key)
        return v

    def __setitem__(self, key, value) -> None:
        self._keys[key] = None
        self._table._put((self._owner, key), value)

    def __contains__(self, key) -> bool:
        return (self._owner, key) in self._table._entries

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator:
        return iter(list(self._keys))

    def __bool__(self) -> bool:
        return bool(self._keys)

    def keys(self) -> list:
        return list(self._keys)

    def values(self) -> list:
        return [v for _, v in self.items()]

    def items(self) -> list:
        entries = self._table._entries
        out = [(k, entries.get((self._owner, k), _MISSING)) for k in self.keys()]
        return [(k, v) for k, v in out if v is not _MISSING]

    def pop(self, key, default=None):
        self._keys.pop(key, None)
        with self._table._lock:
            return self._table._entries.pop((self._owner, key), default)

    def clear(self) -> None:
        keys = list(self._keys)
        self._keys.clear()  # the same dict: the table's finalizer reads it
        with self._table._lock:
            for k in keys:
                self._table._entries.pop((self._owner, k), None)

    def __repr__(self) -> str:
        return f"<{self._table.name} of one owner: {len(self)} entries>"


def caches() -> list[LRU]:
    """Every `LRU` table alive in this process."""
    tables = [r() for r in _TABLES]
    _TABLES[:] = [weakref.ref(t) for t in tables if t is not None]
    return [t for t in tables if t is not None]
