"""Mapping of the user-data answers on the captured sample payloads."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import pytest

from ftdesk.brokers.fidelity import market_calendar as calendar
from ftdesk.brokers.fidelity import user_data_alerts as alerts
from ftdesk.brokers.fidelity import user_data_preferences as prefs
from ftdesk.brokers.fidelity import user_data_watchlists as lists
from ftdesk.brokers.fidelity.upstream_answer import UpstreamResponse
from ftdesk.brokers.fidelity.user_data_common import check_sys_msgs
from ftdesk.domain.errors import BrokerError, SessionExpired
from ftdesk.domain.user_data import PriceTriggerDraft, TriggerBasis, TriggerDirection, TriggerStatus
from tests.fakes import fidelity_user_data_payloads as u

# --- watchlists ---------------------------------------------------------------------------------


def test_watchlists_come_in_creation_order_with_symbols_in_rank_order() -> None:
    watchlists = lists.map_watchlists(u.watchlists_answer(u.initial_watchlists()))
    assert [w.name for w in watchlists] == ["Buys", "Research"]  # Buys was created first
    buys, research = watchlists
    assert buys.symbols == ["AAPL", "ES"]  # rankId 1 then "2", upper-cased
    assert research.symbols == ["CODI"]
    assert research.watchlist_id == u.RESEARCH_LIST_ID
    # "2025-02-11 18:28:20.6" is New York wall time.
    assert research.update_date == "2025-02-11T23:28:20.600000+00:00"
    assert research.raw is not None and research.raw["securityDetails"][0]["cusip"] == ""


def test_a_replace_sends_back_the_ids_and_default_flag_of_what_the_list_had() -> None:
    buys = lists.map_watchlists(u.watchlists_answer(u.initial_watchlists()))[0]
    body = lists.save_request("Buys now", ["TSLA", "AAPL"], buys)
    [detail] = body["watchListDetails"]
    assert detail["watchListId"] == u.BUYS_LIST_ID and detail["isDefault"] is True
    assert detail["watchListName"] == "Buys now" and detail["watchListTypeCode"] == "WL"
    tsla, aapl = detail["securityDetails"]
    assert (tsla["symbol"], tsla["rankId"], tsla["shareQuantity"]) == ("TSLA", "1", "0")
    assert "securityId" not in tsla  # new to the list
    assert aapl["securityId"] == "c7d2e1f0-3b4a-4c5d-8e9f-0a1b2c3d4e5f" and aapl["rankId"] == "2"


def test_a_new_list_has_no_id_and_is_not_the_default() -> None:
    [detail] = lists.save_request("Fresh", [], None)["watchListDetails"]
    assert "watchListId" not in detail and detail["isDefault"] is False and detail["securityDetails"] == []


def test_sys_msgs_refusals_carry_the_upstream_text_and_code() -> None:
    def succeeded(message: dict[str, object]) -> bool:
        return message.get("code") == "2000"

    check_sys_msgs(u.watchlists_answer([]), "watchlist request", succeeded)
    check_sys_msgs({"watchListDetails": []}, "watchlist request", succeeded)  # no verdict: not a refusal
    with pytest.raises(BrokerError, match="Fidelity refused the watchlist save: Too many lists") as caught:
        check_sys_msgs(u.refusal("WL0042", "Too many lists"), "watchlist save", succeeded)
    assert caught.value.details == {"upstream_codes": ["WL0042"]}


# --- preferences --------------------------------------------------------------------------------


def test_preferences_of_the_ftdesk_path_only_without_bookkeeping_and_all_as_text() -> None:
    payload = u.preferences_answer(
        {
            "user/atn/global/v1": {"DefaultAccountNumber": "250357290"},
            prefs.PREFERENCE_PATH: {"zeta": "--", "columns": 3, "flags": {"dark": True}, "empty": None, "alpha": ""},
        }
    )
    assert prefs.map_preferences(payload, prefs.PREFERENCE_PATH) == {
        "alpha": "",
        "columns": "3",
        "empty": "",
        "flags": '{"dark":true}',
        "zeta": "--",  # a user's value, not the upstream's "no value"
    }


# --- alerts SOAP --------------------------------------------------------------------------------


def soap_response(text: str, status: int = 200, content_type: str = "text/xml") -> UpstreamResponse:
    return UpstreamResponse(status, content_type, text.encode(), alerts.SUBSCRIPTION_URL)


def test_sign_on_keeps_the_verdict_and_never_the_ems_credentials() -> None:
    activation = alerts.map_sign_on(alerts.soap_root(soap_response(u.sign_on_answer()), "alert subscription"))
    assert activation.active and activation.result_code == "SUCCESS"
    assert u.EMS_PASSWORD not in repr(activation) and u.EMS_USER_ID not in repr(activation)
    refused = alerts.map_sign_on(ET.fromstring(u.sign_on_answer(success=False)))
    assert refused.result_code == "FAILURE" and not refused.active


def test_sign_on_faults_pages_and_http_errors() -> None:
    with pytest.raises(BrokerError, match="alert subscription: Service unavailable"):
        alerts.soap_root(soap_response(u.soap_fault("Service unavailable"), 500), "alert subscription")
    with pytest.raises(SessionExpired):
        alerts.soap_root(soap_response("<html><body>Log in</body></html>", 200, "text/html"), "alert subscription")
    with pytest.raises(SessionExpired):
        alerts.soap_root(soap_response("", 401), "alert subscription")
    with pytest.raises(BrokerError, match="HTTP 502"):
        alerts.soap_root(soap_response("Bad gateway", 502, "text/plain"), "alert subscription")
    with pytest.raises(BrokerError, match="not XML"):
        alerts.soap_root(soap_response("all good", 200, "text/plain"), "alert subscription")


# --- price triggers -----------------------------------------------------------------------------

CREATED = datetime(2026, 4, 2, 17, 53, 44, 15000, tzinfo=UTC)


def test_a_captured_create_answer_maps_to_an_active_price_level() -> None:
    raw = u.trigger_entry("1095172719", "spy", "lessThan", 480.5, CREATED, "dip")
    trigger = alerts.map_trigger(raw, TriggerStatus.ACTIVE)
    assert trigger is not None
    assert (trigger.trigger_id, trigger.symbol, trigger.direction, trigger.price, trigger.note) == (
        "1095172719",
        "SPY",
        TriggerDirection.BELOW,
        480.5,
        "dip",
    )
    assert trigger.create_time == "2026-04-02T17:53:44.015000+00:00"  # from milliseconds
    assert trigger.triggered_time is None and trigger.raw == raw


def test_percent_triggers_are_read_and_entries_without_an_id_are_left_out() -> None:
    percent = alerts.map_trigger(u.trigger_entry("1", "SPY", "lessThanPercent", 4, CREATED), TriggerStatus.ACTIVE)
    assert percent is not None
    assert (percent.direction, percent.price, percent.basis) == (TriggerDirection.BELOW, 4.0, TriggerBasis.PERCENT)
    draft = PriceTriggerDraft(symbol="spy", direction=TriggerDirection.ABOVE, price=2.5, basis=TriggerBasis.PERCENT)
    assert alerts.create_request(draft)["triggers"][0] == {
        "currency": "USD",
        "notes": "",
        "operator": "greaterThanPercent",
        "symbol": "SPY",
        "value": 2.5,
    }
    nameless = u.trigger_entry("1", "SPY", "greaterThan", 500, CREATED)
    del nameless["id"]
    assert alerts.map_trigger(nameless, TriggerStatus.ACTIVE) is None


def test_an_expired_trigger_fired_when_it_was_last_updated() -> None:
    raw = u.trigger_entry("7", "AAPL", "greaterThan", "150.00", CREATED)
    raw["updateTime"] = int(datetime(2026, 4, 10, 14, 0, tzinfo=UTC).timestamp() * 1000)
    trigger = alerts.map_trigger(raw, TriggerStatus.TRIGGERED)
    assert trigger is not None and trigger.status is TriggerStatus.TRIGGERED and trigger.price == 150.0
    assert trigger.triggered_time == "2026-04-10T14:00:00+00:00"


def test_the_sdk_guessed_trigger_fields_are_read_too() -> None:
    raw = {"triggerId": "TRG001", "symbol": "AAPL", "triggerType": "PRICE_ABOVE", "triggerPrice": "200.00",
           "status": "ACTIVE", "createdDate": 1775152424}  # fmt: skip
    trigger = alerts.map_trigger(raw, TriggerStatus.TRIGGERED)
    assert trigger is not None
    assert (trigger.trigger_id, trigger.direction, trigger.price, trigger.status) == (
        "TRG001",
        TriggerDirection.ABOVE,
        200.0,
        TriggerStatus.ACTIVE,  # the entry's own status wins over the list it came in
    )


def test_the_create_body_is_flat_as_captured() -> None:
    body = alerts.create_request(PriceTriggerDraft(symbol=" spy ", direction=TriggerDirection.ABOVE, price=612.25))
    assert body == {
        "triggers": [{"currency": "USD", "notes": "", "operator": "greaterThan", "symbol": "SPY", "value": 612.25}],
        "devices": [{"name": "Active Trader Pro"}, {"name": "Fidelity mobile applications"}],
    }


# --- holiday calendar ---------------------------------------------------------------------------

CAPTURED_CALENDAR = {
    "holidayCalendarDetails": [
        {"countryCode": "US", "date": 1751515200, "holidayDesc": "Abbreviated Trading", "holidayType": "A",
         "earlyCloseTm": "13:00:00.000"},
        {"countryCode": "US", "date": 1735707600, "holidayDesc": "New Year's Day", "holidayType": "H"},
        {"countryCode": "US", "date": "1735707600", "holidayDesc": "New Year's Day", "holidayType": "H"},
        {"countryCode": "CA", "date": 1751342400, "holidayDesc": "Canada Day", "holidayType": "H"},
        {"countryCode": "US", "date": "--", "holidayDesc": "Broken", "holidayType": "H"},
    ]
}  # fmt: skip


def test_the_captured_calendar_maps_closed_days_and_early_closes_of_the_year() -> None:
    holidays = calendar.map_holidays(CAPTURED_CALENDAR, 2025)
    assert [(h.date, h.name, h.status, h.close_time) for h in holidays] == [
        ("2025-01-01", "New Year's Day", "CLOSED", None),  # once, though listed twice
        ("2025-07-03", "Abbreviated Trading", "EARLY_CLOSE", "13:00"),
    ]
    assert holidays[1].raw == CAPTURED_CALENDAR["holidayCalendarDetails"][0]
    assert calendar.map_holidays(CAPTURED_CALENDAR, 2024) == []
