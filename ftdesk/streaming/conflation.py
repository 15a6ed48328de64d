"""A consumer's pending updates: the latest one per key, so a reader that stalls costs one slot per key."""

from __future__ import annotations

from typing import Generic, TypeVar

V = TypeVar("V")


class ConflatingBuffer(Generic[V]):
    """Latest-per-key pending updates with the counters the status page shows.

    ``lag(now)`` is the age of the oldest update not read yet. When a key is updated again before it was
    read, the newer value replaces the older one (counted in ``conflated``) but keeps the older one's
    arrival time and queue position: the reader has seen nothing of that key since then.
    """

    def __init__(self) -> None:
        self._values: dict[str, V] = {}
        self._since: dict[str, float] = {}  # insertion-ordered: the first entry is the oldest
        self.delivered = 0
        self.conflated = 0

    def __len__(self) -> int:
        return len(self._values)

    def put(self, key: str, value: V, now: float) -> None:
        """Store the newest value of a key, replacing an unread older one."""
        if key in self._values:
            self.conflated += 1
        else:
            self._since[key] = now
        self._values[key] = value

    def discard(self, key: str) -> None:
        """Forget a key's unread value (its reader no longer wants it)."""
        self._values.pop(key, None)
        self._since.pop(key, None)

    def drain(self) -> list[V]:
        """Return every unread value, oldest key first, and count them as delivered."""
        values = list(self._values.values())
        self._values.clear()
        self._since.clear()
        self.delivered += len(values)
        return values

    def clear(self) -> None:
        """Drop every unread value without counting it."""
        self._values.clear()
        self._since.clear()

    def lag(self, now: float) -> float:
        """Return the age in seconds of the oldest unread value (0 when nothing waits)."""
        for since in self._since.values():
            return max(0.0, now - since)
        return 0.0
