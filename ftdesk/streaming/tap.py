"""The quote hub as a broker-side market's live quotes: one consumer that holds symbols and hands each quote on.

Paper trading on Fidelity's market prices its orders on the service's one MDDS connection: the composition
root gives the paper market this tap over the hub, so the market holds the symbols its orders and positions
need like any other consumer (refcounted, lingering, resubscribed after a reconnect) and releases them when
nothing needs them any more and gets every quote as
it arrives. Delivery is direct (the hub hands a batch to the sink as it fans it out) when the Python has
eager tasks, so a resting order is worked on the quote that crosses it without a task wake-up in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

from ftdesk.domain.market import Quote
from ftdesk.streaming.hub import QuoteHub
from ftdesk.streaming.models import ConsumerClosed, QuoteItem

log = logging.getLogger(__name__)


class HubQuoteTap:
    """Holds symbols on the quote hub for a market and hands it every streamed quote of them."""

    def __init__(self, hub: QuoteHub) -> None:
        self._hub = hub
        self._consumer = hub.open_consumer("paper")
        self._task: asyncio.Task[None] | None = None
        self._receive: Callable[[Quote], None] | None = None

    def hold(self, symbols: Sequence[str]) -> None:
        """Keep these symbols on the stream (no effect once closed)."""
        with contextlib.suppress(ConsumerClosed):
            self._consumer.acquire(symbols)

    def release(self, symbols: Sequence[str]) -> None:
        """Stop holding these symbols: the hub unsubscribes them after its delay unless another consumer holds them."""
        self._consumer.release(symbols)

    def start(self, receive: Callable[[Quote], None]) -> None:
        """Hand every streamed quote of a held symbol to ``receive`` from now on."""
        self._receive = receive
        self._consumer.deliver_to(self)
        self._task = asyncio.get_running_loop().create_task(self._read(), name="paper-market-quotes")

    def latest(self, symbol: str) -> Quote | None:
        """Return the hub's latest quote of a symbol while the open connection carries it, else None."""
        return self._hub.latest_quote(symbol)

    async def close(self) -> None:
        """Release the symbols and stop; idempotent."""
        self._consumer.close()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def send(self, batch: list[QuoteItem]) -> None:
        """Take a batch the hub hands over directly (``QuoteWriter``)."""
        self._hand_on(batch)

    async def _read(self) -> None:
        while True:
            try:
                items = await self._consumer.get()
            except ConsumerClosed:
                return
            self._hand_on(items)

    def _hand_on(self, items: list[QuoteItem]) -> None:
        receive = self._receive
        if receive is None:
            return
        for item in items:
            if isinstance(item, Quote):
                try:
                    receive(item)
                except Exception:  # one bad quote must not end the market's feed
                    log.exception("The paper market could not take a quote of %s", item.symbol)
