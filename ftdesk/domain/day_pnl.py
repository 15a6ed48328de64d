"""The day's P&L by one rule, for the cockpit's sums and the daily loss limit alike, on both brokers.

Shares held overnight count from the previous close, shares bought (or sold short) today from their fill price,
and a sale today counts what it realised against the same start: the previous close for a share held overnight,
its fill for a share bought today. Per symbol that is what it is worth now, less what it was worth at the
previous close, less what today's trades of the symbol paid in (a sale pays out). The broker's own "today's
gain/loss" (Fidelity's ``todaysGainLoss``) stands in only where the rule cannot be applied (a fill without a
price, no previous close). A position the market cannot price (``Position.unpriced_reason``) is left out of
the sums and named among the uncounted.

Commission counts as the order status gives it; fees a broker charges apart from the commission (paper's SEC fee and
FINRA TAF on sales) are in no order status and are not counted. Today's trades are today's fills read from the order
status: neither broker's order status carries an execution time, so an order counts when it executed something and was
entered today, is still working, or has a fill event today. What this cannot see: an order entered on an earlier day
(GTC) that filled today before this run started (its fill event is gone); and an order still working that filled in
part on an earlier day counts that part as today's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from ftdesk.domain.accounts import Position, SecurityType
from ftdesk.domain.clock import TRADING_ZONE, trading_day
from ftdesk.domain.event_names import FILL_NAMES
from ftdesk.domain.events import AccountEvent
from ftdesk.domain.orders import Order

OPTION_MULTIPLIER = 100


def entered_on(order: Order, day: date) -> bool:
    """Say whether the order was entered on the trading day (an unreadable time counts as not)."""
    try:
        entered = datetime.fromisoformat(order.order_detail.entry_time)
    except ValueError:
        return False
    if entered.tzinfo is None:  # a broker time without an offset is the exchange's local time
        entered = entered.replace(tzinfo=TRADING_ZONE)
    return trading_day(entered) == day


def fill_times(events: Iterable[AccountEvent], day: date) -> dict[str, datetime]:
    """Return when each order last filled on the trading day, from the fill events (conf_num -> time)."""
    times: dict[str, datetime] = {}
    for event in events:
        conf_num = event.desc.get("conf_num")
        if event.event_type not in FILL_NAMES or not isinstance(conf_num, str) or not conf_num:
            continue
        try:
            moment = datetime.fromisoformat(event.time)
        except ValueError:
            continue
        if trading_day(moment) == day:
            times[conf_num] = max(moment, times.get(conf_num, moment))
    return times


def filled_today(orders: Iterable[Order], day: date, filled_at: Mapping[str, datetime]) -> list[Order]:
    """Return the orders that executed something today: entered today, still working, or with a fill event today."""
    return [
        order
        for order in orders
        if order.status_detail.qty_exec > 0
        and (order.status_detail.status.is_working or entered_on(order, day) or order.id_detail.conf_num in filled_at)
    ]


def trades_today(acct_num: str, symbol: str, fills: Sequence[Order]) -> list[tuple[float, float]] | None:
    """Return today's executions of a symbol in an account (signed quantity, price); None when one has no price."""
    trades = []
    for order in fills:
        detail, status = order.order_detail, order.status_detail
        if order.acct_num != acct_num or detail.legs or detail.symbol.upper() != symbol.upper():
            continue
        if status.qty_exec <= 0:
            continue
        if status.avg_exec_price is None:
            return None
        buying = detail.action.upper().startswith("B")  # B, BC (cover, or buy call), BO, BP; S, SS, SC, SO, SP
        trades.append((status.qty_exec if buying else -status.qty_exec, status.avg_exec_price))
    return trades


def commissions_today(acct_num: str, symbol: str, fills: Sequence[Order]) -> float:
    """Return the commission today's executions of a symbol paid, dollars (what the order status says)."""
    return sum(
        order.status_detail.commission
        for order in fills
        if order.acct_num == acct_num
        and not order.order_detail.legs
        and order.order_detail.symbol.upper() == symbol.upper()
        and order.status_detail.qty_exec > 0
    )


