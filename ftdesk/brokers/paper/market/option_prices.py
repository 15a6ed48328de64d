"""Option prices of the simulated market: implied volatility, quotes of listed series and option chains.

Option prices are Black-Scholes-Merton values from the simulated underlying with a per-series implied
volatility (term structure from the volatility factor, plus skew and smile). After expiry an option
quotes its settlement value (intrinsic value at the 16:00 underlying price) so positions can still be
valued.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date

from ftdesk.brokers.paper.market.listings import PENNY_OPTION_UNDERLYINGS, OptionListings, expiration_time
from ftdesk.brokers.paper.market.paths import VOL_REVERSION
from ftdesk.brokers.paper.market.prices import PriceSource, Snapshot, Underlying, iso, normalize
from ftdesk.brokers.paper.market.randomness import stable_uniform
from ftdesk.brokers.paper.options import format_option_symbol
from ftdesk.brokers.paper.pricing import DAYS_PER_YEAR, bs_greeks, bs_price, bs_price_and_greeks, intrinsic_value
from ftdesk.brokers.paper.universe import Security
from ftdesk.domain.accounts import OptionContract, OptionType
from ftdesk.domain.errors import NotFound
from ftdesk.domain.market import ChainExpiration, ChainStrike, Greeks, OptionChain, OptionQuote, Quote

SECONDS_PER_YEAR = DAYS_PER_YEAR * 86_400
RISK_FREE_RATE = 0.04
"""Continuously compounded annual rate used to price options."""
OPTION_MULTIPLIER = 100
_IV_PREMIUM = 0.06  # implied volatility trades a little above realised
_IV_SKEW = 0.06
_IV_SMILE = 0.02


@dataclass(frozen=True)
class _OptionPoint:
    """An option's value and market at one moment."""

    theo: float
    greeks: Greeks
    bid: float
    ask: float
    last: float
    volume: int
    open_interest: int


