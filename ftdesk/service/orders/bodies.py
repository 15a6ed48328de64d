"""Request bodies of the order endpoints: validated at the edge, then turned into domain order records.

Names are the spec's: camelCase for equity and single-leg option orders (``acctNum``, ``orderActionCode``,
``priceTypeCode``, ...), snake_case for multi-leg, conditional, cancel, staged and agreement bodies; the
other spelling is accepted too. Everything a broker would refuse for its shape is a 422 here, naming the
field: a limit order without ``limitPrice``, a price the price type does not use, a non-positive quantity,
a fractional number of contracts, a fraction of a share finer than 0.0001 or on an order that may not have
one (``fractional_rule``), an unknown action code, the wrong number of conditional legs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import (
    AliasChoices,
    BaseModel,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from typing_extensions import TypeAliasType

from ftdesk.domain.base import JsonObject
from ftdesk.domain.orders import (
    ConditionalOrder,
    ConditionalReplace,
    ConditionalType,
    DebitCredit,
    EquityAction,
    EquityOrder,
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
from ftdesk.service.orders.fields import (
    EQUITY_ACTIONS,
    LIMIT_TYPES,
    OPTION_ACTIONS,
    SHARE_QUANTITY,
    STOP_TYPES,
    CamelBody,
    NetPrice,
    Price,
    Quantity,
    ShareQuantity,
    SnakeBody,
    Symbol,
    fractional_rule,
    price_of,
    price_rule,
)
from ftdesk.service.orders.journal import OrderFacts
from ftdesk.service.orders.legs import ConditionalLegBody, MultiLegLegBody
from ftdesk.service.web.routing import BodyModel

# The identifiers a body names: the account, and the preview or working order it refers to.
AcctNum = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=32, pattern=r"^[A-Za-z0-9-]+$")
]
ConfNum = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=32, pattern=r"^[A-Za-z0-9-]+$")
]

_PLACE_ONLY = frozenset({"confNum", "conf_num", "conf_nums"})

# Named, so the schema has one component for each and generated clients one enum type.
NetPriceType = TypeAliasType("NetPriceType", Literal["M", "L"])
"""How a multi-leg order is priced: M market or L limit (a net price)."""
CancelActionCode = TypeAliasType("CancelActionCode", Literal["B", "S", "SS", "BC", "SC", "BP", "SP", "BO", "SO"])
"""The codes a cancel may name its order's action by: the side it trades (B, S) or its own action code."""


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
            value, info.data.get("priceTypeCode"), name="limitPrice", type_name="priceTypeCode", needed_by=LIMIT_TYPES
        )

    @field_validator("stopPrice", check_fields=False)
    @classmethod
    def _stop_matches_type(cls, value: float | None, info: ValidationInfo) -> float | None:
        return price_rule(
            value, info.data.get("priceTypeCode"), name="stopPrice", type_name="priceTypeCode", needed_by=STOP_TYPES
        )

    def journal_facts(self) -> OrderFacts:
        """Return what the journal records about this order."""
        return OrderFacts(
            acct_num=self.acctNum,
            symbol=self.symbol,
            side=self.orderActionCode.value,
            qty=self.qty,
            price=price_of(self.priceTypeCode, self.limitPrice, self.stopPrice),
        )


class _CamelConfirmed(BaseModel):
    """The preview conf_num a camelCase place body carries."""

    confNum: ConfNum = Field(
        description="conf_num of the preview of this order. Required: a place without it is a 422 VALIDATION_ERROR "
        "naming confNum, one no preview of this service made is PREVIEW_REQUIRED."
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
    qty: ShareQuantity = Field(description=SHARE_QUANTITY)
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

    @model_validator(mode="after")
    def _fraction_allowed(self) -> Self:
        fractional_rule(self.qty, self.priceTypeCode, self.tifCode, self.orderActionCode)
        return self

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


class MultiLegPreviewBody(SnakeBody, OrderBodyMixin):
    """A multi-leg option order (spread, straddle, combination) to preview.

    Every field is also accepted in the camelCase vocabulary of the equity and single-leg option bodies:
    ``acctNum``, ``priceTypeCode``, ``netPrice``, ``debitCredit``, ``tifCode``, ``confNum``, and on a leg
    ``orderActionCode`` and ``positionIntent``.
    """

    acct_num: AcctNum = Field(description="Account number.")
    underlying: Symbol = Field(description="The underlying ticker of every leg, e.g. AAPL.")
    legs: list[MultiLegLegBody] = Field(min_length=2, max_length=4, description="2 to 4 option legs.")
    price_type: NetPriceType = Field(
        validation_alias=AliasChoices("price_type", "priceTypeCode", "priceType", "price_type_code"),
        description="M market or L limit (a net price). Also accepted as priceTypeCode.",
    )
    net_price: NetPrice | None = Field(
        default=None, validate_default=True, description="Net price per spread: required for L, refused for M."
    )
    debit_credit: DebitCredit | None = Field(
        default=None,
        validate_default=True,
        description="Whether net_price is a debit (DB), a credit (CR) or even (EV): required for L.",
    )
    tif: TimeInForce = Field(
        default=TimeInForce.DAY,
        validation_alias=AliasChoices("tif", "tifCode", "tif_code"),
        description="D day (default), G good till canceled. Also accepted as tifCode.",
    )

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

    conf_num: ConfNum = Field(
        description="conf_num of the preview of this order (also accepted as confNum). Required: a place without "
        "it is a 422 VALIDATION_ERROR naming conf_num, one no preview of this service made is PREVIEW_REQUIRED."
    )

    def given_conf_nums(self) -> tuple[str, ...]:
        """Return the preview conf_num."""
        return (self.conf_num,) if self.conf_num else ()


# --- cancel, replace -----------------------------------------------------------------------------------------


class CancelBody(SnakeBody, OrderBodyMixin):
    """The order's account and action (the order itself is named by the conf_num in the path)."""

    acct_num: AcctNum = Field(description="Account number of the order.")
    action_code: CancelActionCode = Field(
        description="The order's action, checked against the order (a mismatch is 422 VALIDATION_ERROR): its side, "
        "B or S as in the spec, or its own code (equity B, S, SS, BC; option BC, SC, BP, SP; a multi-leg order its "
        "legs' BO, SO, BC, SC). Fidelity's cancel echoes the order's own action code, read from its status (a "
        "cover is BH there, not BC); this value is mapped and sent unchecked only when the status cannot be read."
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

_LEG_COUNT = MappingProxyType({ConditionalType.OTO: 2, ConditionalType.OCO: 2, ConditionalType.OTOCO: 3})


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
            price=price_of(first.price_type_code, first.limit_price, first.stop_price),
        )


class ConditionalPreviewBody(_ConditionalFields):
    """A conditional order (OTO, OCO, OTOCO) to preview."""

    def to_domain(self) -> ConditionalOrder:
        """Return the domain order."""
        return self.conditional_order()


class _SnakeConfirmed(BaseModel):
    """The preview conf_nums a conditional place body carries."""

    conf_nums: list[ConfNum] = Field(
        min_length=1,
        max_length=3,
        description="The conf_nums of the preview, in order (all of them, or all but the last as the upstream "
        "SDK sends them). Required: a place without them is a 422 VALIDATION_ERROR naming conf_nums.",
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
    order: JsonObject = Field(
        min_length=1,
        json_schema_extra={"minProperties": 1},
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
