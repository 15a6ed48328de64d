"""Reference data of the trading venues the simulated market prints trades on and routes orders to."""

from __future__ import annotations

from types import MappingProxyType

EQUITY_VENUES: tuple[tuple[str, str], ...] = (
    ("NSDQ", "Nasdaq Stock Market"),
    ("NYSE", "New York Stock Exchange"),
    ("ARCA", "NYSE Arca"),
    ("BATS", "Cboe BZX Exchange"),
    ("EDGX", "Cboe EDGX Exchange"),
    ("IEX", "Investors Exchange"),
    ("MEMX", "Members Exchange"),
    ("BYX", "Cboe BYX Exchange"),
)
"""(code, name) of the stock exchanges; a trade's venue is an index into this table."""
OPTION_VENUES: tuple[tuple[str, str], ...] = (
    ("CBOE", "Cboe Options Exchange"),
    ("AMEX", "NYSE American Options"),
    ("PHLX", "Nasdaq PHLX"),
    ("ISE", "Nasdaq ISE"),
    ("ARCA", "NYSE Arca Options"),
    ("BOX", "BOX Options Exchange"),
    ("MIAX", "MIAX Options Exchange"),
    ("NOM", "Nasdaq Options Market"),
)
EQUITY_MARKET_MAKERS: tuple[tuple[str, str, str], ...] = (
    ("CDRG", "Citadel Securities", "MARKET_MAKER"),
    ("VIRT", "Virtu Americas", "MARKET_MAKER"),
    ("JNST", "Jane Street Capital", "MARKET_MAKER"),
    ("UBSS", "UBS ATS", "ECN"),
)
"""(code, name, market type) of the equity destinations that are not exchanges."""
LISTING_VENUE = MappingProxyType({"NASDAQ": "NSDQ", "NYSE": "NYSE", "NYSE ARCA": "ARCA", "CBOE": "BATS"})
"""The venue code of each listing exchange of the universe."""
