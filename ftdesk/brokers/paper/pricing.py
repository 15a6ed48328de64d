"""Black-Scholes-Merton option prices, Greeks and implied volatility (continuous dividend yield).

Conventions: ``years`` is time to expiry in years, ``rate`` and ``dividend_yield`` are continuously
compounded annual fractions, ``volatility`` is annualised (0.25 = 25%). Greeks follow trader units:
theta per calendar day, vega and rho per one percentage point.
"""

from __future__ import annotations

import math

from ftdesk.domain.accounts import OptionType
from ftdesk.domain.market import Greeks

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
DAYS_PER_YEAR = 365.0
MIN_VOLATILITY = 1e-4
MAX_VOLATILITY = 5.0


def norm_cdf(x: float) -> float:
    """Return the standard normal cumulative distribution at ``x``."""
    return 0.5 * (1.0 + math.erf(x / _SQRT2))


def norm_pdf(x: float) -> float:
    """Return the standard normal density at ``x``."""
    return _INV_SQRT_2PI * math.exp(-0.5 * x * x)


def intrinsic_value(option_type: OptionType, spot: float, strike: float) -> float:
    """Return what the option is worth exercised now."""
    return max(0.0, spot - strike) if option_type is OptionType.CALL else max(0.0, strike - spot)


def _d1_d2(spot: float, strike: float, years: float, rate: float, vol: float, q: float) -> tuple[float, float]:
    vol_sqrt_t = vol * math.sqrt(years)
    d1 = (math.log(spot / strike) + (rate - q + 0.5 * vol * vol) * years) / vol_sqrt_t
    return d1, d1 - vol_sqrt_t


def bs_price(
    option_type: OptionType,
    spot: float,
    strike: float,
    years: float,
    rate: float,
    volatility: float,
    dividend_yield: float = 0.0,
) -> float:
    """Return the Black-Scholes-Merton value of a European option (intrinsic value at expiry)."""
    if spot == 0.0 and strike > 0.0:  # a worthless underlying: the put is a bond, the call is nothing
        return 0.0 if option_type is OptionType.CALL else strike * math.exp(-rate * max(years, 0.0))
    _check_inputs(spot, strike)
    if years <= 0.0:
        return intrinsic_value(option_type, spot, strike)
    disc_q = math.exp(-dividend_yield * years)
    disc_r = math.exp(-rate * years)
    if volatility <= 0.0:
        forward_value = spot * disc_q - strike * disc_r
        return max(0.0, forward_value if option_type is OptionType.CALL else -forward_value)
    d1, d2 = _d1_d2(spot, strike, years, rate, volatility, dividend_yield)
    if option_type is OptionType.CALL:
        return spot * disc_q * norm_cdf(d1) - strike * disc_r * norm_cdf(d2)
    return strike * disc_r * norm_cdf(-d2) - spot * disc_q * norm_cdf(-d1)


def bs_greeks(
    option_type: OptionType,
    spot: float,
    strike: float,
    years: float,
    rate: float,
    volatility: float,
    dividend_yield: float = 0.0,
) -> Greeks:
    """Return delta, gamma, theta (per day), vega and rho (per point) of a European option."""
    return bs_price_and_greeks(option_type, spot, strike, years, rate, volatility, dividend_yield)[1]


def bs_price_and_greeks(
    option_type: OptionType,
    spot: float,
    strike: float,
    years: float,
    rate: float,
    volatility: float,
    dividend_yield: float = 0.0,
) -> tuple[float, Greeks]:
    """Return the value and the Greeks of a European option in one pass."""
    _check_inputs(spot, strike)
    call = option_type is OptionType.CALL
    if years <= 0.0 or volatility <= 0.0:
        itm = spot > strike if call else spot < strike
        delta = (1.0 if call else -1.0) if itm else 0.0
        flat = Greeks(delta=delta, gamma=0.0, theta=0.0, vega=0.0, rho=0.0, implied_volatility=max(volatility, 0.0))
        return bs_price(option_type, spot, strike, years, rate, volatility, dividend_yield), flat
    disc_q = math.exp(-dividend_yield * years)
    disc_r = math.exp(-rate * years)
    sqrt_t = math.sqrt(years)
    d1, d2 = _d1_d2(spot, strike, years, rate, volatility, dividend_yield)
    pdf_d1 = norm_pdf(d1)
    gamma = disc_q * pdf_d1 / (spot * volatility * sqrt_t)
    vega = spot * disc_q * pdf_d1 * sqrt_t / 100.0
    decay = -spot * disc_q * pdf_d1 * volatility / (2.0 * sqrt_t)
    if call:
        n1, n2 = norm_cdf(d1), norm_cdf(d2)
        price = spot * disc_q * n1 - strike * disc_r * n2
        delta = disc_q * n1
        theta = decay - rate * strike * disc_r * n2 + dividend_yield * spot * disc_q * n1
        rho = strike * years * disc_r * n2 / 100.0
    else:
        n1, n2 = norm_cdf(-d1), norm_cdf(-d2)
        price = strike * disc_r * n2 - spot * disc_q * n1
        delta = -disc_q * n1
        theta = decay + rate * strike * disc_r * n2 - dividend_yield * spot * disc_q * n1
        rho = -strike * years * disc_r * n2 / 100.0
    greeks = Greeks(
        delta=delta,
        gamma=gamma,
        theta=theta / DAYS_PER_YEAR,
        vega=vega,
        rho=rho,
        implied_volatility=volatility,
    )
    return max(price, 0.0), greeks


def implied_volatility(
    option_type: OptionType,
    price: float,
    spot: float,
    strike: float,
    years: float,
    rate: float,
    dividend_yield: float = 0.0,
    *,
    tolerance: float = 1e-10,
) -> float:
    """Return the volatility that reproduces ``price``; raise ``ValueError`` outside no-arbitrage bounds.

    The price is monotonic in volatility, so bisection on [MIN_VOLATILITY, MAX_VOLATILITY] always
    converges; a price below the zero-volatility value gives MIN_VOLATILITY.
    """
    _check_inputs(spot, strike)
    if years <= 0.0:
        raise ValueError("Implied volatility is undefined for an expired option")
    disc_q = math.exp(-dividend_yield * years)
    disc_r = math.exp(-rate * years)
    forward_value = spot * disc_q - strike * disc_r
    if option_type is OptionType.CALL:
        lower, upper = max(0.0, forward_value), spot * disc_q
    else:
        lower, upper = max(0.0, -forward_value), strike * disc_r
    slack = 1e-9 * max(1.0, upper)
    if not lower - slack <= price <= upper + slack:
        raise ValueError(
            f"Option price {price:.4f} is outside the no-arbitrage range [{lower:.4f}, {upper:.4f}]; "
            "no volatility reproduces it"
        )
    lo, hi = MIN_VOLATILITY, MAX_VOLATILITY
    if price <= bs_price(option_type, spot, strike, years, rate, lo, dividend_yield):
        return lo
    if price >= bs_price(option_type, spot, strike, years, rate, hi, dividend_yield):
        raise ValueError(f"Option price {price:.4f} implies a volatility above {MAX_VOLATILITY:.0%}")
    while hi - lo > tolerance:
        mid = 0.5 * (lo + hi)
        if bs_price(option_type, spot, strike, years, rate, mid, dividend_yield) < price:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _check_inputs(spot: float, strike: float) -> None:
    if not (spot > 0.0 and strike > 0.0) or math.isinf(spot) or math.isinf(strike):
        raise ValueError(f"Spot and strike must be positive numbers (got spot={spot}, strike={strike})")
