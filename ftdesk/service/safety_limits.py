"""The local risk limits: what a preview or place may not exceed, checked before any upstream call."""

from __future__ import annotations

from ftdesk.domain.clock import Clock
from ftdesk.domain.safety import LimitUsage, RiskLimits
from ftdesk.service.safety_store import SafetyRecord

NO_LIMITS = RiskLimits(
    max_equity_qty=None,
    max_equity_notional=None,
    max_option_contracts=None,
    max_option_notional=None,
    max_price_distance_pct=None,
    max_orders_per_minute=None,
    max_open_orders=None,
    daily_loss_limit=None,
    symbol_allow=[],
    symbol_deny=[],
)


class LimitChecker:
    """The limits in force and today's usage of them."""

    def __init__(self, limits: RiskLimits, clock: Clock) -> None:
        self.limits = limits
        self._clock = clock

    def usage(self, record: SafetyRecord) -> LimitUsage:
        """Return the usage of the limits now."""
        return LimitUsage(
            places_this_minute=0,
            open_orders=None,
            pnl=[],
            loss_halted_today={acct: day for acct, day in record.loss_halted if day == self._clock.now().date()},
        )
