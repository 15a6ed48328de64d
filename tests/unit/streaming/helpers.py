"""A quote hub on a manual clock, with a fake or paper feed, and small helpers to read what consumers got."""

from __future__ import annotations

from collections.abc import Sequence

from ftdesk.brokers.base import QuoteFeed
from ftdesk.domain.market import Quote
from ftdesk.streaming.consumer import QuoteConsumer
from ftdesk.streaming.hub import QuoteHub
from ftdesk.streaming.models import HubState, QuoteError, QuoteItem
from tests.fakes.clock import ManualClock
from tests.fakes.quote_feed import FakeQuoteFeed
from tests.fakes.stepping import advance_in_steps, settle

DELAY = 10.0
BACKOFF = (1.0, 2.0, 4.0)
WATCHDOG = 30.0
PROBE = 10.0
STABLE_AFTER = 10.0


def prices(items: Sequence[QuoteItem]) -> list[tuple[str, float]]:
    """Return (symbol, last) of the quotes in a batch."""
    return [(item.symbol, item.last) for item in items if isinstance(item, Quote)]


def errors(items: Sequence[QuoteItem]) -> list[tuple[str, str]]:
    """Return (symbol, message) of the errors in a batch."""
    return [(item.symbol, item.message) for item in items if isinstance(item, QuoteError)]


async def take(consumer: QuoteConsumer) -> list[QuoteItem]:
    """Return what the consumer can read right now, without waiting."""
    return await consumer.get(timeout=0)


class Rig:
    """A started hub, its clock and its feed."""

    def __init__(self, feed: QuoteFeed, clock: ManualClock, **options: object) -> None:
        self.clock = clock
        self.feed = feed
        settings: dict[str, object] = {
            "unsubscribe_delay": DELAY,
            "backoff": BACKOFF,
            "watchdog_timeout": WATCHDOG,
            "probe_timeout": PROBE,
            "stable_after": STABLE_AFTER,
        }
        settings.update(options)
        self.hub = QuoteHub(feed, clock, **settings)  # type: ignore[arg-type]

    @property
    def fake(self) -> FakeQuoteFeed:
        assert isinstance(self.feed, FakeQuoteFeed)
        return self.feed

    async def advance(self, seconds: float, step: float = 0.25) -> None:
        """Move the manual clock in steps, letting the hub react at each."""
        await advance_in_steps(self.clock, seconds, step)

    async def reading(self, *symbols: str, kind: str = "sse") -> QuoteConsumer:
        """Log in, open a consumer holding these symbols and read away their first quotes."""
        await self.login()
        consumer = self.hub.open_consumer(kind)
        consumer.acquire(symbols)
        await settle()
        await take(consumer)
        return consumer

    async def login(self) -> None:
        self.hub.set_session_active(True)
        await settle()

    async def logout(self) -> None:
        self.hub.set_session_active(False)
        await settle()

    def state(self) -> HubState:
        """Return the hub's state (a call, so a type checker does not narrow it across awaits)."""
        return self.hub.state

    def refcounts(self) -> dict[str, int]:
        return {s.symbol: s.refcount for s in self.hub.subscriptions() if s.refcount}
