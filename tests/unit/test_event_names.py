"""The one table from upstream event codes to the public event names, and its two refinements."""

from __future__ import annotations

from typing import Any

import pytest

from ftdesk.domain.event_names import FILL_NAMES, UPSTREAM_EVENTS, EventCategory, EventName, name_of
from ftdesk.domain.events import EventType, account_event

WHEN = "2026-11-16T15:00:00+00:00"


def test_every_code_the_brokers_emit_has_a_name_and_every_name_but_other_is_reachable() -> None:
    # The paper broker's events carry these codes; BEPS and the alert history send them.
    assert {code.value for code in EventType} <= set(UPSTREAM_EVENTS)
    reachable = {name for name, _ in UPSTREAM_EVENTS.values()} | {
        EventName.ORDER_PARTIAL_FILL,
        EventName.ORDER_REJECTED,
        EventName.ORDER_EXPIRED,
        EventName.ORDER_REPLACED,
    }
    assert reachable == set(EventName) - {EventName.OTHER}


def test_a_fill_keeps_its_code_beside_the_spec_name() -> None:
    event = account_event("MFCEX", {"conf_num": "C1", "qty": 10, "cum_qty": 10}, time=WHEN, source="paper")
    assert (event.event_type, event.category) == (EventName.ORDER_FILL, EventCategory.ORDER)
    assert event.desc == {"conf_num": "C1", "qty": 10, "cum_qty": 10, "upstream_code": "MFCEX"}
    assert event.upstream_code == "MFCEX"
    assert event.model_dump(mode="json")["event_type"] == "ORDER_FILL"


@pytest.mark.parametrize(
    ("desc", "name"),
    [
        ({"partial": True}, EventName.ORDER_PARTIAL_FILL),
        ({"qty": 10, "cum_qty": 4}, EventName.ORDER_PARTIAL_FILL),
        ({"qty": "10", "executed_qty": "4"}, EventName.ORDER_PARTIAL_FILL),  # the alert history's text numbers
        ({"qty": 10, "cum_qty": 10, "partial": False}, EventName.ORDER_FILL),
        ({"qty": 10}, EventName.ORDER_FILL),  # does not say how much is done
        ({"message": "Bought 1"}, EventName.ORDER_FILL),  # a BEPS message in an unknown format
        ({"qty": 10, "executed_qty": 0}, EventName.ORDER_FILL),  # nothing executed is not a partial fill
    ],
)
def test_a_fill_is_partial_only_when_it_shows_part_of_the_order_open(desc: dict[str, Any], name: EventName) -> None:
    assert name_of("MFCEX", desc) == (name, EventCategory.ORDER)
    assert name in FILL_NAMES


@pytest.mark.parametrize(
    ("status", "name"),
    [
        ("CANCELED", EventName.ORDER_CANCELED),
        ("REJECTED", EventName.ORDER_REJECTED),
        ("EXPIRED", EventName.ORDER_EXPIRED),
        ("REPLACED", EventName.ORDER_REPLACED),
        ("OPEN", EventName.ORDER_UPDATED),
        ("PENDING_TRIGGER", EventName.ORDER_UPDATED),
        (None, EventName.ORDER_UPDATED),
    ],
)
def test_an_order_update_takes_the_name_of_the_outcome_it_states(status: str | None, name: EventName) -> None:
    assert name_of("ORDUP", {"status": status}) == (name, EventCategory.ORDER)


def test_an_unknown_or_missing_code_is_other_and_is_kept() -> None:
    unknown = account_event("zz9xy", {"a": 1}, time=WHEN, source="beps")
    assert (unknown.event_type, unknown.category, unknown.upstream_code) == ("OTHER", "other", "zz9xy")
    missing = account_event("  ", {}, time=WHEN)
    assert (missing.event_type, missing.category, missing.desc) == ("OTHER", "other", {"upstream_code": None})


def test_codes_are_matched_whatever_their_case_and_the_status_rule_leaves_fills_alone() -> None:
    assert name_of("cxl01", {}) == (EventName.ORDER_CANCELED, EventCategory.ORDER)
    assert name_of("MFCEX", {"status": "CANCELED"})[0] is EventName.ORDER_FILL
    assert name_of("SPBSM", {"status": "REJECTED"}) == (EventName.BALANCE_UPDATED, EventCategory.BALANCE)
