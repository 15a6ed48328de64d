"""What the risk limits read from the broker: a quote, the working orders, today's P&L of an account.

Reads only, through the brokerage session, never an order call. A quote comes from the live quote stream when it
carries the symbol (no upstream call), else one snapshot. Today's P&L of an account is the broker's day change of
its positions (unrealised) plus the gain or loss of positions closed today (realised); it is read at most every
``PNL_MAX_AGE`` seconds per account, so a burst of orders costs one read.
"""

from __future__ import annotations

import logging

from ftdesk.domain.clock import Clock, trading_day
from ftdesk.domain.errors import FtdeskError
from ftdesk.domain.safety import AccountPnl
from ftdesk.service.safety.limits import QuotePrices
from ftdesk.service.session import SessionManager
from ftdesk.streaming.hub import QuoteHub

log = logging.getLogger(__name__)

PNL_MAX_AGE = 5.0


class BrokerReads:
    """The broker reads of the risk limits, inside the brokerage session."""

    def __init__(self, session: SessionManager, quotes: QuoteHub, clock: Clock) -> None:
        self._session = session
        self._quotes = quotes
        self._clock = clock
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
        closed = await self._session.run(lambda broker: broker.accounts.get_closed_positions(acct_num, today, today))
        unrealized = round(sum(p.todays_gain_loss for p in positions), 2)
        realized = round(sum(c.gain_loss for c in closed if c.last_closed_date[:10] == today.isoformat()), 2)
        pnl = AccountPnl(
            acct_num=acct_num,
            realized=realized,
            unrealized=unrealized,
            total=round(realized + unrealized, 2),
            as_of=self._clock.now(),
        )
        self._pnl[acct_num] = (now, pnl)
        return pnl
