"""Watchlists, alerts, preferences and the holiday calendar through the real server on the paper broker.

These endpoints change what the user keeps, so each test gets a fresh paper world (manual clock,
Monday 2026-11-16 10:00 New York) and sees only its own changes.
"""

from __future__ import annotations

import pytest

from tests.fakes.clock import ManualClock


@pytest.fixture
async def service(start_service):
    running = await start_service(clock=ManualClock())
    await running.login()
    return running


async def ok(service, method: str, path: str, status: int = 200, **kwargs) -> object:
    got, body = await service.call(method, path, **kwargs)
    assert got == status, body
    assert body["ok"] is True and body["error"] is None
    return body["data"]


async def error(service, method: str, path: str, status: int, code: str, **kwargs) -> dict:
    got, body = await service.call(method, path, **kwargs)
    assert got == status, body
    assert body["ok"] is False and body["data"] is None and body["error"]["code"] == code
    return body["error"]


def bad_fields(err: dict) -> set[str]:
    return {detail["field"] for detail in err["details"]}


async def last_price(service, symbol: str) -> float:
    tape = await ok(service, "GET", f"/api/v1/market-data/time-and-sales/{symbol}", params={"max_rows": 1})
    return tape["trades"][0]["price"]


# --- watchlists -----------------------------------------------------------------------------------------


async def test_watchlists_create_replace_and_list(service) -> None:
    (default,) = await ok(service, "GET", "/api/v1/watchlists")
    assert default["name"] == "My Watchlist" and default["symbols"] == ["AAPL", "MSFT", "NVDA", "SPY"]

    created = await ok(
        service, "POST", "/api/v1/watchlists/save", json={"name": "Income", "symbols": ["ko", "JNJ", "KO", " vti "]}
    )
    assert created["watchlist_id"] and created["watchlist_id"] != default["watchlist_id"]
    assert created["name"] == "Income" and created["symbols"] == ["KO", "JNJ", "VTI"]  # upper-cased, no repeats

    replaced = await ok(
        service,
        "POST",
        "/api/v1/watchlists/save",
        json={"watchlist_id": created["watchlist_id"], "name": "Dividends", "symbols": ["JNJ", "KO"]},
    )
    assert replaced["watchlist_id"] == created["watchlist_id"]
    assert replaced["name"] == "Dividends" and replaced["symbols"] == ["JNJ", "KO"]
    assert await ok(service, "GET", "/api/v1/watchlists") == [default, replaced]


async def test_watchlist_errors(service) -> None:
    (default,) = await ok(service, "GET", "/api/v1/watchlists")
    err = await error(
        service, "POST", "/api/v1/watchlists/save", 409, "CONFLICT", json={"name": "my watchlist", "symbols": []}
    )
    assert "My Watchlist" in err["message"]
    err = await error(
        service, "POST", "/api/v1/watchlists/save", 404, "NOT_FOUND", json={"watchlist_id": "W404", "name": "X"}
    )
    assert "W404" in err["message"]
    err = await error(
        service,
        "POST",
        "/api/v1/watchlists/save",
        422,
        "VALIDATION_ERROR",
        json={"name": "Spec", "symbols": ["AAPL", "NOSUCHCO"]},
    )
    assert "NOSUCHCO" in err["message"] and bad_fields(err) == {"symbols[1]"}
    assert await ok(service, "GET", "/api/v1/watchlists") == [default]  # nothing was saved


@pytest.mark.parametrize(
    ("body", "fields", "status"),
    [
        ({"symbols": ["AAPL"]}, {"name"}, 422),
        ({"name": ""}, {"name"}, 422),
        ({"name": "x" * 101}, {"name"}, 422),
        ({"name": "Tech", "symbols": "AAPL"}, {"symbols"}, 400),  # text where an array belongs: the wrong JSON type
        ({"name": "Tech", "symbols": ["AAPL", ""]}, {"symbols.1"}, 422),
        ({"name": "Tech", "symbols": ["S"] * 501}, {"symbols"}, 422),
        ({"name": "Tech", "id": "W1"}, {"id"}, 422),
    ],
)
async def test_bad_watchlist_body_is_a_validation_error_naming_the_field(
    service, body: dict, fields: set[str], status: int
) -> None:
    err = await error(service, "POST", "/api/v1/watchlists/save", status, "VALIDATION_ERROR", json=body)
    assert bad_fields(err) == fields


