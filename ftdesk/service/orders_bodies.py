"""Request bodies of the order endpoints: validated at the edge, then turned into domain order records.

Names are the spec's: camelCase for equity and single-leg option orders (``acctNum``, ``orderActionCode``,
``priceTypeCode``, ...), snake_case for multi-leg, conditional, cancel, staged and agreement bodies; the
other spelling is accepted too. Everything a broker would refuse for its shape is a 422 here, naming the
field: a limit order without ``limitPrice``, a price the price type does not use, a fractional or
non-positive quantity, an unknown action code, the wrong number of conditional legs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    AliasGenerator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel, to_snake
from pydantic_core import PydanticCustomError

from ftdesk.domain.order_actions import LEG_ACTION_OF, LEG_WORDS, ActionKind, Side, describe, leg_intent
from ftdesk.domain.orders import (
    ConditionalLeg,
    ConditionalOrder,
    ConditionalReplace,
    ConditionalType,
    DebitCredit,
    EquityAction,
    EquityOrder,
    LegAction,
    MultiLegOptionLeg,
    MultiLegOptionOrder,
    OptionAction,
    OptionOrder,
    PositionIntent,
    PriceType,
    ReplaceOrder,
    StagedOrderDraft,
    TimeInForce,
)
from ftdesk.service.orders_journal import OrderFacts
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
AcctNum = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=32, pattern=r"^[A-Za-z0-9-]+$")
]
ConfNum = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=32, pattern=r"^[A-Za-z0-9-]+$")
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

LEG_ACTION_WORDS = [*(a.value for a in LegAction), *LEG_WORDS, Side.BUY.value, Side.SELL.value]
"""Everything a leg's ``action`` accepts: the codes, their words, and buy / sell (with ``position_intent``)."""

_LIMIT_TYPES = (PriceType.LIMIT, PriceType.STOP_LIMIT)
_STOP_TYPES = (PriceType.STOP, PriceType.STOP_LIMIT)
_PLACE_ONLY = frozenset({"confNum", "conf_num", "conf_nums"})


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


class OrderBodyMixin:
    """What the order desk asks of an order body: journal facts, previewable fields, the hash."""

    def journal_facts(self) -> OrderFacts:
        """Return what the journal records about this order."""
        raise NotImplementedError

    def given_conf_nums(self) -> tuple[str, ...]:
        """Return the preview conf_num(s) a place body carries (none on a preview)."""
        return ()

    def previewed_fields(self) -> dict[str, Any]:
        """Return the fields a place must repeat unchanged from its preview (spec names)."""
        assert isinstance(self, BodyModel)
        return self.model_dump(mode="json", exclude=set(_PLACE_ONLY))

    def body_hash(self) -> str:
        """Return the SHA-256 of the validated body (the spelling and key order of the JSON do not matter)."""
        assert isinstance(self, BodyModel)
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


def _price_of(price_type: PriceType, limit: float | None, stop: float | None) -> float | None:
    return limit if price_type in _LIMIT_TYPES else stop


class _CamelPriced(CamelBody, OrderBodyMixin):
    """The price rules and journal facts the camelCase order bodies (equity, option, replace) share.

    Subclasses declare the fields; a price is required by the price types that use it and refused otherwise.
    """

    if TYPE_CHECKING:
        acctNum: str
        symbol: str
        orderActionCode: EquityAction | OptionAction
        qty: float
        priceTypeCode: PriceType
        limitPrice: float | None
        stopPrice: float | None

    @field_validator("limitPrice", check_fields=False)
    @classmethod
    def _limit_matches_type(cls, value: float | None, info: ValidationInfo) -> float | None:
        return price_rule(
            value, info.data.get("priceTypeCode"), name="limitPrice", type_name="priceTypeCode", needed_by=_LIMIT_TYPES
        )

    @field_validator("stopPrice", check_fields=False)
    @classmethod
    def _stop_matches_type(cls, value: float | None, info: ValidationInfo) -> float | None:
        return price_rule(
            value, info.data.get("priceTypeCode"), name="stopPrice", type_name="priceTypeCode", needed_by=_STOP_TYPES
        )

    def journal_facts(self) -> OrderFacts:
        """Return what the journal records about this order."""
        return OrderFacts(
            acct_num=self.acctNum,
            symbol=self.symbol,
            side=self.orderActionCode.value,
            qty=self.qty,
            price=_price_of(self.priceTypeCode, self.limitPrice, self.stopPrice),
        )


