"""The values order bodies are made of: quantities, prices, symbols, action words, and the rules between them.

Shared by the order bodies and their legs: the field types with their limits (contracts are whole and
positive, shares positive to four decimal places, a price finite and not a boolean), the two spellings of
field names, the rule that ties a limit or stop price to the price type that uses it, and the rule that says
which equity orders may be for a fraction of a share.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasGenerator,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
)
from pydantic.alias_generators import to_camel, to_snake
from pydantic_core import PydanticCustomError

from ftdesk.domain.errors import ValidationFailed
from ftdesk.domain.order_actions import LEG_WORDS, ActionKind, Side, describe
from ftdesk.domain.orders import SHARE_PLACES, EquityAction, LegAction, PriceType, TimeInForce, fraction_refusal
from ftdesk.service.web.routing import BodyModel


def _not_a_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise PydanticCustomError("json_type", "must be a number, not true or false")
    return value


def _a_json_number(value: Any) -> Any:
    if isinstance(value, str):
        raise PydanticCustomError("json_type", "must be a JSON number, not a string")
    return _not_a_bool(value)


# Not strict like the rest of a body (10.0 is a whole number), so strings are refused here instead.
Quantity = Annotated[int, Field(gt=0, le=10_000_000, strict=False), BeforeValidator(_a_json_number)]
"""A whole, positive number of contracts (or of shares in a conditional leg): 10 and 10.0 are accepted, 10.5 is not."""


def _share_precision(value: float) -> float:
    exponent = Decimal(repr(value)).normalize().as_tuple().exponent  # an int: infinities and NaN are refused first
    if isinstance(exponent, int) and -exponent > SHARE_PLACES:
        raise PydanticCustomError(
            "share_precision",
            "at most {places} decimal places (fractions of a share go down to 0.0001); {value} is finer",
            {"places": SHARE_PLACES, "value": value},
        )
    return value


def _whole_as_int(value: float) -> float | int:
    # A whole quantity dumps as 10, as when quantities were integers: body hashes kept by the journal for
    # Idempotency-Key replays (30 days, across restarts and upgrades) stay the same.
    return int(value) if value == int(value) else value


ShareQuantity = Annotated[
    float,
    Field(gt=0, le=10_000_000, allow_inf_nan=False, strict=False),
    BeforeValidator(_a_json_number),
    AfterValidator(_share_precision),
    PlainSerializer(_whole_as_int),
]
"""A positive number of shares: whole (10) or fractional to four decimal places (2.5, 0.0001) where allowed."""

SHARE_QUANTITY = (
    "Shares: a JSON number, more than 0. Whole (10) or, on a broker that supports fractional shares (paper), "
    "fractional to 4 decimal places (2.5, 0.1234; 0.0001 is the smallest). A fraction is accepted on market (M) "
    "and limit (L) day (D) orders that buy (B) or sell (S), and refused (422 VALIDATION_ERROR naming qty) on "
    "stop and stop-limit orders, good-till-canceled orders, short sales (SS) and buys to cover (BC); a finer "
    "precision is refused the same way. Fidelity: whole shares only (a fraction is 422 VALIDATION_ERROR, "
    "nothing is sent)."
)


def fractional_rule(qty: float, price_type: PriceType, tif: TimeInForce, action: EquityAction) -> None:
    """Refuse a fraction of a share on an order that may not have one (422 VALIDATION_ERROR naming ``qty``)."""
    why = None if qty == int(qty) else fraction_refusal(price_type, tif, action)
    if why is not None:
        raise ValidationFailed.for_field("qty", f"qty {qty:g}: {why}")


MAX_PRICE = 10_000_000.0
"""Prices above this are refused at the edge (no security trades there; the broker's arithmetic has limits)."""

Price = Annotated[float, Field(gt=0, le=MAX_PRICE, allow_inf_nan=False), BeforeValidator(_not_a_bool)]
NetPrice = Annotated[float, Field(ge=0, le=MAX_PRICE, allow_inf_nan=False), BeforeValidator(_not_a_bool)]
Symbol = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, to_upper=True, min_length=1, max_length=32, pattern=r"^-?[A-Za-z0-9][A-Za-z0-9./-]*$"
    ),
]


EQUITY_ACTIONS = "Equity action. " + describe(ActionKind.EQUITY)
OPTION_ACTIONS = (
    "Single-leg option action; with positionIntent open or close it is sent as the open/close code. "
    + describe(ActionKind.OPTION)
    + " A Fidelity preview whose words contradict the action or name an intent you did not state is ACTION_MISMATCH."
)
LEG_ACTIONS = (
    "Leg action: a code or its explicit word (buy_to_open, sell_to_open, buy_to_close, sell_to_close), or buy / "
    "sell with position_intent. " + describe(ActionKind.LEG)
)

LEG_ACTION_WORDS = (*(a.value for a in LegAction), *LEG_WORDS, Side.BUY.value, Side.SELL.value)
"""Everything a leg's ``action`` accepts: the codes, their words, and buy / sell (with ``position_intent``)."""

LIMIT_TYPES = (PriceType.LIMIT, PriceType.STOP_LIMIT)
STOP_TYPES = (PriceType.STOP, PriceType.STOP_LIMIT)


def price_rule(
    value: float | None, price_type: Any, *, name: str, type_name: str, needed_by: tuple[PriceType, ...]
) -> float | None:
    """Require a price for the price types that use it and refuse it for the others."""
    if not isinstance(price_type, PriceType):  # the price type is itself invalid and reported on its own
        return value
    codes = " or ".join(t.value for t in needed_by)
    if price_type in needed_by and value is None:
        raise ValueError(f"{name} is required when {type_name} is {codes}")
    if price_type not in needed_by and value is not None:
        raise ValueError(f"{name} is only used when {type_name} is {codes}; leave it out of a {price_type.value} order")
    return value


class CamelBody(BodyModel):
    """A body whose spec names are camelCase; the snake_case spelling is accepted too."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=lambda name: AliasChoices(name, to_snake(name)))
    )


class SnakeBody(BodyModel):
    """A body whose spec names are snake_case; the camelCase spelling is accepted too."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=lambda name: AliasChoices(name, to_camel(name)))
    )


def price_of(price_type: PriceType, limit: float | None, stop: float | None) -> float | None:
    """Return the price the journal records: the limit of a limit order, else the stop (None for market)."""
    return limit if price_type in LIMIT_TYPES else stop
