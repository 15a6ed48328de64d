"""Orders as the paper engine stores them: the schema, normalised specs, rows and their records."""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from ftdesk.brokers.paper.ledger.money import dollars, price_float, price_of
from ftdesk.brokers.paper.options import canonical_option_symbol
from ftdesk.brokers.paper.quantities import SHARE_STEP, from_order, is_whole, number, shares
from ftdesk.brokers.paper.quantities import text as quantity_text
from ftdesk.domain.errors import OrderRejected
from ftdesk.domain.orders import (
    SHARE_PLACES,
    ConditionalLeg,
    ConditionalType,
    DebitCredit,
    EquityAction,
    EquityOrder,
    MultiLegOptionOrder,
    OptionAction,
    OptionOrder,
    Order,
    OrderBaseDetail,
    OrderIdDetail,
    OrderLegDetail,
    OrderStatus,
    OrderStatusDetail,
    PositionIntent,
    PriceType,
    TimeInForce,
    fraction_refusal,
)

ENGINE_SCHEMA = """
CREATE TABLE IF NOT EXISTS paper_previews (
    conf_num  TEXT PRIMARY KEY,
    acct_num  TEXT NOT NULL,
    kind      TEXT NOT NULL,   -- EQUITY, OPTION, MULTI_LEG, REPLACE, CONDITIONAL, CONDITIONAL_REPLACE
    payload   TEXT NOT NULL,   -- the previewed request, canonical JSON
    group_id  TEXT,            -- conf_num of leg 0 for conditional previews
    leg_index INTEGER,
    created   TEXT NOT NULL,
    used      INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS paper_orders (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    conf_num         TEXT NOT NULL UNIQUE,
    acct_num         TEXT NOT NULL,
    kind             TEXT NOT NULL CHECK (kind IN ('EQUITY', 'OPTION', 'MULTI_LEG')),
    symbol           TEXT NOT NULL,     -- the underlying for a multi-leg order
    action           TEXT NOT NULL,     -- DB/CR/EV for a multi-leg order
    qty              INTEGER NOT NULL,  -- shares, contracts, or spreads (multi-leg)
    price_type       TEXT NOT NULL,
    limit_price      TEXT,              -- the net price for a multi-leg order
    stop_price       TEXT,
    tif              TEXT NOT NULL,
    status           TEXT NOT NULL,
    filled_qty       INTEGER NOT NULL DEFAULT 0,
    fill_value       TEXT NOT NULL DEFAULT '0',  -- sum of price x qty of the fills (exact)
    commission_cents INTEGER NOT NULL DEFAULT 0,
    fees_cents       INTEGER NOT NULL DEFAULT 0,
    triggered        INTEGER NOT NULL DEFAULT 0, -- a stop whose stop price was reached
    entry_time       TEXT NOT NULL,
    expires_at       TEXT,                       -- UTC close of a day order's session
    updated_time     TEXT NOT NULL,
    group_id         TEXT,
    cond_type        TEXT,
    leg_index        INTEGER,
    parent_conf_num  TEXT,
    replaced_by      TEXT,
    replaces         TEXT,
    legs             TEXT,                       -- JSON legs of a multi-leg order
    reject_reason    TEXT,
    note             TEXT
);
CREATE INDEX IF NOT EXISTS paper_orders_status ON paper_orders(status);
CREATE INDEX IF NOT EXISTS paper_orders_acct ON paper_orders(acct_num, seq);
CREATE INDEX IF NOT EXISTS paper_orders_group ON paper_orders(group_id);
CREATE TABLE IF NOT EXISTS paper_staged (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    stage_id    TEXT NOT NULL UNIQUE,
    acct_num    TEXT NOT NULL,
    created     TEXT NOT NULL,
    description TEXT NOT NULL,
    payload     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS paper_agreements (
    acct_num     TEXT NOT NULL,
    agreement_id TEXT NOT NULL,
    accepted_at  TEXT NOT NULL,
    PRIMARY KEY (acct_num, agreement_id)
);
"""

EQUITY, OPTION, MULTI_LEG = "EQUITY", "OPTION", "MULTI_LEG"
WORKING = (OrderStatus.OPEN.value, OrderStatus.PARTIALLY_FILLED.value, OrderStatus.PENDING_TRIGGER.value)

