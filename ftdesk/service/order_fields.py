"""The values order bodies are made of: quantities, prices, symbols, action words, and the rules between them.

Shared by the order bodies and their legs: the field types with their limits (a quantity is whole and
positive, a price finite and not a boolean), the two spellings of field names, and the rule that ties a
limit or stop price to the price type that uses it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AliasChoices, AliasGenerator, BeforeValidator, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel, to_snake
from pydantic_core import PydanticCustomError

from ftdesk.domain.order_actions import LEG_WORDS, ActionKind, Side, describe
from ftdesk.domain.orders import LegAction, PriceType
from ftdesk.service.routing import BodyModel


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
"""A whole, positive number of shares or contracts (10 and 10.0 are accepted, 10.5 is not)."""

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