# --- alerts ----------------------------------------------------------------------------------------------


async def test_alert_subscription_counts_active_triggers_and_holds_no_credentials(service) -> None:
    first = await ok(service, "POST", "/api/v1/alerts/subscribe")
    assert first == {"active": True, "delivery": "/api/v1/streaming/events", "active_triggers": 0}
    price = await last_price(service, "AAPL")
    await ok(
        service,
        "POST",
        "/api/v1/alerts/price-triggers",
        201,
        json={"symbol": "AAPL", "direction": "ABOVE", "price": round(price * 1.2, 2)},
    )
    again = await ok(service, "POST", "/api/v1/alerts/subscribe")
    assert again == {**first, "active_triggers": 1}


async def test_price_trigger_round_trip(service) -> None:
    assert await ok(service, "GET", "/api/v1/alerts/price-triggers") == []
    price = await last_price(service, "MSFT")
    above = await ok(
        service,
        "POST",
        "/api/v1/alerts/price-triggers",
        201,
        json={"symbol": "msft", "direction": "ABOVE", "price": round(price * 1.1, 2), "note": "breakout"},
    )
    below = await ok(
        service,
        "POST",
        "/api/v1/alerts/price-triggers",
        201,
        json={"symbol": "MSFT", "direction": "BELOW", "price": round(price * 0.9, 2)},
    )
    assert above["trigger_id"] != below["trigger_id"]
    assert above["symbol"] == "MSFT" and above["status"] == "ACTIVE" and above["note"] == "breakout"
    assert above["price"] == round(price * 1.1, 2) and above["triggered_time"] is None
    assert await ok(service, "GET", "/api/v1/alerts/price-triggers") == [above, below]

    deleted = await ok(service, "DELETE", f"/api/v1/alerts/price-triggers/{above['trigger_id']}")
    assert deleted == {"deleted": True, "trigger_id": above["trigger_id"]}
    assert await ok(service, "GET", "/api/v1/alerts/price-triggers") == [below]
    err = await error(service, "DELETE", f"/api/v1/alerts/price-triggers/{above['trigger_id']}", 404, "NOT_FOUND")
    assert above["trigger_id"] in err["message"]


async def test_a_trigger_that_would_fire_at_once_is_refused(service) -> None:
    price = await last_price(service, "AAPL")
    body = {"symbol": "AAPL", "direction": "ABOVE", "price": round(price * 0.9, 2)}
    err = await error(service, "POST", "/api/v1/alerts/price-triggers", 422, "VALIDATION_ERROR", json=body)
    assert bad_fields(err) == {"price"}
    body = {"symbol": "NOSUCHCO", "direction": "ABOVE", "price": 10}
    err = await error(service, "POST", "/api/v1/alerts/price-triggers", 422, "VALIDATION_ERROR", json=body)
    assert bad_fields(err) == {"symbol"}
    assert await ok(service, "GET", "/api/v1/alerts/price-triggers") == []


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"symbol": "AAPL", "direction": "UP", "price": 500}, {"direction"}),
        ({"symbol": "AAPL", "direction": "ABOVE", "price": 0}, {"price"}),
        ({"symbol": "AAPL", "direction": "ABOVE", "price": 1e300}, {"price"}),
        ({"symbol": "AAPL", "direction": "ABOVE"}, {"price"}),
        ({"direction": "BELOW", "price": 1}, {"symbol"}),
        ({"symbol": "AAPL", "direction": "ABOVE", "price": 500, "note": "n" * 501}, {"note"}),
    ],
)
async def test_bad_trigger_body_is_422_naming_the_field(service, body: dict, fields: set[str]) -> None:
    err = await error(service, "POST", "/api/v1/alerts/price-triggers", 422, "VALIDATION_ERROR", json=body)
    assert bad_fields(err) == fields


# --- preferences -------------------------------------------------------------------------------------------


