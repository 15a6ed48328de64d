"""Exact money, the paper calendar and the paper fee and rate schedule.

Money is integer cents; prices are ``Decimal`` with four places. The calendar is New York's
(``calendar``, NYSE holidays included): a trade date is the America/New_York date of the fill;
settlement is T+1 trading day for equities and options; a day order's session ends at 16:00 New
York time of its trading day; an option stops trading at 16:00 New York time on its expiration date.

Paper fee and rate schedule (documented constants, not advice):

* commission: $0 per equity trade, $0.65 per option contract;
* on sales only: SEC fee $27.80 per million dollars of principal and FINRA TAF $0.000166 per
  share (at most $8.30) or $0.00279 per option contract, each rounded up to the cent per fill;
* margin interest: 11.825% a year on a debit balance, actual/360;
* core (sweep) interest: 2.50% a year on a credit balance, actual/365;
* fully-paid lending: the rate on the loan record, actual/365 on the loaned shares' market value.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal

from ftdesk.brokers.paper.calendar import is_trading_day, new_york_datetime, previous_trading_day, to_new_york
from ftdesk.domain.accounts import OptionContract

MARKET_CLOSE = time(16, 0)

CENT = Decimal("0.01")
PRICE_PLACES = Decimal("0.0001")

OPTION_COMMISSION_CENTS = 65
SEC_FEE_PER_MILLION = Decimal("27.80")
TAF_PER_SHARE = Decimal("0.000166")
TAF_MAX = Decimal("8.30")
TAF_PER_CONTRACT = Decimal("0.00279")
MARGIN_RATE_PCT = Decimal("11.825")
CORE_RATE_PCT = Decimal("2.50")


def price_of(value: float | Decimal | str) -> Decimal:
    """Return a price as an exact four-place Decimal (floats via their shortest repr)."""
    raw = value if isinstance(value, Decimal) else Decimal(repr(value) if isinstance(value, float) else value)
    return raw.quantize(PRICE_PLACES, rounding=ROUND_HALF_UP)


def cents(amount: Decimal) -> int:
    """Return a dollar amount as integer cents, rounded half up."""
    return int(amount.quantize(CENT, rounding=ROUND_HALF_UP) * 100)


def dollars(amount_cents: int) -> float:
    """Return integer cents as a float dollar amount for a record."""
    return float(Decimal(amount_cents) / 100)


def price_float(price: Decimal) -> float:
    """Return a price as a float for a record (four places)."""
    return float(price.quantize(PRICE_PLACES, rounding=ROUND_HALF_UP))


def pct(part: int | Decimal, whole: int | Decimal) -> float:
    """Return part/whole in percent to two places (0 when whole is 0)."""
    if not whole:
        return 0.0
    return float((Decimal(part) * 100 / abs(Decimal(whole))).quantize(CENT, rounding=ROUND_HALF_UP))


def split_cents(total: int, weights: Sequence[Decimal | int]) -> list[int]:
    """Split ``total`` cents in proportion to ``weights`` so the parts add up exactly."""
    whole = sum(weights, Decimal(0))
    parts: list[int] = []
    given = 0
    for i, weight in enumerate(weights):
        if i == len(weights) - 1:
            parts.append(total - given)
        else:
            part = int((Decimal(total) * weight / whole).quantize(Decimal(1), rounding=ROUND_HALF_UP))
            parts.append(part)
            given += part
    return parts


def sell_fees_cents(quantity: Decimal | int, principal_cents: int, is_option: bool) -> int:
    """Return the SEC fee plus FINRA TAF of a sale, in cents."""
    sec = (Decimal(principal_cents) / 100 * SEC_FEE_PER_MILLION / 1_000_000).quantize(CENT, rounding=ROUND_CEILING)
    taf_raw = quantity * (TAF_PER_CONTRACT if is_option else TAF_PER_SHARE)
    taf = min(taf_raw, TAF_MAX).quantize(CENT, rounding=ROUND_CEILING)
    return cents(sec + taf)


def commission_cents(quantity: Decimal | int, is_option: bool) -> int:
    """Return the commission of a fill, in cents (contracts are whole; equity trades, fractional too, are free)."""
    return int(OPTION_COMMISSION_CENTS * quantity) if is_option else 0


def trade_date(when: datetime) -> date:
    """Return the New York calendar date of a moment."""
    return to_new_york(when).date()


def next_trading_day(day: date) -> date:
    """Return the first NYSE trading day after ``day``."""
    day += timedelta(days=1)
    while not is_trading_day(day):
        day += timedelta(days=1)
    return day


def settlement_date(day: date) -> date:
    """Return the T+1 settlement date of a trade made on ``day``."""
    return next_trading_day(day)


def trading_day(when: datetime) -> date:
    """Return the session a moment belongs to: today before the 16:00 close of a trading day, else the next one."""
    local = to_new_york(when)
    day = local.date()
    if not is_trading_day(day) or local.time() >= MARKET_CLOSE:
        return next_trading_day(day)
    return day


def quoted_day(when: datetime) -> date:
    """Return the session the market's quotes show at a moment: today on a trading day, else the last one.

    A quote's previous close is the close before this session, so a position's day change counts from it.
    """
    day = trade_date(when)
    return day if is_trading_day(day) else previous_trading_day(day)


@functools.lru_cache(maxsize=4096)  # pure, and asked for every option position on every read
def session_close(day: date) -> datetime:
    """Return the UTC moment of 16:00 New York time on ``day``."""
    return new_york_datetime(day, MARKET_CLOSE.hour, MARKET_CLOSE.minute)


def option_expired(option: OptionContract, now: datetime) -> bool:
    """Return True once an option has stopped trading (16:00 New York time on its expiration date)."""
    return now >= session_close(option.expiration)


def one_year_after(day: date) -> date:
    """Return the same calendar date a year later (28 February for 29 February)."""
    try:
        return day.replace(year=day.year + 1)
    except ValueError:
        return day.replace(year=day.year + 1, day=28)


def is_long_term(acquired: date, sold: date) -> bool:
    """Return True when a holding from ``acquired`` to ``sold`` lasted more than one year."""
    return sold > one_year_after(acquired)
