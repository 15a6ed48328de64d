"""Borrow rates, share availability and short-interest figures of the simulated stocks and ETFs."""

from __future__ import annotations

import math
from calendar import monthrange
from collections.abc import Sequence
from datetime import date, timedelta

from ftdesk.brokers.paper.calendar import previous_trading_day
from ftdesk.brokers.paper.market.paths import EPOCH
from ftdesk.brokers.paper.market.prices import PriceSource, Underlying, normalize
from ftdesk.brokers.paper.market.randomness import stable_normal, stable_uniform
from ftdesk.brokers.paper.universe import Security
from ftdesk.domain.accounts import HardToBorrowPosition, ShortInsightDetail, ShortInsightSeries, TimeSeriesPoint
from ftdesk.domain.errors import BrokerError, ValidationFailed

SHORT_INSIGHT_METRICS: tuple[str, ...] = (
    "shortInterest",
    "daysToCover",
    "shortPctOfFloat",
    "borrowRate",
    "sharesShort",
)
"""Metric names accepted by ``short_insight_series``."""
SHORT_INTEREST_PUBLICATION_LAG_DAYS = 8
"""Days between a short-interest settlement date and the publication of its figures."""


class ShortData:
    """Borrow and short-interest data, a deterministic function of (seed, symbol, date)."""

    def __init__(self, prices: PriceSource) -> None:
        self._prices = prices

    def hard_to_borrow(self, symbols: Sequence[str]) -> list[HardToBorrowPosition]:
        """Return today's borrow rate and availability of each stock or ETF."""
        day = self._prices.locate(self._prices.now_ts())[0]
        rows = []
        for symbol in symbols:
            security = self._prices.equity(normalize(symbol), purpose="Borrow data").security
            rate, available = self._borrow(security, day)
            htb = security.borrow.hard_to_borrow
            rows.append(
                HardToBorrowPosition(
                    symbol=security.symbol,
                    cusip=security.cusip,
                    borrow_rate=rate,
                    available_qty=float(available),
                    htb_ind=htb,
                    locate_required_ind=security.borrow.locate_required,
                    status="HTB" if htb else "ETB",
                    status_desc="Hard to borrow: a locate is required before selling short"
                    if security.borrow.locate_required
                    else ("Hard to borrow" if htb else "Easy to borrow"),
                )
            )
        return rows

    def short_insights(self, symbols: Sequence[str]) -> list[ShortInsightDetail]:
        """Return the latest published short-interest figures of each stock or ETF."""
        today = self._prices.day_date(self._prices.locate(self._prices.now_ts())[0])
        latest = _published_settlements(max(today - timedelta(days=60), EPOCH), today)
        if not latest:
            raise BrokerError("No short-interest figures have been published yet in the simulated market")
        current, prior = latest[-1], latest[-2] if len(latest) > 1 else latest[-1]
        rows = []
        for symbol in symbols:
            under = self._prices.equity(normalize(symbol), purpose="Short insights")
            figures = self._short_figures(under, current)
            rows.append(
                ShortInsightDetail(
                    symbol=under.security.symbol,
                    short_interest=figures["shortInterest"],
                    short_interest_ratio=figures["daysToCover"],
                    days_to_cover=figures["daysToCover"],
                    short_pct_of_float=figures["shortPctOfFloat"],
                    shares_short=figures["sharesShort"],
                    prior_shares_short=self._shares_short(under.security, prior),
                    settlement_date=current.isoformat(),
                    borrow_rate=figures["borrowRate"],
                    lending_supply=figures["lendingSupply"],
                )
            )
        return rows

    def short_insight_series(
        self, symbol: str, metric: str, start: date | None = None, end: date | None = None
    ) -> ShortInsightSeries:
        """Return one short-interest metric at each published settlement date between two dates."""
        names = {name.lower(): name for name in SHORT_INSIGHT_METRICS}
        canonical = names.get(metric.strip().lower())
        if canonical is None:
            raise ValidationFailed.for_field(
                "metric",
                f"Unknown short-insight metric {metric!r}; use one of: {', '.join(SHORT_INSIGHT_METRICS)}",
                location="query",
                allowed=SHORT_INSIGHT_METRICS,
            )
        under = self._prices.equity(normalize(symbol), purpose="Short insights")
        today = self._prices.day_date(self._prices.locate(self._prices.now_ts())[0])
        end = min(end or today, today)
        start = start or end - timedelta(days=365)
        if start > end:
            raise ValidationFailed.for_field("end_date", f"Series start {start} is after end {end}", location="query")
        points = [
            TimeSeriesPoint(date=settlement.isoformat(), value=self._short_figures(under, settlement)[canonical])
            for settlement in _published_settlements(max(start, EPOCH + timedelta(days=30)), end)
            if settlement >= start
        ]
        return ShortInsightSeries(symbol=under.security.symbol, metric=canonical, points=points)

    def _borrow(self, security: Security, day: int) -> tuple[float, int]:
        """Return (annual borrow rate %, shares available) on day index ``day``."""
        seed = self._prices.seed
        terms = security.borrow
        wobble = stable_uniform(seed, security.symbol, day, "borrow")
        rate = terms.rate * (0.8 + 0.4 * wobble) if terms.hard_to_borrow else terms.rate * (0.95 + 0.1 * wobble)
        available = int(
            terms.available * (0.6 + 0.8 * stable_uniform(seed, security.symbol, day, "supply")) // 100 * 100
        )
        return round(rate, 2), available

    def _shares_short(self, security: Security, settlement: date) -> float:
        period = (settlement.year - EPOCH.year) * 24 + (settlement.month - 1) * 2 + (1 if settlement.day > 15 else 0)
        # A moving sum of three period shocks keeps consecutive reports correlated.
        seed = self._prices.seed
        shock = sum(stable_normal(seed, security.symbol, "short", period - lag) for lag in range(3)) / math.sqrt(3.0)
        return float(round(security.float_shares * security.short_pct_float / 100.0 * math.exp(0.25 * shock)))

    def _short_figures(self, under: Underlying, settlement: date) -> dict[str, float]:
        security = under.security
        day = (settlement - EPOCH).days
        under.path.ensure(day)
        recent = under.path.volume[max(0, day - 14) : day + 1]
        avg_volume = sum(recent) / len(recent)
        shares_short = self._shares_short(security, settlement)
        rate, available = self._borrow(security, day)
        return {
            "shortInterest": shares_short,
            "sharesShort": shares_short,
            "daysToCover": round(shares_short / avg_volume, 2),
            "shortPctOfFloat": round(100.0 * shares_short / security.float_shares, 2),
            "borrowRate": rate,
            "lendingSupply": float(available),
        }


def _published_settlements(start: date, end: date) -> list[date]:
    """Return short-interest settlement dates whose figures are published by ``end``."""
    cutoff = end - timedelta(days=SHORT_INTEREST_PUBLICATION_LAG_DAYS)
    out: list[date] = []
    year, month = start.year, start.month
    while date(year, month, 1) <= cutoff:
        mid = previous_trading_day(date(year, month, 15))
        last = previous_trading_day(date(year, month, monthrange(year, month)[1]))
        out += [day for day in (mid, last) if start <= day <= cutoff]
        year, month = year + month // 12, month % 12 + 1
    return out