class _CamelConfirmed(BaseModel):
    """The preview conf_num a camelCase place body carries."""

    confNum: ConfNum | None = Field(
        default=None, description="conf_num of the preview of this order (required: without it PREVIEW_REQUIRED)."
    )

    def given_conf_nums(self) -> tuple[str, ...]:
        """Return the preview conf_num."""
        return (self.confNum,) if self.confNum else ()


# --- equity ------------------------------------------------------------------------------------------------


class _EquityFields(_CamelPriced):
    """The fields of an equity order (spec names)."""

    acctNum: AcctNum = Field(description="Account number.")
    symbol: Symbol = Field(description="Ticker, e.g. AAPL (upper-cased).")
    orderActionCode: EquityAction = Field(description=EQUITY_ACTIONS)
    qty: Quantity = Field(description="Whole shares, more than 0.")
    priceTypeCode: PriceType = Field(description="M market, L limit, S stop, SL stop limit.")
    limitPrice: Price | None = Field(
        default=None, validate_default=True, description="Limit price: required for L and SL, refused otherwise."
    )
    stopPrice: Price | None = Field(
        default=None,
        validate_default=True,
        description="Stop (trigger) price: required for S and SL, refused otherwise.",
    )
    tifCode: TimeInForce = Field(default=TimeInForce.DAY, description="D day (default), G good till canceled.")

    def equity_order(self) -> EquityOrder:
        """Return the domain equity order."""
        return EquityOrder(
            acct_num=self.acctNum,
            symbol=self.symbol,
            action=self.orderActionCode,
            qty=self.qty,
            price_type=self.priceTypeCode,
            limit_price=self.limitPrice,
            stop_price=self.stopPrice,
            tif=self.tifCode,
        )


class EquityPreviewBody(_EquityFields):
    """An equity order to preview."""

    def to_domain(self) -> EquityOrder:
        """Return the domain order."""
        return self.equity_order()


class EquityPlaceBody(EquityPreviewBody, _CamelConfirmed):
    """An equity order to place: the previewed fields, unchanged, and the preview's conf_num."""


# --- single-leg option -------------------------------------------------------------------------------------


class OptionPreviewBody(_CamelPriced):
    """A single-leg option order to preview."""

    acctNum: AcctNum = Field(description="Account number.")
    symbol: Symbol = Field(description="Option symbol: root + YYMMDD + C/P + strike, e.g. AAPL261218C200.")
    orderActionCode: OptionAction = Field(description=OPTION_ACTIONS)
    qty: Quantity = Field(description="Whole contracts, more than 0.")
    priceTypeCode: PriceType = Field(
        default=PriceType.MARKET, description="M market (default), L limit, S stop, SL stop limit."
    )
    limitPrice: Price | None = Field(
        default=None, validate_default=True, description="Limit price per share: required for L and SL."
    )
    stopPrice: Price | None = Field(
        default=None, validate_default=True, description="Stop price per share: required for S and SL."
    )
    tifCode: TimeInForce = Field(default=TimeInForce.DAY, description="D day (default), G good till canceled.")
    positionIntent: PositionIntent | None = Field(
        default=None,
        description="open or close (also accepted as position_intent); leave it out to let the broker decide by "
        "the position held. Fidelity's preview answer must not name another intent, or it is ACTION_MISMATCH.",
    )

    def to_domain(self) -> OptionOrder:
        """Return the domain order."""
        return OptionOrder(
            acct_num=self.acctNum,
            symbol=self.symbol,
            action=self.orderActionCode,
            position_intent=self.positionIntent,
            qty=self.qty,
            price_type=self.priceTypeCode,
            limit_price=self.limitPrice,
            stop_price=self.stopPrice,
            tif=self.tifCode,
        )

    def journal_facts(self) -> OrderFacts:
        """Return what the journal records: the action with its position intent."""
        facts = super().journal_facts()
        return replace(facts, side=f"{facts.side} {self.positionIntent.value}") if self.positionIntent else facts


