"""The local risk limits: what a preview or place may not exceed, checked before any upstream order call.

The order desk asks ``LimitChecker.check`` at each preview and again at each place, on either broker. A refusal
is ``RISK_LIMIT`` (422) with ``details`` naming the limit, its value and the order's value. The limits come from
the settings on every check, so a change in the tray applies to the next order. A value AT a limit passes;
one past it is refused.

* size and notional per order, per symbol class: equity shares and dollars (shares x limit price, else stop
  price, else the quote's last), option contracts and dollars (contracts x 100 x the price; a multi-leg order's
  net price and largest leg). Conditional orders: each leg. A replace: the new order;
* price distance: a limit or stop price at most N percent from the quote's last price (multi-leg net prices
  are not compared, they are not a quote of one symbol);
* places per minute across every account (the injected clock's monotonic time), counted when a place passes
  every check; max open orders across every account: the working orders read from the broker at each check
  plus the places in flight (a place takes a slot when it passes this check, with no await between the count
  and the slot, and gives it back on the broker's answer), so a burst of parallel places cannot pass the limit;
* symbol allow and deny lists, on the symbol or an option's underlying;
* the daily loss limit per account is in ``safety.reads`` and the guard (it halts rather than refuses).

A quote that cannot be read (unknown symbol, no session, feed down) skips the checks that need it: the
broker's own checks still apply. docs/safety.md lists this among what the limits do not protect against.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any

from ftdesk.config import Settings
from ftdesk.domain.clock import Clock, trading_day
from ftdesk.domain.orders import (
    ConditionalOrder,
    ConditionalReplace,
    EquityOrder,
    MultiLegOptionOrder,
    OptionOrder,
    PriceType,
    ReplaceOrder,
)
from ftdesk.domain.safety import AccountPnl, LimitUsage, RiskLimitExceeded, RiskLimits, limit_details
from ftdesk.service.safety.store import SafetyRecord

OPTION_MULTIPLIER = 100
MINUTE = 60.0
_OPTION_SYMBOL = re.compile(r"^-?([A-Z.]+?)\d{6}[CP][\d.]+$")

MIDPOINT = "bid/ask midpoint"
LAST_TRADE = "last trade"


@dataclass(frozen=True)
class QuotePrices:
    """What the limits read of a symbol's quote: the last trade and, when the quote has them, the bid and ask."""

    last: float | None
    bid: float | None = None
    ask: float | None = None

    def reference(self) -> tuple[float, str] | None:
        """Return the price a limit or stop price is measured from, and its name.

        The bid/ask midpoint when the quote is two-sided (an option's last trade is often stale and far from a
        live market), else the last trade; None when neither is there.
        """
        if self.bid is not None and self.ask is not None and 0 < self.bid <= self.ask:
            return round((self.bid + self.ask) / 2, 4), MIDPOINT
        if self.last is not None and self.last > 0:
            return self.last, LAST_TRADE
        return None


QuoteReader = Callable[[str], Awaitable[QuotePrices | None]]
"""Returns the last trade, bid and ask of a symbol, or None when it cannot be read."""
OpenOrdersReader = Callable[[], Awaitable[Collection[str]]]
"""Returns the conf_nums of the orders working across every account."""


@dataclass(frozen=True)
class OrderLine:
    """One order (or leg) as the limits see it."""

    acct_num: str
    symbol: str
    underlying: str
    option: bool
    qty: float
    price_type: PriceType
    limit_price: float | None = None
    stop_price: float | None = None
    net_price: float | None = None  # multi-leg: compared for notional, never for distance


def underlying_of(symbol: str) -> str:
    """Return an option symbol's underlying (AAPL261218C270 -> AAPL), or the symbol itself."""
    symbol = symbol.strip().upper()
    found = _OPTION_SYMBOL.match(symbol)
    return found.group(1) if found else symbol.lstrip("-")


