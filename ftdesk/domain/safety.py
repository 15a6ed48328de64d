"""Trading safety: the kill switch (halt), the local risk limits and the audited live-trading switch.

These records are what the service reports (``GET /api/v1/safety``, ``GET /api/v1/safety/limits``) and what
the desktop app reads through ``ServiceControl.safety()``. The two errors are the refusals: ``TradingHalted``
while the kill switch is on, ``RiskLimitExceeded`` when an order crosses a local limit.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pydantic import Field

from ftdesk.domain.base import Record
from ftdesk.domain.errors import FtdeskError

HALT_SOURCES = ("tray", "api", "daily-loss-limit")
"""Who may pull the kill switch: the desktop app, a script through the API, the daily loss limit."""


class TradingHalted(FtdeskError):
    """The kill switch is on: previews and places are refused until the trader resumes (cancels still work)."""


class RiskLimitExceeded(FtdeskError):
    """An order crosses a local risk limit; ``details`` name the limit, its value and the order's value."""


class LiveSwitchChange(Record):
    """One change of the live-trading switch: to which value, who made it and when."""

    enabled: bool = Field(description="True: live trading turned on; false: turned off (dry-run).")
    source: str = Field(
        description="Who switched: tray, settings, halt, startup (the value the service started with), ..."
    )
    time: datetime = Field(description="When the switch changed (UTC).")


class CancelFailure(Record):
    """A cancel the kill switch tried and could not make, and why."""

    conf_num: str | None = Field(description="The order; null when the open orders could not even be listed.")
    acct_num: str | None
    error_code: str = Field(description="The error code of the failure, e.g. CONFLICT, BROKER_ERROR, AUTH_REQUIRED.")
    message: str


class CanceledOrder(Record):
    """An order the kill switch canceled."""

    conf_num: str
    acct_num: str
    symbol: str


class HaltOutcome(Record):
    """What pulling the kill switch did."""

    halted_since: datetime = Field(description="When trading was halted (the first halt's time, if already halted).")
    source: str = Field(description="Who asked for this halt: tray, api or daily-loss-limit.")
    already_halted: bool = Field(description="True when trading was already halted (the cancels ran again).")
    live_was_on: bool = Field(description="True when this halt turned live trading off.")
    canceled: list[CanceledOrder] = Field(description="Every open order this halt canceled.")
    failures: list[CancelFailure] = Field(
        description="Every open order this halt could not cancel (or the listing that failed), with why."
    )
    saved: bool = Field(
        default=True,
        description="True when the halt is on disk (a restart comes back halted). False only when even the space "
        "kept in reserve for it could not hold it (a full disk): it holds for this run only, and the tray and "
        "/health problems say so.",
    )


class HaltState(Record):
    """Whether trading is halted, since when, by whom and why."""

    halted: bool
    since: datetime | None = Field(default=None, description="When the halt began (UTC); null when not halted.")
    by: str | None = Field(default=None, description="Who halted: tray, api or daily-loss-limit.")
    reason: str | None = Field(default=None, description="The reason given with the halt, if any.")


class RiskLimits(Record):
    """The local risk limits in force; a null value means that limit is off."""

    max_equity_qty: float | None = Field(description="Most shares in one equity order (each leg, for conditionals).")
    max_equity_notional: float | None = Field(description="Most dollars in one equity order: quantity x price.")
    max_option_contracts: int | None = Field(description="Most contracts in one option order (each leg).")
    max_option_notional: float | None = Field(
        description="Most dollars in one option order: contracts x 100 x price (the net price for multi-leg)."
    )
    max_price_distance_pct: float | None = Field(
        description="Furthest a limit or stop price may be from the current quote, in percent of the quote."
    )
    max_orders_per_minute: int | None = Field(description="Most places in any 60 seconds, across every account.")
    max_open_orders: int | None = Field(description="Most working orders across every account before a new place.")
    daily_loss_limit: float | None = Field(
        description="Dollars of loss (realised + unrealised, today, per account) that halts trading."
    )
    symbol_allow: list[str] = Field(description="When not empty, only these symbols (or underlyings) may trade.")
    symbol_deny: list[str] = Field(description="These symbols (or underlyings) may never trade.")


class AccountPnl(Record):
    """Today's profit and loss of one account, as the daily loss limit sees it."""

    acct_num: str
    realized: float = Field(
        description="Day P&L of the symbols sold (or covered) out entirely today, dollars: shares held overnight "
        "from the previous close, shares bought today from their fill price."
    )
    unrealized: float = Field(
        description="Day P&L of the positions held now, dollars: shares held overnight from the previous close, "
        "shares bought today from their fill price, a partial sale today included (the cockpit's figure)."
    )
    total: float = Field(description="realized + unrealized, dollars; what the daily loss limit compares.")
    uncounted: list[str] = Field(
        default_factory=list,
        description="Symbols not in the figures: sold out today with a fill without a price, or shares held "
        "overnight whose previous close could not be read; or held but without a market price "
        "(Position.unpriced_reason).",
    )
    as_of: datetime = Field(description="When this was last read.")


class LimitUsage(Record):
    """How much of the limits is used now."""

    places_this_minute: int = Field(description="Places accepted for sending in the last 60 seconds.")
    open_orders: int | None = Field(description="Working orders across every account; null until first read.")
    pnl: list[AccountPnl] = Field(description="Today's P&L per account, as last read.")
    loss_halted_today: dict[str, date] = Field(
        default_factory=dict, description="Accounts whose loss limit halted trading, and the day it did."
    )


class SafetyState(Record):
    """The whole safety picture: the halt, the last live-switch change, the limits and their usage."""

    halt: HaltState
    live_trading: bool = Field(description="Whether live trading is on now.")
    last_live_change: LiveSwitchChange | None = Field(
        description="The last change of the live-trading switch (null when it never changed in this data dir)."
    )
    limits: RiskLimits
    usage: LimitUsage


def limit_details(limit: str, value: Any, order_value: Any, **extra: Any) -> dict[str, Any]:
    """Return the details of a ``RISK_LIMIT`` refusal: which limit, its value and the order's value."""
    return {"limit": limit, "limit_value": value, "order_value": order_value, **extra}
