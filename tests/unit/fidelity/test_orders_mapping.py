"""Mapping of the Fidelity order answers and building of the order requests, on the captured samples."""

from __future__ import annotations

import pytest

from ftdesk.brokers.fidelity import orders_mapping as m
from ftdesk.brokers.fidelity import orders_wire as w
from ftdesk.domain.errors import OrderRejected
from ftdesk.domain.orders import (
    ConditionalLeg,
    ConditionalOrder,
    ConditionalType,
    EquityAction,
    EquityOrder,
    OrderStatus,
    PriceType,
    TimeInForce,
)
from tests.fakes import fidelity_orders_payloads as op


def intent(**changes: object) -> m.Intent:
    fields: dict[str, object] = {
        "acct_num": "Z21772945",
        "symbol": "LGVN",
        "action": "B",
        "qty": 1.0,
        "price_type": PriceType.LIMIT,
        "limit_price": 1.0,
        "stop_price": None,
        "tif": TimeInForce.DAY,
        "buy": True,
    }
    fields.update(changes)
    return m.Intent(**fields)  # type: ignore[arg-type]


def test_the_captured_equity_preview_maps_its_quote_and_estimates() -> None:
    preview = m.map_preview(op.EQUITY_PREVIEW_SAMPLE, intent())
    assert (preview.conf_num, preview.acct_num, preview.resp_type_code) == ("24A0L75J", "Z21772945", "V")
    assert preview.quote is not None and (preview.quote.bid, preview.quote.ask) == (0.954, 0.97)
    assert preview.quote.time.startswith("2026-03-31")
    assert (preview.est_commission, preview.est_fees, preview.est_cost) == (0.0, 0.0, 1.0)


def test_the_captured_place_is_accepted_with_the_same_conf_num() -> None:
    placed = m.map_placement(op.EQUITY_PLACE_SAMPLE, "Z21772945", "24A0L75J")
    assert placed.conf_num == "24A0L75J" and placed.status is OrderStatus.OPEN


def test_a_captured_error_answer_is_an_order_rejection_with_the_text_of_its_detail() -> None:
    with pytest.raises(OrderRejected) as refused:
        m.map_preview(op.REPLACE_ERROR_SAMPLE, intent(), what="replace preview")
    assert refused.value.message.startswith("Fidelity refused the replace preview: The limit price entered")
    assert "Code=" not in refused.value.message and refused.value.reason == "UPSTREAM_REJECTED"
    assert refused.value.details["upstream_codes"] == ["MA5010"]


def test_the_captured_multileg_preview_keeps_the_day_trade_warning_and_the_total() -> None:
    spread = intent(symbol="QS", action="DB", limit_price=0.92)
    preview = m.map_preview(op.MULTILEG_PREVIEW_SAMPLE, spread)
    assert preview.conf_num == "C31PHDRX" and preview.est_commission == pytest.approx(1.30)
    assert preview.est_cost == pytest.approx(93.30) and preview.quote is None
    assert preview.warnings == ["(354020) If you plan to day-trade, you must have sufficient funds"]


def test_the_captured_order_status_maps_a_filled_complex_option_order() -> None:
    (order,) = m.map_orders(op.ORDER_STATUS_SAMPLE)
    assert order.acct_num == "Z25485019" and order.id_detail.conf_num == "C30QFHNX"
    status = order.status_detail
    assert status.status is OrderStatus.FILLED and status.status_desc == "Filled at $2.96"
    assert (status.qty, status.qty_exec, status.qty_remaining, status.avg_exec_price) == (1, 1, 0, 2.96)
    assert status.commission == 0.65 and not status.cancelable_ind
    detail = order.order_detail
    assert (detail.symbol, detail.action, detail.action_desc) == ("SPXW260330P6330", "BP", "Buy Put")
    assert detail.security_type == "MULTI_LEG" and detail.limit_price == 2.10 and detail.tif is TimeInForce.DAY
    assert detail.entry_time.startswith("2026-03-30")
    assert m.map_orders(op.ORDER_STATUS_SAMPLE, ["Z21772945"]) == []


@pytest.mark.parametrize(
    ("code", "desc", "expected"),
    [
        ("OPEN", "", OrderStatus.OPEN),
        ("PARTIAL_FILL", "", OrderStatus.PARTIALLY_FILLED),
        ("PENDING_CANCEL", "", OrderStatus.OPEN),
        ("VERIFIED_CANCEL_PARTIAL_FILL", "", OrderStatus.CANCELED),
        ("UNTRIGGERED_AWAITS_CONTINGENT_TRIGGER", "", OrderStatus.PENDING_TRIGGER),
        ("ERROR", "", OrderStatus.REJECTED),
        ("SETTLEMENT_PENDING", "", OrderStatus.FILLED),
        ("DONE_FOR_DAY", "Expired at the close", OrderStatus.EXPIRED),
        ("", "Replaced by C31PHDRX", OrderStatus.REPLACED),
    ],
)
def test_status_codes_map_onto_the_lifecycle(code: str, desc: str, expected: OrderStatus) -> None:
    assert m.order_status(code, desc) is expected