async def test_preferences_merge_delete_some_and_delete_all(service) -> None:
    assert await ok(service, "GET", "/api/v1/preferences") == {}
    first = {"theme": "dark", "DefaultAccountNumber": "PAP1", "chart.width": "D"}
    assert await ok(service, "PUT", "/api/v1/preferences", json={"values": first}) == first
    merged = await ok(service, "PUT", "/api/v1/preferences", json={"values": {"theme": "light", "layout": "{}"}})
    assert merged == {**first, "theme": "light", "layout": "{}"}
    assert await ok(service, "GET", "/api/v1/preferences") == merged

    remaining = await ok(service, "DELETE", "/api/v1/preferences", params={"keys": "theme,never-set"})
    assert remaining == {k: v for k, v in merged.items() if k != "theme"}
    remaining = await ok(service, "DELETE", "/api/v1/preferences?keys=layout&keys=chart.width")
    assert remaining == {"DefaultAccountNumber": "PAP1"}
    assert await ok(service, "DELETE", "/api/v1/preferences") == {}
    assert await ok(service, "GET", "/api/v1/preferences") == {}


@pytest.mark.parametrize(
    ("body", "fields", "status"),
    [
        ({}, {"values"}, 422),
        ({"values": ["theme"]}, {"values"}, 400),  # an array where an object belongs: the wrong JSON type
        ({"values": {"theme": 1}}, {"values.theme"}, 400),  # a number where text belongs
        ({"values": {"bad key": "x"}}, {"values.bad key.[key]"}, 422),
        ({"values": {"big": "x" * 10_001}}, {"values.big"}, 422),
        ({"values": {"a": "b"}, "merge": False}, {"merge"}, 422),
    ],
)
async def test_bad_preferences_body_is_a_validation_error_naming_the_field(
    service, body: dict, fields: set[str], status: int
) -> None:
    await ok(service, "PUT", "/api/v1/preferences", json={"values": {"kept": "yes"}})
    err = await error(service, "PUT", "/api/v1/preferences", status, "VALIDATION_ERROR", json=body)
    assert bad_fields(err) == fields
    assert await ok(service, "GET", "/api/v1/preferences") == {"kept": "yes"}


async def test_deleting_preferences_with_a_bad_key_is_422_and_deletes_nothing(service) -> None:
    await ok(service, "PUT", "/api/v1/preferences", json={"values": {"kept": "yes"}})
    err = await error(service, "DELETE", "/api/v1/preferences", 422, "VALIDATION_ERROR", params={"keys": "kept,a b"})
    assert bad_fields(err) == {"keys.1"}
    err = await error(service, "DELETE", "/api/v1/preferences", 422, "VALIDATION_ERROR", params={"key": "kept"})
    assert bad_fields(err) == {"key"}
    assert await ok(service, "GET", "/api/v1/preferences") == {"kept": "yes"}


# --- holiday calendar --------------------------------------------------------------------------------------


async def test_holiday_calendar_defaults_to_this_year(service) -> None:
    holidays = await ok(service, "GET", "/api/v1/reference/holiday-calendar")
    assert holidays == await ok(service, "GET", "/api/v1/reference/holiday-calendar", params={"year": 2026})
    by_date = {h["date"]: h for h in holidays}
    assert all(d.startswith("2026-") for d in by_date) and list(by_date) == sorted(by_date)
    assert by_date["2026-11-26"]["status"] == "CLOSED" and "Thanksgiving" in by_date["2026-11-26"]["name"]
    assert by_date["2026-11-27"]["status"] == "EARLY_CLOSE" and by_date["2026-11-27"]["close_time"] == "13:00"
    assert all(h["close_time"] is None for h in holidays if h["status"] == "CLOSED")


async def test_holiday_calendar_of_another_year(service) -> None:
    holidays = await ok(service, "GET", "/api/v1/reference/holiday-calendar", params={"year": 2027})
    assert {h["date"] for h in holidays} >= {"2027-01-01", "2027-11-25", "2027-12-24"}


@pytest.mark.parametrize("year", ["1989", "2101", "next", "2026.5"])
async def test_holiday_calendar_year_out_of_range_is_422(service, year: str) -> None:
    err = await error(
        service, "GET", "/api/v1/reference/holiday-calendar", 422, "VALIDATION_ERROR", params={"year": year}
    )
    assert bad_fields(err) == {"year"}
