"""The alert-history fallback's reading of GetAlerts documents, and the key that spots one fill seen twice."""

from __future__ import annotations

from html import escape

from ftdesk.brokers.fidelity.beps import to_account_event
from ftdesk.brokers.fidelity.fills_fallback import FillsFallback, parse_alert_document, to_event
from ftdesk.domain.events import EventCategory
from tests.fakes.clock import ManualClock
from tests.fakes.fidelity_alert_history import alert_document

DOCUMENT = alert_document(
    "MFCEX", acct="Z21772945", order="D02PTTQR", symbol="QS270115C7", action="BUY", qty=2, executed=1, price=1.55, n=1
)


def fallback() -> FillsFallback:
    def no_http() -> object:
        raise AssertionError("not called")

    return FillsFallback(no_http, ManualClock())  # type: ignore[arg-type]


def test_a_fill_document_becomes_the_event_beps_would_send_marked_alerts() -> None:
    fields = parse_alert_document(escape(DOCUMENT))  # as carried: escaped inside <Document>
    assert fields is not None

    event = to_event(fields, ManualClock())

    # 1 of 2 executed: the alert says so, so the fill is a partial one; the upstream code is kept
    assert (event.event_type, event.category, event.source) == ("ORDER_PARTIAL_FILL", EventCategory.ORDER, "alerts")
    assert event.upstream_code == "MFCEX"
    desc = event.desc
    assert (desc["acct_num"], desc["conf_num"], desc["symbol"]) == ("Z21772945", "D02PTTQR", "QS270115C7")
    assert (desc["qty"], desc["executed_qty"], desc["fill_qty"], desc["price"]) == (2, 1, 1, 1.55)
    assert desc["alert_time"].startswith("2026-11-16-10.") and desc["msg_id"].startswith("MF.EX")


def test_one_fill_from_both_sides_has_one_key_and_other_fills_differ() -> None:
    fields = parse_alert_document(DOCUMENT)
    assert fields is not None
    from_alerts = to_event(fields, ManualClock())
    clock = ManualClock()
    beps_xml = to_account_event({"eventId": "1", "eventType": "MFCEX", "message": DOCUMENT}, clock)
    beps_json = to_account_event(
        {"eventId": "2", "eventType": "MFCEX", "message": '{"orderNum": "d02pttqr", "executedQty": "1"}'}, clock
    )
    second_fill = to_account_event(
        {"eventId": "3", "eventType": "MFCEX", "message": '{"orderNum": "D02PTTQR", "executedQty": 2}'}, clock
    )
    opaque = to_account_event({"eventId": "4", "eventType": "MFCEX", "message": "Bought 1"}, clock)
    price_alert = to_account_event({"eventId": "5", "eventType": "TRPA", "message": DOCUMENT}, clock)

    keys = fallback()
    # BEPS does not state the quantities where the alert history does: named apart, still one key
    assert (from_alerts.event_type, beps_xml.event_type) == ("ORDER_PARTIAL_FILL", "ORDER_FILL")
    assert keys.dedupe_key(from_alerts) == keys.dedupe_key(beps_xml) == keys.dedupe_key(beps_json)
    assert keys.dedupe_key(second_fill) not in (None, keys.dedupe_key(from_alerts))  # the next partial fill
    assert keys.dedupe_key(opaque) is None  # nothing to match on: passed on, never dropped by guess
    assert keys.dedupe_key(price_alert) is None
