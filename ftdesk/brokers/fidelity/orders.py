"""Fidelity orders: status, detail, staged orders, previews and places, cancel, replace.

Every order entry follows the upstream's confNum flow: a preview answers ``respTypeCode "V"`` with a fresh
``confNum``, and the place repeats the previewed body with that ``confNum`` (how each kind differs:
docs/fidelity-protocol.md, Orders). Previews, places and cancels change state upstream, so they are sent as
writes: never coalesced with an identical call and, like every call of ``FidelityHttp``, never retried. Status
reads are coalesced. Request bodies live in ``orders_wire``, answer mapping in ``orders_mapping``.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ftdesk.brokers.base import QuoteFeed
from ftdesk.brokers.fidelity import orders_mapping as m
from ftdesk.brokers.fidelity import orders_wire as w
from ftdesk.brokers.fidelity.accounts import FidelityAccounts
from ftdesk.brokers.fidelity.orders_actions import Asked
from ftdesk.brokers.fidelity.session import FidelitySession
from ftdesk.brokers.fidelity.upstream_answer import raise_for_status
from ftdesk.brokers.fidelity.values import option_contract
from ftdesk.domain.cancel_codes import check_cancel_code
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError, FtdeskError, NotFound, ValidationFailed
from ftdesk.domain.order_actions import ActionKind, leg_intent, row_for
from ftdesk.domain.orders import (
    CancelPreview,
    CancelResult,
    ConditionalLeg,
    ConditionalOrder,
    ConditionalPreview,
    ConditionalReplace,
    DebitCredit,
    EquityAction,
    EquityOrder,
    MultiLegOptionOrder,
    OptionAction,
    OptionOrder,
    Order,
    OrderDetailResult,
    OrderPlacement,
    OrderPreview,
    PriceType,
    ReplaceOrder,
    StagedOrderDraft,
    StagedOrderList,
    StagedOrderResult,
    TradeAgreementResult,
)

log = logging.getLogger(__name__)

_BUYS = frozenset({EquityAction.BUY.value, EquityAction.BUY_TO_COVER.value})
_LEG_PRICES_KEPT = 256  # previews whose leg quotes are kept for their place (previews live minutes)


def _option_type(symbol: str) -> str | None:
    contract = option_contract(symbol)
    return contract.option_type.value.lower() if contract is not None else None


def equity_asked(acct_num: str, order: EquityOrder | ConditionalLeg) -> Asked:
    """Return what the broker's echo of an equity order (or conditional leg) must agree with."""
    return Asked(
        kind=ActionKind.EQUITY,
        row=row_for(ActionKind.EQUITY, EquityAction(order.action).value),
        symbol=order.symbol.strip().upper(),
        qty=float(order.qty),
        price_type=order.price_type.value,
    )


def whole_shares(order: EquityOrder) -> None:
    """Refuse a fraction of a share before any upstream call: this adapter sends whole shares only.

    No captured upstream exchange shows fractional order entry (how the body carries it, what the preview
    answers), so the adapter does not guess one; docs/fidelity-gaps.md.
    """
    if order.qty != int(order.qty):
        raise ValidationFailed.for_field(
            "qty",
            f"qty {order.qty:g}: the Fidelity broker adapter does not support fractional shares; order whole shares",
        )


def equity_intent(order: EquityOrder) -> m.Intent:
    """Return what an equity order asks for, in the spec's terms."""
    return m.Intent(
        acct_num=order.acct_num,
        symbol=order.symbol.strip().upper(),
        action=order.action.value,
        qty=float(order.qty),
        price_type=order.price_type,
        limit_price=order.limit_price,
        stop_price=order.stop_price,
        tif=order.tif,
        buy=order.action.value in _BUYS,
        asked=(equity_asked(order.acct_num, order),),
    )


