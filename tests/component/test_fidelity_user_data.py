"""The Fidelity user-data group (watchlists, preferences, alerts, price triggers, holidays) through the real
client against the fake upstream on a loopback socket."""

from __future__ import annotations

import asyncio

import pytest

from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.brokers.fidelity.user_data_preferences import PREFERENCE_PATH
from ftdesk.domain import errors as e
from ftdesk.domain.user_data import (
    PriceTriggerDraft,
    TriggerBasis,
    TriggerDirection,
    TriggerStatus,
    WatchlistDraft,
)
from tests.fakes import fidelity_user_data_payloads as u
from tests.fakes.fidelity_server import FakeFidelity, RecordedRequest
from tests.fakes.fidelity_user_data import PREFS, TRIGGERS, WATCHLISTS

DP = "dpservice.fidelity.com"


def received(fake: FakeFidelity, path: str) -> list[RecordedRequest]:
    return [r for r in fake.requests if r.path == path]


def assert_flat_data_call(request: RecordedRequest) -> None:
    """A flat body (no ``request``/``parameters`` wrapper) with the data header profile."""
    assert request.method == "POST" and request.host == DP
    assert isinstance(request.body, dict) and not {"request", "parameters"} & set(request.body)
    assert request.headers["AppId"] == "AP149323" and request.headers["fsreqid"].startswith("REQ")


# --- watchlists ---------------------------------------------------------------------------------


async def test_watchlists_are_listed_in_creation_order(broker: FidelityBroker, fake: FakeFidelity) -> None:
    watchlists = await broker.user_data.get_watchlists()
    assert [(w.name, w.symbols) for w in watchlists] == [("Buys", ["AAPL", "ES"]), ("Research", ["CODI"])]
    assert watchlists[1].watchlist_id == u.RESEARCH_LIST_ID and watchlists[1].raw is not None
    [request] = received(fake, f"{WATCHLISTS}/get")
    assert_flat_data_call(request)
    assert request.body["watchlists"] == [{"watchListIds": [], "watchListTypeCode": "WL"}]


async def test_a_new_watchlist_is_saved_and_listed(broker: FidelityBroker, fake: FakeFidelity) -> None:
    saved = await broker.user_data.save_watchlist(WatchlistDraft(name="Momentum", symbols=["nvda", " amd", "NVDA"]))
    assert saved.name == "Momentum" and saved.symbols == ["NVDA", "AMD"]
    assert saved.watchlist_id in {w.watchlist_id for w in await broker.user_data.get_watchlists()}
    assert saved.update_date.endswith("+00:00")
    [request] = received(fake, f"{WATCHLISTS}/save")
    assert_flat_data_call(request)
    [detail] = request.body["watchListDetails"]
    assert "watchListId" not in detail
    assert [(s["symbol"], s["rankId"]) for s in detail["securityDetails"]] == [("NVDA", "1"), ("AMD", "2")]


async def test_a_replace_keeps_the_ids_of_symbols_the_list_had(broker: FidelityBroker, fake: FakeFidelity) -> None:
    before = {s["symbol"]: s["securityId"] for s in fake.user_data.watchlists[1]["securityDetails"]}
    saved = await broker.user_data.save_watchlist(
        WatchlistDraft(watchlist_id=u.BUYS_LIST_ID, name="Buys 2026", symbols=["MSFT", "AAPL"])
    )
    assert (saved.watchlist_id, saved.name, saved.symbols) == (u.BUYS_LIST_ID, "Buys 2026", ["MSFT", "AAPL"])
    stored = fake.user_data.watchlists[1]
    assert stored["watchListName"] == "Buys 2026" and stored["isDefault"] is True
    ids = {s["symbol"]: s["securityId"] for s in stored["securityDetails"]}
    assert ids["AAPL"] == before["AAPL"] and ids["MSFT"] not in before.values()
    assert [w.name for w in await broker.user_data.get_watchlists()] == ["Buys 2026", "Research"]


