"""How the cockpit reads: the snapshot it shows, its table rows, the P&L sums and the tray's P&L line.

Pure functions over domain records, so what the trader sees can be checked without widgets.

The day's P&L follows one rule on both brokers, the one the daily loss limit uses (``ftdesk.domain.day_pnl``):
shares held overnight count from the previous close, shares bought (or sold short) today from their fill price,
and a partial sale today counts what it realised against the same start. The cockpit computes it from the
position (quantity, last, previous close) and today's fills of the symbol, so Fidelity's own ``todaysGainLoss``
(passed through by the API as it comes) does not enter the cockpit's sums; it stands in only where the rule
cannot be applied (a fill without a price, no previous close). A symbol sold out entirely today is no longer a
position and is not in the cockpit's sums (the daily loss limit counts it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from ftdesk.domain.accounts import Account, Position
from ftdesk.domain.day_pnl import day_gain
from ftdesk.domain.orders import Order, PriceType

POSITION_COLUMNS = ("Symbol", "Qty", "Last", "Market value", "Day P&L", "Total P&L", "Description")
GROUP_SPAN = 3
"""An account's group row writes its name and number across the first columns (Symbol, Qty, Last)."""
ORDER_COLUMNS = ("Account", "Order", "Symbol", "Side", "Qty", "Filled", "Type", "Price", "Status", "")
FILL_COLUMNS = ("Filled at", "Account", "Order", "Symbol", "Side", "Filled", "Avg price", "Status")
PRICE_TYPES = MappingProxyType(
    {PriceType.MARKET: "Market", PriceType.LIMIT: "Limit", PriceType.STOP: "Stop", PriceType.STOP_LIMIT: "Stop limit"}
)


@dataclass(frozen=True)
class AccountPnl:
    """One account's positions summed: market value, day and total gain or loss."""

    acct_num: str
    name: str
    market_value: float
    day: float
    total: float


@dataclass(frozen=True)
class DeskSnapshot:
    """What the cockpit shows: the accounts, their positions, the open orders and today's fills."""

    accounts: tuple[Account, ...] = ()
    positions: Mapping[str, tuple[Position, ...]] = field(default_factory=lambda: MappingProxyType({}))
    open_orders: tuple[Order, ...] = ()
    fills: tuple[Order, ...] = ()
    fill_times: Mapping[str, datetime] = field(default_factory=lambda: MappingProxyType({}))  # conf_num -> fill
    positions_as_of: datetime | None = None  # when positions (and so the P&L) were last read
    orders_as_of: datetime | None = None
    last_event: datetime | None = None  # when the last account event arrived
    error: str | None = None  # why the last read failed, if it did
    logged_in: bool = False
    canceling: frozenset[str] = frozenset()  # conf_nums whose cancel is on its way

    def account_pnl(self) -> list[AccountPnl]:
        """Return each account's sums, in the broker's account order."""
        sums = []
        for account in self.accounts:
            held = self.positions.get(account.acct_num, ())
            sums.append(
                AccountPnl(
                    acct_num=account.acct_num,
                    name=account.name,
                    market_value=sum(p.market_value for p in held),
                    # A position without a market price (valued at its booked price) has no gain to add.
                    day=round(sum(self.day_gain(p) for p in held if p.unpriced_reason is None), 2),
                    total=sum(p.total_gain_loss for p in held if p.unpriced_reason is None),
                )
            )
        return sums

    def day_gain(self, position: Position) -> float:
        """Return a position's day P&L by the cockpit's one rule (see the module docstring)."""
        return day_gain(position, self.fills)

    def day_pnl(self) -> float | None:
        """Return today's gain or loss over every account, or None before positions were read."""
        if self.positions_as_of is None:
            return None
        return sum(account.day for account in self.account_pnl())

    def open_order(self, conf_num: str) -> Order | None:
        """Return the open order with this conf_num, if it is still listed."""
        return next((o for o in self.open_orders if o.id_detail.conf_num == conf_num), None)


def money(value: float, *, signed: bool = False) -> str:
    """Return dollars with thousands separators; ``signed`` shows a + on gains."""
    return f"{value:+,.2f}" if signed else f"{value:,.2f}"


def quantity(value: float) -> str:
    """Return a quantity without a trailing .0 (fractional shares keep their digits)."""
    return f"{value:,.6f}".rstrip("0").rstrip(".")


def clock_time(moment: datetime | None) -> str:
    """Return a time of day in the desktop's zone, or a dash."""
    return moment.astimezone().strftime("%H:%M:%S") if moment is not None else "-"


def position_row(position: Position, day: float | None = None) -> list[str]:
    """Return the cells of one position (its account is the group row above it)."""
    if position.unpriced_reason is not None:  # no market price: say so rather than show a booked price as one
        return [
            position.symbol,
            quantity(position.quantity),
            "no quote",
            money(position.market_value),
            "-",
            "-",
            f"{position.description} (no market price: valued at the price it was booked at)",
        ]
    return [
        position.symbol,
        quantity(position.quantity),
        money(position.last_price),
        money(position.market_value),
        money(position.todays_gain_loss if day is None else day, signed=True),
        money(position.total_gain_loss, signed=True),
        position.description,
    ]


