"""Black-Scholes-Merton prices, Greeks and implied volatility against textbook values and identities."""

from __future__ import annotations

import math

import pytest

from ftdesk.brokers.paper.pricing import (
    bs_greeks,
    bs_price,
    bs_price_and_greeks,
    implied_volatility,
    norm_cdf,
)
from ftdesk.domain.accounts import OptionType

CALL, PUT = OptionType.CALL, OptionType.PUT


def test_normal_cdf() -> None:
    assert norm_cdf(0.0) == pytest.approx(0.5)
    assert norm_cdf(1.96) == pytest.approx(0.9750021, abs=1e-7)
    assert norm_cdf(-1.0) == pytest.approx(0.1586553, abs=1e-7)


def test_textbook_at_the_money_option() -> None:
    # S=100, K=100, r=5%, sigma=20%, T=1 (Hull): call 10.4506, put 5.5735.
    assert bs_price(CALL, 100, 100, 1.0, 0.05, 0.20) == pytest.approx(10.4506, abs=1e-4)
    assert bs_price(PUT, 100, 100, 1.0, 0.05, 0.20) == pytest.approx(5.5735, abs=1e-4)
    greeks = bs_greeks(CALL, 100, 100, 1.0, 0.05, 0.20)
    assert greeks.delta == pytest.approx(0.63683, abs=1e-5)
    assert greeks.gamma == pytest.approx(0.018762, abs=1e-6)
    assert greeks.vega == pytest.approx(0.37524, abs=1e-5)  # per volatility point
    assert greeks.theta == pytest.approx(-6.41403 / 365, abs=1e-6)  # per calendar day
    assert greeks.rho == pytest.approx(0.53232, abs=1e-5)  # per rate point
    assert greeks.implied_volatility == 0.20
    put = bs_greeks(PUT, 100, 100, 1.0, 0.05, 0.20)
    assert put.delta == pytest.approx(0.63683 - 1.0, abs=1e-5)
    assert put.gamma == pytest.approx(greeks.gamma)
    assert put.vega == pytest.approx(greeks.vega)


def test_dividend_yield_example() -> None:
    # Hull: index option, S=930, K=900, r=8%, q=3%, sigma=20%, T=2 months -> call 51.83.
    assert bs_price(CALL, 930, 900, 2 / 12, 0.08, 0.20, 0.03) == pytest.approx(51.83, abs=0.01)


@pytest.mark.parametrize(
    ("spot", "strike", "years", "rate", "vol", "q"),
    [
        (100, 100, 1.0, 0.05, 0.2, 0.0),
        (250, 300, 0.1, 0.04, 0.45, 0.01),
        (12.5, 7, 2.0, 0.03, 0.9, 0.0),
        (50, 60, 0.02, 0.0, 0.3, 0.05),
    ],
)
def test_put_call_parity(spot: float, strike: float, years: float, rate: float, vol: float, q: float) -> None:
    call = bs_price(CALL, spot, strike, years, rate, vol, q)
    put = bs_price(PUT, spot, strike, years, rate, vol, q)
    assert call - put == pytest.approx(spot * math.exp(-q * years) - strike * math.exp(-rate * years), abs=1e-9)


def test_greeks_match_finite_differences() -> None:
    spot, strike, years, rate, vol, q = 180.0, 190.0, 0.4, 0.04, 0.35, 0.015
    price, greeks = bs_price_and_greeks(PUT, spot, strike, years, rate, vol, q)
    assert price == pytest.approx(bs_price(PUT, spot, strike, years, rate, vol, q))

    def value(s: float = spot, t: float = years, r: float = rate, v: float = vol) -> float:
        return bs_price(PUT, s, strike, t, r, v, q)

    h = 0.01
    assert greeks.delta == pytest.approx((value(s=spot + h) - value(s=spot - h)) / (2 * h), abs=1e-6)
    assert greeks.gamma == pytest.approx((value(s=spot + h) - 2 * value() + value(s=spot - h)) / h**2, abs=1e-4)
    assert greeks.vega == pytest.approx((value(v=vol + 0.0001) - value(v=vol - 0.0001)) / 0.02, abs=1e-6)
    assert greeks.rho == pytest.approx((value(r=rate + 0.0001) - value(r=rate - 0.0001)) / 0.02, abs=1e-6)
    day = 1 / 365
    assert greeks.theta == pytest.approx(value(t=years - day) - value(), abs=2e-4)


def test_expired_option_is_worth_its_intrinsic_value() -> None:
    assert bs_price(CALL, 105, 100, 0.0, 0.05, 0.3) == 5.0
    assert bs_price(PUT, 105, 100, -1.0, 0.05, 0.3) == 0.0
    itm, otm = bs_greeks(CALL, 105, 100, 0.0, 0.05, 0.3), bs_greeks(PUT, 105, 100, 0.0, 0.05, 0.3)
    assert (itm.delta, itm.gamma, itm.theta, itm.vega) == (1.0, 0.0, 0.0, 0.0)
    assert otm.delta == 0.0


def test_worthless_underlying() -> None:
    assert bs_price(CALL, 0.0, 10, 1.0, 0.05, 0.3) == 0.0
    assert bs_price(PUT, 0.0, 10, 1.0, 0.05, 0.3) == pytest.approx(10 * math.exp(-0.05))


@pytest.mark.parametrize("kind", [CALL, PUT])
@pytest.mark.parametrize(
    ("strike", "vol", "years"), [(95, 0.15, 0.05), (100, 0.6, 1.0), (130, 1.8, 2.5), (100, 0.02, 0.3)]
)
def test_implied_volatility_recovers_the_volatility(kind: OptionType, strike: float, vol: float, years: float) -> None:
    price = bs_price(kind, 100, strike, years, 0.04, vol, 0.01)
    assert implied_volatility(kind, price, 100, strike, years, 0.04, 0.01) == pytest.approx(vol, abs=1e-6)


def test_implied_volatility_refuses_impossible_prices() -> None:
    with pytest.raises(ValueError, match="no-arbitrage"):
        implied_volatility(CALL, 101.0, 100, 100, 1.0, 0.05)  # worth more than the stock
    with pytest.raises(ValueError, match="no-arbitrage"):
        implied_volatility(PUT, 1.0, 50, 100, 1.0, 0.0)  # below intrinsic value
    with pytest.raises(ValueError, match="expired"):
        implied_volatility(CALL, 1.0, 100, 100, 0.0, 0.05)
    with pytest.raises(ValueError, match="positive"):
        bs_price(CALL, -1.0, 100, 1.0, 0.05, 0.2)


def test_implied_volatility_of_a_zero_time_value_price_is_the_floor() -> None:
    floor = implied_volatility(CALL, 100 - 50 * math.exp(-0.05), 100, 50, 1.0, 0.05)
    assert floor == pytest.approx(1e-4)
