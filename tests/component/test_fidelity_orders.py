"""Fidelity orders through the real HTTP client against the fake upstream on a loopback socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ftdesk.brokers.fidelity import orders_mapping as m
from ftdesk.brokers.fidelity import orders_wire as w
from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.brokers.fidelity.orders import multileg_intent
from ftdesk.domain import errors as e
from ftdesk.domain.orders import (
    ConditionalLeg,
    ConditionalOrder,
    ConditionalType,
    DebitCredit,
    EquityAction,
    EquityOrder,
    LegAction,
    MultiLegOptionLeg,
    MultiLegOptionOrder,
    OptionAction,
    OptionOrder,
    OrderStatus,
    PositionIntent,
    PriceType,
    ReplaceOrder,
    StagedOrderDraft,
    TimeInForce,
)
from tests.component.conftest import logged_in, running_fake
from tests.fakes import fidelity_payloads as p
from tests.fakes.fidelity_orders import STATUS_PATH
from tests.fakes.fidelity_orders_actions import CAPTURED, DECOMPILED, WORLDS
from tests.fakes.fidelity_server import FakeFidelity
from tests.fakes.mdds_server import FakeMdds

EQUITY_PREVIEW = "/ftgw/dp/orderentry/equity/preview/v1"
EQUITY_PLACE = "/ftgw/dp/orderentry/equity/place/v1"
CANCEL_PLACE = "/ftgw/dp/orderentry/cancel/place/v1"
CANCEL_PREVIEW = "/ftgw/dp/orderentry/cancel/preview/v1"
OPTION_PREVIEW = "/ftgw/dp/orderentry/option/preview/v2"
MULTILEG_PREVIEW = "/ftgw/dp/orderentry/multilegoption/preview/v1"
MULTILEG_PLACE = "/ftgw/dp/orderentry/multilegoption/place/v1"


@pytest.fixture
async def fake() -> AsyncIterator[FakeFidelity]:
    """The fake upstream with MDDS: a multi-leg preview quotes every leg and the underlying first."""
    async with running_fake(mdds=FakeMdds()) as server:
        yield server


def aapl_buy(limit: float = 150.0, **changes: Any) -> EquityOrder:
    fields: dict[str, Any] = {
        "acct_num": p.MARGIN,
        "symbol": "AAPL",
        "action": EquityAction.BUY,
        "qty": 2,
        "price_type": PriceType.LIMIT,
        "limit_price": limit,
        "tif": TimeInForce.GTC,
    }
    fields.update(changes)
    return EquityOrder(**fields)


def last_body(fake: FakeFidelity, path: str) -> Any:
    return [r.body for r in fake.requests if r.path == path][-1]


async def test_equity_preview_then_place_uses_the_previews_conf_num(broker: FidelityBroker, fake: FakeFidelity) -> None:
    order = aapl_buy()
    preview = await broker.orders.preview_equity_order(order)
    assert len(preview.conf_num) == 8 and preview.resp_type_code == "V"
    assert (preview.symbol, preview.action, preview.action_desc, preview.qty) == ("AAPL", "B", "Buy", 2)
    assert preview.est_cost == pytest.approx(300.0) and preview.est_proceeds == 0
    assert preview.quote is not None and preview.quote.price == pytest.approx(182.5) and preview.quote.bid < 182.5
    assert preview.raw is not None and preview.raw["preview"]["orderConfirmDetail"]["confNum"] == preview.conf_num
    sent = last_body(fake, EQUITY_PREVIEW)
    parameter = sent["request"]["parameter"]  # style A
    assert parameter["baseOrderDetail"]["acctTypeCode"] == "M" and parameter["baseOrderDetail"]["qty"] == 2
    assert parameter["tradableSecOrderDetail"]["priceTypeDetail"] == {"priceTypeCode": "L", "limitPrice": 150.0}
    assert parameter["tradableSecOrderDetail"]["tifCode"] == "G" and "previewInd" not in parameter

    placed = await broker.orders.place_equity_order(order, preview.conf_num)
    assert placed.conf_num == preview.conf_num and placed.status is OrderStatus.OPEN and placed.resp_type_code == "A"
    parameter = last_body(fake, EQUITY_PLACE)["request"]["parameter"]
    assert parameter["baseOrderDetail"]["confNum"] == preview.conf_num
    assert parameter["previewInd"] is True and parameter["confInd"] is True

    listed = await broker.orders.get_order_status(p.MARGIN)
    assert [o.id_detail.conf_num for o in listed] == [placed.conf_num]
    mine = listed[0]
    assert mine.status_detail.status is OrderStatus.OPEN and mine.status_detail.cancelable_ind
    assert mine.status_detail.replaceable_ind and mine.status_detail.qty_remaining == 2
    assert (mine.order_detail.price_type, mine.order_detail.limit_price, mine.order_detail.tif) == (
        PriceType.LIMIT,
        150.0,
        TimeInForce.GTC,
    )
    assert mine.order_detail.security_type == "EQUITY" and mine.order_detail.entry_time
    assert fake.requests[-1].headers.get("CL") == "3"


async def test_a_sell_short_is_sent_with_the_upstream_code_and_reads_back_as_the_spec_code(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    order = aapl_buy(limit=190.0, action=EquityAction.SELL_SHORT, qty=1)
    preview = await broker.orders.preview_equity_order(order)
    assert last_body(fake, EQUITY_PREVIEW)["request"]["parameter"]["baseOrderDetail"]["orderActionCode"] == "SH"
    assert preview.est_cost == 0 and 189 < preview.est_proceeds <= 190
    await broker.orders.place_equity_order(order, preview.conf_num)
    (listed,) = await broker.orders.get_order_status(p.MARGIN)
    assert listed.order_detail.action == "SS" and listed.order_detail.action_desc == "Sell Short"


async def test_upstream_refusals_become_order_rejected_with_the_upstream_text(broker: FidelityBroker) -> None:
    with pytest.raises(e.OrderRejected) as far:
        await broker.orders.preview_equity_order(aapl_buy(limit=5000.0))
    assert "too far away from the last trade" in far.value.message
    assert far.value.details["reason"] == "UPSTREAM_REJECTED" and far.value.details["upstream_codes"] == ["MA5010"]
    assert far.value.details["broker_code"] == "MA5010"
    assert far.value.details["broker_message"].startswith("The limit price entered is too far away")
    with pytest.raises(e.OrderRejected, match="NOSUCH is not valid"):
        await broker.orders.preview_equity_order(aapl_buy(symbol="NOSUCH"))
    with pytest.raises(e.OrderRejected, match="does not match a current preview"):
        await broker.orders.place_equity_order(aapl_buy(), "ZZZZZZZZ")
    preview = await broker.orders.preview_equity_order(aapl_buy())
    with pytest.raises(e.OrderRejected):
        await broker.orders.place_equity_order(aapl_buy(qty=3), preview.conf_num)
    with pytest.raises(e.NotFound):
        await broker.orders.preview_equity_order(aapl_buy(acct_num="NO-SUCH-ACCOUNT"))
    assert await broker.orders.get_order_status(p.MARGIN) == []


async def test_places_and_cancels_are_never_retried_nor_coalesced(broker: FidelityBroker, fake: FakeFidelity) -> None:
    order = aapl_buy()
    first, second = await asyncio.gather(
        broker.orders.preview_equity_order(order), broker.orders.preview_equity_order(order)
    )
    assert first.conf_num != second.conf_num and fake.hits_for(EQUITY_PREVIEW) == 2
    fake.failures[EQUITY_PLACE] = (503, {"message": "Service Unavailable"})
    with pytest.raises(e.BrokerError, match=r"HTTP 503.*Service Unavailable"):
        await broker.orders.place_equity_order(order, first.conf_num)
    assert fake.hits_for(EQUITY_PLACE) == 1
    placed = await broker.orders.place_equity_order(order, second.conf_num)
    fake.failures[CANCEL_PLACE] = (500, {"message": "Internal error"})
    with pytest.raises(e.BrokerError):
        await broker.orders.cancel_order(placed.conf_num, p.MARGIN, "B")
    assert fake.hits_for(CANCEL_PLACE) == 1
    (still_open,) = await broker.orders.get_order_status(p.MARGIN)
    assert still_open.status_detail.status is OrderStatus.OPEN


async def test_cancel_preview_cancel_and_detail(broker: FidelityBroker, fake: FakeFidelity) -> None:
    order = aapl_buy()
    placed = await broker.orders.place_equity_order(order, (await broker.orders.preview_equity_order(order)).conf_num)
    detail = await broker.orders.get_order_detail(placed.conf_num, p.MARGIN)
    assert detail.order is not None and detail.orders == [detail.order]
    assert detail.order.raw is not None and detail.order.raw["idDetail"]["confNum"] == placed.conf_num
    with pytest.raises(e.NotFound):
        await broker.orders.get_order_detail("NOSUCH01", p.MARGIN)

    cancel_preview = await broker.orders.preview_cancel(placed.conf_num, p.MARGIN, "B")
    assert cancel_preview.is_accepted and cancel_preview.cancel_preview_detail[0].remaining_qty == 2
    cancel = await broker.orders.cancel_order(placed.conf_num, p.MARGIN, "B")
    assert cancel.is_accepted and cancel.cancel_confirm_detail[0].conf_num == placed.conf_num
    sent = last_body(fake, CANCEL_PLACE)["request"]["parameter"]
    assert sent == {
        "cancelOrderDetail": [{"confNum": placed.conf_num, "acctNum": p.MARGIN, "actionCode": "B"}],
        "previewInd": False,
        "confInd": False,
    }
    after = (await broker.orders.get_order_detail(placed.conf_num, None)).order
    assert after is not None and after.status_detail.status is OrderStatus.CANCELED
    assert not after.status_detail.cancelable_ind and not after.status_detail.replaceable_ind
    with pytest.raises(e.OrderRejected, match="can no longer be canceled"):
        await broker.orders.cancel_order(placed.conf_num, p.MARGIN, "B")


async def test_a_cancel_code_that_names_another_order_is_refused_before_the_upstream(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    order = aapl_buy()
    placed = await broker.orders.place_equity_order(order, (await broker.orders.preview_equity_order(order)).conf_num)
    for code in ("S", "SS", "BC"):
        with pytest.raises(e.ValidationFailed, match=f"action_code {code} does not match") as refused:
            await broker.orders.preview_cancel(placed.conf_num, p.MARGIN, code)
        assert refused.value.details[0]["allowed"] == ["B"]
        with pytest.raises(e.ValidationFailed, match=f"action_code {code} does not match"):
            await broker.orders.cancel_order(placed.conf_num, p.MARGIN, code)
    assert (fake.hits_for(CANCEL_PREVIEW), fake.hits_for(CANCEL_PLACE)) == (0, 0)
    still = (await broker.orders.get_order_detail(placed.conf_num, p.MARGIN)).order
    assert still is not None and still.status_detail.status is OrderStatus.OPEN

    assert (await broker.orders.cancel_order(placed.conf_num, p.MARGIN, "B")).is_accepted
    after = (await broker.orders.get_order_detail(placed.conf_num, p.MARGIN)).order
    assert after is not None and after.status_detail.status is OrderStatus.CANCELED


async def test_cancel_and_replace(broker: FidelityBroker, fake: FakeFidelity) -> None:
    order = aapl_buy()
    old = await broker.orders.place_equity_order(order, (await broker.orders.preview_equity_order(order)).conf_num)
    replace = ReplaceOrder(orig_conf_num=old.conf_num, order=aapl_buy(limit=155.0, qty=3))
    preview = await broker.orders.preview_replace(replace)
    assert preview.conf_num != old.conf_num and preview.est_cost == pytest.approx(465.0)
    sent = last_body(fake, "/ftgw/dp/orderentry/cancelandreplace/preview/v1")["request"]["parameter"]
    assert sent["orderNumOrig"] == old.conf_num and sent["tradableSecOrderDetail"]["mktRouteCode"] == ""
    placed = await broker.orders.place_replace(replace, preview.conf_num)
    assert placed.conf_num == preview.conf_num
    sent = last_body(fake, "/ftgw/dp/orderentry/cancelandreplace/place/v1")["request"]["parameter"]
    assert "mktRouteCode" not in sent["tradableSecOrderDetail"] and sent["previewInd"] is sent["confInd"] is True
    statuses = {o.id_detail.conf_num: o.status_detail.status for o in await broker.orders.get_order_status(p.MARGIN)}
    assert statuses == {old.conf_num: OrderStatus.CANCELED, placed.conf_num: OrderStatus.OPEN}
    with pytest.raises(e.OrderRejected, match="cannot be replaced"):
        await broker.orders.preview_replace(replace)


async def test_single_option_preview_and_place(broker: FidelityBroker, fake: FakeFidelity) -> None:
    order = OptionOrder(acct_num=p.MARGIN, symbol="QS270115C7", action=OptionAction.BUY_CALL, qty=1)
    preview = await broker.orders.preview_option_order(order)
    assert preview.est_commission == pytest.approx(0.65) and preview.est_cost == pytest.approx(154.65)
    placed = await broker.orders.place_option_order(order, preview.conf_num)
    parameter = last_body(fake, "/ftgw/dp/orderentry/option/place/v2")["request"]["parameter"]
    assert parameter["previewInd"] is False and parameter["confInd"] is False
    assert parameter["tradableSecOrderDetail"]["optionDetail"] == {"type": "O"}
    (listed,) = await broker.orders.get_order_status(p.MARGIN)
    assert listed.id_detail.conf_num == placed.conf_num and listed.order_detail.security_type == "OPTION"
    assert not listed.status_detail.replaceable_ind


async def test_multileg_preview_and_place(broker: FidelityBroker, fake: FakeFidelity) -> None:
    order = MultiLegOptionOrder(
        acct_num=p.MARGIN,
        underlying="QS",
        legs=[
            MultiLegOptionLeg(symbol="QS280121C7", action=LegAction.BUY_TO_OPEN, qty=1),
            MultiLegOptionLeg(symbol="QS280121C12", action=LegAction.SELL_TO_OPEN, qty=1),
        ],
        net_price=0.92,
        debit_credit=DebitCredit.DEBIT,
    )
    preview = await broker.orders.preview_multileg_order(order)
    assert (preview.symbol, preview.action, preview.qty) == ("QS", "DB", 1)
    assert preview.est_commission == pytest.approx(1.30) and preview.est_cost == pytest.approx(93.30)
    assert any("day-trade" in w for w in preview.warnings)
    body = last_body(fake, "/ftgw/dp/orderentry/multilegoption/preview/v1")
    assert set(body) == {"parameters"}  # style C
    assert body["parameters"]["baseOrderDetail"]["reqTypeCode"] == "N"
    placed = await broker.orders.place_multileg_order(order, preview.conf_num)
    assert placed.conf_num == preview.conf_num
    base = last_body(fake, "/ftgw/dp/orderentry/multilegoption/place/v1")["parameters"]["baseOrderDetail"]
    assert base["reqTypeCode"] == "P" and base["confNum"] == preview.conf_num
    (listed,) = await broker.orders.get_order_status(p.MARGIN)
    assert listed.order_detail.security_type == "MULTI_LEG"


async def test_otoco_conditional_order(broker: FidelityBroker, fake: FakeFidelity) -> None:
    legs = [
        ConditionalLeg(symbol="QS", action=EquityAction.BUY, qty=1, price_type=PriceType.LIMIT, limit_price=6.2),
        ConditionalLeg(symbol="QS", action=EquityAction.SELL, qty=1, price_type=PriceType.LIMIT, limit_price=7),
        ConditionalLeg(symbol="QS", action=EquityAction.SELL, qty=1, price_type=PriceType.STOP, stop_price=5.5),
    ]
    order = ConditionalOrder(acct_num=p.MARGIN, cond_order_type_code=ConditionalType.OTOCO, legs=legs)
    preview = await broker.orders.preview_conditional_order(order)
    assert len(preview.conf_nums) == 3 == len(set(preview.conf_nums))
    assert [leg.est_cost for leg in preview.legs] == [pytest.approx(6.2), 0, 0]
    assert preview.legs[2].est_proceeds == pytest.approx(5.5) and preview.legs[2].stop_price == 5.5
    assert any("day-trade" in w for w in preview.warnings) and "Success" not in preview.warnings
    parameters = last_body(fake, "/ftgw/dp/orderentry/conditional/preview/v1")["parameters"]
    assert parameters["condOrderDetails"][2]["baseOrderDetail"]["secDetail"] == {"symbol": "QS"}
    placed = await broker.orders.place_conditional_order(order, preview.conf_nums)
    assert placed.conf_nums == preview.conf_nums and placed.conf_num == preview.conf_nums[0]
    sent = last_body(fake, "/ftgw/dp/orderentry/conditional/place/v1")["parameters"]
    assert [leg["baseOrderDetail"].get("confNum") for leg in sent["condOrderDetails"]] == [
        None,
        *preview.conf_nums[:2],
    ]
    statuses = {o.id_detail.conf_num: o.status_detail.status for o in await broker.orders.get_order_status(p.MARGIN)}
    assert statuses == {
        preview.conf_nums[0]: OrderStatus.OPEN,
        preview.conf_nums[1]: OrderStatus.PENDING_TRIGGER,
        preview.conf_nums[2]: OrderStatus.PENDING_TRIGGER,
    }


async def test_staged_orders_and_trade_agreement(broker: FidelityBroker, fake: FakeFidelity) -> None:
    assert (await broker.orders.get_staged_orders()).staged_orders is None
    saved = await broker.orders.save_staged_order(
        StagedOrderDraft(acct_num=p.MARGIN, description="buy the dip", order={"symbol": "AAPL", "qty": 1})
    )
    assert saved.is_success and saved.stage_id
    staged = (await broker.orders.get_staged_orders()).staged_orders
    assert staged is not None and [s.stage_id for s in staged] == [saved.stage_id]
    assert staged[0].acct_num == p.MARGIN and staged[0].description == "buy the dip" and staged[0].created
    assert fake.requests[-1].headers.get("FID-LOG-TRACKING-ID", "").startswith("REQ")
    assert (await broker.orders.delete_staged_order(saved.stage_id)).is_success
    missing = await broker.orders.delete_staged_order(saved.stage_id)
    assert not missing.is_success and missing.messages[0].severity == "ERROR"

    accepted = await broker.orders.accept_trade_agreement(p.MARGIN, "MULTI_LEG_OPTIONS")
    assert accepted.accepted and accepted.accepted_at and (p.MARGIN, "MULTI_LEG_OPTIONS") in fake.orders.agreements


async def test_an_expired_session_on_a_place_is_session_expired(broker: FidelityBroker, fake: FakeFidelity) -> None:
    order = aapl_buy()
    preview = await broker.orders.preview_equity_order(order)
    fake.expire()
    with pytest.raises(e.SessionExpired):
        await broker.orders.place_equity_order(order, preview.conf_num)
    assert fake.hits_for(EQUITY_PLACE) == 1


# --- the broker's own words, checked before a preview binds -------------------------------------------------


def option(action: OptionAction, intent: PositionIntent | None, symbol: str = "QS270115C7") -> OptionOrder:
    return OptionOrder(acct_num=p.MARGIN, symbol=symbol, action=action, qty=1, position_intent=intent)


PUT = "QS270115P5"
OPEN, CLOSE = PositionIntent.OPEN, PositionIntent.CLOSE

# (world, action, intent, symbol) -> the upstream code sent, and the broker's words when the preview binds
# (None: ACTION_MISMATCH). Captured world: BC is "Buy Call"; decompiled world: BC is "Buy To Close".
SINGLE_LEG_CASES = [
    (CAPTURED, OptionAction.BUY_CALL, None, "QS270115C7", "BC", "Buy Call"),
    (DECOMPILED, OptionAction.BUY_CALL, None, "QS270115C7", "BC", None),  # names close, which was not stated
    (CAPTURED, OptionAction.SELL_CALL, None, "QS270115C7", "SC", "Sell Call"),
    (DECOMPILED, OptionAction.SELL_CALL, None, "QS270115C7", "SC", None),
    (CAPTURED, OptionAction.BUY_PUT, None, PUT, "BP", "Buy Put"),
    (DECOMPILED, OptionAction.BUY_PUT, None, PUT, "BP", "Buy Put"),
    (CAPTURED, OptionAction.BUY_CALL, OPEN, "QS270115C7", "BO", "Buy Call"),
    (DECOMPILED, OptionAction.BUY_CALL, OPEN, "QS270115C7", "BO", "Buy To Open"),
    (CAPTURED, OptionAction.SELL_PUT, OPEN, PUT, "SO", "Sell Put"),
    (DECOMPILED, OptionAction.SELL_PUT, OPEN, PUT, "SO", "Sell To Open"),
    (CAPTURED, OptionAction.BUY_CALL, CLOSE, "QS270115C7", "BC", "Buy Call"),
    (DECOMPILED, OptionAction.BUY_CALL, CLOSE, "QS270115C7", "BC", "Buy To Close"),
    (CAPTURED, OptionAction.BUY_PUT, CLOSE, PUT, "BC", None),  # "Buy Call" on a put contradicts the contract
    (DECOMPILED, OptionAction.BUY_PUT, CLOSE, PUT, "BC", "Buy To Close"),
]


@pytest.mark.parametrize(("world", "action", "intent", "symbol", "sent", "words"), SINGLE_LEG_CASES)
async def test_single_leg_previews_bind_only_when_the_brokers_words_agree(
    broker: FidelityBroker,
    fake: FakeFidelity,
    world: str,
    action: OptionAction,
    intent: PositionIntent | None,
    symbol: str,
    sent: str,
    words: str | None,
) -> None:
    fake.orders.world = world
    order = option(action, intent, symbol)
    if words is None:
        with pytest.raises(e.ActionMismatch) as refused:
            await broker.orders.preview_option_order(order)
        assert last_body(fake, OPTION_PREVIEW)["request"]["parameter"]["baseOrderDetail"]["orderActionCode"] == sent
        assert refused.value.reason == "ACTION_MISMATCH" and refused.value.details["asked"][0]["sent_as"] == sent
        assert refused.value.details["understood"][0]["code"] == sent
        assert await broker.orders.get_order_status(p.MARGIN) == []
        return
    preview = await broker.orders.preview_option_order(order)
    assert last_body(fake, OPTION_PREVIEW)["request"]["parameter"]["baseOrderDetail"]["orderActionCode"] == sent
    assert preview.broker_action_desc == words and preview.action == action.value
    assert preview.position_intent is intent
    unconfirmed = intent is not None and "to" not in words.lower().split()
    assert any("do not say whether the order opens or closes" in w for w in preview.warnings) is unconfirmed
    placed = await broker.orders.place_option_order(order, preview.conf_num)
    (listed,) = await broker.orders.get_order_status(p.MARGIN)
    assert listed.id_detail.conf_num == placed.conf_num
    # Read back under the public action it is, never another one (BC on a put is never "buy call").
    assert listed.order_detail.action == action.value and not listed.order_detail.action_unrecognized
    if "to" in words.lower().split():
        assert listed.order_detail.position_intent is intent


@pytest.mark.parametrize("world", WORLDS)
async def test_a_broker_that_misreads_the_side_symbol_or_quantity_is_refused(
    broker: FidelityBroker, fake: FakeFidelity, world: str
) -> None:
    fake.orders.world = world
    for misread, problem in (
        ({"orderActionCode": "S", "actionCodeDesc": "Sell"}, "asked to buy"),
        ({"orderActionCode": "SH", "actionCodeDesc": "Sell Short"}, "asked to buy"),
        ({"securityDetail": {"symbol": "AAPX"}}, "the broker understood AAPX"),
        ({"qty": 20}, "asked for 2, the broker understood 20"),
        ({"orderActionCode": "ZZ", "actionCodeDesc": "Mystery"}, "action code ZZ"),
    ):
        fake.orders.misread = misread
        with pytest.raises(e.ActionMismatch, match=problem):
            await broker.orders.preview_equity_order(aapl_buy())
    # A sale that comes back as a short sale (or as upstream SS, specific shares) is not the sale asked for.
    for misread in ({"orderActionCode": "SH", "actionCodeDesc": "Sell Short"}, {"orderActionCode": "SS"}):
        fake.orders.misread = {"actionCodeDesc": None, **misread}
        with pytest.raises(e.ActionMismatch, match="asked to sell"):
            await broker.orders.preview_equity_order(aapl_buy(limit=190.0, action=EquityAction.SELL))
    assert await broker.orders.get_order_status(p.MARGIN) == []


async def test_equity_sell_short_and_buy_to_cover_travel_as_sh_and_bh(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    for action, sent, words in (
        (EquityAction.SELL_SHORT, "SH", "Sell Short"),
        (EquityAction.BUY_TO_COVER, "BH", "Buy To Cover"),
    ):
        order = aapl_buy(limit=182.0, action=action, qty=1)
        preview = await broker.orders.preview_equity_order(order)
        assert last_body(fake, EQUITY_PREVIEW)["request"]["parameter"]["baseOrderDetail"]["orderActionCode"] == sent
        assert (preview.broker_action_code, preview.broker_action_desc, preview.action) == (sent, words, action.value)
        placed = await broker.orders.place_equity_order(order, preview.conf_num)
        mine = (await broker.orders.get_order_detail(placed.conf_num, p.MARGIN)).order
        assert mine is not None and mine.order_detail.action == action.value
        assert mine.order_detail.broker_action_code == sent and mine.order_detail.action_desc == words
        # The cancel echoes the order's own upstream code, not the public BC, which options read otherwise.
        await broker.orders.cancel_order(placed.conf_num, p.MARGIN, action.value)
        assert last_body(fake, CANCEL_PLACE)["request"]["parameter"]["cancelOrderDetail"][0]["actionCode"] == sent


def spread(*legs: tuple[str, LegAction], credit: bool = False) -> MultiLegOptionOrder:
    return MultiLegOptionOrder(
        acct_num=p.MARGIN,
        underlying="QS",
        legs=[MultiLegOptionLeg(symbol=symbol, action=action, qty=1) for symbol, action in legs],
        net_price=0.92,
        debit_credit=DebitCredit.CREDIT if credit else DebitCredit.DEBIT,
    )


@pytest.mark.parametrize("world", WORLDS)
async def test_multileg_legs_carry_price_detail_and_a_contradicted_leg_is_refused(
    broker: FidelityBroker, fake: FakeFidelity, world: str
) -> None:
    fake.orders.world = world
    order = spread(("QS280121C7", LegAction.BUY_TO_OPEN), ("QS280121C12", LegAction.SELL_TO_OPEN))
    preview = await broker.orders.preview_multileg_order(order)
    parameters = last_body(fake, MULTILEG_PREVIEW)["parameters"]
    assert parameters["tradableSecOrderDetail"]["dbCrEvenCode"] == "DB"
    assert parameters["tradableSecOrderDetail"]["netAmount"] == 0.92
    legs = parameters["baseOrderDetail"]["optionDetail"]["complexOrderDetails"]
    assert [leg["orderActionCode"] for leg in legs] == ["BO", "SO"]
    assert fake.mdds is not None
    for leg in legs:
        detail = leg["priceDetail"]
        assert set(detail) == {"price", "priceDateTime", "bidPrice", "askPrice"}
        assert detail["price"] > 0 and 0 < detail["bidPrice"] < detail["askPrice"]
        assert isinstance(detail["priceDateTime"], int) and detail["priceDateTime"] > 1_700_000_000
    assert len({leg["priceDetail"]["price"] for leg in legs}) == 1  # the underlying's price on every leg
    echoed = "BC, SC" if world == CAPTURED else "BO, SO"
    assert preview.broker_action_desc == f"{echoed.split(', ')[0]} QS280121C7, {echoed.split(', ')[1]} QS280121C12"
    placed = await broker.orders.place_multileg_order(order, preview.conf_num)
    place_legs = last_body(fake, MULTILEG_PLACE)["parameters"]["baseOrderDetail"]["optionDetail"]["complexOrderDetails"]
    assert [leg["priceDetail"] for leg in place_legs] == [leg["priceDetail"] for leg in legs]
    (listed,) = await broker.orders.get_order_status(p.MARGIN)
    assert listed.id_detail.conf_num == placed.conf_num

    # A leg echoed with the other intent, side or quantity cannot bind.
    for misread, problem in (
        ({"orderActionCode": "BO"}, "asked to close"),
        ({"orderActionCode": "SC"}, "asked to buy"),
        ({"qty": 3}, "asked for 1, the broker understood 3"),
    ):
        fake.orders.misread = misread
        closing = spread(("QS280121C7", LegAction.BUY_TO_CLOSE), ("QS280121C12", LegAction.BUY_TO_CLOSE))
        with pytest.raises(e.ActionMismatch, match=problem):
            await broker.orders.preview_multileg_order(closing)


@pytest.mark.parametrize("world", WORLDS)
async def test_a_multileg_preview_lists_each_leg_as_the_broker_echoed_it_in_the_order_asked(
    broker: FidelityBroker, fake: FakeFidelity, world: str
) -> None:
    fake.orders.world = world
    order = spread(("QS280121C7", LegAction.BUY_TO_OPEN), ("QS280121C12", LegAction.SELL_TO_OPEN))
    preview = await broker.orders.preview_multileg_order(order)
    echoed = ("BC", "SC") if world == CAPTURED else ("BO", "SO")
    assert preview.legs is not None
    assert [(leg.symbol, leg.action, leg.qty, leg.position_intent, leg.broker_action_code) for leg in preview.legs] == [
        ("QS280121C7", LegAction.BUY_TO_OPEN, 1, PositionIntent.OPEN, echoed[0]),
        ("QS280121C12", LegAction.SELL_TO_OPEN, 1, PositionIntent.OPEN, echoed[1]),
    ]
    # The captured answers carry no words per leg: none are made up.
    assert [leg.broker_action_desc for leg in preview.legs] == [None, None]

    # An answer listing the legs the other way round, in the broker's words, still shows them in the order asked.
    prices = await broker.orders._leg_prices(order)
    answer = await broker.orders._order_entry(
        w.MULTILEG_PREVIEW_URL, w.multileg_body(order, True, prices), "multi-leg order preview"
    )
    detail = answer["multiLegOptionResponse"]["orderConfirmDetail"]
    legs = detail["orderDetail"]["baseOrderDetail"]["optionDetail"]["complexOrderDetails"]
    legs.reverse()
    for leg, words in zip(legs, ("Sell to Open", "Buy to Open"), strict=True):
        leg.update(orderActionCode=words[0] + "O", actionCodeDesc=words, qty=2)
    reordered = m.map_preview(
        answer,
        multileg_intent(order.model_copy(update={"legs": [leg.model_copy(update={"qty": 2}) for leg in order.legs]})),
    )
    assert reordered.legs is not None
    assert [(leg.symbol, leg.qty, leg.broker_action_code, leg.broker_action_desc) for leg in reordered.legs] == [
        ("QS280121C7", 2, "BO", "Buy to Open"),
        ("QS280121C12", 2, "SO", "Sell to Open"),
    ]


async def test_a_single_order_preview_lists_no_legs(broker: FidelityBroker) -> None:
    preview = await broker.orders.preview_equity_order(aapl_buy())
    assert preview.legs is None


async def test_the_fake_rejects_legs_without_price_detail(broker: FidelityBroker, fake: FakeFidelity) -> None:
    body = w.multileg_body(
        spread(("QS280121C7", LegAction.BUY_TO_OPEN), ("QS280121C12", LegAction.SELL_TO_OPEN)), True, [{}, {}]
    )
    answer = await broker.orders._order_entry(w.MULTILEG_PREVIEW_URL, body, "multi-leg order preview")
    with pytest.raises(e.OrderRejected, match="Price details are missing for leg QS280121C7"):
        m.map_preview(
            answer,
            multileg_intent(spread(("QS280121C7", LegAction.BUY_TO_OPEN), ("QS280121C12", LegAction.SELL_TO_OPEN))),
        )


async def test_guessed_codes_the_upstream_may_refuse_surface_as_its_refusal(broker: FidelityBroker) -> None:
    stop_limit = aapl_buy(price_type=PriceType.STOP_LIMIT, limit_price=190.0, stop_price=189.0)
    with pytest.raises(e.OrderRejected, match="order type SL is not valid") as refused:
        await broker.orders.preview_equity_order(stop_limit)
    assert refused.value.details["upstream_codes"] == ["PT0001"]
    even = spread(("QS280121C7", LegAction.BUY_TO_OPEN), ("QS280121C12", LegAction.SELL_TO_OPEN))
    with pytest.raises(e.OrderRejected, match="net price type EV is not valid"):
        await broker.orders.preview_multileg_order(
            even.model_copy(update={"debit_credit": DebitCredit.EVEN, "net_price": 0})
        )
    assert await broker.orders.get_order_status(p.MARGIN) == []


async def test_a_cancel_never_waits_long_for_the_status_it_reads_its_code_from(fake: FakeFidelity) -> None:
    async with logged_in(fake, cancel_lookup_timeout=0.05) as broker:
        order = aapl_buy(limit=182.0, action=EquityAction.SELL_SHORT, qty=1)
        preview = await broker.orders.preview_equity_order(order)
        placed = await broker.orders.place_equity_order(order, preview.conf_num)
        fake.hold(STATUS_PATH)
        try:
            canceled = await broker.orders.cancel_order(placed.conf_num, p.MARGIN, "SS")
        finally:
            fake.release(STATUS_PATH)
    assert canceled.is_accepted
    # Without the status the spec's SS is still sent as the upstream's sell short, never as "specific shares".
    assert last_body(fake, CANCEL_PLACE)["request"]["parameter"]["cancelOrderDetail"][0]["actionCode"] == "SH"


async def test_a_credit_spread_sends_its_limit_signed_and_binds_on_the_same_limit(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    order = spread(("QS280121C7", LegAction.SELL_TO_OPEN), ("QS280121C12", LegAction.BUY_TO_OPEN), credit=True)
    preview = await broker.orders.preview_multileg_order(order)
    tradable = last_body(fake, MULTILEG_PREVIEW)["parameters"]["tradableSecOrderDetail"]
    assert (tradable["dbCrEvenCode"], tradable["netAmount"]) == ("CR", -0.92)
    assert preview.action == "CR" and preview.est_cost == 0 and preview.est_proceeds > 0
    placed = await broker.orders.place_multileg_order(order, preview.conf_num)
    assert placed.conf_num == preview.conf_num
