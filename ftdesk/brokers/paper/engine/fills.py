"""Matching of paper orders against the market: the tick that expires, triggers and fills working orders.

Market orders fill at the ask (buy) or bid (sell); limit orders fill when marketable, at the touch
(which is the limit or better); a stop triggers when the last price reaches it and then works as a
market order (stop) or a limit order (stop-limit). One quote's displayed size is consumed once: a
larger order fills that size now and the rest on later quotes (``PARTIALLY_FILLED`` then
``FILLED``); a quote showing no size counts as 100. Commission is $0 for equities and $0.65 per
option contract; sales pay the SEC fee and FINRA TAF (``ledger.money``). Multi-leg option orders
fill all legs at once (all-or-none) at the legs' mid prices when those net to the limit or better (a
net debit at or below the limit, a net credit at or above it); a market multi-leg order fills at
the legs' touch prices. Day orders expire at their session's close; orders on an option expire
once the option has expired. Nothing fills while the market says its session is closed
(``TradingMarket.is_open``): orders rest until it opens, stops included.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from decimal import Decimal

from ftdesk.brokers.paper.engine.links import OrderLinks
from ftdesk.brokers.paper.engine.model import EQUITY, MULTI_LEG, WORKING, Row, row_from_db
from ftdesk.brokers.paper.engine.pricing import DEFAULT_SIZE
from ftdesk.brokers.paper.engine.rows import OrderRows
from ftdesk.brokers.paper.ledger.ledger import Ledger
from ftdesk.brokers.paper.ledger.money import (
    cents,
    commission_cents,
    option_expired,
    price_float,
    price_of,
    sell_fees_cents,
)
from ftdesk.brokers.paper.ledger.outbox import Outbox
from ftdesk.brokers.paper.ledger.types import Fill
from ftdesk.brokers.paper.ports import TradingMarket
from ftdesk.brokers.paper.quantities import number, stored
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.userdata import iso_time
from ftdesk.domain.accounts import SecurityType
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import NotFound
from ftdesk.domain.events import EventType
from ftdesk.domain.market import Quote
from ftdesk.domain.orders import DebitCredit, OrderStatus, PriceType


class Matcher:
    """Works the paper brokerage's orders against the market and books their fills in the ledger."""

    def __init__(
        self,
        store: PaperStore,
        outbox: Outbox,
        ledger: Ledger,
        market: TradingMarket,
        clock: Clock,
        rows: OrderRows,
        links: OrderLinks,
    ) -> None:
        self._store = store
        self._outbox = outbox
        self._ledger = ledger
        self._working: tuple[int, list[str]] | None = None  # working_symbols' last answer, with its stamp
        self._market = market
        self._clock = clock
        self._rows = rows
        self._links = links
        # Displayed size already taken per (symbol, side) at one quote time; liquidity, not state.
        self._taken: dict[tuple[str, int], tuple[str, Decimal]] = {}

    def process_market(self) -> int:
        """Work every order against the market: expiries, stop triggers, fills; return the number of fills."""
        self._ledger.settle_expired_options()
        self._ledger.post_due_income()
        now = self._clock.now()
        fills = 0
        seqs = [
            int(r["seq"])
            for r in self._store.query(
                f"SELECT seq FROM paper_orders WHERE status IN ({','.join('?' * len(WORKING))}) ORDER BY seq",
                WORKING,
            )
        ]
        for seq in seqs:
            row_db = self._store.query_one("SELECT * FROM paper_orders WHERE seq = ?", (seq,))
            if row_db is None:
                continue
            row = row_from_db(row_db)
            if not row.working:
                continue
            if self._expired(row, now):
                with self._outbox.atomic() as conn:
                    self._links.expire(conn, row)
                continue
            if row.status is not OrderStatus.PENDING_TRIGGER:
                fills += self.evaluate(row.conf_num)
        return fills

    def process_symbol(self, symbol: str) -> int:
        """Work the orders on one symbol (a multi-leg order's legs included) on its new quote; return the fills."""
        if not self._market.is_open():
            return 0
        rows = self._store.query(
            "SELECT conf_num FROM paper_orders WHERE status IN (?, ?) AND (symbol = ? OR legs LIKE ?) ORDER BY seq",
            (OrderStatus.OPEN.value, OrderStatus.PARTIALLY_FILLED.value, symbol, f'%"{symbol}"%'),
        )
        return sum(self.evaluate(str(r["conf_num"])) for r in rows)

    def working_symbols(self) -> list[str]:
        """Return the symbols working orders need quotes of (underlyings and legs), in order of entry.

        Read again only when the world's rows changed (``PaperStore.version``): every account read asks.
        """
        version = self._store.version()
        if version is not None and self._working is not None and self._working[0] == version:
            return list(self._working[1])
        rows = self._store.query(
            f"SELECT kind, symbol, legs FROM paper_orders WHERE status IN ({','.join('?' * len(WORKING))})"
            " ORDER BY seq",
            WORKING,
        )
        symbols: dict[str, None] = {}
        for r in rows:
            if r["kind"] == MULTI_LEG:
                symbols.update((leg["symbol"], None) for leg in json.loads(r["legs"] or "[]"))
            else:
                symbols[str(r["symbol"])] = None
        if version is not None:
            self._working = (version, list(symbols))
        return list(symbols)

    def evaluate(self, conf_num: str) -> int:
        """Try to fill one working order now; return 1 when something filled (never while the market is closed)."""
        if not self._market.is_open():
            return 0
        with self._outbox.atomic() as conn:
            row = self._rows.load(conn, conf_num)
            if row.status not in (OrderStatus.OPEN, OrderStatus.PARTIALLY_FILLED):
                return 0
            if row.spec.kind == MULTI_LEG:
                return self._evaluate_multileg(conn, row)
            spec = row.spec
            try:
                quote = self._market.quote(spec.symbol)
            except NotFound:
                return 0
            buy = spec.sign > 0
            if spec.stop is not None and not row.triggered:
                last = price_of(quote.last)
                if not ((buy and last >= spec.stop) or (not buy and last <= spec.stop)):
                    return 0
                conn.execute("UPDATE paper_orders SET triggered = 1 WHERE conf_num = ?", (conf_num,))
                row = self._rows.load(conn, conf_num)
                self._rows.publish_order(EventType.ORDER_UPDATE, row, event="STOP_TRIGGERED", last=price_float(last))
            touch = price_of(quote.ask if buy else quote.bid)
            if touch <= 0:
                return 0
            limit = spec.limit
            if limit is not None and ((buy and touch > limit) or (not buy and touch < limit)):
                return 0
            wanted = self._closable(conn, row)
            if wanted == 0:
                return 0
            qty = self._take(spec.symbol, spec.sign, quote, wanted)
            if qty == 0:
                return 0
            self._fill(conn, row, qty, touch, [(spec.symbol, spec.sign * qty, touch)])
            return 1

    def _closable(self, conn: sqlite3.Connection, row: Row) -> Decimal:
        """Return how much of an order may fill; cancel a closing order whose position is gone."""
        spec = row.spec
        if spec.kind != EQUITY or spec.action not in ("S", "BC"):
            return row.remaining
        held = self._ledger.position_quantity(spec.acct_num, spec.symbol)
        position = held if spec.action == "S" else -held
        if position <= 0:
            what = "long" if spec.action == "S" else "short"
            self._links.cancel(conn, row, f"no {what} position in {spec.symbol} left to close")
            return Decimal(0)
        return min(row.remaining, position)

    def _take(self, symbol: str, side: int, quote: Quote, wanted: Decimal) -> Decimal:
        """Take up to ``wanted`` of the size displayed at the touch, once per quote."""
        shown = (quote.ask_size if side > 0 else quote.bid_size) or DEFAULT_SIZE
        stamp, used = self._taken.get((symbol, side), ("", Decimal(0)))
        if stamp != quote.time:
            used = Decimal(0)
        qty = min(wanted, max(Decimal(0), shown - used))
        self._taken[(symbol, side)] = (quote.time, used + qty)
        return qty

    def _evaluate_multileg(self, conn: sqlite3.Connection, row: Row) -> int:
        spec = row.spec
        try:
            quotes = {leg.symbol: self._market.quote(leg.symbol) for leg in spec.legs}
        except NotFound:
            return 0
        prices: dict[str, Decimal] = {}
        net = Decimal(0)
        for leg, units in spec.leg_units():
            q = quotes[leg.symbol]
            bid, ask = price_of(q.bid), price_of(q.ask)
            if ask <= 0:
                return 0
            touch = ask if leg.sign > 0 else bid
            price = touch if spec.price_type is PriceType.MARKET else price_of((bid + ask) / 2)
            prices[leg.symbol] = price
            net += leg.sign * units * price
        if spec.limit is not None:
            ok = {"DB": net <= spec.limit, "CR": -net >= spec.limit, "EV": net <= 0}[spec.action]
            if not ok:
                return 0
        qty = row.remaining
        changes = [(leg.symbol, leg.sign * units * qty, prices[leg.symbol]) for leg, units in spec.leg_units()]
        self._fill(conn, row, qty, net, changes)  # signed: a debit positive, a credit negative
        return 1

    def _fill(
        self,
        conn: sqlite3.Connection,
        row: Row,
        qty: Decimal,
        price: Decimal,
        changes: list[tuple[str, Decimal, Decimal]],
    ) -> None:
        """Book a fill of ``qty`` at ``price`` (per share, contract or spread) with its ledger effect."""
        spec = row.spec
        fills = []
        for symbol, signed, leg_price in changes:
            instrument = self._ledger.instrument(symbol)
            is_option = instrument.security_type is SecurityType.OPTION
            size = abs(signed)
            principal = cents(leg_price * size * instrument.multiplier)
            fees = sell_fees_cents(size, principal, is_option) if signed < 0 else 0
            fills.append(
                Fill(spec.acct_num, symbol, signed, leg_price, commission_cents(size, is_option), fees, row.conf_num)
            )
        cumulative = row.filled_qty + qty
        value = row.fill_value + price * qty
        status = OrderStatus.FILLED if cumulative >= spec.qty else OrderStatus.PARTIALLY_FILLED
        self._rows.publish(
            EventType.EXECUTION,
            row,
            status=status.value,
            fill_qty=number(qty),
            price=price_float(abs(price)),
            cum_qty=number(cumulative),
            remaining_qty=number(spec.qty - cumulative),
            avg_price=price_float(abs(value / cumulative)),
            partial=status is OrderStatus.PARTIALLY_FILLED,
            **({"debit_credit": _side(value)} if spec.kind == MULTI_LEG else {}),
        )
        conn.execute(
            "UPDATE paper_orders SET filled_qty = ?, fill_value = ?, commission_cents = commission_cents + ?,"
            " fees_cents = fees_cents + ?, status = ?, updated_time = ? WHERE conf_num = ?",
            (
                stored(cumulative),
                str(value),
                sum(f.commission_cents for f in fills),
                sum(f.fees_cents for f in fills),
                status.value,
                iso_time(self._clock.now()),
                row.conf_num,
            ),
        )
        self._links.after_fill(conn, self._rows.load(conn, row.conf_num), qty)
        # The ledger books last, so its balance event already sees the order (and its OCO partner) settled.
        self._ledger.apply_fills(fills)

    def _expired(self, row: Row, now: datetime) -> bool:
        if row.expires_at is not None and row.expires_at <= iso_time(now):
            return True
        symbols = [leg.symbol for leg in row.spec.legs] if row.spec.kind == MULTI_LEG else [row.spec.symbol]
        if row.spec.kind == EQUITY:
            return False
        options = (self._ledger.instrument(symbol).option for symbol in symbols)
        return any(option is not None and option_expired(option, now) for option in options)


def _side(net: Decimal) -> str:
    """Return DB, CR or EV for a spread's signed net."""
    return DebitCredit.DEBIT.value if net > 0 else DebitCredit.CREDIT.value if net < 0 else DebitCredit.EVEN.value
