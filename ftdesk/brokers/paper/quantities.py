"""Exact share quantities: fractional equity shares to four decimal places, whole contracts.

The paper broker accepts fractional shares down to 0.0001 (``SHARE_STEP``). In Python every quantity is
a ``Decimal`` on that grid. SQLite keeps a quantity in the existing INTEGER columns: a whole quantity
as an integer (what earlier versions wrote, so their worlds open unchanged) and a fractional one as a
REAL. A REAL reads back within 1e-9 of the value written for any quantity under 10^7 shares, and the
readers here put every value read (a row or a SUM) back on the 0.0001 grid, so no float error ever
reaches a position, a lot, a cost basis or a cash amount. Arithmetic on quantities (what is left of a
lot, what an order has filled) is done in Python on Decimals and written back as a value, never as
``quantity - ?`` in SQL.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

SHARE_STEP = Decimal("0.0001")
"""The finest fraction of a share the paper broker trades."""

ZERO = Decimal(0)


def shares(value: object) -> Decimal:
    """Return a quantity read from SQLite (int, REAL, numeric text or None for 0) on the 0.0001 grid."""
    if value is None:
        return ZERO
    if isinstance(value, Decimal):
        exact = value
    elif isinstance(value, bool):
        raise TypeError("a quantity is a number, not a boolean")
    elif isinstance(value, int):
        return Decimal(value)
    elif isinstance(value, float):
        exact = Decimal(repr(value))
    elif isinstance(value, str):
        exact = Decimal(value)
    else:
        raise TypeError(f"not a quantity: {type(value).__name__}")
    return _normal(exact.quantize(SHARE_STEP, rounding=ROUND_HALF_EVEN))


def from_order(value: float) -> Decimal:
    """Return an order's quantity (a JSON number read as a float) as an exact Decimal, via its shortest repr."""
    return _normal(Decimal(repr(float(value))))


def stored(quantity: Decimal | int) -> int | float:
    """Return the value SQLite stores for a quantity: an integer when whole, else a REAL."""
    if isinstance(quantity, int):
        return quantity
    whole = quantity.to_integral_value()
    return int(whole) if whole == quantity else float(quantity)


def number(quantity: Decimal | int) -> float:
    """Return a quantity for a record or an answer (a JSON number: 2.5 stays 2.5, 10 is 10.0)."""
    return float(quantity)


def is_whole(quantity: Decimal | int) -> bool:
    """Return True for a whole number of shares or contracts."""
    return isinstance(quantity, int) or quantity == quantity.to_integral_value()


def text(quantity: Decimal | int, *, grouped: bool = False) -> str:
    """Return a quantity as people write it: 10, 2.5, 0.0001 (1,200 when ``grouped``; never an exponent)."""
    value = _normal(Decimal(quantity)) if quantity else Decimal(0)
    return f"{value:,f}" if grouped else f"{value:f}"


def _normal(value: Decimal) -> Decimal:
    """Return whole values as integral Decimals (10, not 10.0000), so ``f"{q:,}"`` reads as before."""
    whole = value.to_integral_value()
    return whole if whole == value else value.normalize()
