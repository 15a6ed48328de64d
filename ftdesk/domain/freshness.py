"""How fresh an answer is: a broker that serves from a cache or a shared answer says so, per request.

A broker answering from memory (a reference cache, an answer shared for a window) calls ``report`` with the
answer's age and how long it may be served; the service collects the reports of one request
(``collecting``) and turns them into ``Cache-Control``/``Age`` headers. A broker that always asks its
upstream, or computes the answer (paper), reports nothing: its answers are fresh.

The reports travel in a ``ContextVar`` so the layers stay apart: the service never imports a broker and a
broker never imports the service, yet the record of one request reaches the code that answers it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass


@dataclass(frozen=True)
class Served:
    """One answer kept in memory: ``age`` seconds since the upstream gave it, fresh for ``max_age`` in all.

    ``fresh`` says it was just fetched for this request (and kept for others): no ``Age`` for it.
    """

    age: float
    max_age: float
    fresh: bool = False


class FreshnessRecord:
    """What one request was served from memory (empty: everything came fresh from the upstream)."""

    def __init__(self) -> None:
        self.served: list[Served] = []

    def headers(self) -> dict[str, str]:
        """Return ``Cache-Control`` and, when something was not fresh, ``Age`` (RFC 9111, whole seconds).

        Several answers combine conservatively: ``Age`` is the oldest, and ``max-age`` leaves the shortest
        remaining lifetime of any of them.
        """
        if not self.served:
            return {}
        age = max(item.age for item in self.served)
        remaining = min(item.max_age - item.age for item in self.served)
        whole_age = math.floor(age)
        headers = {"Cache-Control": f"max-age={max(0, round(age + remaining))}"}
        if not all(item.fresh for item in self.served):  # even "Age: 0" says it came from memory
            headers["Age"] = str(whole_age)
        return headers


# A ContextVar is a key, not a store: the module binds it once and never changes it, and each request's
# record lives in that request's context (asyncio copies the context into the tasks a request starts, so a
# report from any of them reaches the same record). No state is shared between requests through it.
_RECORD: ContextVar[FreshnessRecord | None] = ContextVar("ftdesk_freshness", default=None)


class collecting:  # a lower-case name: it reads as the function it was, ``with collecting() as record``
    """Collect what the code run inside reports, in a record of its own.

    A class rather than a generator context manager: it is entered on every read request, and this costs a
    third of ``contextlib``'s generator.
    """

    __slots__ = ("_record", "_token")
    _record: FreshnessRecord
    _token: Token[FreshnessRecord | None]

    def __enter__(self) -> FreshnessRecord:
        self._record = FreshnessRecord()
        self._token = _RECORD.set(self._record)
        return self._record

    def __exit__(self, *_exc: object) -> None:
        _RECORD.reset(self._token)


@contextlib.contextmanager
def unreported() -> Iterator[None]:
    """Run work whose answers are not the caller's (a login inside a read) without reporting them."""
    token = _RECORD.set(None)
    try:
        yield
    finally:
        _RECORD.reset(token)


def report(age: float, max_age: float, *, fresh: bool = False) -> None:
    """Note that the current request's answer is kept in memory (``fresh``: just fetched, else served from it).

    Nothing happens when nobody collects.
    """
    record = _RECORD.get()
    if record is not None:
        record.served.append(Served(max(0.0, age), max_age, fresh))