def option_intent(order: OptionOrder) -> m.Intent:
    """Return what a single-leg option order asks for."""
    symbol = order.symbol.strip().upper().lstrip("-")
    asked = Asked(
        kind=ActionKind.OPTION,
        row=row_for(ActionKind.OPTION, order.action.value, order.position_intent),
        symbol=symbol,
        qty=float(order.qty),
        price_type=order.price_type.value,
        option_type=_option_type(symbol),
        intent=order.position_intent,
    )
    return m.Intent(
        acct_num=order.acct_num,
        symbol=symbol,
        action=order.action.value,
        qty=float(order.qty),
        price_type=order.price_type,
        limit_price=order.limit_price,
        stop_price=order.stop_price,
        tif=order.tif,
        buy=order.action in (OptionAction.BUY_CALL, OptionAction.BUY_PUT),
        asked=(asked,),
        position_intent=order.position_intent,
    )


def multileg_intent(order: MultiLegOptionOrder) -> m.Intent:
    """Return what a multi-leg order asks for: the underlying, debit or credit, the number of spreads, each leg."""
    spreads = math.gcd(*(leg.qty for leg in order.legs))
    legs = tuple(
        Asked(
            kind=ActionKind.LEG,
            row=row_for(ActionKind.LEG, leg.action.value, leg_intent(leg.action)),
            symbol=leg.symbol.strip().upper().lstrip("-"),
            qty=float(leg.qty),
            option_type=_option_type(leg.symbol.strip().upper().lstrip("-")),
            intent=leg_intent(leg.action),
        )
        for leg in order.legs
    )
    return m.Intent(
        acct_num=order.acct_num,
        symbol=order.underlying.strip().upper(),
        action=order.debit_credit.value,
        qty=float(spreads),
        price_type=order.price_type,
        limit_price=order.net_price if order.price_type is PriceType.LIMIT else None,
        stop_price=None,
        tif=order.tif,
        buy=order.debit_credit is not DebitCredit.CREDIT,
        asked=legs,
        multileg=True,
        debit_credit=order.debit_credit.value,
    )


def leg_intent_of(acct_num: str, leg: ConditionalLeg) -> m.Intent:
    """Return what one conditional leg asks for."""
    return m.Intent(
        acct_num=acct_num,
        symbol=leg.symbol.strip().upper(),
        action=leg.action.value,
        qty=float(leg.qty),
        price_type=leg.price_type,
        limit_price=leg.limit_price,
        stop_price=leg.stop_price,
        tif=leg.tif,
        buy=leg.action.value in _BUYS,
        asked=(equity_asked(acct_num, leg),),
    )


def _unix_seconds(iso: str, fallback: datetime) -> int:
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        moment = fallback
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp())