class OptionPlaceBody(OptionPreviewBody, _CamelConfirmed):
    """A single-leg option order to place, with the preview's conf_num."""


# --- multi-leg option --------------------------------------------------------------------------------------


class MultiLegLegBody(SnakeBody):
    """One leg of a multi-leg option order."""

    symbol: Symbol = Field(description="Option symbol, e.g. AAPL261218C200.")
    action: Annotated[LegAction, WithJsonSchema({"type": "string", "enum": LEG_ACTION_WORDS})] = Field(
        description=LEG_ACTIONS
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
        if not isinstance(data, dict) or not isinstance(data.get("action"), str):
            return data
        word = data["action"]
        intent = data.get("position_intent", data.get("positionIntent"))
        if word in LEG_WORDS:
            return {**data, "action": LEG_WORDS[word].value}
        if word in (Side.BUY.value, Side.SELL.value):
            if intent not in (PositionIntent.OPEN.value, PositionIntent.CLOSE.value):
                raise ValueError(f"action {word} needs position_intent open or close")
            return {**data, "action": LEG_ACTION_OF[(Side(word), PositionIntent(intent))].value}
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


class MultiLegPreviewBody(SnakeBody, OrderBodyMixin):
    """A multi-leg option order (spread, straddle, combination) to preview."""

    acct_num: AcctNum = Field(description="Account number.")
    underlying: Symbol = Field(description="The underlying ticker of every leg, e.g. AAPL.")
    legs: list[MultiLegLegBody] = Field(min_length=2, max_length=4, description="2 to 4 option legs.")
    price_type: Literal["M", "L"] = Field(description="M market or L limit (a net price).")
    net_price: NetPrice | None = Field(
        default=None, validate_default=True, description="Net price per spread: required for L, refused for M."
    )
    debit_credit: DebitCredit | None = Field(
        default=None,
        validate_default=True,
        description="Whether net_price is a debit (DB), a credit (CR) or even (EV): required for L.",
    )
    tif: TimeInForce = Field(default=TimeInForce.DAY, description="D day (default), G good till canceled.")

    @field_validator("net_price")
    @classmethod
    def _net_price_matches_type(cls, value: float | None, info: ValidationInfo) -> float | None:
        price_type = info.data.get("price_type")
        if price_type == "L" and value is None:
            raise ValueError("net_price is required when price_type is L")
        if price_type == "M" and value is not None:
            raise ValueError("net_price is only used when price_type is L; leave it out of a market order")
        return value

    @field_validator("debit_credit")
    @classmethod
    def _debit_credit_for_limit(cls, value: DebitCredit | None, info: ValidationInfo) -> DebitCredit | None:
        if info.data.get("price_type") == "L" and value is None:
            raise ValueError("debit_credit (DB, CR or EV) is required when price_type is L")
        return value

    def to_domain(self) -> MultiLegOptionOrder:
        """Return the domain order."""
        return MultiLegOptionOrder(
            acct_num=self.acct_num,
            underlying=self.underlying,
            legs=[MultiLegOptionLeg(symbol=leg.symbol, action=leg.action, qty=leg.qty) for leg in self.legs],
            price_type=PriceType(self.price_type),
            net_price=self.net_price,
            debit_credit=self.debit_credit or DebitCredit.DEBIT,
            tif=self.tif,
        )

    def journal_facts(self) -> OrderFacts:
        """Return what the journal records: the underlying, each leg's action, the first leg's quantity."""
        return OrderFacts(
            acct_num=self.acct_num,
            symbol=self.underlying,
            side="/".join(leg.action.value for leg in self.legs),
            qty=self.legs[0].qty,
            price=self.net_price,
        )


class MultiLegPlaceBody(MultiLegPreviewBody):
    """A multi-leg option order to place, with the preview's conf_num."""

    conf_num: ConfNum | None = Field(
        default=None, description="conf_num of the preview of this order (required: without it PREVIEW_REQUIRED)."
    )

    def given_conf_nums(self) -> tuple[str, ...]:
        """Return the preview conf_num."""
        return (self.conf_num,) if self.conf_num else ()


# --- cancel, replace -----------------------------------------------------------------------------------------


class CancelBody(SnakeBody, OrderBodyMixin):
    """The order's account and action (the order itself is named by the conf_num in the path)."""

    acct_num: AcctNum = Field(description="Account number of the order.")
    action_code: Literal["B", "S", "SS", "BC", "SC", "BP", "SP", "BO", "SO"] = Field(
        description="The order's action: B or S as in the spec; SS, BC, SC, BP, SP, BO and SO are accepted too. "
        "The broker names the order by conf_num. Fidelity's cancel echoes the order's own action code, read from "
        "its status (a cover is BH there, not BC); this value is mapped and sent only when the status cannot be read."
    )

    def journal_facts(self) -> OrderFacts:
        """Return what the journal records about a cancel (the conf_num comes from the path)."""
        return OrderFacts(acct_num=self.acct_num, side=self.action_code)


class ReplacePreviewBody(_EquityFields):
    """A cancel-and-replace of a working equity order: the order to replace and the new order's fields."""

    orig_conf_num: ConfNum = Field(
        validation_alias=AliasChoices("orig_conf_num", "orderNumOrig", "origConfNum"),
        description="conf_num of the working order to replace (also accepted as orderNumOrig).",
    )

    def to_domain(self) -> ReplaceOrder:
        """Return the domain replace."""
        return ReplaceOrder(orig_conf_num=self.orig_conf_num, order=self.equity_order())

    def journal_facts(self) -> OrderFacts:
        """Return what the journal records: the new order's facts and the order it replaces."""
        facts = super().journal_facts()
        return replace(facts, orig_conf_nums=(self.orig_conf_num,))


class ReplacePlaceBody(ReplacePreviewBody, _CamelConfirmed):
    """A previewed cancel-and-replace to place, with the preview's conf_num."""


# --- conditional ---------------------------------------------------------------------------------------------

_LEG_COUNT = {ConditionalType.OTO: 2, ConditionalType.OCO: 2, ConditionalType.OTOCO: 3}


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
            needed_by=_LIMIT_TYPES,
        )

    @field_validator("stop_price")
    @classmethod
    def _stop_matches_type(cls, value: float | None, info: ValidationInfo) -> float | None:
        return price_rule(
            value,
            info.data.get("price_type_code"),
            name="stop_price",
            type_name="price_type_code",
            needed_by=_STOP_TYPES,
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


class _ConditionalFields(SnakeBody, OrderBodyMixin):
    """The fields of a conditional order."""

    acct_num: AcctNum = Field(description="Account number.")
    cond_order_type_code: ConditionalType = Field(
        description="OTO (leg 1 waits for leg 0 to fill), OCO (the first to fill cancels the other), OTOCO "
        "(leg 0, then legs 1 and 2 as an OCO pair)."
    )
    legs: list[ConditionalLegBody] = Field(description="Exactly 2 legs for OTO and OCO, 3 for OTOCO.")

    @field_validator("legs")
    @classmethod
    def _leg_count(cls, legs: list[ConditionalLegBody], info: ValidationInfo) -> list[ConditionalLegBody]:
        kind = info.data.get("cond_order_type_code")
        if isinstance(kind, ConditionalType) and len(legs) != _LEG_COUNT[kind]:
            raise ValueError(f"an {kind.value} order has exactly {_LEG_COUNT[kind]} legs, not {len(legs)}")
        return legs

    def conditional_order(self) -> ConditionalOrder:
        """Return the domain conditional order."""
        return ConditionalOrder(
            acct_num=self.acct_num,
            cond_order_type_code=self.cond_order_type_code,
            legs=[leg.to_domain() for leg in self.legs],
        )

    def journal_facts(self) -> OrderFacts:
        """Return what the journal records: distinct leg symbols, each leg's action, the primary's qty and price."""
        symbols = list(dict.fromkeys(leg.symbol for leg in self.legs))
        first = self.legs[0]
        return OrderFacts(
            acct_num=self.acct_num,
            symbol="/".join(symbols),
            side="/".join(leg.order_action_code.value for leg in self.legs),
            qty=first.qty,
            price=_price_of(first.price_type_code, first.limit_price, first.stop_price),
        )


class ConditionalPreviewBody(_ConditionalFields):
    """A conditional order (OTO, OCO, OTOCO) to preview."""

    def to_domain(self) -> ConditionalOrder:
        """Return the domain order."""
        return self.conditional_order()


class _SnakeConfirmed(BaseModel):
    """The preview conf_nums a conditional place body carries."""

    conf_nums: list[ConfNum] = Field(
        default_factory=list,
        max_length=3,
        description="The conf_nums of the preview, in order (all of them, or all but the last as the upstream "
        "SDK sends them). Required: without them PREVIEW_REQUIRED.",
    )

    def given_conf_nums(self) -> tuple[str, ...]:
        """Return the preview conf_nums."""
        return tuple(self.conf_nums)


class ConditionalPlaceBody(ConditionalPreviewBody, _SnakeConfirmed):
    """A conditional order to place, with the preview's conf_nums."""


class ConditionalReplacePreviewBody(_ConditionalFields):
    """A replacement of working legs of a conditional order: the legs to replace and the whole modified order."""

    orig_conf_nums: list[ConfNum] = Field(
        min_length=1,
        max_length=3,
        description="conf_nums of the working legs to replace; the legs at their positions in `legs` replace them.",
    )

    def to_domain(self) -> ConditionalReplace:
        """Return the domain replace."""
        return ConditionalReplace(orig_conf_nums=list(self.orig_conf_nums), order=self.conditional_order())

    def journal_facts(self) -> OrderFacts:
        """Return what the journal records, with the legs being replaced."""
        facts = super().journal_facts()
        return replace(facts, orig_conf_nums=tuple(self.orig_conf_nums))


class ConditionalReplacePlaceBody(ConditionalReplacePreviewBody, _SnakeConfirmed):
    """A previewed conditional replace to place, with the preview's conf_nums."""


# --- staged orders, trade agreements -----------------------------------------------------------------------


class StagedSaveBody(SnakeBody):
    """An order to save for later (not sent to the market)."""

    acct_num: AcctNum = Field(description="Account number.")
    description: str = Field(default="", max_length=500, description="Your note about the order.")
    order: dict[str, Any] = Field(
        min_length=1,
        description="The order fields to keep, as you would send them to a preview endpoint; stored as given.",
    )

    def to_domain(self) -> StagedOrderDraft:
        """Return the domain draft."""
        return StagedOrderDraft(acct_num=self.acct_num, description=self.description, order=self.order)


class TradeAgreementBody(SnakeBody):
    """A trade agreement to accept for an account."""

    acct_num: AcctNum = Field(description="Account number.")
    agreement_id: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="The agreement, e.g. MULTI_LEG_OPTIONS (required once per account before multi-leg orders).",
    )