def test_a_working_order_without_indicators_is_cancelable_and_a_finished_one_never_is() -> None:
    working = {"statusDetail": {"statusCode": "OPEN", "amountDetail": {"qty": "5"}}, "idDetail": {"confNum": "X"}}
    order = m.map_order(working)
    assert order.status_detail.cancelable_ind and order.status_detail.qty_remaining == 5
    done = {"statusDetail": {"statusCode": "FILLED", "cancelableInd": True}, "idDetail": {"confNum": "Y"}}
    assert not m.map_order(done).status_detail.cancelable_ind


def test_the_captured_conditional_preview_maps_every_leg_and_only_warnings() -> None:
    legs = [
        intent(symbol="QS", limit_price=6.2),
        intent(symbol="QS", action="S", limit_price=7.0, buy=False),
        intent(symbol="QS", action="S", price_type=PriceType.STOP, limit_price=None, stop_price=5.5, buy=False),
    ]
    preview = m.map_conditional_preview(op.CONDITIONAL_PREVIEW_SAMPLE, "Z21772945", ConditionalType.OTOCO, legs)
    assert preview.conf_nums == ["D02JRNZX", "D02JRPBB", "D02JRQ4M"]
    assert preview.warnings == []  # the top-level message is an info "Success"
    assert preview.legs[2].warnings == ["(001924) Stop Loss and Stop Limit orders are triggered by the last trade"]
    assert preview.legs[0].quote is not None and preview.legs[1].est_proceeds == 7.0


def test_the_captured_cancel_and_the_empty_staged_list() -> None:
    result = m.map_cancel(op.CANCEL_SAMPLE, "24A0JX2V", "Z21772945")
    assert result.is_accepted and result.cancel_confirm_detail[0].remaining_qty == 1
    assert m.map_staged_orders(op.STAGED_EMPTY_SAMPLE).staged_orders is None


def test_a_conditional_place_carries_the_shifted_conf_nums_of_the_capture() -> None:
    legs = [
        ConditionalLeg(symbol="QS", action=EquityAction.BUY, qty=1, price_type=PriceType.LIMIT, limit_price=6.2),
        ConditionalLeg(symbol="QS", action=EquityAction.SELL, qty=1, price_type=PriceType.LIMIT, limit_price=7),
        ConditionalLeg(symbol="QS", action=EquityAction.SELL, qty=1, price_type=PriceType.STOP, stop_price=5.5),
    ]
    order = ConditionalOrder(acct_num="Z21772945", cond_order_type_code=ConditionalType.OTOCO, legs=legs)
    for given in (["D02JRNZX", "D02JRPBB", "D02JRQ4M"], ["D02JRNZX", "D02JRPBB"]):
        body = w.conditional_place_body(order, True, given)["parameters"]
        assert [leg["baseOrderDetail"].get("confNum") for leg in body["condOrderDetails"]] == [
            None,
            "D02JRNZX",
            "D02JRPBB",
        ]
        assert body["previewInd"] is False and body["confInd"] is False


def test_replace_place_drops_the_route_and_keeps_the_original_order_number() -> None:
    order = EquityOrder(
        acct_num="Z21772945", symbol="qs", action=EquityAction.BUY, qty=1, price_type=PriceType.LIMIT, limit_price=5
    )
    preview = w.replace_preview_body("24C0ZBR7", order, True)["request"]["parameter"]
    place = w.replace_place_body("24C0ZBR7", order, True, "24C0ZBT1")["request"]["parameter"]
    assert (
        preview["tradableSecOrderDetail"]["mktRouteCode"] == ""
        and "mktRouteCode" not in place["tradableSecOrderDetail"]
    )
    assert place["orderNumOrig"] == "24C0ZBR7" and place["baseOrderDetail"]["confNum"] == "24C0ZBT1"
    assert place["baseOrderDetail"]["securityDetail"] == {"symbol": "QS"}


def test_status_summary_request_names_every_filter_and_the_misspelt_account_type() -> None:
    parameter = w.status_summary_body(["Z25485019"])["request"]["parameter"]
    assert parameter["orderId"] is None and parameter["fbOpenInd"] is None and len(parameter) == 14
    assert parameter["acctDetails"] == {"acctDetail": [{"acctNum": "Z25485019", "accType": None}]}
