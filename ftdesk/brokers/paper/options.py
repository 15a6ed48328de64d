"""Option symbols in the compact upstream form: root + YYMMDD + C/P + strike.

Examples: ``AAPL260417C200``, ``SPXW260330P6330``, ``QS270115C7``, ``F261218C12.5``. The strike has no
padding and no decimal point unless it has a fraction. Market-data contexts (MDDS, montage) write the
same symbol with a leading ``-``; parsing accepts both, formatting writes the compact form unless asked.

The root is kept as written in ``OptionContract.underlying`` (``SPXW`` for SPX weeklies), so formatting
a parsed contract gives back the same symbol.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal, InvalidOperation

from ftdesk.domain.accounts import OptionContract, OptionType

_PATTERN = re.compile(r"-?([A-Z][A-Z0-9]{0,5}?)(\d{2})(\d{2})(\d{2})([CP])(\d{1,6}(?:\.\d{1,3})?)")
_EXAMPLE = "AAPL260417C200"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def parse_option_symbol(symbol: str) -> OptionContract:
    """Parse a compact (or dash-prefixed) option symbol; raise ``ValueError`` saying what is wrong."""
    if not isinstance(symbol, str) or not symbol.strip():
        raise ValueError(f"Empty option symbol; expected root + YYMMDD + C/P + strike, e.g. {_EXAMPLE}")
    text = symbol.strip().upper()
    match = _PATTERN.fullmatch(text)
    if match is None:
        raise ValueError(f"Not an option symbol: {symbol!r}; expected root + YYMMDD + C/P + strike, e.g. {_EXAMPLE}")
    root, yy, mm, dd, kind, strike_text = match.groups()
    try:
        expiration = date(2000 + int(yy), int(mm), int(dd))
    except ValueError:
        raise ValueError(f"Option symbol {symbol!r} has an invalid expiration date {yy}{mm}{dd} (YYMMDD)") from None
    strike = float(strike_text)
    if strike <= 0:
        raise ValueError(f"Option symbol {symbol!r} has a zero strike")
    option_type = OptionType.CALL if kind == "C" else OptionType.PUT
    return OptionContract(underlying=root, option_type=option_type, strike=strike, expiration=expiration)


def format_strike(strike: float) -> str:
    """Write a strike without padding or trailing zeros (``200``, ``12.5``)."""
    try:
        value = Decimal(str(strike))
    except InvalidOperation:
        raise ValueError(f"Invalid strike {strike!r}") from None
    if not value.is_finite() or value <= 0:
        raise ValueError(f"Invalid strike {strike!r}; it must be a positive number")
    return format(value.normalize(), "f")


def format_option_symbol(contract: OptionContract, *, dashed: bool = False) -> str:
    """Write a contract as a compact option symbol (with a leading ``-`` when ``dashed``)."""
    root = contract.underlying.strip().upper()
    if not re.fullmatch(r"[A-Z][A-Z0-9]{0,5}", root):
        raise ValueError(f"Invalid option root {contract.underlying!r}; expected 1-6 letters or digits")
    if not 2000 <= contract.expiration.year <= 2099:
        raise ValueError(f"Expiration {contract.expiration} cannot be written as YYMMDD")
    kind = "C" if contract.option_type is OptionType.CALL else "P"
    text = f"{root}{contract.expiration:%y%m%d}{kind}{format_strike(contract.strike)}"
    return f"-{text}" if dashed else text


def is_option_symbol(symbol: str) -> bool:
    """Return True when ``symbol`` parses as an option symbol."""
    try:
        parse_option_symbol(symbol)
    except ValueError:
        return False
    return True


def canonical_option_symbol(symbol: str) -> str:
    """Return the compact form of an option symbol (no dash, no redundant zeros)."""
    return format_option_symbol(parse_option_symbol(symbol))


def option_description(contract: OptionContract) -> str:
    """Describe a contract the way a trader reads it, e.g. ``AAPL Apr 17 2026 200 Call``."""
    exp = contract.expiration
    kind = "Call" if contract.option_type is OptionType.CALL else "Put"
    month = _MONTHS[exp.month - 1]
    return f"{contract.underlying} {month} {exp.day:02d} {exp.year} {format_strike(contract.strike)} {kind}"
