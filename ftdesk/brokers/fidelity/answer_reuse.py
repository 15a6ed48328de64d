"""When an account answer may serve a later identical read: only while the account-event stream proves it current.

An account read (positions, balances, option summary, lots, history, closed positions, order status:
``ACCOUNT_READS``) changes when something happens in the account, and Fidelity says so on the account-event
stream (BEPS): a fill, an order status, a cancel. So while that stream is live, an answer that no event and
no write has followed is still what the upstream would answer now, and ``FidelityHttp`` may serve it to
identical reads for up to ``FidelityConfig.read_share`` seconds (its ``Age`` says how old it is).

``EventWatch`` is the proof: ``live`` while a BEPS connection is being read, and an ``epoch`` that moves on
every event and every time the stream goes up or down. ``FidelityHttp`` keeps an answer only when the epoch
did not move while it was fetched (and no write overlapped it), and drops every kept answer as soon as the
epoch moves or a write goes out. Any event drops them all, whatever account it names: events are rare
next to reads, and an event that names no account (or one ftdesk cannot read) must not be missed.

The alerts fallback (``fills_fallback``) does not count as live: it polls every 15 s, so a fill could wait
that long to be seen, far beyond the window. Without a live stream only identical reads in flight share a
call. The window stays short because even a live stream lags the upstream (an event on its way is not seen
yet), and a socket that died without a word is only noticed at its keep-alive timeout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ftdesk.brokers.base import AccountEventConnection, AccountEventFeed
from ftdesk.domain.events import AccountEvent

ACCOUNT_READS = frozenset(
    {
        "/ftgw/dp/position/v2",
        "/ftgw/dp/position/open/lots/v1",
        "/ftgw/dp/balance/detail/v2",
        "/ftgw/dp/retail-am-optionsummary/v1/accounts/positions/option-summary/get",
        "/ftgw/dp/orderentry/taxlot/v1",
        "/ftgw/dp/accountmanagement/transaction/history/v2",
        "/ftgw/dp/customer-am-position/v1/accounts/closedposition",
        "/ftgw/dp/customer-am-position/v1/accounts/closedposition/closedlots",
        "/ftgw/dp/retail-order-status/v3/accounts/orders/status-summary",
    }
)
"""Upstream paths of the account reads whose answers may be reused while account events are live."""


def account_read(url: str) -> bool:
    """Say whether ``url`` (an upstream URL) is one of ``ACCOUNT_READS``."""
    _, _, rest = url.partition("://")
    path = "/" + rest.partition("/")[2].partition("?")[0]
    return path in ACCOUNT_READS


class EventWatch:
    """Whether account events are live, and an epoch that moves on everything that may change an answer."""

    def __init__(self) -> None:
        self._readers = 0  # connections whose events are being read
        self.epoch = 0
        self.events = 0

    @property
    def live(self) -> bool:
        """Say whether an account-event connection is being read now."""
        return self._readers > 0

    def saw_event(self) -> None:
        """Note an account event: every answer fetched before it may lack it."""
        self.events += 1
        self.epoch += 1

    def opened(self) -> None:
        """Note a connection whose events are now read: answers fetched before it may lack them."""
        self._readers += 1
        self.epoch += 1

    def closed(self) -> None:
        """Note a connection no longer read."""
        self._readers -= 1
        self.epoch += 1


class WatchedFeed:
    """An ``AccountEventFeed`` whose connections tell an ``EventWatch`` when they are read and what they carry."""

    def __init__(self, inner: AccountEventFeed, watch: EventWatch) -> None:
        self.inner = inner
        self._watch = watch

    def unavailable_reason(self) -> str | None:
        """Say why the feed cannot run, as the inner feed does."""
        return self.inner.unavailable_reason()

    def detail(self) -> str:
        """Return the inner feed's description of its configuration (or name the feed when it has none)."""
        detail = getattr(self.inner, "detail", None)
        return str(detail()) if callable(detail) else f"events from {type(self.inner).__name__}"

    async def connect(self) -> AccountEventConnection:
        """Open a connection of the inner feed, watched."""
        return WatchedConnection(await self.inner.connect(), self._watch)


class WatchedConnection:
    """One account-event connection: live while its events are read; each event moves the watch's epoch."""

    def __init__(self, inner: AccountEventConnection, watch: EventWatch) -> None:
        self._inner = inner
        self._watch = watch
        self._reading = False

    async def events(self) -> AsyncIterator[AccountEvent]:
        """Yield the inner connection's events, noting each before it is passed on."""
        if not self._reading:
            self._reading = True
            self._watch.opened()
        try:
            async for event in self._inner.events():
                self._watch.saw_event()
                yield event
        finally:
            self._stop()

    async def close(self) -> None:
        """Stop counting as live at once, then close the inner connection."""
        self._stop()
        await self._inner.close()

    def _stop(self) -> None:
        if self._reading:
            self._reading = False
            self._watch.closed()
