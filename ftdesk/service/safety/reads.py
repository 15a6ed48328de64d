"""What the risk limits read from the broker: a quote, the working orders, today's P&L of an account.

Reads only, through the brokerage session, never an order call. A quote comes from the live quote stream when it
carries the symbol (no upstream call), else one snapshot. Today's P&L of an account follows the cockpit's rule
(``ftdesk.domain.day_pnl``, the same code) on both brokers: the positions held now (shares held overnight from the
previous close, shares bought today from their fill, a partial sale's realised part included) plus the symbols
sold out entirely today (from the previous close for shares held overnight, from the fill for shares bought
today). Today's trades come from the order status and the fill events, not from the closed-positions answer
(Fidelity's, as captured, says neither when a position closed nor its gain against the previous close). It is
read at most every ``PNL_MAX_AGE`` seconds per account, so a burst of orders costs one read (positions, order
status, and a quote only for a symbol sold out today that was held overnight).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from ftdesk.domain.clock import Clock, trading_day
from ftdesk.domain.day_pnl import account_day_pnl, closed_out_symbols, fill_times, filled_today, overnight_closed
from ftdesk.domain.errors import FtdeskError
from ftdesk.domain.events import AccountEvent
from ftdesk.domain.safety import AccountPnl
from ftdesk.service.safety.limits import QuotePrices
from ftdesk.service.session import SessionManager
from ftdesk.streaming.hub import QuoteHub

log = logging.getLogger(__name__)

PNL_MAX_AGE = 5.0


class BrokerReads:
    """The broker reads of the risk limits, inside the brokerage session."""

    def __init__(
        self,
        session: SessionManager,
        quotes: QuoteHub,
        clock: Clock,
        events: Callable[[], Iterable[AccountEvent]] = tuple,
    ) -> None:
        self._session = session
        self._quotes = quotes
        self._clock = clock
        self._events = events  # the account events kept for replay: which orders entered earlier filled today
        self._pnl: dict[str, tuple[float, AccountPnl]] = {}

    async def quote(self, symbol: str) -> QuotePrices | None:
        """Return the last trade, bid and ask of a symbol, or None when it cannot be read."""
        streamed = self._quotes.latest_quote(symbol)
        if streamed is not None:
            return QuotePrices(streamed.last, streamed.bid, streamed.ask)
        try:
            quotes = await self._session.run(lambda broker: broker.quote_feed.snapshot([symbol]))
        except FtdeskError as exc:
            log.info("No quote for the risk limits' check of %s: %s", symbol, exc.message)
            return None
        except Exception as exc:  # a feed that fails in its own way (connection, protocol) must not fail the order
            log.warning("No quote for the risk limits' check of %s: %s", symbol, type(exc).__name__)
            return None
        return next((QuotePrices(q.last, q.bid, q.ask) for q in quotes if q.symbol.upper() == symbol.upper()), None)

    async def account_numbers(self) -> list[str]:
        """Return the account numbers of the session."""
        accounts = await self._session.run(lambda broker: broker.accounts.get_accounts())
        return [account.acct_num for account in accounts]

    async def open_orders(self) -> frozenset[str]:
        """Return the conf_nums of the orders working across every account."""
        orders = await self._session.run(lambda broker: broker.orders.get_order_status(None))
        return frozenset(order.id_detail.conf_num for order in orders if order.status_detail.status.is_working)

    async def pnl(self, acct_num: str) -> AccountPnl:
        """Return today's realised and unrealised P&L of an account (read at most every few seconds)."""
        now = self._clock.monotonic()
        kept = self._pnl.get(acct_num)
        if kept is not None and now - kept[0] < PNL_MAX_AGE:
            return kept[1]
        today = trading_day(self._clock.now())  # the market's day: the evening in New York is not tomorrow
        positions = await self._session.run(lambda broker: broker.accounts.get_positions(acct_num))
        orders = await self._session.run(lambda broker: broker.orders.get_order_status(acct_num))
        fills = filled_today(orders, today, fill_times(self._events(), today))
        wanted = [s for s in closed_out_symbols(acct_num, positions, fills) if overnight_closed(acct_num, s, fills)]
        day = account_day_pnl(acct_num, positions, fills, await self._prev_closes(wanted))
        if day.uncounted and (kept is None or list(day.uncounted) != kept[1].uncounted):  # said once, not per read
            log.warning(
                "Daily loss limit: %s not counted (sold today without a fill price or previous close, or no market"
                " price)",
                ", ".join(day.uncounted),
            )
        pnl = AccountPnl(
            acct_num=acct_num,
            realized=day.closed_out,
            unrealized=day.held,
            total=day.total,
            uncounted=list(day.uncounted),
            as_of=self._clock.now(),
        )
        self._pnl[acct_num] = (now, pnl)
        return pnl

    async def _prev_closes(self, symbols: list[str]) -> dict[str, float]:
        """Return the previous close of symbols no longer held, from the stream or one snapshot (missing: unknown)."""
        closes: dict[str, float] = {}
        missing = []
        for symbol in symbols:
            streamed = self._quotes.latest_quote(symbol) if self._quotes is not None else None
            if streamed is not None and streamed.prev_close:
                closes[symbol] = streamed.prev_close
            else:
                missing.append(symbol)
        if missing:
            try:
                quotes = await self._session.run(lambda broker: broker.quote_feed.snapshot(missing))
            except FtdeskError as exc:
                log.info("No previous close for the daily loss limit of %s: %s", ", ".join(missing), exc.message)
                return closes
            closes.update({q.symbol.upper(): q.prev_close for q in quotes if q.prev_close})
        return closes
