"""Research on the simulated market: earnings, dividends, symbol search, position analytics, a screener.

Earnings follow each company's reporting cycle in the universe (calendar quarters: a report in
January to March covers Q4 of the year before), with estimates derived from its annual EPS and a
seeded surprise. Dividends are the universe's schedule (``dividends.DividendSchedule``), the same
one the ledger pays. Everything is a deterministic function of the seed and the market's clock.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from ftdesk.brokers.paper.calendar import is_trading_day, new_york_datetime
from ftdesk.brokers.paper.dividends import DividendSchedule
from ftdesk.brokers.paper.ledger.money import trade_date
from ftdesk.brokers.paper.market.listings import expiration_time
from ftdesk.brokers.paper.market.option_prices import RISK_FREE_RATE, SECONDS_PER_YEAR
from ftdesk.brokers.paper.market.randomness import stable_normal, stable_uniform
from ftdesk.brokers.paper.market.simulator import MarketSimulator
from ftdesk.brokers.paper.options import parse_option_symbol
from ftdesk.brokers.paper.pricing import DAYS_PER_YEAR, bs_price, bs_price_and_greeks, intrinsic_value
from ftdesk.brokers.paper.universe import Security, Universe
from ftdesk.domain.accounts import OptionContract, OptionType
from ftdesk.domain.errors import NotFound, ValidationFailed
from ftdesk.domain.market import Greeks
from ftdesk.domain.research import (
    AnalyticsRequest,
    AnalyticsResult,
    AutosuggestResult,
    DividendEvent,
    EarningsEvent,
    LegAnalytics,
    PnlPoint,
    ScanDefinition,
    ScreenerResult,
    ScreenerRow,
    Suggestion,
)

SEARCH_LIMIT = 10
SCREENER_FIELDS: tuple[str, ...] = ("iv", "hv", "iv_rank", "iv_hv_ratio", "price", "volume", "change_pct")
"""Fields a scan can filter and sort on. ``iv`` and ``hv`` are annualised fractions (0.25 = 25%),
``iv_rank`` is 0-100, ``change_pct`` is percent."""
SCREENER_SORT_FIELDS: tuple[str, ...] = (*SCREENER_FIELDS, "symbol")
HV_CLOSES = 20
PNL_RANGE = 0.30
PNL_POINTS = 61
_EPS_GROWTH = 0.08  # a year
_BMO_HOUR, _AMC_HOUR = 7, 16


@dataclass(frozen=True)
class _Leg:
    symbol: str
    quantity: float
    price: float
    contract: OptionContract | None
    iv: float
    expiry_ts: float


class PaperResearch:
    """Research answers drawn from the simulated market and the universe."""

    def __init__(self, market: MarketSimulator, universe: Universe) -> None:
        self._market = market
        self._universe = universe
        self._dividends = DividendSchedule(universe, market.seed)

    # --- earnings -----------------------------------------------------------------------------

    def earnings(self, symbols: Sequence[str]) -> list[EarningsEvent]:
        """Return the last four reported quarters and the next scheduled report of each company.

        ETFs report no earnings and return nothing; unknown symbols raise ``NotFound``.
        """
        now = self._market.now()
        events: list[EarningsEvent] = []
        for symbol in symbols:
            security = self._universe.require(symbol)
            cycle = security.earnings
            if cycle is None:
                continue
            reports = self._report_dates(security, trade_date(now).year)
            past = [day for day in reports if self._report_time(security, day) <= now][-4:]
            upcoming = [day for day in reports if self._report_time(security, day) > now][:1]
            for day in past + upcoming:
                events.append(self._earnings_event(security, day, reported=day in past))
        return events

    def _report_dates(self, security: Security, year: int) -> list[date]:
        assert security.earnings is not None
        cycle = security.earnings
        out: list[date] = []
        for y in range(year - 2, year + 2):
            for month in range(1 + cycle.month_offset, 13, 3):
                jitter = int(stable_uniform(self._market.seed, security.symbol, y, month, "earnings") * 5) - 2
                day = date(y, month, 1) + timedelta(days=min(max(cycle.day + jitter, 1), 28) - 1)
                while not is_trading_day(day):
                    day += timedelta(days=1)
                out.append(day)
        return out

    @staticmethod
    def _report_time(security: Security, day: date) -> datetime:
        assert security.earnings is not None
        return new_york_datetime(day, _BMO_HOUR if security.earnings.timing == "BMO" else _AMC_HOUR, 5)

    def _earnings_event(self, security: Security, day: date, *, reported: bool) -> EarningsEvent:
        assert security.earnings is not None
        quarter = (day.month - 1) // 3  # the quarter before the report's: 0 means Q4 of last year
        fiscal_year = day.year if quarter else day.year - 1
        period = f"Q{quarter or 4} {fiscal_year}"
        seed, symbol = self._market.seed, security.symbol
        base = security.earnings.annual_eps / 4.0
        years = (day.year + day.month / 12.0) - 2024.0
        estimate = base * (1.0 + _EPS_GROWTH) ** years * (1.0 + 0.05 * stable_normal(seed, symbol, period, "estimate"))
        estimate = round(estimate, 2)
        actual: float | None = None
        surprise: float | None = None
        if reported:
            beat = 0.04 + 0.08 * stable_normal(seed, symbol, period, "surprise")
            actual = round(estimate + abs(estimate) * beat, 2) if estimate else round(0.02 * beat, 2)
            surprise = round(100.0 * (actual - estimate) / abs(estimate), 2) if estimate else None
        return EarningsEvent(
            symbol=symbol,
            report_date=day.isoformat(),
            fiscal_period=period,
            timing=security.earnings.timing,
            eps_estimate=estimate,
            eps_actual=actual,
            surprise_pct=surprise,
        )

    # --- dividends ----------------------------------------------------------------------------

    def dividends(self, symbols: Sequence[str]) -> list[DividendEvent]:
        """Return the last four dividends and the next one of each payer; non-payers return nothing."""
        today = trade_date(self._market.now())
        window = (date(today.year - 2, 1, 1), date(today.year + 1, 12, 31))
        events: list[DividendEvent] = []
        for symbol in symbols:
            security = self._universe.require(symbol)
            policy = security.dividend
            if policy is None:
                continue
            price = self._market.quote(security.symbol).last
            schedule = list(self._dividends.ex_between(security.symbol, *window))
            past = [d for d in schedule if d.ex_date <= today][-4:]
            upcoming = [d for d in schedule if d.ex_date > today][:1]
            for dividend in past + upcoming:
                amount = float(dividend.per_share)
                events.append(
                    DividendEvent(
                        symbol=security.symbol,
                        ex_date=dividend.ex_date.isoformat(),
                        record_date=dividend.ex_date.isoformat(),  # T+1 settlement: the record date is the ex-date
                        pay_date=dividend.pay_date.isoformat(),
                        amount=amount,
                        frequency=policy.frequency_name,
                        yield_pct=round(100.0 * amount * policy.frequency / price, 4),
                    )
                )
        return events

    # --- search -------------------------------------------------------------------------------

    def search(self, query: str) -> AutosuggestResult:
        """Return up to ten securities: exact symbol, symbol prefix, description word prefix, substring."""
        text = query.strip().upper()
        if not text:
            return AutosuggestResult(suggestions=[])
        ranked: list[tuple[int, int, str, Security]] = []
        for security in self._universe:
            rank = _search_rank(security, text)
            if rank is not None:
                ranked.append((rank, len(security.symbol), security.symbol, security))
        ranked.sort(key=lambda item: item[:3])
        return AutosuggestResult(
            suggestions=[
                Suggestion(
                    symbol=security.symbol,
                    description=security.description,
                    exchange=security.exchange,
                    security_type=security.security_type.value,
                )
                for *_, security in ranked[:SEARCH_LIMIT]
            ]
        )

    # --- position analytics -------------------------------------------------------------------

    def analyze(self, request: AnalyticsRequest) -> AnalyticsResult:
        """Return the P&L curve at the first expiry and now, breakevens, max profit/loss and Greeks.

        Stock legs count one share per unit, option legs the contract's multiplier (100) per contract.
        ``max_loss`` is the worst P&L (a negative number); either is null when unbounded.
        """
        underlying = request.symbol.strip().upper()
        security = self._universe.require(underlying)
        legs = [self._leg(underlying, leg.symbol, leg.quantity, leg.price) for leg in request.legs]
        now_ts = self._market.now().timestamp()
        spot = self._market.quote(security.symbol).last
        carry = security.dividend_yield
        expiries = [leg.expiry_ts for leg in legs if leg.contract is not None]
        horizon = min(expiries) if expiries else now_ts

        def value(leg: _Leg, price: float, at_ts: float) -> float:
            if leg.contract is None:
                return price
            years = (leg.expiry_ts - at_ts) / SECONDS_PER_YEAR
            if years <= 0:
                return intrinsic_value(leg.contract.option_type, price, leg.contract.strike)
            return bs_price(leg.contract.option_type, price, leg.contract.strike, years, RISK_FREE_RATE, leg.iv, carry)

        def pnl(price: float, at_ts: float) -> float:
            return sum(_units(leg) * (value(leg, price, at_ts) - leg.price) for leg in legs)

        grid = [round(spot * (1.0 - PNL_RANGE + 2.0 * PNL_RANGE * j / (PNL_POINTS - 1)), 2) for j in range(PNL_POINTS)]
        at_expiry = [pnl(price, horizon) for price in grid]
        curve = [
            PnlPoint(underlying_price=price, pnl_at_expiry=round(end, 2), pnl_now=round(pnl(price, now_ts), 2))
            for price, end in zip(grid, at_expiry, strict=True)
        ]
        # The at-expiry payoff bends only at strikes, so adding them makes breakevens and extremes exact.
        candidates = sorted({0.0, *grid, *(leg.contract.strike for leg in legs if leg.contract is not None)})
        outcomes = [pnl(price, horizon) for price in candidates]
        # Far above every strike only stock and calls still move with the underlying.
        upside_slope = sum(
            _units(leg) for leg in legs if leg.contract is None or leg.contract.option_type is OptionType.CALL
        )
        max_profit = None if upside_slope > 1e-9 else round(max(outcomes), 2)
        max_loss = None if upside_slope < -1e-9 else round(min(outcomes), 2)
        leg_rows, totals = self._leg_greeks(legs, spot, now_ts, carry)
        return AnalyticsResult(
            symbol=security.symbol,
            underlying_price=spot,
            net_cost=round(sum(_units(leg) * leg.price for leg in legs), 2),
            legs=leg_rows,
            pnl_curve=curve,
            breakevens=_breakevens(candidates, outcomes),
            max_profit=max_profit,
            max_loss=max_loss,
            delta=round(totals[0], 4),
            gamma=round(totals[1], 4),
            theta=round(totals[2], 4),
            vega=round(totals[3], 4),
        )

    def _leg(self, underlying: str, symbol: str, quantity: float, price: float | None) -> _Leg:
        text = symbol.strip().upper()
        if quantity == 0:
            raise ValidationFailed.for_field("legs", f"Leg {text}: quantity must not be zero")
        if text == underlying:
            mid = self._mid(text) if price is None else price
            return _Leg(symbol=text, quantity=quantity, price=mid, contract=None, iv=0.0, expiry_ts=0.0)
        if text in self._universe:
            raise ValidationFailed.for_field(
                "legs", f"Leg {text} is not an option on {underlying} nor {underlying} itself"
            )
        try:
            contract = parse_option_symbol(text)
        except ValueError as exc:
            raise NotFound(f"Unknown symbol {text}: {exc}", details={"symbol": text}) from None
        if contract.underlying != underlying:
            raise ValidationFailed.for_field(
                "legs", f"Leg {text} is an option on {contract.underlying}, not on {underlying}"
            )
        canonical = self._market.instrument(text).symbol  # raises NotFound for a series that is not listed
        return _Leg(
            symbol=canonical,
            quantity=quantity,
            price=self._mid(canonical) if price is None else price,
            contract=contract,
            iv=self._market.series_iv(contract),
            expiry_ts=expiration_time(contract.expiration).timestamp(),
        )

    def _mid(self, symbol: str) -> float:
        quote = self._market.quote(symbol)
        return round((quote.bid + quote.ask) / 2.0, 4)

    def _leg_greeks(
        self, legs: Sequence[_Leg], spot: float, now_ts: float, carry: float
    ) -> tuple[list[LegAnalytics], tuple[float, float, float, float]]:
        rows: list[LegAnalytics] = []
        delta = gamma = theta = vega = 0.0
        for leg in legs:
            greeks: Greeks | None = None
            if leg.contract is None:
                delta += leg.quantity
            else:
                years = max((leg.expiry_ts - now_ts) / SECONDS_PER_YEAR, 0.0)
                _, greeks = bs_price_and_greeks(
                    leg.contract.option_type, spot, leg.contract.strike, years, RISK_FREE_RATE, leg.iv, carry
                )
                units = _units(leg)
                delta += units * greeks.delta
                gamma += units * greeks.gamma
                theta += units * greeks.theta
                vega += units * greeks.vega
            rows.append(
                LegAnalytics(
                    symbol=leg.symbol,
                    quantity=leg.quantity,
                    option_type=leg.contract.option_type if leg.contract else None,
                    strike=leg.contract.strike if leg.contract else None,
                    expiration=leg.contract.expiration.isoformat() if leg.contract else None,
                    price=leg.price,
                    greeks=greeks,
                )
            )
        return rows, (delta, gamma, theta, vega)

    # --- screener -----------------------------------------------------------------------------

    def screener(self, scan: ScanDefinition) -> ScreenerResult:
        """Run a volatility scan over the optionable symbols; criteria bounds are inclusive."""
        for criterion in scan.criteria:
            if criterion.field not in SCREENER_FIELDS:
                raise ValidationFailed.for_field(
                    "criteria.field",
                    f"Unknown scan field {criterion.field!r}; use one of: {', '.join(SCREENER_FIELDS)}",
                    allowed=SCREENER_FIELDS,
                )
            if criterion.min is not None and criterion.max is not None and criterion.min > criterion.max:
                raise ValidationFailed.for_field(
                    "criteria.max", f"Scan field {criterion.field}: min {criterion.min} is above max {criterion.max}"
                )
        if scan.sort_by not in SCREENER_SORT_FIELDS:
            raise ValidationFailed.for_field(
                "sort_by",
                f"Unknown sort field {scan.sort_by!r}; use one of: {', '.join(SCREENER_SORT_FIELDS)}",
                allowed=SCREENER_SORT_FIELDS,
            )
        rows = [self._screener_row(security) for security in self._universe.optionable()]
        matches = [row for row in rows if all(_within(_field(row, c.field), c.min, c.max) for c in scan.criteria)]
        matches.sort(key=lambda row: row.symbol)
        key: Callable[[ScreenerRow], float | str] = lambda row: _field(row, scan.sort_by)  # noqa: E731
        matches.sort(key=key, reverse=scan.descending)
        return ScreenerResult(rows=matches[: scan.limit], total_matches=len(matches))

    def _screener_row(self, security: Security) -> ScreenerRow:
        quote = self._market.quote(security.symbol)
        iv = self._market.atm_iv(security.symbol, 30)
        history = self._market.iv_history(security.symbol, 365)
        low, high = min(history), max(history)
        rank = 100.0 * (iv - low) / (high - low) if high > low else 50.0
        hv = realized_volatility(self._market.daily_closes(security.symbol, HV_CLOSES))
        return ScreenerRow(
            symbol=security.symbol,
            description=security.description,
            price=quote.last,
            change_pct=quote.change_pct or 0.0,
            volume=quote.volume,
            iv=round(iv, 4),
            hv=round(hv, 4),
            iv_rank=round(rank, 2),
            iv_hv_ratio=round(iv / hv, 3) if hv > 0 else 0.0,
        )


# --- helpers ----------------------------------------------------------------------------------


def realized_volatility(closes: Sequence[float]) -> float:
    """Return the annualised standard deviation of daily log returns (the market trades every day)."""
    returns = [math.log(b / a) for a, b in itertools.pairwise(closes)]
    if len(returns) < 2:
        return 0.0
    return statistics.stdev(returns) * math.sqrt(DAYS_PER_YEAR)


def _units(leg: _Leg) -> float:
    return leg.quantity * (leg.contract.multiplier if leg.contract is not None else 1)


def _breakevens(grid: Sequence[float], pnl: Sequence[float]) -> list[float]:
    """Return the underlying prices where the at-expiry P&L crosses zero (linear interpolation)."""
    out: list[float] = []
    for (x0, y0), (x1, y1) in zip(zip(grid, pnl, strict=True), zip(grid[1:], pnl[1:], strict=True), strict=False):
        if y0 == 0.0:
            point = x0
        elif y0 * y1 < 0.0:
            point = x0 + (x1 - x0) * (-y0) / (y1 - y0)
        else:
            continue
        if not out or abs(out[-1] - point) > 0.005:
            out.append(round(point, 2))
    if pnl and pnl[-1] == 0.0 and (not out or abs(out[-1] - grid[-1]) > 0.005):
        out.append(round(grid[-1], 2))
    return out


def _search_rank(security: Security, text: str) -> int | None:
    if security.symbol == text:
        return 0
    if security.symbol.startswith(text):
        return 1
    description = security.description.upper()
    start = description.find(text)
    if start < 0:
        return None
    while start >= 0:
        if start == 0 or not description[start - 1].isalnum():
            return 2
        start = description.find(text, start + 1)
    return 3


def _field(row: ScreenerRow, name: str) -> float | str:
    value: float | str = getattr(row, name)
    return value


def _within(value: float | str, low: float | None, high: float | None) -> bool:
    assert isinstance(value, (int, float))
    return (low is None or value >= low) and (high is None or value <= high)