def account_row(pnl: AccountPnl) -> list[str]:
    """Return the cells of an account's group row: its name and number (across the first columns), then its sums."""
    return [f"{pnl.name} {pnl.acct_num}", "", "", money(pnl.market_value), *pnl_cells(pnl), ""]


def pnl_cells(pnl: AccountPnl) -> list[str]:
    """Return an account's day and total gain or loss."""
    return [money(pnl.day, signed=True), money(pnl.total, signed=True)]


def order_price(order: Order) -> str:
    """Return the limit and/or stop price of an order (empty for a market order)."""
    detail = order.order_detail
    prices = []
    if detail.stop_price is not None:
        prices.append(f"stop {money(detail.stop_price)}")
    if detail.limit_price is not None:
        prices.append(money(detail.limit_price))
    return " / ".join(prices)


def order_symbol(order: Order) -> str:
    """Return the symbol, with the legs of a multi-leg order."""
    detail = order.order_detail
    if detail.legs:
        return f"{detail.symbol} ({len(detail.legs)} legs)"
    return detail.symbol


def order_row(order: Order) -> list[str]:
    """Return the cells of one open order (the last column holds its Cancel button)."""
    detail, status = order.order_detail, order.status_detail
    return [
        order.acct_num,
        order.id_detail.conf_num,
        order_symbol(order),
        detail.action,
        quantity(status.qty),
        quantity(status.qty_exec),
        PRICE_TYPES.get(detail.price_type, str(detail.price_type)),
        order_price(order),
        status.status_desc or status.status.value,
        "",
    ]


def entered(order: Order) -> str:
    """Return when an order was entered, as a time of day (the broker's text when it is not a time)."""
    text = order.order_detail.entry_time
    try:
        return clock_time(datetime.fromisoformat(text))
    except ValueError:
        return text


def fill_time(order: Order, fill_times: Mapping[str, datetime]) -> str:
    """Return when an order last filled today; its entry time, said so, when no fill event of this run names it."""
    filled = fill_times.get(order.id_detail.conf_num)
    return clock_time(filled) if filled is not None else f"{entered(order)} (entered)"


def fills_in_order(snapshot: DeskSnapshot) -> list[Order]:
    """Return today's fills, the latest fill first (those without a fill time of this run after, by entry)."""
    times = snapshot.fill_times

    def key(order: Order) -> tuple[bool, str]:
        filled = times.get(order.id_detail.conf_num)
        return (filled is not None, filled.isoformat() if filled else order.order_detail.entry_time)

    return sorted(snapshot.fills, key=key, reverse=True)


def fill_row(order: Order, fill_times: Mapping[str, datetime] | None = None) -> list[str]:
    """Return the cells of one of today's fills."""
    status = order.status_detail
    average = "" if status.avg_exec_price is None else money(status.avg_exec_price)
    return [
        fill_time(order, fill_times or {}),
        order.acct_num,
        order.id_detail.conf_num,
        order_symbol(order),
        order.order_detail.action,
        f"{quantity(status.qty_exec)} of {quantity(status.qty)}",
        average,
        status.status_desc or status.status.value,
    ]


def day_pnl_line(snapshot: DeskSnapshot) -> str | None:
    """Return the tray's P&L line ("Day P&L: +12.30 at 14:05:09"), or None when there is nothing to say."""
    total = snapshot.day_pnl()
    if not snapshot.logged_in or total is None:
        return None
    return f"Day P&L: {money(total, signed=True)} (as of {clock_time(snapshot.positions_as_of)})"


def pnl_summary(snapshot: DeskSnapshot) -> str:
    """Return the cockpit's one-line P&L over the accounts."""
    sums = snapshot.account_pnl()
    if snapshot.day_pnl() is None or not sums:
        return "Day P&L: -"
    parts = [f"{s.name} {money(s.day, signed=True)}" for s in sums]
    total = snapshot.day_pnl() or 0.0
    return f"Day P&L {money(total, signed=True)}  ({', '.join(parts)})"


def rows_of(snapshot: DeskSnapshot) -> Sequence[tuple[bool, list[str], tuple[float, float] | None]]:
    """Return the positions table: each account's group row (bold, with its sums) then its positions, P&L for colour."""
    rows: list[tuple[bool, list[str], tuple[float, float] | None]] = []
    for pnl in snapshot.account_pnl():
        rows.append((True, account_row(pnl), (pnl.day, pnl.total)))
        for position in snapshot.positions.get(pnl.acct_num, ()):
            if position.unpriced_reason is not None:
                rows.append((False, position_row(position), None))
                continue
            day = snapshot.day_gain(position)
            rows.append((False, position_row(position, day), (day, position.total_gain_loss)))
    return rows