class FidelityOrders:
    """The orders group: every order entry through the confNum flow (see the module docstring)."""

    def __init__(
        self,
        session: FidelitySession,
        clock: Clock,
        accounts: FidelityAccounts,
        quotes: QuoteFeed,
        *,
        cancel_lookup_timeout: float,
    ) -> None:
        self._session = session
        self._clock = clock
        # Account numbers are checked (NotFound) and margin read from the accounts group's list.
        self._accounts = accounts
        self._quotes = quotes
        self._cancel_lookup_timeout = cancel_lookup_timeout
        self._preview_leg_prices: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()  # conf_num -> priceDetail

    async def _order_entry(self, url: str, body: dict[str, Any], what: str) -> Any:
        """Send one order-entry call as a write (never coalesced, never retried) and return its JSON."""
        response = await self._session.require().call("POST", url, body=body, read=False)
        raise_for_status(response, what)
        return response.json()

    async def _leg_prices(self, order: MultiLegOptionOrder) -> list[dict[str, Any]]:
        """Return each leg's ``priceDetail`` from a quote taken now (the upstream wants them on every leg)."""
        underlying = order.underlying.strip().upper()
        legs = [leg.symbol.strip().upper().lstrip("-") for leg in order.legs]
        quotes = {q.symbol.lstrip("-").upper(): q for q in await self._quotes.snapshot([underlying, *legs])}
        missing = [symbol for symbol in (underlying, *legs) if symbol not in quotes]
        if missing:
            raise BrokerError(
                f"No quote for {', '.join(missing)}: a multi-leg preview sends each leg's price and the underlying's",
                details={"symbols": missing},
            )
        now = self._clock.now()
        spot = quotes[underlying].last or (quotes[underlying].bid + quotes[underlying].ask) / 2
        return [
            w.leg_price_detail(spot, _unix_seconds(quotes[s].time, now), quotes[s].bid, quotes[s].ask) for s in legs
        ]

    async def _upstream_action(self, conf_num: str, acct_num: str, action_code: str) -> str:
        """Return the order's own upstream action code from its status, for the cancel to echo.

        The public code alone can be ambiguous (``BC`` is buy to cover for an equity, buy call for an option);
        when the status cannot be read the cancel still goes out, with the code mapped as well as it can be. When
        it can, a code that does not match the order (``ftdesk.domain.cancel_codes``) raises ``ValidationFailed``.
        """
        try:
            async with asyncio.timeout(self._cancel_lookup_timeout):  # a slow status read must not hold the cancel up
                orders = await self.get_order_status(acct_num)
        except (FtdeskError, TimeoutError):
            log.warning("Could not read order %s before canceling it; sending action code %s", conf_num, action_code)
            return w.cancel_action_code(action_code)
        for order in orders:
            detail = order.order_detail
            if order.id_detail.conf_num.upper() == conf_num.strip().upper() and detail.broker_action_code:
                # A caller's code that names another order is refused here, before anything is sent upstream.
                if not detail.action_unrecognized:
                    legs = (leg.action for leg in detail.legs)
                    check_cancel_code(conf_num, action_code, detail.security_type, detail.action, legs)
                return detail.broker_action_code
        return w.cancel_action_code(action_code)

    async def _margin(self, acct_num: str) -> bool:
        """Return whether the account trades on margin (raise ``NotFound`` for an unknown account)."""
        return (await self._accounts.get_account(acct_num)).margin_ind

    # --- order status ---------------------------------------------------------------------------

    async def get_order_status(self, acct_num: str | None) -> list[Order]:
        """Return open and recent orders (of one account, or of every tradable account)."""
        if acct_num is not None:
            acct_nums = [(await self._accounts.get_account(acct_num)).acct_num]
        else:
            acct_nums = [a.acct_num for a in await self._accounts.get_accounts() if a.tradable]
        if not acct_nums:
            return []
        payload = await self._session.require().json(
            "POST",
            w.STATUS_SUMMARY_URL,
            body=w.status_summary_body(acct_nums),
            headers=w.STATUS_HEADERS,
            read=True,
            what="order status request",
        )
        return m.map_orders(payload, acct_nums)

    async def get_order_detail(self, conf_num: str, acct_num: str | None) -> OrderDetailResult:
        """Return one order, read from the status summary (the status-detail body was never captured)."""
        wanted = conf_num.strip().upper()
        for order in await self.get_order_status(acct_num):
            if order.id_detail.conf_num.upper() == wanted:
                return OrderDetailResult(orders=[order], order=order)
        where = f" in account {acct_num}" if acct_num else ""
        raise NotFound(f"No Fidelity order {conf_num!r}{where}")

    # --- equity ----------------------------------------------------------------------------------

    async def preview_equity_order(self, order: EquityOrder) -> OrderPreview:
        """Validate and price an equity order; the answer's conf_num places it."""
        whole_shares(order)
        body = w.equity_preview_body(order, await self._margin(order.acct_num))
        payload = await self._order_entry(w.EQUITY_PREVIEW_URL, body, "equity order preview")
        return m.map_preview(payload, equity_intent(order), what="equity order preview")

    async def place_equity_order(self, order: EquityOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed equity order with its preview's conf_num."""
        whole_shares(order)
        body = w.equity_place_body(order, await self._margin(order.acct_num), conf_num)
        payload = await self._order_entry(w.EQUITY_PLACE_URL, body, "equity order")
        return m.map_placement(payload, order.acct_num, conf_num, what="equity order")

    # --- single-leg option -----------------------------------------------------------------------

    async def preview_option_order(self, order: OptionOrder) -> OrderPreview:
        """Validate and price a single-leg option order."""
        body = w.option_preview_body(order, await self._margin(order.acct_num))
        payload = await self._order_entry(w.OPTION_PREVIEW_URL, body, "option order preview")
        return m.map_preview(payload, option_intent(order), what="option order preview")

    async def place_option_order(self, order: OptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed single-leg option order."""
        body = w.option_place_body(order, await self._margin(order.acct_num), conf_num)
        payload = await self._order_entry(w.OPTION_PLACE_URL, body, "option order")
        return m.map_placement(payload, order.acct_num, conf_num, what="option order")

    # --- multi-leg option ------------------------------------------------------------------------

    async def preview_multileg_order(self, order: MultiLegOptionOrder) -> OrderPreview:
        """Validate and price a multi-leg option order."""
        margin = await self._margin(order.acct_num)
        prices = await self._leg_prices(order)
        body = w.multileg_body(order, margin, prices)
        payload = await self._order_entry(w.MULTILEG_PREVIEW_URL, body, "multi-leg order preview")
        preview = m.map_preview(payload, multileg_intent(order), what="multi-leg order preview")
        kept = self._preview_leg_prices
        kept[preview.conf_num] = prices
        while len(kept) > _LEG_PRICES_KEPT:
            kept.popitem(last=False)
        return preview

    async def place_multileg_order(self, order: MultiLegOptionOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed multi-leg option order."""
        margin = await self._margin(order.acct_num)
        # The place repeats the preview's body, leg prices included; without them (unknown conf_num) quote again.
        prices = self._preview_leg_prices.pop(conf_num, None) or await self._leg_prices(order)
        body = w.multileg_body(order, margin, prices, conf_num)
        payload = await self._order_entry(w.MULTILEG_PLACE_URL, body, "multi-leg order")
        return m.map_placement(payload, order.acct_num, conf_num, what="multi-leg order")

    # --- cancel ----------------------------------------------------------------------------------

    async def preview_cancel(self, conf_num: str, acct_num: str, action_code: str) -> CancelPreview:
        """Say what canceling this order would do."""
        await self._accounts.get_account(acct_num)
        code = await self._upstream_action(conf_num, acct_num, action_code)
        body = w.cancel_body(conf_num, acct_num, code, preview=True)
        payload = await self._order_entry(w.CANCEL_PREVIEW_URL, body, "cancel preview")
        return m.map_cancel_preview(payload, conf_num, acct_num)

    async def cancel_order(self, conf_num: str, acct_num: str, action_code: str) -> CancelResult:
        """Cancel a working order (sent once: never retried)."""
        await self._accounts.get_account(acct_num)
        code = await self._upstream_action(conf_num, acct_num, action_code)
        body = w.cancel_body(conf_num, acct_num, code, preview=False)
        payload = await self._order_entry(w.CANCEL_PLACE_URL, body, "cancel")
        return m.map_cancel(payload, conf_num, acct_num)

    # --- cancel-and-replace ------------------------------------------------------------------------

    async def preview_replace(self, replace: ReplaceOrder) -> OrderPreview:
        """Validate an atomic cancel-and-replace of a working equity order."""
        order = replace.order
        whole_shares(order)
        body = w.replace_preview_body(replace.orig_conf_num, order, await self._margin(order.acct_num))
        payload = await self._order_entry(w.REPLACE_PREVIEW_URL, body, "replace preview")
        return m.map_preview(payload, equity_intent(order), what="replace preview")

    async def place_replace(self, replace: ReplaceOrder, conf_num: str) -> OrderPlacement:
        """Place a previewed cancel-and-replace; the new order's conf_num comes back."""
        order = replace.order
        whole_shares(order)
        body = w.replace_place_body(replace.orig_conf_num, order, await self._margin(order.acct_num), conf_num)
        payload = await self._order_entry(w.REPLACE_PLACE_URL, body, "replace")
        return m.map_placement(payload, order.acct_num, conf_num, what="replace")

    # --- conditional ---------------------------------------------------------------------------------

    async def preview_conditional_order(self, order: ConditionalOrder) -> ConditionalPreview:
        """Validate and price an OTO/OCO/OTOCO order: one conf_num per leg."""
        body = w.conditional_preview_body(order, await self._margin(order.acct_num))
        payload = await self._order_entry(w.CONDITIONAL_PREVIEW_URL, body, "conditional order preview")
        intents = [leg_intent_of(order.acct_num, leg) for leg in order.legs]
        return m.map_conditional_preview(payload, order.acct_num, order.cond_order_type_code, intents)

    async def place_conditional_order(self, order: ConditionalOrder, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional order with its preview's conf_nums."""
        body = w.conditional_place_body(order, await self._margin(order.acct_num), conf_nums)
        payload = await self._order_entry(w.CONDITIONAL_PLACE_URL, body, "conditional order")
        return m.map_conditional_placement(payload, order.acct_num)

    async def preview_conditional_replace(self, replace: ConditionalReplace) -> ConditionalPreview:
        """Validate a replacement of a conditional order's working legs (request shape assumed)."""
        order = replace.order
        margin = await self._margin(order.acct_num)
        body = w.conditional_replace_body(replace.orig_conf_nums, order, margin, None)
        payload = await self._order_entry(w.CONDITIONAL_REPLACE_PREVIEW_URL, body, "conditional replace preview")
        intents = [leg_intent_of(order.acct_num, leg) for leg in order.legs]
        return m.map_conditional_preview(
            payload, order.acct_num, order.cond_order_type_code, intents, what="conditional replace preview"
        )

    async def place_conditional_replace(self, replace: ConditionalReplace, conf_nums: Sequence[str]) -> OrderPlacement:
        """Place a previewed conditional replace."""
        order = replace.order
        margin = await self._margin(order.acct_num)
        body = w.conditional_replace_body(replace.orig_conf_nums, order, margin, conf_nums)
        payload = await self._order_entry(w.CONDITIONAL_REPLACE_PLACE_URL, body, "conditional replace")
        return m.map_conditional_placement(payload, order.acct_num, what="conditional replace")

    # --- staged orders and trade agreement ------------------------------------------------------------

    async def get_staged_orders(self) -> StagedOrderList:
        """Return saved orders (null when there are none)."""
        payload = await self._session.require().json(
            "POST",
            w.STAGED_GET_URL,
            body=w.staged_get_body(),
            headers=w.tracking_headers(),
            read=True,
            what="staged order list",
        )
        return m.map_staged_orders(payload)

    async def save_staged_order(self, draft: StagedOrderDraft) -> StagedOrderResult:
        """Save an order for later."""
        await self._accounts.get_account(draft.acct_num)
        payload = await self._session.require().json(
            "POST",
            w.STAGED_SAVE_URL,
            body=w.staged_save_body(draft.acct_num, draft.description, draft.order),
            headers=w.tracking_headers(),
            read=False,
            what="staged order save",
        )
        return m.map_staged_result(payload, None)

    async def delete_staged_order(self, stage_id: str) -> StagedOrderResult:
        """Delete a saved order."""
        payload = await self._session.require().json(
            "POST",
            w.STAGED_DELETE_URL,
            body=w.staged_delete_body(stage_id),
            headers=w.tracking_headers(),
            read=False,
            what="staged order delete",
        )
        return m.map_staged_result(payload, stage_id)

    async def accept_trade_agreement(self, acct_num: str, agreement_id: str) -> TradeAgreementResult:
        """Record acceptance of a trade agreement (request and answer shapes assumed)."""
        await self._accounts.get_account(acct_num)
        await self._session.require().json(
            "POST",
            w.TRADE_AGREEMENT_URL,
            body=w.trade_agreement_body(acct_num, agreement_id),
            read=False,
            what="trade agreement",
        )
        return TradeAgreementResult(
            acct_num=acct_num, agreement_id=agreement_id, accepted=True, accepted_at=self._clock.now().isoformat()
        )