def order_lines(order: object) -> list[OrderLine]:
    """Return the lines the limits check of a domain order (empty for anything that is not an order)."""
    if isinstance(order, ReplaceOrder):
        order = order.order
    if isinstance(order, ConditionalReplace):
        order = order.order
    if isinstance(order, EquityOrder):
        sym = order.symbol.upper()
        return [
            OrderLine(order.acct_num, sym, sym, False, order.qty, order.price_type, order.limit_price, order.stop_price)
        ]
    if isinstance(order, OptionOrder):
        sym = order.symbol.upper()
        return [
            OrderLine(
                order.acct_num, sym, underlying_of(sym), True, order.qty, order.price_type, order.limit_price,
                order.stop_price,
            )
        ]  # fmt: skip
    if isinstance(order, MultiLegOptionOrder):
        und = order.underlying.upper()
        qty = max(leg.qty for leg in order.legs)
        return [OrderLine(order.acct_num, und, und, True, qty, order.price_type, net_price=order.net_price)]
    if isinstance(order, ConditionalOrder):
        return [
            OrderLine(
                order.acct_num, leg.symbol.upper(), leg.symbol.upper(), False, leg.qty, leg.price_type,
                leg.limit_price, leg.stop_price,
            )
            for leg in order.legs
        ]  # fmt: skip
    return []


def limits_of(settings: Settings) -> RiskLimits:
    """Return the risk limits the settings set."""
    return RiskLimits(
        max_equity_qty=settings.max_equity_qty or None,  # 0 is off
        max_equity_notional=settings.max_equity_notional or None,
        max_option_contracts=settings.max_option_contracts or None,
        max_option_notional=settings.max_option_notional or None,
        max_price_distance_pct=settings.max_price_distance_pct or None,
        max_orders_per_minute=settings.max_orders_per_minute or None,
        max_open_orders=settings.max_open_orders or None,
        daily_loss_limit=settings.daily_loss_limit or None,
        symbol_allow=list(settings.symbol_allow),
        symbol_deny=list(settings.symbol_deny),
    )


def _refuse(limit: str, value: Any, order_value: Any, message: str, **extra: Any) -> RiskLimitExceeded:
    return RiskLimitExceeded(
        f"Risk limit {limit} ({value}) refuses this order: {message}; nothing was sent to the broker. "
        "The limits are in the settings (tray) or FTSERVICE_* variables; GET /api/v1/safety/limits lists them",
        details=limit_details(limit, value, order_value, **extra),
    )


