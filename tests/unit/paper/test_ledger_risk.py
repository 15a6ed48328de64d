"""Option cover: a valid spread beside a covered call is never mistaken for a naked call."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from ftdesk.brokers.paper.ledger.risk import Holding, option_cover
from ftdesk.brokers.paper.ports import Instrument
from ftdesk.domain.accounts import OptionContract, OptionType, SecurityType


def call(strike: float, expiration: date, quantity: int, last: str = "1.00") -> Holding:
    contract = OptionContract(underlying="AAPL", option_type=OptionType.CALL, strike=strike, expiration=expiration)
    instrument = Instrument(
        symbol=f"AAPL{expiration:%y%m%d}C{strike:g}",
        description="",
        security_type=SecurityType.OPTION,
        exchange="OPRA",
        cusip="000000000",
        option=contract,
    )
    return Holding(instrument.symbol, quantity, Decimal(last), instrument)


def shares(quantity: int) -> Holding:
    return Holding("AAPL", quantity, Decimal("250"), None)


def test_a_spread_expiring_before_the_covered_call_leaves_nothing_naked() -> None:
    soon, later = date(2026, 11, 27), date(2026, 12, 18)
    holdings = [shares(100), call(295, later, -1), call(200, soon, 1), call(210, soon, -1)]
    cover = option_cover(holdings, {"AAPL": Decimal("250")}, naked_allowed=False)
    assert cover.naked == 0
    assert (cover.covered_calls, cover.spreads) == (1, 1)
    assert cover.requirement_cents == 0  # the long's strike is below the short's: a debit spread needs nothing


def test_shares_still_cover_when_no_long_can_pair() -> None:
    later = date(2026, 12, 18)
    cover = option_cover([shares(100), call(295, later, -1)], {"AAPL": Decimal("250")}, naked_allowed=False)
    assert (cover.covered_calls, cover.naked, cover.requirement_cents) == (1, 0, 0)


def test_a_short_call_without_shares_or_long_is_naked() -> None:
    cover = option_cover([call(260, date(2026, 12, 18), -1, last="5.00")], {"AAPL": Decimal("250")}, naked_allowed=True)
    assert cover.naked == 1
    # 20% of 250 minus 10 out of the money, plus the 5.00 premium, times 100
    assert cover.requirement_cents == (50 - 10 + 5) * 100 * 100