async def test_unknown_ids_and_taken_names_are_refused_before_anything_is_saved(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    with pytest.raises(e.NotFound, match="no-such-list"):
        await broker.user_data.save_watchlist(WatchlistDraft(watchlist_id="no-such-list", name="X"))
    with pytest.raises(e.Conflict, match="'Research'"):
        await broker.user_data.save_watchlist(WatchlistDraft(name="research", symbols=["SPY"]))
    with pytest.raises(e.Conflict):
        await broker.user_data.save_watchlist(WatchlistDraft(watchlist_id=u.BUYS_LIST_ID, name="RESEARCH"))
    assert received(fake, f"{WATCHLISTS}/save") == []
    renamed = await broker.user_data.save_watchlist(
        WatchlistDraft(watchlist_id=u.BUYS_LIST_ID, name="buys")
    )  # its own name
    assert renamed.name == "buys"


async def test_a_refused_save_carries_the_upstream_message(broker: FidelityBroker, fake: FakeFidelity) -> None:
    fake.user_data.watchlist_refusal = ("WL0042", "You can have at most 50 watchlists")
    with pytest.raises(e.BrokerError, match="at most 50 watchlists") as caught:
        await broker.user_data.save_watchlist(WatchlistDraft(name="One too many"))
    assert caught.value.details == {"upstream_codes": ["WL0042"]}
    assert len(fake.user_data.watchlists) == 2


# --- preferences --------------------------------------------------------------------------------


async def test_preferences_round_trip_in_ftdesks_own_path(broker: FidelityBroker, fake: FakeFidelity) -> None:
    assert await broker.user_data.get_preferences() == {}  # Trader+'s own settings are not ftdesk's
    assert await broker.user_data.put_preferences({"theme": "dark", "chart.days": "30"}) == {
        "chart.days": "30",
        "theme": "dark",
    }
    assert await broker.user_data.put_preferences({"theme": "light"}) == {"chart.days": "30", "theme": "light"}
    fake.user_data.preferences[PREFERENCE_PATH]["columns"] = 3  # a JSON number, as the upstream may send
    assert (await broker.user_data.get_preferences())["columns"] == "3"
    assert await broker.user_data.delete_preferences(["theme", "never-set"]) == {"chart.days": "30", "columns": "3"}
    [delete] = received(fake, f"{PREFS}/deletepreference")
    assert_flat_data_call(delete)
    assert delete.body == {"preferences": [{"prefKeys": ["theme"], "preferencePath": PREFERENCE_PATH}]}
    save = received(fake, f"{PREFS}/savepreference")[0]
    assert save.body == {
        "preferences": [{"prefValues": {"theme": "dark", "chart.days": "30"}, "preferencePath": PREFERENCE_PATH}]
    }


async def test_deleting_everything_leaves_trader_plus_settings_alone(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    await broker.user_data.put_preferences({"a": "1", "b": "2"})
    assert await broker.user_data.delete_preferences(None) == {}
    assert fake.user_data.preferences["user/atn/global/v1"]["DefaultAccountNumber"] == "250357290"
    assert await broker.user_data.delete_preferences(["a"]) == {}  # nothing left: no delete is sent
    assert len(received(fake, f"{PREFS}/deletepreference")) == 1


async def test_a_refused_preference_write_is_a_broker_error(broker: FidelityBroker, fake: FakeFidelity) -> None:
    fake.failures[f"{PREFS}/savepreference"] = (500, {"message": "Preference service unavailable"})
    with pytest.raises(e.BrokerError, match="Preference service unavailable"):
        await broker.user_data.put_preferences({"theme": "dark"})


# --- alerts -------------------------------------------------------------------------------------


async def test_subscribing_activates_the_atbt_alerts_and_hides_the_credentials(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    subscription = await broker.user_data.subscribe_alerts()
    assert subscription.active and subscription.delivery == "/api/v1/streaming/events"
    assert subscription.active_triggers == 1  # the upstream's one active trigger, a percent trigger
    shown = subscription.model_dump_json()
    assert u.EMS_PASSWORD not in shown and u.EMS_USER_ID not in shown
    [(headers, body)] = fake.user_data.soap_requests
    assert headers["SOAPAction"] == "CustomerSignOn"
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert "<aut:AlertCode>ATBT</aut:AlertCode>" in body and "<prin:RequestorId>fidelity</prin:RequestorId>" in body
    await broker.user_data.create_price_trigger(
        PriceTriggerDraft(symbol="AAPL", direction=TriggerDirection.BELOW, price=90)
    )
    assert (await broker.user_data.subscribe_alerts()).active_triggers == 2


async def test_a_refused_or_failed_subscription_is_a_broker_error(broker: FidelityBroker, fake: FakeFidelity) -> None:
    fake.user_data.sign_on_success = False
    with pytest.raises(e.BrokerError, match="ResultCode FAILURE"):
        await broker.user_data.subscribe_alerts()
    fake.user_data.sign_on_fault = "Alert service is down"
    with pytest.raises(e.BrokerError, match="Alert service is down") as caught:
        await broker.user_data.subscribe_alerts()
    assert u.EMS_PASSWORD not in str(caught.value)
    fake.expire()
    with pytest.raises(e.SessionExpired):
        await broker.user_data.subscribe_alerts()


async def test_price_triggers_are_created_listed_across_pages_and_deleted(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    fired, percent = await broker.user_data.get_price_triggers()  # in creation order
    assert (fired.trigger_id, fired.symbol, fired.status, fired.price, fired.basis) == (
        "1095170001",
        "AAPL",
        TriggerStatus.TRIGGERED,
        150.0,
        TriggerBasis.PRICE,
    )
    assert (percent.symbol, percent.direction, percent.price, percent.basis) == (
        "SPY",
        TriggerDirection.BELOW,
        4.0,
        TriggerBasis.PERCENT,
    )
    assert fired.note == "breakout" and fired.triggered_time is not None
    created = [
        await broker.user_data.create_price_trigger(
            PriceTriggerDraft(symbol="msft", direction=TriggerDirection.ABOVE, price=500 + n, note=f"n{n}")
        )
        for n in range(3)
    ]
    assert [(t.symbol, t.price, t.status, t.note) for t in created] == [
        ("MSFT", 500 + n, TriggerStatus.ACTIVE, f"n{n}") for n in range(3)
    ]
    listed = await broker.user_data.get_price_triggers()
    # Four active (the percent one too) make two pages of the active list: all three are found.
    assert [t.trigger_id for t in listed] == [fired.trigger_id, percent.trigger_id] + [t.trigger_id for t in created]
    create = received(fake, f"{TRIGGERS}/create")[0]
    assert_flat_data_call(create)
    assert create.body["triggers"][0]["operator"] == "greaterThan" and create.body["triggers"][0]["value"] == 500

    await broker.user_data.delete_price_trigger(created[0].trigger_id)
    assert created[0].trigger_id not in fake.user_data.active_trigger_ids()
    [delete] = received(fake, f"{TRIGGERS}/delete")
    assert delete.body == {"triggers": [{"id": created[0].trigger_id}]}
    await broker.user_data.delete_price_trigger(fired.trigger_id)  # a fired one can go too
    with pytest.raises(e.NotFound):
        await broker.user_data.delete_price_trigger(created[0].trigger_id)
    assert len(received(fake, f"{TRIGGERS}/delete")) == 2  # the unknown id never reached the delete


async def test_list_requests_name_the_status_and_offset(broker: FidelityBroker, fake: FakeFidelity) -> None:
    await broker.user_data.get_price_triggers()
    lists = received(fake, f"{TRIGGERS}/list")
    assert len(lists) == 2 and all(r.method == "GET" and r.headers["AppId"] == "AP149323" for r in lists)
    assert sorted(q["status"] for q in fake.user_data.trigger_list_queries) == ["active", "expired"]
    # Every symbol is asked for without a symbol parameter: an empty symbol= filters on the empty symbol.
    assert all("symbol" not in q and q["offset"] == "0" for q in fake.user_data.trigger_list_queries)


async def test_a_refused_trigger_carries_the_upstream_message(broker: FidelityBroker, fake: FakeFidelity) -> None:
    fake.failures[f"{TRIGGERS}/create"] = (400, {"message": "Symbol is not eligible for alerts"})
    with pytest.raises(e.BrokerError, match="Symbol is not eligible for alerts"):
        await broker.user_data.create_price_trigger(
            PriceTriggerDraft(symbol="ZZZZ", direction=TriggerDirection.ABOVE, price=1)
        )


# --- holiday calendar ---------------------------------------------------------------------------


async def test_the_holiday_calendar_of_this_year_and_next(broker: FidelityBroker, fake: FakeFidelity) -> None:
    year = fake.today().year
    holidays = await broker.market_data.get_holiday_calendar(None)
    assert holidays and all(h.date.startswith(f"{year}-") for h in holidays)
    assert [h.date for h in holidays] == sorted(h.date for h in holidays)
    assert f"{year}-01-01" in {h.date for h in holidays if h.status == "CLOSED"}
    early = {h.date: h.close_time for h in holidays if h.status == "EARLY_CLOSE"}
    assert early[f"{year}-07-03"] == "13:00"
    assert (await broker.market_data.get_holiday_calendar(year + 1))[0].date == f"{year + 1}-01-01"
    assert await broker.market_data.get_holiday_calendar(year - 5) == []
    calls = [r for r in fake.requests if r.path.endswith("/holidaycalendar/v1")]
    assert all(r.method == "GET" and r.headers["fsreqid"].startswith("REQ") for r in calls)


async def test_concurrent_calendar_reads_share_one_upstream_call(broker: FidelityBroker, fake: FakeFidelity) -> None:
    path = "/ftgw/dpdirect/market/holidaycalendar/v1"
    fake.hold(path)
    reads = [asyncio.create_task(broker.market_data.get_holiday_calendar(None)) for _ in range(3)]
    async with asyncio.timeout(5):
        while fake.hits[path] == 0:  # noqa: ASYNC110 - the fake has no arrival event
            await asyncio.sleep(0.005)
    fake.release(path)
    results = await asyncio.gather(*reads)
    assert results[0] == results[1] == results[2] and fake.hits[path] == 1


async def test_a_failing_calendar_is_a_broker_error(broker: FidelityBroker, fake: FakeFidelity) -> None:
    fake.failures["/ftgw/dpdirect/market/holidaycalendar/v1"] = (500, {"message": "Calendar unavailable"})
    with pytest.raises(e.BrokerError, match=r"HTTP 500\).*Calendar unavailable"):
        await broker.market_data.get_holiday_calendar(None)


# --- session ------------------------------------------------------------------------------------


async def test_every_user_data_call_needs_a_live_session(broker: FidelityBroker, fake: FakeFidelity) -> None:
    fake.expire()
    with pytest.raises(e.SessionExpired):
        await broker.user_data.get_watchlists()
    with pytest.raises(e.SessionExpired):
        await broker.user_data.get_preferences()
    await broker.session.logout()
    calls = [
        broker.user_data.get_watchlists(),
        broker.user_data.save_watchlist(WatchlistDraft(name="x")),
        broker.user_data.subscribe_alerts(),
        broker.user_data.get_price_triggers(),
        broker.user_data.create_price_trigger(
            PriceTriggerDraft(symbol="SPY", direction=TriggerDirection.ABOVE, price=1)
        ),
        broker.user_data.delete_price_trigger("1"),
        broker.user_data.get_preferences(),
        broker.user_data.put_preferences({"a": "b"}),
        broker.user_data.delete_preferences(None),
        broker.market_data.get_holiday_calendar(None),
    ]
    for call in calls:
        with pytest.raises(e.AuthRequired):
            await call
