"""Compact option symbols: parsing, formatting and the errors a user sees for a bad symbol."""

from __future__ import annotations

from datetime import date

import pytest

from ftdesk.brokers.paper.options import (
    canonical_option_symbol,
    format_option_symbol,
    format_strike,
    is_option_symbol,
    option_description,
    parse_option_symbol,
)
from ftdesk.domain.accounts import OptionContract, OptionType


@pytest.mark.parametrize(
    ("symbol", "root", "kind", "strike", "expiration"),
    [
        ("AAPL260417C200", "AAPL", OptionType.CALL, 200.0, date(2026, 4, 17)),
        ("SPXW260330P6330", "SPXW", OptionType.PUT, 6330.0, date(2026, 3, 30)),
        ("QS270115C7", "QS", OptionType.CALL, 7.0, date(2027, 1, 15)),
        ("F261218C12.5", "F", OptionType.CALL, 12.5, date(2026, 12, 18)),
        ("-QS260402C3", "QS", OptionType.CALL, 3.0, date(2026, 4, 2)),
        ("-SPXW260330P6330", "SPXW", OptionType.PUT, 6330.0, date(2026, 3, 30)),
        ("aapl260417p192.5", "AAPL", OptionType.PUT, 192.5, date(2026, 4, 17)),
        ("AAPL1260417C200", "AAPL1", OptionType.CALL, 200.0, date(2026, 4, 17)),  # adjusted root with a digit
    ],
)
def test_parse(symbol: str, root: str, kind: OptionType, strike: float, expiration: date) -> None:
    contract = parse_option_symbol(symbol)
    assert contract == OptionContract(underlying=root, option_type=kind, strike=strike, expiration=expiration)
    assert contract.multiplier == 100


@pytest.mark.parametrize("symbol", ["AAPL260417C200", "SPXW260330P6330", "QS270115C7", "F261218C12.5", "X261218P0.5"])
def test_format_gives_back_the_symbol(symbol: str) -> None:
    contract = parse_option_symbol(symbol)
    assert format_option_symbol(contract) == symbol
    assert format_option_symbol(contract, dashed=True) == f"-{symbol}"
    assert parse_option_symbol(f"-{symbol}") == contract


def test_canonical_form_drops_dash_and_redundant_zeros() -> None:
    assert canonical_option_symbol("-aapl260417c200.00") == "AAPL260417C200"
    assert canonical_option_symbol("F261218C12.50") == "F261218C12.5"


def test_strike_formatting() -> None:
    assert format_strike(200.0) == "200"
    assert format_strike(12.5) == "12.5"
    assert format_strike(0.75) == "0.75"
    assert format_strike(6330) == "6330"
    with pytest.raises(ValueError, match="positive"):
        format_strike(0)


@pytest.mark.parametrize(
    ("symbol", "message"),
    [
        ("", "Empty option symbol"),
        ("   ", "Empty option symbol"),
        ("AAPL", "Not an option symbol"),
        ("AAPL260417X200", "Not an option symbol"),
        ("260417C200", "Not an option symbol"),
        ("AAPL260417C", "Not an option symbol"),
        ("AAPL 260417C200", "Not an option symbol"),
        ("TOOLONGROOT260417C200", "Not an option symbol"),
        ("AAPL261318C200", "invalid expiration date 261318"),
        ("AAPL260230C200", "invalid expiration date 260230"),
        ("AAPL260417C0", "zero strike"),
    ],
)
def test_garbage_is_refused_with_a_clear_message(symbol: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_option_symbol(symbol)
    assert not is_option_symbol(symbol)


def test_error_message_shows_the_expected_form() -> None:
    with pytest.raises(ValueError, match=r"root \+ YYMMDD \+ C/P \+ strike, e\.g\. AAPL260417C200"):
        parse_option_symbol("MSFT")


def test_format_refuses_what_cannot_be_written() -> None:
    contract = OptionContract(underlying="TOOLONG", option_type=OptionType.CALL, strike=1, expiration=date(2026, 1, 16))
    with pytest.raises(ValueError, match="Invalid option root"):
        format_option_symbol(contract)
    old = OptionContract(underlying="IBM", option_type=OptionType.PUT, strike=100, expiration=date(1999, 1, 15))
    with pytest.raises(ValueError, match="YYMMDD"):
        format_option_symbol(old)


def test_description_reads_like_a_trader_writes_it() -> None:
    assert option_description(parse_option_symbol("AAPL260417C200")) == "AAPL Apr 17 2026 200 Call"
    assert option_description(parse_option_symbol("F261218P12.5")) == "F Dec 18 2026 12.5 Put"