class LimitChecker:
    """The limits in force (from the settings) and the counters of their usage."""

    def __init__(self, clock: Clock, settings: Callable[[], Settings | None]) -> None:
        self._clock = clock
        self._settings = settings
        self._places: deque[float] = deque()
        self.open_orders: int | None = None  # as last read
        self._in_flight: list[tuple[str, ...]] = []  # slots: the preview conf_nums of places awaiting the broker
        self.pnl: dict[str, AccountPnl] = {}  # as last read, per account

    @property
    def limits(self) -> RiskLimits:
        """Return the limits in force now (every limit off before the settings are known)."""
        settings = self._settings()
        return limits_of(settings) if settings is not None else RiskLimits(
            max_equity_qty=None, max_equity_notional=None, max_option_contracts=None, max_option_notional=None,
            max_price_distance_pct=None, max_orders_per_minute=None, max_open_orders=None, daily_loss_limit=None,
            symbol_allow=[], symbol_deny=[],
        )  # fmt: skip

    def places_this_minute(self) -> int:
        """Return the places counted in the last 60 seconds."""
        cutoff = self._clock.monotonic() - MINUTE
        while self._places and self._places[0] <= cutoff:
            self._places.popleft()
        return len(self._places)

    def count_place(self) -> None:
        """Count a place that passed every check."""
        self._places.append(self._clock.monotonic())

    def usage(self, record: SafetyRecord) -> LimitUsage:
        """Return the usage of the limits now (open orders and P&L as last read)."""
        today = trading_day(self._clock.now())
        return LimitUsage(
            places_this_minute=self.places_this_minute(),
            open_orders=self.open_orders,
            pnl=sorted(self.pnl.values(), key=lambda p: p.acct_num),
            loss_halted_today={acct: day for acct, day in record.loss_halted if day == today},
        )

    @property
    def places_in_flight(self) -> int:
        """Return how many places hold an open-order slot (past the check, no broker answer yet)."""
        return len(self._in_flight)

    async def check(
        self,
        order: object,
        quote: QuoteReader,
        open_orders: OpenOrdersReader,
        *,
        place_conf_nums: tuple[str, ...] | None = None,
    ) -> Callable[[], None]:
        """Raise ``RiskLimitExceeded`` for the first limit the order crosses.

        A place (``place_conf_nums``: the conf_nums of its bound preview) that passes holds an open-order slot
        until the returned release is called (idempotent; a no-op for previews and for orders that add none):
        call it once the broker answered or the place stopped.
        """
        lines = order_lines(order)
        if not lines:
            return _nothing
        limits = self.limits
        for line in lines:
            self._check_symbol(limits, line)
            self._check_size(limits, line)
        rate = limits.max_orders_per_minute
        if rate is not None and (done := self.places_this_minute()) >= rate:
            raise _refuse("max_orders_per_minute", rate, done + 1, f"{done} places in the last minute already")
        for line in lines:
            await self._check_prices(limits, line, quote)
        # A replace swaps a working order for another: it never adds one, so it passes at the open-orders limit.
        adds_order = not isinstance(order, ReplaceOrder | ConditionalReplace)
        if limits.max_open_orders is not None and adds_order:
            working = await open_orders()
            self.open_orders = len(working)
            # No await from here to the slot: the count and the slot are one step on the event loop. A place the
            # broker already listed (it keeps its preview's conf_num) is counted once, not also as in flight.
            in_flight = sum(1 for conf_nums in self._in_flight if not set(conf_nums) & set(working))
            count = len(working) + in_flight
            if count >= limits.max_open_orders:
                flying = f" and {in_flight} place(s) are in flight" if in_flight else ""
                raise _refuse(
                    "max_open_orders",
                    limits.max_open_orders,
                    count + 1,
                    f"{len(working)} orders are working already{flying}",
                )
        if place_conf_nums is None or not adds_order:
            return _nothing
        slot = tuple(place_conf_nums)
        self._in_flight.append(slot)
        return _once(lambda: self._in_flight.remove(slot))

    @staticmethod
    def _check_symbol(limits: RiskLimits, line: OrderLine) -> None:
        names = {line.symbol, line.underlying}
        if limits.symbol_deny and names & set(limits.symbol_deny):
            raise _refuse("symbol_deny", limits.symbol_deny, line.underlying, f"{line.underlying} is on the deny list")
        if limits.symbol_allow and not names & set(limits.symbol_allow):
            raise _refuse(
                "symbol_allow", limits.symbol_allow, line.underlying, f"{line.underlying} is not on the allow list"
            )

    @staticmethod
    def _check_size(limits: RiskLimits, line: OrderLine) -> None:
        most: float | None
        if line.option:
            most, name = limits.max_option_contracts, "max_option_contracts"
        else:
            most, name = limits.max_equity_qty, "max_equity_qty"
        if most is not None and line.qty > most:
            raise _refuse(name, most, line.qty, f"{line.qty:g} {line.symbol} is more than {most:g}", symbol=line.symbol)

    async def _check_prices(self, limits: RiskLimits, line: OrderLine, quote: QuoteReader) -> None:
        notional_limit = limits.max_option_notional if line.option else limits.max_equity_notional
        distance = limits.max_price_distance_pct
        price = line.net_price if line.net_price is not None else (line.limit_price or line.stop_price)
        needs_quote = (distance is not None and line.net_price is None and (line.limit_price or line.stop_price)) or (
            notional_limit is not None and price is None
        )
        prices = await quote(line.symbol) if needs_quote else None
        last = prices.last if prices is not None else None
        if notional_limit is not None:
            unit_price = price if price is not None else last
            if unit_price is not None:
                notional = round(abs(unit_price) * line.qty * (OPTION_MULTIPLIER if line.option else 1), 2)
                name = "max_option_notional" if line.option else "max_equity_notional"
                if notional > notional_limit:
                    message = f"${notional:,.2f} is more than ${notional_limit:,.2f}"
                    raise _refuse(name, notional_limit, notional, message, symbol=line.symbol)
        reference = prices.reference() if prices is not None else None
        if distance is None or reference is None or line.net_price is not None:
            return
        mark, basis = reference
        shown = f"{basis} {mark:,g}"
        if prices is not None and basis == MIDPOINT:
            shown += f" (bid {prices.bid:,g}, ask {prices.ask:,g})"
        for field_name, value in (("limit_price", line.limit_price), ("stop_price", line.stop_price)):
            if value is None:
                continue
            pct = round(abs(value - mark) / mark * 100, 4)
            if pct > distance:
                raise _refuse(
                    "max_price_distance_pct", distance, pct,
                    f"{field_name} {value:,g} is {pct:g}% from the {shown}",
                    symbol=line.symbol, field=field_name, quote=mark, quote_basis=basis,
                )  # fmt: skip


def _nothing() -> None:
    return None


def _once(action: Callable[[], None]) -> Callable[[], None]:
    """Return a callable that runs ``action`` the first time it is called and does nothing after."""
    done = False

    def run() -> None:
        nonlocal done
        if not done:
            done = True
            action()

    return run
