"""Pricing of paper orders: estimates, buying power they use, warnings, and the preview records built from them.

Buying power: each order uses the capacity (``ledger.risk``) it would take if it filled as
priced; what an account's working orders hold back is the sum of that, where an OCO pair counts
its larger leg once and legs waiting for a trigger count nothing until triggered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from ftdesk.brokers.paper.engine.model import MULTI_LEG, Row, Spec, money_text, row_from_db
from ftdesk.brokers.paper.ledger.ledger import Ledger
from ftdesk.brokers.paper.ledger.money import (
    cents,
    commission_cents,
    dollars,
    price_float,
    price_of,
    sell_fees_cents,
    trading_day,
)
from ftdesk.brokers.paper.ledger.risk import Exposure
from ftdesk.brokers.paper.ledger.types import Commitment
from ftdesk.brokers.paper.ports import Instrument, MarketView
from ftdesk.brokers.paper.quantities import number
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.domain.accounts import SecurityType
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import NotFound
from ftdesk.domain.market import Quote
from ftdesk.domain.order_actions import leg_intent
from ftdesk.domain.orders import (
    ConditionalPreview,
    ConditionalType,
    LegAction,
    OrderPreview,
    PreviewLeg,
    PriceType,
    QuoteAtPreview,
    TimeInForce,
)

DEFAULT_SIZE = 100
"""The size a quote that shows none is taken to display."""

_FAR_FROM_MARKET = Decimal("0.10")

WhatIf = Callable[[Iterable[tuple[str, Decimal, Decimal]]], Exposure]
"""An account's exposure after hypothetical fills (``Ledger.what_if``)."""


@dataclass
class Priced:
    """An order priced against the market: estimates, what-if changes and warnings."""

    price: Decimal
    principal_cents: int
    commission_cents: int
    fees_cents: int
    changes: list[tuple[str, Decimal, Decimal]]
    quote: Quote | None
    size: int = 0
    warnings: list[str] = field(default_factory=list)


class Pricer:
    """Prices orders against the market and the account, and reports what working orders hold back."""

    def __init__(self, store: PaperStore, ledger: Ledger, market: MarketView, clock: Clock) -> None:
        self._store = store
        self._ledger = ledger
        self._market = market
        self._clock = clock

    def price(self, spec: Spec, instrument: Instrument, quote: Quote, qty: Decimal) -> Priced:
        """Price a single-leg order of ``qty`` at what it would likely fill at now."""
        buy = spec.sign > 0
        touch = price_of(quote.ask if buy else quote.bid) or price_of(quote.last)
        if spec.price_type is PriceType.MARKET:
            est = touch
        elif spec.price_type is PriceType.STOP:
            assert spec.stop is not None
            est = max(spec.stop, touch) if buy else min(spec.stop, touch)
        else:
            assert spec.limit is not None
            est = min(spec.limit, touch) if buy else max(spec.limit, touch)
        is_option = instrument.security_type is SecurityType.OPTION
        principal = cents(est * qty * instrument.multiplier)
        return Priced(
            price=est,
            principal_cents=principal,
            commission_cents=commission_cents(qty, is_option),
            fees_cents=0 if buy else sell_fees_cents(qty, principal, is_option),
            changes=[(spec.symbol, spec.sign * qty, est)],
            quote=quote,
            size=quote.ask_size if buy else quote.bid_size,
        )

    def price_multileg(self, spec: Spec, quotes: dict[str, Quote], spreads: Decimal) -> Priced:
        """Price ``spreads`` of a multi-leg order at its limit (or the legs' touch for a market order)."""
        touch_net = Decimal(0)
        changes = []
        commission = fees = 0
        multiplier = self._ledger.instrument(spec.legs[0].symbol).multiplier
        for leg, units in spec.leg_units():
            quote = quotes[leg.symbol]
            touch = price_of(quote.ask if leg.sign > 0 else quote.bid)
            touch_net += leg.sign * units * touch
            contracts = units * spreads
            changes.append((leg.symbol, leg.sign * contracts, touch))
            commission += commission_cents(contracts, True)
            if leg.sign < 0:
                fees += sell_fees_cents(contracts, cents(touch * contracts * multiplier), True)
        net = abs(touch_net) if spec.limit is None else spec.limit
        try:
            underlying: Quote | None = self._market.quote(spec.symbol)
        except NotFound:
            underlying = None
        return Priced(
            price=net,
            principal_cents=cents(net * multiplier * spreads),
            commission_cents=commission,
            fees_cents=fees,
            changes=changes,
            quote=underlying,
        )

    def usage(self, spec: Spec, priced: Priced, capacity: int | None = None, what_if: WhatIf | None = None) -> int:
        """Return the buying-power capacity an order would use if it filled as priced."""
        now = self._ledger.exposure(spec.acct_num).capacity_cents if capacity is None else capacity
        after = (what_if or self._ledger.what_if(spec.acct_num))(priced.changes).capacity_cents
        return max(0, now - after) + (priced.commission_cents if spec.sign > 0 else 0)

    def row_usage(self, row: Row, capacity: int | None = None, what_if: WhatIf | None = None) -> Commitment:
        """Return what the unfilled rest of a working order holds back (nothing when it cannot be priced)."""
        spec = row.spec
        try:
            if spec.kind == MULTI_LEG:
                quotes = {leg.symbol: self._market.quote(leg.symbol) for leg in spec.legs}
                priced = self.price_multileg(spec, quotes, row.remaining)
            else:
                instrument = self._ledger.instrument(spec.symbol)
                priced = self.price(spec, instrument, self._market.quote(spec.symbol), row.remaining)
        except NotFound:
            return Commitment()
        value = priced.principal_cents + priced.commission_cents if spec.sign > 0 else 0
        return Commitment(self.usage(spec, priced, capacity, what_if), value)

    def commitment(self, acct_num: str, exclude: Sequence[Row] = ()) -> Commitment:
        """Return what an account's working orders hold back (the ledger's commitment source)."""
        skip = {r.conf_num for r in exclude}
        rows = [
            row_from_db(r)
            for r in self._store.query(
                "SELECT * FROM paper_orders WHERE acct_num = ? AND status IN ('OPEN', 'PARTIALLY_FILLED')",
                (acct_num,),
            )
        ]
        rows = [r for r in rows if r.conf_num not in skip]
        if not rows:
            return Commitment()
        what_if = self._ledger.what_if(acct_num)  # the account read once for all its working orders
        capacity = what_if(()).capacity_cents
        usage: dict[str, int] = {}
        value: dict[str, int] = {}
        for row in rows:
            c = self.row_usage(row, capacity, what_if)
            usage[row.oco_key] = max(usage.get(row.oco_key, 0), c.usage_cents)
            value[row.oco_key] = max(value.get(row.oco_key, 0), c.value_cents)
        return Commitment(sum(usage.values()), sum(value.values()))

    def warnings(self, spec: Spec, priced: Priced) -> list[str]:
        """Return what the trader should know before placing this order."""
        warnings = []
        if spec.tif is TimeInForce.DAY:
            day = trading_day(self._clock.now())
            warnings.append(f"Day order: if it is not filled it expires at 4:00 PM ET on {day.isoformat()}.")
        quote = priced.quote
        if spec.kind == MULTI_LEG:
            warnings.append(
                "Multi-leg orders fill all legs at once, at the legs' mid prices, when they net to your limit"
                " or better."
            )
            return warnings
        assert quote is not None
        last = price_of(quote.last)
        if spec.limit is not None and last > 0 and abs(spec.limit - last) > last * _FAR_FROM_MARKET:
            warnings.append(
                f"The limit price {money_text(spec.limit)} is more than 10% away from the last price"
                f" {money_text(last)}."
            )
        if spec.price_type is PriceType.STOP:
            assert spec.stop is not None
            warnings.append(
                f"This stop order becomes a market order when the last price reaches {money_text(spec.stop)}."
            )
        if spec.price_type is PriceType.STOP_LIMIT:
            assert spec.stop is not None and spec.limit is not None
            warnings.append(
                f"This stop-limit order becomes a limit order at {money_text(spec.limit)} when the last price reaches"
                f" {money_text(spec.stop)}."
            )
        size = priced.size if priced.size > 0 else DEFAULT_SIZE
        if spec.qty > size:
            side = "ask" if spec.sign > 0 else "bid"
            warnings.append(
                f"The order is larger than the {size:,} displayed at the {side}; it may fill in parts over several"
                " quotes."
            )
        if spec.action == "SS":
            warnings.append(
                "Short sale: the proceeds are held in the account and 50% of the value is required (Reg T)."
            )
        return warnings


