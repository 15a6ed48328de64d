"""Order records (the order endpoints): requests, previews, placements, status, cancels.

Order lifecycle (``OrderStatus``), the states every broker reports:

    PENDING_TRIGGER -> OPEN               a conditional leg whose trigger fired (OTO/OTOCO child)
    OPEN -> PARTIALLY_FILLED -> FILLED    fills arrive; the order is done when fully filled
    OPEN | PARTIALLY_FILLED -> CANCELED   canceled by the user, or by an OCO sibling's fill
    OPEN | PARTIALLY_FILLED -> REPLACED   a cancel-replace succeeded; the new order is OPEN
    OPEN | PARTIALLY_FILLED -> EXPIRED    a day order at the close
    (new) -> REJECTED                     the broker refused it at placement

An order is cancelable (``cancelable_ind``) while OPEN, PARTIALLY_FILLED or PENDING_TRIGGER. It is
replaceable (``replaceable_ind``) in those states only when a cancel-replace accepts it: an equity
order, including an equity leg of a conditional order (``ReplaceOrder`` carries an ``EquityOrder``;
``ConditionalReplace`` swaps conditional legs). Single-leg and multi-leg option orders are never
replaceable: cancel them and place a new order.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field, model_validator

from ftdesk.domain.base import IsoDateTime, IsoDateTimeOrEmpty, JsonObject, Record, UpstreamRecord

MAX_PRICE = 10_000_000.0
"""Highest price any order may carry: far above every listed security, and far below what breaks arithmetic."""


class EquityAction(StrEnum):
    """Equity order action codes of the spec."""

    BUY = "B"
    SELL = "S"
    SELL_SHORT = "SS"
    BUY_TO_COVER = "BC"


class OptionAction(StrEnum):
    """Single-leg option action codes of the spec; ``PositionIntent`` may say open or close explicitly.

    Without a position intent, open or close is decided by the position held.
    """

    BUY_CALL = "BC"
    SELL_CALL = "SC"
    BUY_PUT = "BP"
    SELL_PUT = "SP"


class PositionIntent(StrEnum):
    """Whether an option order opens a new position or closes one held (Alpaca's ``position_intent``)."""

    OPEN = "open"
    CLOSE = "close"


class LegAction(StrEnum):
    """Multi-leg option leg actions: open or close explicitly (also accepted as the words ``buy_to_open``...)."""

    BUY_TO_OPEN = "BO"
    SELL_TO_OPEN = "SO"
    BUY_TO_CLOSE = "BC"
    SELL_TO_CLOSE = "SC"


class PriceType(StrEnum):
    """Price type codes of the spec."""

    MARKET = "M"
    LIMIT = "L"
    STOP = "S"
    STOP_LIMIT = "SL"


class TimeInForce(StrEnum):
    """Time-in-force codes of the spec."""

    DAY = "D"
    GTC = "G"


class DebitCredit(StrEnum):
    """Whether a multi-leg net price is a debit, a credit or even."""

    DEBIT = "DB"
    CREDIT = "CR"
    EVEN = "EV"


class ConditionalType(StrEnum):
    """Conditional order kinds of the spec."""

    OTO = "OTO"
    OCO = "OCO"
    OTOCO = "OTOCO"


class OrderStatus(StrEnum):
    """Lifecycle state of an order (see the module docstring for the transitions)."""

    PENDING_TRIGGER = "PENDING_TRIGGER"
    OPEN = "OPEN"
    PARTIALLY_FILLED = "PARTIALLY_FILLED"
    FILLED = "FILLED"
    CANCELED = "CANCELED"
    REPLACED = "REPLACED"
    EXPIRED = "EXPIRED"
    REJECTED = "REJECTED"

    @property
    def is_working(self) -> bool:
        """True while the order can still fill, be canceled or be replaced."""
        return self in (OrderStatus.OPEN, OrderStatus.PARTIALLY_FILLED, OrderStatus.PENDING_TRIGGER)


SHARE_PLACES = 4
"""Decimal places a quantity of shares may have: fractions of a share go down to 0.0001."""


def fraction_refusal(price_type: PriceType, tif: TimeInForce, action: EquityAction) -> str | None:
    """Return why an equity order of this kind may not be for a fraction of a share, or None when it may."""
    if price_type not in (PriceType.MARKET, PriceType.LIMIT):
        return f"a fraction of a share trades on market (M) and limit (L) orders only, not {price_type.value}"
    if tif is not TimeInForce.DAY:
        return "a fraction of a share trades on day (D) orders only, not good till canceled (G)"
    if action not in (EquityAction.BUY, EquityAction.SELL):
        return f"a fraction of a share is bought (B) or sold (S), never with {action.value}"
    return None


def _check_prices(price_type: PriceType, limit_price: float | None, stop_price: float | None) -> None:
    if price_type in (PriceType.LIMIT, PriceType.STOP_LIMIT) and limit_price is None:
        raise ValueError(f"limit_price is required for price type {price_type.value}")
    if price_type in (PriceType.STOP, PriceType.STOP_LIMIT) and stop_price is None:
        raise ValueError(f"stop_price is required for price type {price_type.value}")


class EquityOrder(Record):
    """An equity order as a broker receives it."""

    acct_num: str
    symbol: str
    action: EquityAction
    qty: float = Field(gt=0)
    price_type: PriceType
    limit_price: float | None = Field(default=None, gt=0, le=MAX_PRICE)
    stop_price: float | None = Field(default=None, gt=0, le=MAX_PRICE)
    tif: TimeInForce = TimeInForce.DAY

    @model_validator(mode="after")
    def _prices_match_type(self) -> EquityOrder:
        _check_prices(self.price_type, self.limit_price, self.stop_price)
        return self


class OptionOrder(Record):
    """A single-leg option order; ``symbol`` is an option symbol such as AAPL260417C200."""

    acct_num: str
    symbol: str
    action: OptionAction
    qty: int = Field(gt=0, description="Contracts.")
    position_intent: PositionIntent | None = None
    price_type: PriceType = PriceType.MARKET
    limit_price: float | None = Field(default=None, gt=0, le=MAX_PRICE)
    stop_price: float | None = Field(default=None, gt=0, le=MAX_PRICE)
    tif: TimeInForce = TimeInForce.DAY

    @model_validator(mode="after")
    def _prices_match_type(self) -> OptionOrder:
        _check_prices(self.price_type, self.limit_price, self.stop_price)
        return self


class MultiLegOptionLeg(Record):
    """One leg of a multi-leg option order."""

    symbol: str
    action: LegAction
    qty: int = Field(gt=0)


class MultiLegOptionOrder(Record):
    """A multi-leg option order priced as a net debit or credit."""

    acct_num: str
    underlying: str
    legs: list[MultiLegOptionLeg] = Field(min_length=2, max_length=4)
    price_type: PriceType = PriceType.LIMIT
    net_price: float | None = Field(
        default=None, ge=0, le=MAX_PRICE, description="Net limit per spread, required for limit orders."
    )
    debit_credit: DebitCredit = DebitCredit.DEBIT
    tif: TimeInForce = TimeInForce.DAY

    @model_validator(mode="after")
    def _net_price_for_limit(self) -> MultiLegOptionOrder:
        if self.price_type is PriceType.LIMIT and self.net_price is None:
            raise ValueError("net_price is required for a limit multi-leg order")
        if self.price_type not in (PriceType.LIMIT, PriceType.MARKET):
            raise ValueError("multi-leg orders are market or limit")
        return self


class ReplaceOrder(Record):
    """A cancel-and-replace of a working equity order by a new one."""

    orig_conf_num: str
    order: EquityOrder


class ConditionalLeg(Record):
    """One leg of a conditional order; leg 0 is the primary, later legs are triggered."""

    symbol: str
    action: EquityAction
    qty: float = Field(gt=0)
    price_type: PriceType
    limit_price: float | None = Field(default=None, gt=0, le=MAX_PRICE)
    stop_price: float | None = Field(default=None, gt=0, le=MAX_PRICE)
    tif: TimeInForce = TimeInForce.DAY

    @model_validator(mode="after")
    def _prices_match_type(self) -> ConditionalLeg:
        _check_prices(self.price_type, self.limit_price, self.stop_price)
        return self


class ConditionalOrder(Record):
    """An OTO, OCO or OTOCO order."""

    acct_num: str
    cond_order_type_code: ConditionalType
    legs: list[ConditionalLeg]

    @model_validator(mode="after")
    def _leg_count(self) -> ConditionalOrder:
        wanted = {ConditionalType.OTO: 2, ConditionalType.OCO: 2, ConditionalType.OTOCO: 3}[self.cond_order_type_code]
        if len(self.legs) != wanted:
            raise ValueError(f"{self.cond_order_type_code.value} needs exactly {wanted} legs, got {len(self.legs)}")
        return self


class ConditionalReplace(Record):
    """A replacement of the working legs of a conditional order."""

    orig_conf_nums: list[str] = Field(min_length=1)
    order: ConditionalOrder


class QuoteAtPreview(Record):
    """The quote a preview was priced with."""

    price: float = Field(
        description="Last price when previewed, US dollars per share; for an option, per share of the contract."
    )
    bid: float
    ask: float
    time: str


class PreviewLeg(Record):
    """One leg of a multi-leg preview as the broker understood it, checked against the leg the request sent."""

    symbol: str = Field(description="The leg's option contract symbol, as the broker echoed it.")
    action: LegAction = Field(
        description="The leg's action as requested (BO, SO, BC, SC); the broker's echo was checked not to contradict "
        "it."
    )
    qty: int = Field(gt=0, description="Contracts of this leg in the whole order (all spreads), as the broker echoed.")
    position_intent: PositionIntent = Field(description="open or close, as the leg's action states.")
    broker_action_code: str | None = Field(
        default=None, description="The action code the broker echoed back for this leg, verbatim."
    )
    broker_action_desc: str | None = Field(
        default=None,
        description="What the broker says it understood this leg's action to be, verbatim (e.g. 'Buy to Open'); "
        "null when the broker's answer gives only a code.",
    )


class OrderPreview(UpstreamRecord):
    """A validated order that can be placed with its conf_num."""

    conf_num: str
    acct_num: str
    resp_type_code: str = Field(default="V", description="'V' validated.")
    symbol: str
    action: str
    action_desc: str
    qty: float
    price_type: PriceType
    limit_price: float | None = None
    stop_price: float | None = None
    tif: TimeInForce
    position_intent: PositionIntent | None = Field(
        default=None, description="The position intent the order stated (open or close), null when none."
    )
    broker_action_code: str | None = Field(
        default=None, description="The action code the broker echoed back for this order, verbatim."
    )
    broker_action_desc: str | None = Field(
        default=None,
        description="What the broker says it understood the action to be, verbatim (e.g. 'Buy Call', 'Sell Short'); "
        "checked against the request before the preview can be placed.",
    )
    legs: list[PreviewLeg] | None = Field(
        default=None,
        description="A multi-leg order's legs in the order the request listed them, each as the broker understood "
        "it (its echoed code and words, verbatim), every one checked against the request before the preview can be "
        "placed; null for a single-leg order.",
    )
    quote: QuoteAtPreview | None = None
    est_commission: float
    est_fees: float = 0.0
    est_cost: float = Field(description="Estimated cash paid, including commission (0 for a sale).")
    est_proceeds: float = Field(description="Estimated cash received, after commission (0 for a purchase).")
    warnings: list[str] = Field(default_factory=list)


class ConditionalPreview(UpstreamRecord):
    """A validated conditional order: one preview per leg, placed with all conf_nums."""

    acct_num: str
    cond_order_type_code: ConditionalType
    conf_nums: list[str]
    legs: list[OrderPreview]
    warnings: list[str] = Field(default_factory=list)


class OrderPlacement(UpstreamRecord):
    """The broker's answer to a place."""

    conf_num: str
    acct_num: str
    resp_type_code: str = Field(default="A", description="'A' accepted.")
    status: OrderStatus
    conf_nums: list[str] = Field(default_factory=list, description="All legs' conf_nums for conditional orders.")
    message: str = ""


class OrderIdDetail(Record):
    """Identifiers of an order (spec: id_detail containing conf_num)."""

    conf_num: str
    parent_conf_num: str | None = Field(
        default=None, description="The conditional group's primary order, for triggered legs."
    )
    replaced_by: str | None = Field(default=None, description="conf_num of the order that replaced this one.")


class OrderStatusDetail(Record):
    """Status of an order (spec: status_detail with status_desc, cancelable_ind, replaceable_ind)."""

    status: OrderStatus
    status_desc: str = Field(description="e.g. 'Filled at $101.25', 'Open', 'Canceled'.")
    cancelable_ind: bool
    replaceable_ind: bool
    qty: float
    qty_exec: float
    qty_remaining: float
    avg_exec_price: float | None = None
    commission: float = 0.0
    reject_reason: str | None = None


class OrderLegDetail(Record):
    """One leg of a multi-leg order in a status record."""

    symbol: str
    action: str = Field(description="BO, SO, BC, SC, or buy / sell when the broker's answer does not say the intent.")
    qty: float
    position_intent: PositionIntent | None = None
    broker_action_code: str | None = Field(default=None, description="The broker's own code for the leg.")


class OrderBaseDetail(Record):
    """What was ordered."""

    symbol: str
    action: str = Field(description="The public action code (see the order actions table in the API guide).")
    action_desc: str
    qty: float
    price_type: PriceType
    limit_price: float | None = None
    stop_price: float | None = None
    tif: TimeInForce
    position_intent: PositionIntent | None = Field(
        default=None, description="open or close when the order (or the broker's words) says so."
    )
    broker_action_code: str | None = Field(default=None, description="The broker's own action code, verbatim.")
    action_unrecognized: bool = Field(
        default=False,
        description="True when the broker's action code is not in the action table: `action` is then the broker's "
        "code itself and `action_desc` the broker's words.",
    )
    security_type: str = Field(description="EQUITY, OPTION or MULTI_LEG.")
    entry_time: IsoDateTimeOrEmpty = Field(description="ISO 8601 time the order was placed.")
    cond_order_type_code: ConditionalType | None = None
    legs: list[OrderLegDetail] = Field(default_factory=list)


class Order(UpstreamRecord):
    """An order record (spec: id_detail and status_detail)."""

    acct_num: str
    id_detail: OrderIdDetail
    status_detail: OrderStatusDetail
    order_detail: OrderBaseDetail


class OrderDetailResult(Record):
    """A single-order lookup (spec: orders list and first order)."""

    orders: list[Order]
    order: Order | None


class CancelPreviewDetail(Record):
    """What a cancel would do (spec record)."""

    resp_type_code: str
    conf_num: str
    acct_num: str
    action_code: str
    orig_qty: float
    exec_qty: float
    remaining_qty: float
    est_proceeds: float
    commission: float
    order_confirm_msgs: list[str]

    @property
    def is_accepted(self) -> bool:
        """True when the cancel would be accepted."""
        return self.resp_type_code == "A"


class CancelPreview(Record):
    """A cancel preview (spec: cancel_preview_detail list and is_accepted)."""

    cancel_preview_detail: list[CancelPreviewDetail]
    is_accepted: bool


class CancelConfirmDetail(Record):
    """The outcome of a cancel for one order."""

    resp_type_code: str
    conf_num: str
    acct_num: str
    action_code: str
    orig_qty: float
    exec_qty: float
    remaining_qty: float


class CancelResult(Record):
    """The outcome of a cancel."""

    cancel_confirm_detail: list[CancelConfirmDetail]
    is_accepted: bool


class StagedOrder(Record):
    """A saved, not yet placed order (spec: stage_id, stage_type)."""

    stage_id: str
    stage_type: str = "SAVED_ORDER"
    acct_num: str
    created: IsoDateTimeOrEmpty
    description: str = ""
    order: JsonObject = Field(description="The order fields as saved, for the script to preview later.")


class StagedOrderDraft(Record):
    """A staged order to save."""

    acct_num: str
    description: str = ""
    order: dict[str, Any]


class StagedOrderList(Record):
    """The staged orders (spec: staged_orders, possibly null)."""

    staged_orders: list[StagedOrder] | None


class MessageDetail(Record):
    """A message from the broker with its severity."""

    severity: str = Field(description="INFO, WARNING or ERROR.")
    message: str


class StagedOrderResult(Record):
    """Outcome of a staged save or delete (spec: is_success)."""

    is_success: bool
    stage_id: str | None = None
    messages: list[MessageDetail] = Field(default_factory=list)


class TradeAgreementResult(Record):
    """Outcome of accepting a trade agreement."""

    acct_num: str
    agreement_id: str
    accepted: bool
    accepted_at: IsoDateTime | None = None
