"""The simulated universe: reference data of every stock and ETF the paper market trades.

The data ships as package data (``data/universe.json``). Tickers and names are real; prices,
volatilities, share counts, dividends, earnings and borrow figures are rough approximations used to
make the simulation plausible, and the CUSIPs are invented (stable and unique, not the real ones).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any

from ftdesk.domain.accounts import SecurityType
from ftdesk.domain.errors import NotFound

_EXCHANGES = frozenset({"NASDAQ", "NYSE", "NYSE ARCA", "CBOE"})
_FREQUENCY_NAMES = MappingProxyType({1: "ANNUAL", 2: "SEMIANNUAL", 4: "QUARTERLY", 12: "MONTHLY"})


@dataclass(frozen=True)
class DividendPolicy:
    """How a security pays dividends."""

    annual_yield: float
    """Indicated annual yield as a fraction of the reference price (0.03 = 3%)."""
    frequency: int
    """Payments per year: 1, 2, 4 or 12."""
    first_month: int
    """The first month of the year with an ex-date; the others follow every 12/frequency months."""
    ex_day: int
    """Usual day of the month of the ex-date (moved to a weekday)."""

    @property
    def frequency_name(self) -> str:
        """Return QUARTERLY, MONTHLY, SEMIANNUAL or ANNUAL."""
        return _FREQUENCY_NAMES[self.frequency]


@dataclass(frozen=True)
class EarningsCycle:
    """When a company reports and roughly what it earns."""

    month_offset: int
    """0: reports in Jan/Apr/Jul/Oct, 1: Feb/May/Aug/Nov, 2: Mar/Jun/Sep/Dec."""
    day: int
    """Usual day of the month of the report (moved to a weekday)."""
    timing: str
    """BMO (before market open) or AMC (after market close)."""
    annual_eps: float
    """Approximate earnings per share over a year (negative for loss makers)."""


@dataclass(frozen=True)
class BorrowTerms:
    """Stock-loan terms for shorting."""

    hard_to_borrow: bool
    rate: float
    """Annual borrow fee, percent."""
    locate_required: bool
    available: int
    """Typical number of shares available to borrow."""


@dataclass(frozen=True)
class Security:
    """Reference data of one stock or ETF."""

    symbol: str
    description: str
    exchange: str
    cusip: str
    security_type: SecurityType
    sector: str
    price: float
    """Reference price the simulated history is anchored to."""
    volatility: float
    """Long-run annualised volatility (0.3 = 30%)."""
    shares_outstanding: int
    float_shares: int
    avg_volume: int
    """Average daily volume, shares."""
    dividend: DividendPolicy | None
    earnings: EarningsCycle | None
    optionable: bool
    borrow: BorrowTerms
    short_pct_float: float
    """Typical short interest, percent of float."""

    @property
    def dividend_yield(self) -> float:
        """Return the annual dividend yield as a fraction (0 for non-payers)."""
        return self.dividend.annual_yield if self.dividend else 0.0

    @property
    def dividend_frequency(self) -> int:
        """Return dividend payments per year (0 for non-payers)."""
        return self.dividend.frequency if self.dividend else 0

    @property
    def is_etf(self) -> bool:
        """Return True for exchange-traded funds."""
        return self.security_type is SecurityType.ETF


class Universe:
    """All securities of the simulated market, by symbol."""

    def __init__(self, securities: Iterable[Security]) -> None:
        self._by_symbol: dict[str, Security] = {}
        cusips: set[str] = set()
        for security in securities:
            if security.symbol in self._by_symbol:
                raise ValueError(f"Duplicate symbol {security.symbol} in the universe")
            if security.cusip in cusips:
                raise ValueError(f"Duplicate CUSIP {security.cusip} in the universe")
            cusips.add(security.cusip)
            self._by_symbol[security.symbol] = security

    @classmethod
    def load(cls) -> Universe:
        """Load the universe shipped with the package."""
        text = resources.files("ftdesk.brokers.paper").joinpath("data/universe.json").read_text(encoding="utf-8")
        return cls.from_json(text)

    @classmethod
    def from_json(cls, text: str) -> Universe:
        """Build a universe from the JSON document format of ``data/universe.json``."""
        document = json.loads(text)
        return cls(_parse_security(entry) for entry in document["securities"])

    def get(self, symbol: str) -> Security | None:
        """Return the security with this symbol (case-insensitive), or None."""
        return self._by_symbol.get(symbol.strip().upper())

    def require(self, symbol: str) -> Security:
        """Return the security with this symbol; raise ``NotFound`` when there is none."""
        security = self.get(symbol)
        if security is None:
            raise NotFound(f"Unknown symbol {symbol.strip().upper() or symbol!r}", details={"symbol": symbol})
        return security

    def optionable(self) -> list[Security]:
        """Return the securities with listed options, in universe order."""
        return [security for security in self._by_symbol.values() if security.optionable]

    @property
    def symbols(self) -> tuple[str, ...]:
        """Return every symbol, in universe order."""
        return tuple(self._by_symbol)

    def __contains__(self, symbol: object) -> bool:
        return isinstance(symbol, str) and symbol.strip().upper() in self._by_symbol

    def __iter__(self) -> Iterator[Security]:
        return iter(self._by_symbol.values())

    def __len__(self) -> int:
        return len(self._by_symbol)


def _parse_security(entry: dict[str, Any]) -> Security:
    symbol = str(entry["symbol"])
    try:
        exchange = str(entry["exchange"])
        if exchange not in _EXCHANGES:
            raise ValueError(f"unknown exchange {exchange!r}")
        cusip = str(entry["cusip"])
        if len(cusip) != 9 or not cusip.isalnum():
            raise ValueError(f"CUSIP {cusip!r} is not 9 letters or digits")
        dividend = entry.get("dividend")
        earnings = entry.get("earnings")
        borrow = entry["borrow"]
        security = Security(
            symbol=symbol,
            description=str(entry["description"]),
            exchange=exchange,
            cusip=cusip,
            security_type=SecurityType(entry["security_type"]),
            sector=str(entry["sector"]),
            price=float(entry["price"]),
            volatility=float(entry["volatility"]),
            shares_outstanding=int(entry["shares_outstanding"]),
            float_shares=int(entry["float_shares"]),
            avg_volume=int(entry["avg_volume"]),
            dividend=DividendPolicy(
                annual_yield=float(dividend["yield"]),
                frequency=int(dividend["frequency"]),
                first_month=int(dividend["first_month"]),
                ex_day=int(dividend["ex_day"]),
            )
            if dividend
            else None,
            earnings=EarningsCycle(
                month_offset=int(earnings["month_offset"]),
                day=int(earnings["day"]),
                timing=str(earnings["timing"]),
                annual_eps=float(earnings["annual_eps"]),
            )
            if earnings
            else None,
            optionable=bool(entry["optionable"]),
            borrow=BorrowTerms(
                hard_to_borrow=bool(borrow["hard_to_borrow"]),
                rate=float(borrow["rate"]),
                locate_required=bool(borrow["locate_required"]),
                available=int(borrow["available"]),
            ),
            short_pct_float=float(entry["short_pct_float"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"Invalid universe entry {symbol}: {exc}") from exc
    if security.price <= 0 or security.volatility <= 0 or security.avg_volume <= 0:
        raise ValueError(f"Invalid universe entry {symbol}: price, volatility and volume must be positive")
    if security.dividend and security.dividend.frequency not in _FREQUENCY_NAMES:
        raise ValueError(f"Invalid universe entry {symbol}: dividend frequency must be 1, 2, 4 or 12")
    if security.earnings and security.earnings.timing not in ("BMO", "AMC"):
        raise ValueError(f"Invalid universe entry {symbol}: earnings timing must be BMO or AMC")
    return security
