"""A memo of at most a given number of entries, the oldest added dropped first.

The one insertion rule of the caches that keep what was worked out once: the step's shard memos (`step._SHARDS`),
planning's contexts and efficiencies (`predict._CONTEXTS`, `predict._EFFICIENCIES`) and a search's blocks and
floors (`search._BLOCKS`, `search._FLOORS`). Each caller checks its own entry (by identity, by value); this keeps
only the bound.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Bounded(Generic[K, V]):
    """A dict of at most `size` entries: adding a new key to a full one first drops the oldest key added."""

    __slots__ = ("_entries", "size")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a memo keeps at least one entry, not {size}")
        self.size = size
        self._entries: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        """The entry of `key`, or None (TypeError for an unhashable key, as a dict raises)."""
        return self._entries.get(key)

    def put(self, key: K, value: V) -> V:
        """`value`, kept under `key`; a key already kept is replaced in place, where it stands in the order."""
        entries = self._entries
        if key not in entries and len(entries) >= self.size:
            del entries[next(iter(entries))]
        entries[key] = value
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[K]:
        """The keys, oldest first."""
        return iter(self._entries)