def _symbol_gain(quantity: float, last: float, prev_close: float, trades: Sequence[tuple[float, float]]) -> float:
    """Return now's worth less the previous close's worth of the shares held overnight less what trades paid in."""
    overnight = quantity - sum(qty for qty, _ in trades)
    paid = sum(qty * price for qty, price in trades)
    return quantity * last - overnight * prev_close - paid


def day_gain(position: Position, fills: Sequence[Order]) -> float:
    """Return the day's P&L of a position held now, a partial sale today included (see the module docstring)."""
    trades = trades_today(position.acct_num, position.symbol, fills)
    overnight = position.quantity - sum(qty for qty, _ in (trades or ()))
    if trades is None or (overnight and position.prev_close_price <= 0):
        return position.todays_gain_loss
    multiplier = OPTION_MULTIPLIER if position.security_type is SecurityType.OPTION else 1
    gain = _symbol_gain(position.quantity, position.last_price, position.prev_close_price, trades)
    return round(gain * multiplier - commissions_today(position.acct_num, position.symbol, fills), 2)


def closed_out_symbols(acct_num: str, positions: Iterable[Position], fills: Sequence[Order]) -> list[str]:
    """Return the symbols traded today in an account that it no longer holds (sold or covered out), sorted."""
    held = {p.symbol.upper() for p in positions if p.acct_num == acct_num}
    return sorted(
        {
            o.order_detail.symbol.upper()
            for o in fills
            if o.acct_num == acct_num and not o.order_detail.legs and o.order_detail.symbol.upper() not in held
        }
    )


def overnight_closed(acct_num: str, symbol: str, fills: Sequence[Order]) -> bool:
    """Say whether a symbol no longer held was held overnight (its trades today do not net to zero)."""
    trades = trades_today(acct_num, symbol, fills)
    return trades is None or abs(sum(qty for qty, _ in trades)) > 1e-9


@dataclass(frozen=True)
class DayPnl:
    """An account's day P&L by the one rule: positions still held, symbols closed out today, and what is not in."""

    held: float  # the positions held now, a partial sale today included
    closed_out: float  # the symbols sold (or covered) out entirely today
    uncounted: tuple[str, ...] = ()  # closed-out symbols the rule cannot count (no fill price, no previous close)

    @property
    def total(self) -> float:
        """Return held plus closed out."""
        return round(self.held + self.closed_out, 2)


def account_day_pnl(
    acct_num: str, positions: Sequence[Position], fills: Sequence[Order], prev_closes: Mapping[str, float]
) -> DayPnl:
    """Return an account's day P&L; ``prev_closes`` gives the previous close of the symbols it no longer holds."""
    mine = [p for p in positions if p.acct_num == acct_num]
    held = round(sum(day_gain(p, fills) for p in mine if p.unpriced_reason is None), 2)
    closed_out = 0.0
    uncounted = [p.symbol for p in mine if p.unpriced_reason is not None]  # no market price: no day figure
    for symbol in closed_out_symbols(acct_num, positions, fills):
        trades = trades_today(acct_num, symbol, fills)
        prev_close = prev_closes.get(symbol, 0.0)
        if trades is None or (overnight_closed(acct_num, symbol, fills) and prev_close <= 0):
            uncounted.append(symbol)
            continue
        option = any(
            o.order_detail.security_type.upper() == SecurityType.OPTION.value
            for o in fills
            if o.acct_num == acct_num and o.order_detail.symbol.upper() == symbol
        )
        multiplier = OPTION_MULTIPLIER if option else 1
        closed_out += _symbol_gain(0.0, 0.0, prev_close, trades) * multiplier
        closed_out -= commissions_today(acct_num, symbol, fills)
    return DayPnl(held=held, closed_out=round(closed_out, 2), uncounted=tuple(uncounted))
