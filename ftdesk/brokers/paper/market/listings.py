"""Which options are listed: the expiration schedule, the strikes of each expiration, and symbol checks.

Options trade on the optionable underlyings with weekly expirations about five weeks out, monthly
ones (third Fridays) about six months out and two January LEAPS. They expire at 16:00 New York time
on their expiration date (a day earlier when the Friday is an exchange holiday). A strike once listed
stays listed until expiry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from ftdesk.brokers.paper.ledger.money import session_close
from ftdesk.brokers.paper.market.paths import EPOCH
from ftdesk.brokers.paper.market.prices import Lru, PriceSource, Underlying
from ftdesk.brokers.paper.options import format_option_symbol, parse_option_symbol
from ftdesk.brokers.paper.pricing import DAYS_PER_YEAR
from ftdesk.domain.accounts import OptionContract
from ftdesk.domain.errors import NotFound

PENNY_OPTION_UNDERLYINGS = frozenset({"SPY", "QQQ", "IWM", "DIA"})
"""Underlyings whose options list a strike every dollar and quote in pennies at any price."""
_STRIKE_CACHE_SIZE = 4096
_WEEKLY_HORIZON_DAYS = 35
_MONTHLY_HORIZON_DAYS = 190
_LEAPS_HORIZON_DAYS = 800


def expiration_time(expiration: date) -> datetime:
    """Return the UTC instant an option expiring on ``expiration`` stops trading (16:00 New York)."""
    # The ledger and the order engine decide expiry with ``ledger.money.option_expired``: the same instant.
    return session_close(expiration)


@dataclass(frozen=True)
class Expiration:
    """One expiration of the listing schedule."""

    expiration: date
    horizon_days: int
    """How long before its (unadjusted) Friday the expiration is listed."""
    friday: date


class OptionListings:
    """The option series listed at any moment, from the price history of their underlying."""

    def __init__(self, prices: PriceSource) -> None:
        self._prices = prices
        self._schedules: Lru[int, list[Expiration]] = Lru(16)
        self._strikes: Lru[tuple[str, date, int], tuple[float, ...]] = Lru(_STRIKE_CACHE_SIZE)

    def listed_expirations(self, day: int, ts: int) -> list[Expiration]:
        """Return the expirations trading at ``ts`` (``day`` is its day index)."""
        return [item for item in self._schedule(day) if expiration_time(item.expiration).timestamp() > ts]

    def strikes(self, under: Underlying, item: Expiration, day: int) -> tuple[float, ...]:
        """Return the strikes of one expiration listed on day index ``day``, ascending."""
        key = (under.security.symbol, item.expiration, day)
        strikes = self._strikes.get(key)
        if strikes is None:
            strikes = self._compute_strikes(under, item, day)
            self._strikes.put(key, strikes)
        return strikes

    def listed_option(self, text: str, ts: int) -> tuple[OptionContract, str, Underlying]:
        """Parse an option symbol and check that the series is (or was, if expired) listed."""
        try:
            contract = parse_option_symbol(text)
        except ValueError as exc:
            raise NotFound(f"Unknown symbol {text}: {exc}", details={"symbol": text}) from None
        security = self._prices.universe.get(contract.underlying)
        if security is None:
            raise NotFound(f"Unknown option {text}: no underlying {contract.underlying}", details={"symbol": text})
        if not security.optionable:
            raise NotFound(f"Unknown option {text}: {security.symbol} has no listed options", details={"symbol": text})
        under = self._prices.underlying(security)
        canonical = format_option_symbol(contract)
        expiry_ts = int(expiration_time(contract.expiration).timestamp())
        day = self._prices.locate(min(ts, expiry_ts - 1))[0]
        item = self._expiration_listed_at(contract.expiration, day)
        if item is None:
            raise NotFound(
                f"Unknown option {canonical}: {security.symbol} has no options expiring "
                f"{contract.expiration.isoformat()}",
                details={"symbol": text},
            )
        if contract.strike not in self.strikes(under, item, day):
            raise NotFound(
                f"Unknown option {canonical}: strike {contract.strike:g} is not listed for "
                f"{security.symbol} {contract.expiration.isoformat()}",
                details={"symbol": text},
            )
        return contract, canonical, under

    def _schedule(self, day: int) -> list[Expiration]:
        schedule = self._schedules.get(day)
        if schedule is None:
            schedule = self._expiration_schedule(self._prices.day_date(day))
            self._schedules.put(day, schedule)
        return schedule

    def _expiration_schedule(self, today: date) -> list[Expiration]:
        """Return the expirations listed on ``today`` that have not expired before it."""
        friday = today - timedelta(days=(today.weekday() - 4) % 7)
        out: list[Expiration] = []
        while (friday - today).days <= _LEAPS_HORIZON_DAYS:
            third_friday = 15 <= friday.day <= 21
            if third_friday and friday.month == 1:
                horizon = _LEAPS_HORIZON_DAYS
            elif third_friday:
                horizon = _MONTHLY_HORIZON_DAYS
            else:
                horizon = _WEEKLY_HORIZON_DAYS
            expiration = friday
            while expiration in self._prices.closed_days(expiration.year):  # e.g. Good Friday: Thursday expiry
                expiration -= timedelta(days=1)
            if expiration >= today and (friday - today).days <= horizon:
                out.append(Expiration(expiration=expiration, horizon_days=horizon, friday=friday))
            friday += timedelta(days=7)
        return out

    def _expiration_listed_at(self, expiration: date, day: int) -> Expiration | None:
        """Return the schedule entry of ``expiration`` if it was listed on day index ``day``."""
        for item in self._schedule(day):
            if item.expiration == expiration:
                return item
        return None

    def _compute_strikes(self, under: Underlying, item: Expiration, day: int) -> tuple[float, ...]:
        """Return the strikes listed on day ``day``: a grid around every price seen since listing."""
        path = under.path
        path.ensure(day)
        listing = max(0, (item.friday - timedelta(days=item.horizon_days) - EPOCH).days)
        listing = min(listing, day)
        seen = [path.open(listing), *path.close[listing:day]]
        low_seen, high_seen = min(seen), max(seen)
        reference = path.open(listing)
        increment = _strike_increment(under.security.symbol, reference)
        coarse = next(
            (
                step
                for step in (0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0)
                if step >= max(increment * 2, reference * 0.02) and (step / increment).is_integer()
            ),
            increment * 100,
        )
        width = min(0.6, max(0.1, 2.0 * under.security.volatility * math.sqrt(item.horizon_days / DAYS_PER_YEAR)))
        strikes = set(_grid(low_seen * (1.0 - width), high_seen * (1.0 + width), coarse))
        if item.horizon_days < _LEAPS_HORIZON_DAYS:  # LEAPS list only the coarse strikes
            strikes.update(_grid(low_seen * 0.95, high_seen * 1.05, increment))
        if low_seen < 2 * increment:  # a stock trading for pennies keeps a strike (and never loses it)
            strikes.add(increment)
        return tuple(sorted(strike for strike in strikes if strike > 0))


def _strike_increment(symbol: str, reference: float) -> float:
    if symbol in PENNY_OPTION_UNDERLYINGS:
        return 1.0
    for limit, step in ((25.0, 0.5), (100.0, 1.0), (250.0, 2.5), (1000.0, 5.0)):
        if reference < limit:
            return step
    return 10.0


def _grid(low: float, high: float, step: float) -> list[float]:
    first, last = math.ceil(low / step), math.floor(high / step)
    return [k * step for k in range(max(first, 1), last + 1)]