_EQUITY_DESC = MappingProxyType({"B": "Buy", "S": "Sell", "SS": "Sell Short", "BC": "Buy to Cover"})
_OPTION_DESC = MappingProxyType({"BC": "Buy Call", "SC": "Sell Call", "BP": "Buy Put", "SP": "Sell Put"})
_NET_DESC = MappingProxyType({"DB": "Net Debit", "CR": "Net Credit", "EV": "Even"})
_LEG_DESC = MappingProxyType({"BO": "Buy to Open", "SO": "Sell to Open", "BC": "Buy to Close", "SC": "Sell to Close"})
_NET_WORD = MappingProxyType({"DB": "debit", "CR": "credit", "EV": "even"})


@dataclass(frozen=True)
class Leg:
    """One leg of a multi-leg order: full contract quantity, signed by its action."""

    symbol: str
    action: str
    qty: int

    @property
    def sign(self) -> int:
        """+1 for a buy leg, -1 for a sell leg."""
        return 1 if self.action.startswith("B") else -1

    @property
    def closing(self) -> bool:
        """True for BC/SC legs (close an existing position)."""
        return self.action in ("BC", "SC")

    @property
    def action_desc(self) -> str:
        """The trader's name of the leg's action."""
        return _LEG_DESC[self.action]


@dataclass(frozen=True)
class Spec:
    """An order normalised for validation and storage."""

    acct_num: str
    kind: str
    symbol: str
    action: str
    qty: Decimal  # shares (fractional to 0.0001 for equity), contracts, or spreads (multi-leg): always whole but equity
    price_type: PriceType
    limit: Decimal | None
    stop: Decimal | None
    tif: TimeInForce
    legs: tuple[Leg, ...] = ()
    intent: PositionIntent | None = None  # a single-leg option's stated open/close (checked at preview and place)

    @property
    def sign(self) -> int:
        """+1 for a buy (or a net debit), -1 for a sale (or a net credit)."""
        if self.kind == MULTI_LEG:
            return -1 if self.action == DebitCredit.CREDIT.value else 1
        return 1 if self.action in ("B", "BC", "BP") else -1

    @property
    def action_desc(self) -> str:
        """The trader's name of the action."""
        table = {EQUITY: _EQUITY_DESC, OPTION: _OPTION_DESC, MULTI_LEG: _NET_DESC}[self.kind]
        return table[self.action]

    def leg_units(self) -> list[tuple[Leg, int]]:
        """Return each multi-leg leg with its contracts per spread."""
        return [(leg, int(leg.qty // self.qty)) for leg in self.legs]


@dataclass
class Row:
    """A stored order."""

    seq: int
    conf_num: str
    spec: Spec
    status: OrderStatus
    filled_qty: Decimal
    fill_value: Decimal
    commission_cents: int
    fees_cents: int
    triggered: bool
    entry_time: str
    expires_at: str | None
    group_id: str | None
    cond_type: ConditionalType | None
    leg_index: int | None
    parent_conf_num: str | None
    replaced_by: str | None
    reject_reason: str | None
    note: str | None

    @property
    def remaining(self) -> Decimal:
        """Quantity still to fill."""
        return self.spec.qty - self.filled_qty

    @property
    def working(self) -> bool:
        """True while the order can fill or be canceled."""
        return self.status.is_working

    @property
    def replaceable(self) -> bool:
        """True for a working equity order (conditional legs included): the only orders replace accepts."""
        return self.working and self.spec.kind == EQUITY

    @property
    def oco_key(self) -> str:
        """Orders sharing a key are one-cancels-other alternatives; others have their own key."""
        if self.cond_type is ConditionalType.OCO or (
            self.cond_type is ConditionalType.OTOCO and (self.leg_index or 0) > 0
        ):
            return f"{self.group_id}:oco"
        return self.conf_num

    @property
    def avg_price(self) -> Decimal | None:
        """Average execution price, once something filled (a spread's net: a debit positive, a credit negative)."""
        return self.fill_value / self.filled_qty if self.filled_qty else None

    @property
    def fill_side(self) -> str | None:
        """Return DB, CR or EV for what a multi-leg order's fills netted to (None before a fill, or for one leg)."""
        avg = self.avg_price
        if self.spec.kind != MULTI_LEG or avg is None:
            return None
        if avg < 0:
            return DebitCredit.CREDIT.value
        if avg == 0:
            return DebitCredit.EVEN.value
        if self.spec.action == DebitCredit.CREDIT.value and self.spec.price_type is PriceType.LIMIT:
            # A credit limit never fills at a debit; fills stored before they kept their sign hold the magnitude.
            return DebitCredit.CREDIT.value
        return DebitCredit.DEBIT.value


def row_from_db(r: sqlite3.Row) -> Row:
    """Build a Row from a paper_orders row."""
    legs = tuple(Leg(**leg) for leg in json.loads(r["legs"])) if r["legs"] else ()
    spec = Spec(
        acct_num=r["acct_num"],
        kind=r["kind"],
        symbol=r["symbol"],
        action=r["action"],
        qty=shares(r["qty"]),
        price_type=PriceType(r["price_type"]),
        limit=Decimal(r["limit_price"]) if r["limit_price"] is not None else None,
        stop=Decimal(r["stop_price"]) if r["stop_price"] is not None else None,
        tif=TimeInForce(r["tif"]),
        legs=legs,
    )
    return Row(
        seq=int(r["seq"]),
        conf_num=r["conf_num"],
        spec=spec,
        status=OrderStatus(r["status"]),
        filled_qty=shares(r["filled_qty"]),
        fill_value=Decimal(r["fill_value"]),
        commission_cents=int(r["commission_cents"]),
        fees_cents=int(r["fees_cents"]),
        triggered=bool(r["triggered"]),
        entry_time=r["entry_time"],
        expires_at=r["expires_at"],
        group_id=r["group_id"],
        cond_type=ConditionalType(r["cond_type"]) if r["cond_type"] else None,
        leg_index=r["leg_index"],
        parent_conf_num=r["parent_conf_num"],
        replaced_by=r["replaced_by"],
        reject_reason=r["reject_reason"],
        note=r["note"],
    )


def _optional_price(value: float | None) -> Decimal | None:
    return None if value is None else price_of(value)


def fractional_refusal(order: EquityOrder | ConditionalLeg) -> str | None:
    """Return why this order may not be for a fraction of a share (the domain's rule), or None when it may."""
    if isinstance(order, ConditionalLeg):
        return "a conditional order's legs are whole shares"
    return fraction_refusal(order.price_type, order.tif, EquityAction(order.action))


def share_quantity(qty: float, refusal: str | None = None) -> Decimal:
    """Return an equity order's quantity exactly; reject one finer than 0.0001 share, or a fraction ``refusal`` bars."""
    exact = from_order(qty)
    if exact <= 0 or exact != exact.quantize(SHARE_STEP):
        raise OrderRejected(
            f"Quantity {qty:g} is not a number of shares the paper broker trades: more than 0, in steps of "
            f"{SHARE_STEP} share at most ({SHARE_PLACES} decimal places)",
            reason="INVALID_QUANTITY",
            details={"qty": qty, "precision": SHARE_PLACES},
        )
    if refusal is not None and not is_whole(exact):
        raise OrderRejected(
            f"Quantity {qty:g}: {refusal}",
            reason="INVALID_QUANTITY",
            details={"qty": qty},
        )
    return exact


def option_symbol(text: str) -> str:
    """Return an option symbol in the compact form the market and the ledger key it by."""
    try:
        return canonical_option_symbol(text)
    except ValueError:
        return text.strip().upper()  # validation then rejects it as an unknown symbol


def equity_spec(order: EquityOrder | ConditionalLeg, acct_num: str) -> Spec:
    """Normalise an equity order or conditional leg."""
    return Spec(
        acct_num=acct_num,
        kind=EQUITY,
        symbol=order.symbol.strip().upper(),
        action=EquityAction(order.action).value,
        qty=share_quantity(order.qty, fractional_refusal(order)),
        price_type=order.price_type,
        limit=_optional_price(order.limit_price),
        stop=_optional_price(order.stop_price),
        tif=order.tif,
    )


def option_spec(order: OptionOrder) -> Spec:
    """Normalise a single-leg option order."""
    return Spec(
        acct_num=order.acct_num,
        kind=OPTION,
        symbol=option_symbol(order.symbol),
        action=OptionAction(order.action).value,
        qty=Decimal(order.qty),
        intent=order.position_intent,
        price_type=order.price_type,
        limit=_optional_price(order.limit_price),
        stop=_optional_price(order.stop_price),
        tif=order.tif,
    )


def multileg_spec(order: MultiLegOptionOrder) -> Spec:
    """Normalise a multi-leg option order: qty is the number of spreads (the legs' common divisor)."""
    legs = tuple(Leg(option_symbol(leg.symbol), leg.action.value, leg.qty) for leg in order.legs)
    spreads = math.gcd(*(leg.qty for leg in legs))
    return Spec(
        acct_num=order.acct_num,
        kind=MULTI_LEG,
        symbol=order.underlying.strip().upper(),
        action=order.debit_credit.value,
        qty=Decimal(spreads),
        price_type=order.price_type,
        limit=_optional_price(order.net_price) if order.price_type is PriceType.LIMIT else None,
        stop=None,
        tif=order.tif,
        legs=legs,
    )


def money_text(value: Decimal) -> str:
    """Return a price for a message: $1,234.50 (more places only when the price has them)."""
    exponent = value.normalize().as_tuple().exponent
    places = min(4, max(2, -exponent)) if isinstance(exponent, int) else 2
    return f"${value:,.{places}f}"


def status_desc(row: Row) -> str:
    """Describe an order's state the way a trader reads it."""
    spec = row.spec
    avg = row.avg_price
    executed = f"{quantity_text(row.filled_qty, grouped=True)} of {quantity_text(spec.qty, grouped=True)}"
    side = row.fill_side
    price = "" if avg is None else money_text(abs(avg)) + (f" {_NET_WORD[side]}" if side else "")
    if row.status is OrderStatus.FILLED and avg is not None:
        return f"Filled at {price}"
    if row.status is OrderStatus.PARTIALLY_FILLED and avg is not None:
        return f"Partially filled: {executed} at {price} average"
    if row.status is OrderStatus.PENDING_TRIGGER:
        return f"Waiting for order {row.parent_conf_num} to fill"
    if row.status is OrderStatus.OPEN:
        if spec.stop is not None and not row.triggered:
            return f"Open: waiting for the stop at {money_text(spec.stop)}"
        return "Open: stop triggered" if spec.stop is not None else "Open"
    if row.status is OrderStatus.REPLACED:
        return f"Replaced by {row.replaced_by}"
    if row.status is OrderStatus.REJECTED:
        return f"Rejected: {row.note}" if row.note else "Rejected"
    label = "Canceled" if row.status is OrderStatus.CANCELED else "Expired at the close"
    if row.note:
        label += f" ({row.note})"
    if row.filled_qty:
        label += f" after {executed} filled"
    return label


def to_order(row: Row) -> Order:
    """Return the Order record of a stored order."""
    spec = row.spec
    avg = row.avg_price
    side = row.fill_side
    return Order(
        acct_num=spec.acct_num,
        id_detail=OrderIdDetail(
            conf_num=row.conf_num, parent_conf_num=row.parent_conf_num, replaced_by=row.replaced_by
        ),
        status_detail=OrderStatusDetail(
            status=row.status,
            status_desc=status_desc(row),
            cancelable_ind=row.working,
            replaceable_ind=row.replaceable,
            qty=number(spec.qty),
            qty_exec=number(row.filled_qty),
            qty_remaining=number(row.remaining if row.working else 0),
            avg_exec_price=price_float(abs(avg)) if avg is not None else None,
            commission=dollars(row.commission_cents),
            reject_reason=row.reject_reason,
        ),
        order_detail=OrderBaseDetail(
            symbol=spec.symbol,
            # A filled spread names the side it filled at (a market spread states none); the price is its size.
            action=side or spec.action,
            action_desc=_NET_DESC[side] if side else spec.action_desc,
            qty=number(spec.qty),
            price_type=spec.price_type,
            limit_price=price_float(spec.limit) if spec.limit is not None else None,
            stop_price=price_float(spec.stop) if spec.stop is not None else None,
            tif=spec.tif,
            security_type=spec.kind,
            entry_time=row.entry_time,
            cond_order_type_code=row.cond_type,
            legs=[OrderLegDetail(symbol=leg.symbol, action=leg.action, qty=float(leg.qty)) for leg in spec.legs],
        ),
    )


def canonical(payload: dict[str, Any]) -> str:
    """Return a request as canonical JSON, for comparing a place with its preview."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def reject(reason: str, message: str, **details: Any) -> OrderRejected:
    """Return the refusal of an order, with its machine-readable reason and details."""
    return OrderRejected(message, reason=reason, details=details or None)


def words(code: str) -> str:
    """Return a code such as PARTIALLY_FILLED as words: partially filled."""
    return code.lower().replace("_", " ")
