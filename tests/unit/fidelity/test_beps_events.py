"""Mapping one BEPS subScribeBEPSEvent object to an AccountEvent: type, category, details and time."""

from __future__ import annotations

from typing import Any

import pytest

from ftdesk.brokers.fidelity.beps import event_time, to_account_event
from ftdesk.domain.events import EventCategory
from tests.fakes.clock import ManualClock

FILL: dict[str, Any] = {
    "eventId": "evt-0001",
    "subscribeId": "MID123",
    "source": "ORDER_EXEC",
    "eventCreatedTime": "2026-11-16T15:01:02.500Z",
    "eventType": "MFCEX",
    "handleTime": "2026-11-16T15:01:02.600Z",
    "hasError": False,
    "message": '{"acctNum":"Z12345678","confNum":"24A0BC12","symbol":"KO","qty":10}',
    "desc": "Bought 10 KO at 61.20",
    "consumerAppId": "ATN",
}


@pytest.mark.parametrize(
    ("code", "name", "category"),
    [
        ("MFCEX", "ORDER_FILL", EventCategory.ORDER),
        ("ORDUP", "ORDER_UPDATED", EventCategory.ORDER),
        ("CXL01", "ORDER_CANCELED", EventCategory.ORDER),
        ("SPPOS", "POSITION_CHANGED", EventCategory.POSITION),
        ("CBUPD", "COST_BASIS_UPDATED", EventCategory.POSITION),
        ("SPBSM", "BALANCE_UPDATED", EventCategory.BALANCE),
        ("TRPA", "PRICE_ALERT_ABOVE", EventCategory.ALERT),
        ("TRPB", "PRICE_ALERT_BELOW", EventCategory.ALERT),
        ("MA50A", "MA50_CROSSED_ABOVE", EventCategory.ALERT),
        ("MA50B", "MA50_CROSSED_BELOW", EventCategory.ALERT),
        ("MA200A", "MA200_CROSSED_ABOVE", EventCategory.ALERT),
        ("MA200B", "MA200_CROSSED_BELOW", EventCategory.ALERT),
        ("52WHA", "FIFTY_TWO_WEEK_HIGH", EventCategory.ALERT),
        ("52WHB", "FIFTY_TWO_WEEK_LOW", EventCategory.ALERT),
        ("VOLAL", "VOLUME_ALERT", EventCategory.ALERT),
        ("NEWXX", "OTHER", EventCategory.OTHER),
    ],
)
def test_each_upstream_code_gets_its_public_name_and_category_and_is_kept(
    code: str, name: str, category: EventCategory
) -> None:
    event = to_account_event({**FILL, "eventType": code}, ManualClock())
    assert (event.event_type, event.category, event.upstream_code) == (name, category, code)


def test_an_event_without_a_code_is_other_with_no_upstream_code() -> None:
    event = to_account_event({**FILL, "eventType": ""}, ManualClock())
    assert (event.event_type, event.category, event.upstream_code) == ("OTHER", EventCategory.OTHER, None)


def test_every_other_field_is_kept_in_desc_under_its_snake_case_name() -> None:
    event = to_account_event(FILL, ManualClock())

    assert event.desc == {
        "event_id": "evt-0001",
        "subscribe_id": "MID123",
        "source": "ORDER_EXEC",
        "event_created_time": "2026-11-16T15:01:02.500Z",
        "handle_time": "2026-11-16T15:01:02.600Z",
        "has_error": False,
        "message": FILL["message"],  # format unknown upstream: passed on as sent
        "desc": "Bought 10 KO at 61.20",
        "consumer_app_id": "ATN",
        "upstream_code": "MFCEX",  # eventType, kept beside the public name
    }
    assert event.time == "2026-11-16T15:01:02.500000+00:00"


def test_fields_the_document_does_not_name_are_kept_as_well() -> None:
    event = to_account_event({"eventType": "ORDUP", "orderStatusCode": "OPEN"}, ManualClock())
    assert event.desc == {"order_status_code": "OPEN", "upstream_code": "ORDUP"}


@pytest.mark.parametrize(
    ("created", "expected"),
    [
        (1_794_927_662_500, "2026-11-17T15:01:02.500000+00:00"),  # epoch milliseconds
        ("1794927662500", "2026-11-17T15:01:02.500000+00:00"),
        (1_794_927_662, "2026-11-17T15:01:02+00:00"),  # epoch seconds
        ("2026-11-16T10:01:02-05:00", "2026-11-16T10:01:02-05:00"),
    ],
)
def test_the_creation_time_becomes_iso_8601(created: object, expected: str) -> None:
    assert event_time(created, ManualClock()) == expected


@pytest.mark.parametrize("created", [None, "", "yesterday", True])
def test_an_unreadable_creation_time_falls_back_to_the_time_of_arrival(created: object) -> None:
    clock = ManualClock()
    assert event_time(created, clock) == clock.now().isoformat()