def _preview_legs(spec: Spec) -> list[PreviewLeg]:
    # Paper's own understanding of each leg is its echo, as its action code and words are for a single order.
    return [
        PreviewLeg(
            symbol=leg.symbol,
            action=LegAction(leg.action),
            qty=leg.qty,
            position_intent=leg_intent(LegAction(leg.action)),
            broker_action_code=leg.action,
            broker_action_desc=leg.action_desc,
        )
        for leg in spec.legs
    ]


def preview_record(conf: str, spec: Spec, priced: Priced) -> OrderPreview:
    """Return the preview the trader sees for a priced order."""
    buy = spec.sign > 0
    quote = priced.quote
    cost = priced.principal_cents + priced.commission_cents + priced.fees_cents if buy else 0
    proceeds = 0 if buy else priced.principal_cents - priced.commission_cents - priced.fees_cents
    return OrderPreview(
        conf_num=conf,
        acct_num=spec.acct_num,
        symbol=spec.symbol,
        action=spec.action,
        action_desc=spec.action_desc,
        qty=number(spec.qty),
        price_type=spec.price_type,
        limit_price=price_float(spec.limit) if spec.limit is not None else None,
        stop_price=price_float(spec.stop) if spec.stop is not None else None,
        tif=spec.tif,
        position_intent=spec.intent,
        broker_action_code=spec.action,
        broker_action_desc=spec.action_desc,
        legs=_preview_legs(spec) if spec.kind == MULTI_LEG else None,
        quote=QuoteAtPreview(price=quote.last, bid=quote.bid, ask=quote.ask, time=quote.time) if quote else None,
        est_commission=dollars(priced.commission_cents),
        est_fees=dollars(priced.fees_cents),
        est_cost=dollars(cost),
        est_proceeds=dollars(proceeds),
        warnings=priced.warnings,
    )


def conditional_preview(
    acct: str, cond: ConditionalType, specs: list[Spec], priced: list[Priced], confs: list[str]
) -> ConditionalPreview:
    """Return the preview of a conditional order: one record per leg and how the legs interact."""
    legs = [preview_record(c, s, p) for c, s, p in zip(confs, specs, priced, strict=True)]
    warnings = []
    if cond in (ConditionalType.OTO, ConditionalType.OTOCO):
        warnings.append("The triggered legs start working only once the first leg is completely filled.")
    if cond in (ConditionalType.OCO, ConditionalType.OTOCO):
        warnings.append("A fill of one OCO leg reduces the other by the same quantity; a complete fill cancels it.")
    return ConditionalPreview(acct_num=acct, cond_order_type_code=cond, conf_nums=confs, legs=legs, warnings=warnings)
