"""One leg of a multi-leg option order or of a conditional order, as the order bodies carry it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AliasChoices, Field, ValidationInfo, WithJsonSchema, field_validator, model_validator
from typing_extensions import TypeAliasType

from ftdesk.domain.order_actions import LEG_ACTION_OF, LEG_WORDS, Side, leg_intent
from ftdesk.domain.orders import ConditionalLeg, EquityAction, LegAction, PositionIntent, PriceType, TimeInForce
from ftdesk.service.orders.fields import (
    EQUITY_ACTIONS,
    LEG_ACTION_WORDS,
    LEG_ACTIONS,
    LIMIT_TYPES,
    STOP_TYPES,
    Price,
    Quantity,
    SnakeBody,
    Symbol,
    price_rule,
)

# The spellings of a multi-leg leg's action, in the order they are looked up (as its validation alias says).
_ACTION_KEYS = ("action", "orderActionCode", "order_action_code")

LegActionWord = TypeAliasType(
    "LegActionWord", Annotated[LegAction, WithJsonSchema({"type": "string", "enum": list(LEG_ACTION_WORDS)})]
)
"""A leg's action as a body may spell it (a code, its words, or buy / sell): one named schema."""


class MultiLegLegBody(SnakeBody):
    """One leg of a multi-leg option order."""

    symbol: Symbol = Field(description="Option symbol, e.g. AAPL261218C200.")
    action: LegActionWord = Field(
        validation_alias=AliasChoices("action", "orderActionCode", "order_action_code"),
        description=LEG_ACTIONS + " Also accepted as orderActionCode.",
    )
    qty: Quantity = Field(description="Whole contracts.")
    position_intent: PositionIntent | None = Field(
        default=None,
        description="open or close: required with action buy or sell, optional otherwise (it must then agree "
        "with the action). Answers always carry it.",
    )

    @model_validator(mode="before")
    @classmethod
    def _words_to_codes(cls, data: Any) -> Any:
        """Accept buy_to_open etc. and buy/sell with a position intent; the codes are what is stored and bound."""
        if not isinstance(data, dict):
            return data
        key = next((k for k in _ACTION_KEYS if k in data), None)
        if key is None or not isinstance(data[key], str):
            return data
        word = data[key]
        intent = data.get("position_intent", data.get("positionIntent"))
        if word in LEG_WORDS:
            return {**data, key: LEG_WORDS[word].value}
        if word in (Side.BUY.value, Side.SELL.value):
            if intent not in (PositionIntent.OPEN.value, PositionIntent.CLOSE.value):
                raise ValueError(f"action {word} needs position_intent open or close")
            return {**data, key: LEG_ACTION_OF[(Side(word), PositionIntent(intent))].value}
        return data

    @model_validator(mode="after")
    def _intent_agrees(self) -> MultiLegLegBody:
        stated = leg_intent(self.action)
        if self.position_intent is not None and self.position_intent is not stated:
            raise ValueError(
                f"position_intent {self.position_intent.value} contradicts action {self.action.value} "
                f"({stated.value}): say buy_to_{self.position_intent.value} or sell_to_{self.position_intent.value}"
            )
        self.position_intent = stated
        return self


class ConditionalLegBody(SnakeBody):
    """One equity leg of a conditional order; leg 0 is the primary."""

    symbol: Symbol = Field(description="Ticker.")
    order_action_code: EquityAction = Field(description=EQUITY_ACTIONS)
    qty: Quantity = Field(description="Whole shares.")
    price_type_code: PriceType = Field(description="M market, L limit, S stop, SL stop limit.")
    limit_price: Price | None = Field(default=None, validate_default=True, description="Required for L and SL.")
    stop_price: Price | None = Field(default=None, validate_default=True, description="Required for S and SL.")
    tif_code: TimeInForce = Field(default=TimeInForce.DAY, description="D day (default), G good till canceled.")

    @field_validator("limit_price")
    @classmethod
    def _limit_matches_type(cls, value: float | None, info: ValidationInfo) -> float | None:
        return price_rule(
            value,
            info.data.get("price_type_code"),
            name="limit_price",
            type_name="price_type_code",
            needed_by=LIMIT_TYPES,
        )

    @field_validator("stop_price")
    @classmethod
    def _stop_matches_type(cls, value: float | None, info: ValidationInfo) -> float | None:
        return price_rule(
            value,
            info.data.get("price_type_code"),
            name="stop_price",
            type_name="price_type_code",
            needed_by=STOP_TYPES,
        )

    def to_domain(self) -> ConditionalLeg:
        """Return the domain leg."""
        return ConditionalLeg(
            symbol=self.symbol,
            action=self.order_action_code,
            qty=self.qty,
            price_type=self.price_type_code,
            limit_price=self.limit_price,
            stop_price=self.stop_price,
            tif=self.tif_code,
        )
