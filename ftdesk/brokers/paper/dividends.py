"""The dividend schedule of the simulated universe: the one source research and the ledger share.

A payer in the universe (a ``DividendPolicy``) pays ``frequency`` times a year:

* ex-dates fall on ``ex_day`` (at most the 28th) of ``first_month`` and every 12/frequency months
  after, moved to the next NYSE trading day; the record date is the ex-date (T+1 settlement);
* the amount per share is the reference price x annual yield / frequency, to four places;
* the pay date is 14 to 27 days after the ex-date (seeded per symbol and ex-date), moved to the next
  trading day.

``PaperResearch.dividends`` reports this schedule and the ledger pays it: build one
``DividendSchedule(universe, seed)`` and pass it to ``Ledger(..., dividends=...)`` (it is a
``DividendSource``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from ftdesk.brokers.paper.calendar import is_trading_day
from ftdesk.brokers.paper.ledger.income import Dividend
from ftdesk.brokers.paper.ledger.money import PRICE_PLACES
from ftdesk.brokers.paper.market.randomness import stable_uniform
from ftdesk.brokers.paper.universe import Security, Universe

PAY_DELAY_MIN_DAYS = 14
PAY_DELAY_SPREAD_DAYS = 14
"""The pay date is ``PAY_DELAY_MIN_DAYS`` plus a seeded 0 to ``PAY_DELAY_SPREAD_DAYS - 1`` days after the ex-date."""
_LOOKBACK = timedelta(days=PAY_DELAY_MIN_DAYS + PAY_DELAY_SPREAD_DAYS + 10)  # the latest a pay date can trail


class DividendSchedule:
    """The dividends of every payer in a universe, a deterministic function of the seed."""

    def __init__(self, universe: Universe, seed: int) -> None:
        self._universe = universe
        self._seed = seed

    def __call__(self, symbol: str, start: date, end: date) -> Iterator[Dividend]:
        """Yield the dividends of ``symbol`` paid from ``start`` to ``end`` inclusive, oldest first."""
        return self.paid_between(symbol, start, end)

    def paid_between(self, symbol: str, start: date, end: date) -> Iterator[Dividend]:
        """Yield the dividends of ``symbol`` paid from ``start`` to ``end`` inclusive, oldest first."""
        candidates = self.ex_between(symbol, start - _LOOKBACK, end)
        yield from sorted((d for d in candidates if start <= d.pay_date <= end), key=lambda d: d.pay_date)

    def ex_between(self, symbol: str, start: date, end: date) -> Iterator[Dividend]:
        """Yield the dividends of ``symbol`` with an ex-date from ``start`` to ``end`` inclusive, oldest first.

        Symbols outside the universe and securities that pay no dividend yield nothing.
        """
        security = self._universe.get(symbol)
        if security is None or security.dividend is None or start > end:
            return
        for year in range(start.year, end.year + 1):
            for dividend in self._year(security, year):
                if start <= dividend.ex_date <= end:
                    yield dividend

    def _year(self, security: Security, year: int) -> Iterator[Dividend]:
        policy = security.dividend
        assert policy is not None
        per_share = (Decimal(repr(security.price)) * Decimal(repr(policy.annual_yield)) / policy.frequency).quantize(
            PRICE_PLACES, rounding=ROUND_HALF_UP
        )
        for month in range(policy.first_month, 13, 12 // policy.frequency):
            ex_date = _on_or_after(date(year, month, min(policy.ex_day, 28)))
            spread = int(stable_uniform(self._seed, security.symbol, ex_date, "pay") * PAY_DELAY_SPREAD_DAYS)
            pay_date = _on_or_after(ex_date + timedelta(days=PAY_DELAY_MIN_DAYS + spread))
            yield Dividend(security.symbol, per_share, ex_date, pay_date)


def _on_or_after(day: date) -> date:
    """Return the first NYSE trading day on or after ``day``."""
    while not is_trading_day(day):
        day += timedelta(days=1)
    return day