class OptionMarket:
    """Prices the listed option series of the simulated underlyings."""

    def __init__(self, prices: PriceSource, listings: OptionListings) -> None:
        self._prices = prices
        self._listings = listings

    def chain(self, symbol: str) -> OptionChain:
        """Return every listed series of an optionable underlying, priced now."""
        prices = self._prices
        ts = prices.now_ts()
        under = prices.optionable(normalize(symbol))
        snap = prices.snapshot(under, ts)
        today = prices.day_date(snap.day)
        expirations: list[ChainExpiration] = []
        for item in self._listings.listed_expirations(snap.day, ts):
            strikes = self._listings.strikes(under, item, snap.day)
            rows: list[ChainStrike] = []
            for strike in strikes:
                sides: dict[OptionType, OptionQuote] = {}
                for option_type in (OptionType.CALL, OptionType.PUT):
                    contract = OptionContract(
                        underlying=under.security.symbol,
                        option_type=option_type,
                        strike=strike,
                        expiration=item.expiration,
                    )
                    option_symbol = format_option_symbol(contract)
                    point = self._point(under, contract, option_symbol, snap, ts)
                    sides[option_type] = OptionQuote(
                        symbol=option_symbol,
                        option_type=option_type,
                        strike=strike,
                        expiration=item.expiration.isoformat(),
                        bid=point.bid,
                        ask=point.ask,
                        last=point.last,
                        volume=point.volume,
                        open_interest=point.open_interest,
                        greeks=point.greeks,
                    )
                rows.append(ChainStrike(strike=strike, call=sides[OptionType.CALL], put=sides[OptionType.PUT]))
            expirations.append(
                ChainExpiration(
                    expiration=item.expiration.isoformat(),
                    days_to_expiration=(item.expiration - today).days,
                    strikes=rows,
                )
            )
        return OptionChain(symbol=under.security.symbol, underlying_price=snap.last, expirations=expirations)

    def quote(self, text: str, ts: int) -> Quote:
        """Return the quote of a listed option series (normalized symbol ``text``) at epoch second ``ts``."""
        contract, canonical, under = self._listings.listed_option(text, ts)
        expiry_ts = int(expiration_time(contract.expiration).timestamp())
        if ts >= expiry_ts:
            return self._settlement_quote(under, contract, canonical, expiry_ts)
        snap = self._prices.snapshot(under, ts)
        point = self._point(under, contract, canonical, snap, ts)
        security = under.security
        seed = self._prices.seed
        rate, carry = RISK_FREE_RATE, security.dividend_yield
        day_start = self._prices.day_start(snap.day)
        prev_years = max((expiry_ts - day_start) / SECONDS_PER_YEAR, 0.0)
        prev_iv = self._iv(under, max(snap.day - 1, 0), snap.prev_close, contract.strike, prev_years)
        prev_close = round(
            bs_price(contract.option_type, snap.prev_close, contract.strike, prev_years, rate, prev_iv, carry), 2
        )
        years = max((expiry_ts - ts) / SECONDS_PER_YEAR, 0.0)
        extremes = [
            round(
                bs_price(
                    contract.option_type, spot, contract.strike, years, rate, point.greeks.implied_volatility, carry
                ),
                2,
            )
            for spot in (snap.high, snap.low)
        ]
        high = max(*extremes, prev_close, point.last)
        low = min(*extremes, prev_close, point.last)
        change = point.last - prev_close
        return Quote(
            symbol=canonical,
            last=point.last,
            bid=point.bid,
            ask=point.ask,
            bid_size=1 + int(stable_uniform(seed, canonical, ts, "bid") * 99),
            ask_size=1 + int(stable_uniform(seed, canonical, ts, "ask") * 99),
            last_size=1 + int(stable_uniform(seed, canonical, ts, "last") * 20),
            volume=point.volume,
            open=prev_close,
            high=high,
            low=low,
            prev_close=prev_close,
            change=round(change, 4),
            change_pct=round(100.0 * change / prev_close, 4) if prev_close > 0 else 0.0,
            time=iso(ts),
            greeks=point.greeks,
        )

    def expirations(self, symbol: str) -> list[date]:
        """Return the expirations listed now for an optionable underlying, nearest first."""
        ts = self._prices.now_ts()
        self._prices.optionable(normalize(symbol))
        return [item.expiration for item in self._listings.listed_expirations(self._prices.locate(ts)[0], ts)]

    def strikes(self, symbol: str, expiration: date) -> list[float]:
        """Return the strikes listed now for one expiration of an optionable underlying."""
        ts = self._prices.now_ts()
        under = self._prices.optionable(normalize(symbol))
        day = self._prices.locate(ts)[0]
        for item in self._listings.listed_expirations(day, ts):
            if item.expiration == expiration:
                return list(self._listings.strikes(under, item, day))
        raise NotFound(f"{under.security.symbol} has no options expiring {expiration.isoformat()}")

    def series_iv(self, contract: OptionContract) -> float:
        """Return the current implied volatility of an option series (also for unlisted strikes)."""
        ts = self._prices.now_ts()
        under = self._prices.optionable(contract.underlying.strip().upper())
        snap = self._prices.snapshot(under, ts)
        years = max((expiration_time(contract.expiration).timestamp() - ts) / SECONDS_PER_YEAR, 0.0)
        return self._iv(under, snap.day, snap.last, contract.strike, years)

    def atm_iv(self, symbol: str, days: int = 30) -> float:
        """Return the current at-the-money implied volatility for a ``days``-day horizon."""
        under = self._prices.equity(normalize(symbol), purpose="Implied volatility")
        day = self._prices.locate(self._prices.now_ts())[0]
        return self._atm_iv(under, day, days / DAYS_PER_YEAR)

    def iv_history(self, symbol: str, days: int = 365) -> list[float]:
        """Return the 30-day at-the-money implied volatility of each of the last ``days`` days (today last)."""
        under = self._prices.equity(normalize(symbol), purpose="Implied volatility")
        today = self._prices.locate(self._prices.now_ts())[0]
        return [self._atm_iv(under, day, 30 / DAYS_PER_YEAR) for day in range(max(0, today - days + 1), today + 1)]

    def _atm_iv(self, under: Underlying, day: int, years: float) -> float:
        """Return the at-the-money implied volatility for a horizon: today's vol factor decaying to normal."""
        path = under.path
        path.ensure(day)
        base = under.security.volatility
        factor = path.sigma[day] / base
        horizon = max(years, 1.0 / DAYS_PER_YEAR)
        weight = (1.0 - math.exp(-VOL_REVERSION * horizon)) / (VOL_REVERSION * horizon)
        return base * (1.0 + _IV_PREMIUM) * (factor * weight + (1.0 - weight))

    def _iv(self, under: Underlying, day: int, spot: float, strike: float, years: float) -> float:
        """Return a series' implied volatility: the ATM level with a put skew and a smile."""
        atm = self._atm_iv(under, day, years)
        moneyness = math.log(strike / spot) / (atm * math.sqrt(max(years, 1.0 / DAYS_PER_YEAR)))
        moneyness = max(-4.0, min(4.0, moneyness))
        return max(0.05, atm * (1.0 - _IV_SKEW * moneyness + _IV_SMILE * moneyness * moneyness))

    def _point(self, under: Underlying, contract: OptionContract, symbol: str, snap: Snapshot, ts: int) -> _OptionPoint:
        seed = self._prices.seed
        security = under.security
        expiry_ts = expiration_time(contract.expiration).timestamp()
        years = max((expiry_ts - ts) / SECONDS_PER_YEAR, 0.0)
        spot = snap.last
        iv = self._iv(under, snap.day, spot, contract.strike, years)
        rate, carry = RISK_FREE_RATE, security.dividend_yield
        theo, greeks = bs_price_and_greeks(contract.option_type, spot, contract.strike, years, rate, iv, carry)
        bid, ask = _option_bid_ask(theo, security)
        last = min(ask, max(bid, round(theo, 2)))
        moneyness = math.log(contract.strike / snap.open) / (iv * math.sqrt(max(years, 1.0 / DAYS_PER_YEAR)))
        liquidity = math.exp(-0.5 * moneyness * moneyness)
        day_volume = (
            security.avg_volume / 4000.0 * liquidity * (0.2 + 1.6 * stable_uniform(seed, symbol, snap.day, "volume"))
        )
        day_volume /= 1.0 + 3.0 * years
        pace = snap.volume / snap.day_volume if snap.day_volume else 0.0
        open_interest = security.avg_volume / 800.0 * math.exp(-0.125 * moneyness * moneyness)
        interest = stable_uniform(seed, symbol, snap.day, "oi")
        open_interest = open_interest * (0.2 + interest) + 1 + 40 * interest  # far strikes keep a few contracts
        return _OptionPoint(
            theo=theo,
            greeks=greeks,
            bid=bid,
            ask=ask,
            last=last,
            volume=int(day_volume * pace),
            open_interest=int(open_interest),
        )

    def _settlement_quote(self, under: Underlying, contract: OptionContract, canonical: str, expiry_ts: int) -> Quote:
        """Quote an expired option at its settlement value (intrinsic at the 16:00 underlying price)."""
        spot = self._prices.snapshot(under, expiry_ts).last
        value = round(intrinsic_value(contract.option_type, spot, contract.strike), 2)
        greeks = bs_greeks(contract.option_type, spot, contract.strike, 0.0, RISK_FREE_RATE, 0.0)
        return Quote(
            symbol=canonical,
            last=value,
            bid=value,
            ask=round(value + 0.01, 2),
            volume=0,
            open=value,
            high=value,
            low=value,
            prev_close=value,
            change=0.0,
            change_pct=0.0,
            time=iso(expiry_ts),
            greeks=greeks,
        )


def _option_bid_ask(theo: float, security: Security) -> tuple[float, float]:
    """Return a market around a theoretical value: pennies below $3, nickels above (penny names always)."""
    tick = 0.01 if theo < 3.0 or security.symbol in PENNY_OPTION_UNDERLYINGS else 0.05
    liquidity = 1.0 if security.avg_volume >= 20_000_000 else (1.5 if security.avg_volume >= 5_000_000 else 2.5)
    half = 0.5 * (0.02 + 0.015 * theo**0.85) * liquidity
    bid = max(0.0, math.floor((theo - half) / tick + 1e-9) * tick)
    ask = math.ceil((theo + half) / tick - 1e-9) * tick
    if ask - bid < tick - 1e-9:
        ask = bid + tick
    return round(bid, 2), round(ask, 2)
