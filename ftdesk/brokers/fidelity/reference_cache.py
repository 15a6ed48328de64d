"""Read-mostly reference data served from memory for a while instead of asking Fidelity again.

Which upstream answers are kept, and for how long (``CACHED``):

| Endpoint | Kept | Why that long |
|---|---|---|
| Holiday calendar | 12 h | the exchanges publish it a year ahead |
| Available markets | 1 h | routing destinations and their hours change with a release, not a minute |
| Symbol search / autosuggest | 10 min | listings change daily at most; a trader typing repeats queries |
| Security context | 15 min | entitlements and the member id change with the account, not the session |

Only 2xx answers are kept, per login session (a new login starts empty), at most ``MAX_ENTRIES`` of them,
least recently used out first. Everything else is never cached here: account answers (positions,
balances, orders) are only reused for a second while live account events prove them current
(``answer_reuse``), and quotes never.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Generic, TypeVar

from yarl import URL

T = TypeVar("T")

CACHED: Mapping[tuple[str, str], float] = MappingProxyType(
    {
        ("GET", "/ftgw/dpdirect/market/holidaycalendar/v1"): 12 * 3600.0,
        ("POST", "/ftgw/dp/reference/security/stock/availablemarket/v1"): 3600.0,
        ("GET", "/ftgw/dpdirect/search/autosuggest/v1"): 600.0,
        ("POST", "/ftgw/digital/pico/api/v1/context/security"): 900.0,
    }
)
"""(method, upstream path) -> seconds an answer stays fresh."""
MAX_ENTRIES = 256


_CACHED_PATHS = frozenset(path for _, path in CACHED)


def freshness(method: str, url: str) -> float | None:
    """Return how long an answer to this call stays fresh, or None when it is never cached."""
    if not any(path in url for path in _CACHED_PATHS):  # every call asks: keep the common answer cheap
        return None
    return CACHED.get((method, URL(url, encoded=True).path))


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One kept answer and when it was stored (clock-monotonic seconds)."""

    value: T
    stored_at: float
    ttl: float


class ReferenceCache(Generic[T]):
    """A small LRU of fresh answers keyed by the whole request."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: OrderedDict[object, Entry[T]] = OrderedDict()
        self._max = max_entries
        self.hits = 0

    def get(self, key: object, now: float) -> Entry[T] | None:
        """Return the fresh entry for ``key`` (and count a hit), or None; a stale one is dropped."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if now - entry.stored_at >= entry.ttl:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry

    def peek(self, key: object) -> Entry[T] | None:
        """Return the entry kept for ``key``, fresh or not, without counting a hit."""
        return self._entries.get(key)

    def put(self, key: object, value: T, now: float, ttl: float) -> None:
        """Keep ``value`` for ``ttl`` seconds from ``now``."""
        self._entries[key] = Entry(value, now, ttl)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget everything."""
        self._entries.clear()
