"""Trading safety through the real server: live gate, bound previews, Idempotency-Key, journal, validation."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest

from ftdesk.domain.accounts import AccountType
from ftdesk.service.orders.bodies import EquityPlaceBody, EquityPreviewBody
from ftdesk.service.orders.journal import JournalAction, JournalDraft, OrderFacts
from tests.fakes.clock import ManualClock

API = "/api/v1"
PLACE_METHODS = (
    "place_equity_order",
    "place_option_order",
    "place_multileg_order",
    "place_replace",
    "place_conditional_order",
    "place_conditional_replace",
)


class BrokerSpy:
    """Counts calls of orders-group methods (wrapped on the broker's orders object) and can hold them in flight."""

    def __init__(self, orders: Any, *names: str) -> None:
        self.calls: Counter[str] = Counter()
        self.entered = asyncio.Event()
        self.released = asyncio.Event()
        self.released.set()
        for name in names:
            setattr(orders, name, self._wrap(name, getattr(orders, name)))

    def _wrap(self, name: str, original: Any) -> Any:
        async def spy(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            self.entered.set()
            await self.released.wait()
            return await original(*args, **kwargs)

        return spy

    def hold(self) -> None:
        self.released.clear()

    @property
    def places(self) -> int:
        return sum(self.calls[name] for name in PLACE_METHODS)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def live(start_service, clock):
    service = await start_service(clock=clock, live_trading="true", preview_ttl="5")
    await service.login()
    return service


def spy_on(service, *names: str) -> BrokerSpy:
    return BrokerSpy(service.context.broker.orders, *(names or PLACE_METHODS))


async def individual_account(service) -> str:
    accounts = await service.context.broker.accounts.get_accounts()
    return next(a.acct_num for a in accounts if a.acct_type is AccountType.INDIVIDUAL)


async def resting_buy(service, acct: str, qty: int = 1) -> dict[str, Any]:
    (quote,) = await service.context.broker.quote_feed.snapshot(["AAPL"])
    return {
        "acctNum": acct,
        "symbol": "AAPL",
        "orderActionCode": "B",
        "qty": qty,
        "priceTypeCode": "L",
        "limitPrice": round(quote.last * 0.8, 2),
        "tifCode": "G",
    }


async def preview(service, body: dict[str, Any], kind: str = "equity") -> str:
    status, answer = await service.call("POST", f"{API}/orders/{kind}/preview", json=body)
    assert status == 200, answer
    return answer["data"]["conf_num"]


async def place(service, body: dict[str, Any], kind: str = "equity", key: str | None = None) -> tuple[int, dict]:
    headers = {"Idempotency-Key": key} if key else {}
    return await service.call("POST", f"{API}/orders/{kind}/place", json=body, headers=headers)


async def post_raw(service, path: str, body: dict[str, Any], key: str) -> tuple[int, str, str | None]:
    """POST and return the status, the raw body and the Idempotent-Replayed header."""
    headers = {**service.auth, "Idempotency-Key": key}
    async with service.http.post(service.url(path), json=body, headers=headers) as response:
        return response.status, await response.text(), response.headers.get("Idempotent-Replayed")


async def journal(service, **params: str) -> list[dict[str, Any]]:
    status, body = await service.call("GET", f"{API}/orders/journal", params=params or None)
    assert status == 200, body
    return body["data"]


async def orders(service) -> list[dict[str, Any]]:
    status, body = await service.call("GET", f"{API}/orders/status")
    assert status == 200, body
    return body["data"]


def assert_error(answer: tuple[int, dict], status: int, code: str) -> dict[str, Any]:
    assert answer[0] == status, answer
    assert answer[1]["ok"] is False and answer[1]["error"]["code"] == code, answer
    return answer[1]["error"]


# --- the live gate ---------------------------------------------------------------------------------------------


def place_bodies(acct: str, equity: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A well-formed body for each of the six place endpoints."""
    legs = [
        {"symbol": "AAPL", "order_action_code": "B", "qty": 1, "price_type_code": "L", "limit_price": 100.0},
        {"symbol": "AAPL", "order_action_code": "S", "qty": 1, "price_type_code": "L", "limit_price": 400.0},
    ]
    conditional = {"acct_num": acct, "cond_order_type_code": "OTO", "legs": legs, "conf_nums": ["AAAAAAAA", "BBBBBBBB"]}
    return {
        "equity": {**equity, "confNum": "AAAAAAAA"},
        "option": {
            "acctNum": acct,
            "symbol": "AAPL261218C270",
            "orderActionCode": "BC",
            "qty": 1,
            "confNum": "AAAAAAAA",
        },
        "options": {
            "acct_num": acct,
            "underlying": "AAPL",
            "legs": [
                {"symbol": "AAPL261218C270", "action": "BO", "qty": 1},
                {"symbol": "AAPL261218C280", "action": "SO", "qty": 1},
            ],
            "price_type": "M",
            "conf_num": "AAAAAAAA",
        },
        "replace": {**equity, "orig_conf_num": "CCCCCCCC", "confNum": "AAAAAAAA"},
        "conditional": conditional,
        "conditional/replace": {**conditional, "orig_conf_nums": ["CCCCCCCC"]},
    }


async def test_every_place_endpoint_is_refused_while_live_trading_is_off(start_service, clock) -> None:
    service = await start_service(clock=clock)  # FTSERVICE_LIVE_TRADING defaults to false
    spy = spy_on(service)
    # The gate comes before the session: logged out, a place is still LIVE_TRADING_DISABLED.
    error = assert_error(await place(service, {"acctNum": "X", "symbol": "AAPL", "orderActionCode": "B", "qty": 1,
                                               "priceTypeCode": "M", "confNum": "AAAAAAAA"}),
                         403, "LIVE_TRADING_DISABLED")  # fmt: skip
    assert "dry-run" in error["message"]
    await service.login()
    acct = await individual_account(service)
    equity = await resting_buy(service, acct)
    bodies = place_bodies(acct, equity)
    bodies["equity"]["confNum"] = await preview(service, equity)  # even a real preview does not pass the gate
    for kind, body in bodies.items():
        assert_error(await place(service, body, kind), 403, "LIVE_TRADING_DISABLED")

    assert spy.places == 0
    assert await orders(service) == []
    entries = await journal(service)
    refused = [(e["endpoint"], e["outcome"], e["error_code"]) for e in entries if e["action"] == "place"]
    assert refused == [
        (f"POST /api/v1/orders/{kind}/place", "refused", "LIVE_TRADING_DISABLED")
        for kind in ["equity", "equity", "option", "options", "replace", "conditional", "conditional/replace"][::-1]
    ]
    assert entries[0]["conf_nums"] == ["AAAAAAAA", "BBBBBBBB"] and entries[0]["orig_conf_nums"] == ["CCCCCCCC"]


async def test_the_gate_is_read_per_request_and_never_blocks_a_cancel(live) -> None:
    acct = await individual_account(live)
    body = await resting_buy(live, acct)
    conf = await preview(live, body)
    assert (await place(live, {**body, "confNum": conf}))[0] == 200

    live.context.live.set(False, "tray")  # what the tray's switch does
    second = await resting_buy(live, acct, qty=2)
    second_conf = await preview(live, second)  # previews work in dry-run mode
    assert_error(await place(live, {**second, "confNum": second_conf}), 403, "LIVE_TRADING_DISABLED")
    cancel = {"acct_num": acct, "action_code": "B"}
    status, cancel_preview = await live.call("POST", f"{API}/orders/{conf}/cancel/preview", json=cancel)
    assert status == 200 and cancel_preview["data"]["is_accepted"] is True
    status, canceled = await live.call("POST", f"{API}/orders/{conf}/cancel", json=cancel)
    assert status == 200 and canceled["data"]["is_accepted"] is True

    live.context.live.set(True, "tray")
    status, placed = await place(live, {**second, "confNum": second_conf})  # the refusal did not use the preview
    assert status == 200 and placed["data"]["conf_num"] == second_conf
    statuses = {o["id_detail"]["conf_num"]: o["status_detail"]["status"] for o in await orders(live)}
    assert statuses == {conf: "CANCELED", second_conf: "OPEN"}


# --- bound previews ------------------------------------------------------------------------------------------


async def test_place_needs_a_preview_made_by_this_service(live) -> None:
    spy = spy_on(live)
    acct = await individual_account(live)
    body = await resting_buy(live, acct)

    # conf_num is a required field of every place body: leaving it out is a validation error naming it.
    missing = assert_error(await place(live, body), 422, "VALIDATION_ERROR")
    assert [(d["field"], d["type"]) for d in missing["details"]] == [("confNum", "missing")]
    unknown = assert_error(await place(live, {**body, "confNum": "ZZZZZZZZ"}), 409, "PREVIEW_REQUIRED")
    assert unknown["details"] == {
        "reason": "unknown",
        "conf_num": "ZZZZZZZZ",
        "preview_endpoint": "POST /api/v1/orders/equity/preview",
    }
    # A preview the broker made for someone else (not through this service) is unknown here too.
    behind_the_back = (await live.context.broker.orders.preview_equity_order(
        EquityPreviewBody.model_validate_json(json.dumps(body)).to_domain())).conf_num  # fmt: skip
    other = assert_error(await place(live, {**body, "confNum": behind_the_back}), 409, "PREVIEW_REQUIRED")
    assert other["details"]["reason"] == "unknown"

    assert spy.places == 0 and await orders(live) == []
    refusals = [(e["outcome"], e["error_code"]) for e in await journal(live) if e["action"] == "place"]
    assert refusals == [("refused", "PREVIEW_REQUIRED")] * 2


async def test_a_preview_expires_after_the_preview_ttl(live, clock) -> None:
    spy = spy_on(live)
    acct = await individual_account(live)
    body = await resting_buy(live, acct)
    stale = await preview(live, body)
    await clock.advance(6)  # FTSERVICE_PREVIEW_TTL=5 in this fixture
    expired = assert_error(await place(live, {**body, "confNum": stale}), 409, "PREVIEW_REQUIRED")
    assert (expired["details"]["reason"], expired["details"]["preview_ttl"]) == ("expired", 5)
    assert expired["details"]["age_seconds"] >= 6
    assert spy.places == 0

    fresh = await preview(live, body)
    await clock.advance(4)
    assert (await place(live, {**body, "confNum": fresh}))[0] == 200
    assert spy.places == 1


async def test_a_preview_places_one_order_only(live) -> None:
    spy = spy_on(live)
    acct = await individual_account(live)
    body = await resting_buy(live, acct)
    conf = await preview(live, body)
    assert (await place(live, {**body, "confNum": conf}))[0] == 200
    used = assert_error(await place(live, {**body, "confNum": conf}), 409, "PREVIEW_REQUIRED")
    assert used["details"]["reason"] == "already_used"
    assert spy.places == 1 and len(await orders(live)) == 1


async def test_a_place_must_repeat_the_previewed_order(live) -> None:
    spy = spy_on(live)
    acct = await individual_account(live)
    body = await resting_buy(live, acct)
    conf = await preview(live, body)
    changed = {**body, "qty": 2, "limitPrice": body["limitPrice"] + 1, "confNum": conf}
    mismatch = assert_error(await place(live, changed), 409, "PREVIEW_MISMATCH")
    assert mismatch["details"]["fields"] == [
        {"field": "qty", "previewed": 1, "given": 2},
        {"field": "limitPrice", "previewed": body["limitPrice"], "given": body["limitPrice"] + 1},
    ]
    assert "qty, limitPrice" in mismatch["message"]
    other_kind = {"acctNum": acct, "symbol": "AAPL261218C270", "orderActionCode": "BC", "qty": 1, "confNum": conf}
    kind = assert_error(await place(live, other_kind, "option"), 409, "PREVIEW_MISMATCH")
    assert kind["details"]["fields"] == [{"field": "order_kind", "previewed": "equity", "given": "option"}]
    assert spy.places == 0

    # The refused attempts did not use the preview: the previewed order can still be placed.
    assert (await place(live, {**body, "confNum": conf}))[0] == 200
    outcomes = [(e["action"], e["outcome"], e["error_code"]) for e in await journal(live)]
    assert outcomes == [
        ("place", "accepted", None),
        ("place", "refused", "PREVIEW_MISMATCH"),
        ("place", "refused", "PREVIEW_MISMATCH"),
        ("preview", "accepted", None),
    ]


async def test_conditional_binding_names_the_leg_field(live) -> None:
    acct = await individual_account(live)
    equity = await resting_buy(live, acct)
    low = equity["limitPrice"]
    legs = [
        {"symbol": "AAPL", "order_action_code": "B", "qty": 5, "price_type_code": "L", "limit_price": low},
        {"symbol": "AAPL", "order_action_code": "S", "qty": 5, "price_type_code": "L", "limit_price": low * 1.5},
    ]
    order = {"acct_num": acct, "cond_order_type_code": "OTO", "legs": legs}
    status, answer = await live.call("POST", f"{API}/orders/conditional/preview", json=order)
    assert status == 200, answer
    conf_nums = answer["data"]["conf_nums"]
    moved = {**order, "legs": [legs[0], {**legs[1], "limit_price": low * 1.6}], "conf_nums": conf_nums}
    mismatch = assert_error(await place(live, moved, "conditional"), 409, "PREVIEW_MISMATCH")
    assert [(f["field"], f["previewed"], f["given"]) for f in mismatch["details"]["fields"]] == [
        ("legs.1.limit_price", low * 1.5, low * 1.6)
    ]
    reversed_confs = assert_error(
        await place(live, {**order, "conf_nums": conf_nums[::-1]}, "conditional"), 409, "PREVIEW_MISMATCH"
    )
    assert reversed_confs["details"]["fields"][0]["field"] == "conf_nums"
    # All the conf_nums but the last is what the upstream SDK sends; it places the whole order.
    status, placed = await place(live, {**order, "conf_nums": conf_nums[:-1]}, "conditional")
    assert status == 200 and placed["data"]["conf_nums"] == conf_nums
    used = assert_error(await place(live, {**order, "conf_nums": conf_nums}, "conditional"), 409, "PREVIEW_REQUIRED")
    assert used["details"]["reason"] == "already_used"


async def test_a_place_the_broker_rejects_uses_up_its_preview(live) -> None:
    spy = spy_on(live)
    acct = await individual_account(live)
    body = await resting_buy(live, acct)
    original = await preview(live, body)
    await place(live, {**body, "confNum": original})
    replacement = {**body, "orig_conf_num": original, "qty": 3}
    conf = await preview(live, replacement, "replace")
    status, _ = await live.call("POST", f"{API}/orders/{original}/cancel", json={"acct_num": acct, "action_code": "B"})
    assert status == 200

    rejected = assert_error(await place(live, {**replacement, "confNum": conf}, "replace"), 422, "ORDER_REJECTED")
    assert rejected["details"]["reason"] == "ORDER_NOT_REPLACEABLE"
    again = assert_error(await place(live, {**replacement, "confNum": conf}, "replace"), 409, "PREVIEW_REQUIRED")
    assert again["details"]["reason"] == "already_used"
    assert spy.calls["place_replace"] == 1
    latest = (await journal(live))[1]
    assert (latest["action"], latest["order_kind"], latest["outcome"], latest["error_code"]) == (
        "place",
        "replace",
        "rejected",
        "ORDER_REJECTED",
    )
    assert latest["orig_conf_nums"] == [original] and "can no longer be replaced" in latest["message"]


async def test_a_place_that_never_reached_the_broker_keeps_its_preview(live) -> None:
    acct = await individual_account(live)
    body = await resting_buy(live, acct)
    conf = await preview(live, body)
    await live.call("POST", f"{API}/auth/logout")
    assert_error(await place(live, {**body, "confNum": conf}), 401, "AUTH_REQUIRED")
    entry = (await journal(live))[0]
    assert (entry["outcome"], entry["error_code"]) == ("error", "AUTH_REQUIRED")
    await live.login()
    assert (await place(live, {**body, "confNum": conf}))[0] == 200


# --- Idempotency-Key -----------------------------------------------------------------------------------------------


async def test_a_retried_place_with_the_same_key_returns_the_first_answer(live) -> None:
    spy = spy_on(live)
    acct = await individual_account(live)
    body = await resting_buy(live, acct)
    placed_body = {**body, "confNum": await preview(live, body)}
    path = f"{API}/orders/equity/place"
    first = await post_raw(live, path, placed_body, "order-1")
    second = await post_raw(live, path, placed_body, "order-1")
    assert first[0] == second[0] == 200
    assert second[1] == first[1]  # the same envelope, byte for byte
    assert (first[2], second[2]) == (None, "true")
    assert spy.places == 1 and len(await orders(live)) == 1
    # The same body spelt differently is the same request.
    snake = {"acct_num": acct, "symbol": "aapl", "order_action_code": "B", "qty": 1.0, "price_type_code": "L",
             "limit_price": body["limitPrice"], "tif_code": "G", "conf_num": placed_body["confNum"]}  # fmt: skip
    assert (await post_raw(live, path, snake, "order-1"))[1] == first[1]

    other = {**placed_body, "qty": 2}
    reused = assert_error(await place(live, other, key="order-1"), 422, "IDEMPOTENCY_KEY_REUSED")
    assert reused["details"] == {"idempotency_key": "order-1", "state": "reused"}
    other_endpoint = {**placed_body, "orig_conf_num": "ZZZZZZZZ"}
    assert_error(await place(live, other_endpoint, "replace", key="order-1"), 422, "IDEMPOTENCY_KEY_REUSED")
    assert spy.places == 1
    bad_key = assert_error(await place(live, placed_body, key="not ok\u00e9"), 422, "VALIDATION_ERROR")
    assert bad_key["details"][0]["field"] == "Idempotency-Key"


async def test_a_key_in_flight_is_a_conflict_and_the_journal_shows_pending(live) -> None:
    spy = spy_on(live)
    acct = await individual_account(live)
    body = await resting_buy(live, acct)
    placed_body = {**body, "confNum": await preview(live, body)}
    spy.hold()
    first = asyncio.create_task(place(live, placed_body, key="slow-1"))
    await spy.entered.wait()
    pending = (await journal(live))[0]
    assert (pending["action"], pending["outcome"], pending["finished_time"]) == ("place", "pending", None)
    assert pending["idempotency_key"] == "slow-1" and pending["conf_num"] == placed_body["confNum"]
    conflict = assert_error(await place(live, placed_body, key="slow-1"), 409, "CONFLICT")
    assert conflict["details"]["state"] == "in_flight"
    in_use = assert_error(await place(live, placed_body), 409, "PREVIEW_REQUIRED")  # no key: the preview is busy
    assert in_use["details"]["reason"] == "in_use"
    spy.released.set()
    status, answer = await first
    assert status == 200
    assert (await place(live, placed_body, key="slow-1")) == (status, answer)
    assert spy.places == 1
    finished = next(e for e in await journal(live) if e["entry_id"] == pending["entry_id"])
    assert finished["outcome"] == "accepted" and finished["finished_time"]


async def test_refusals_before_the_broker_are_not_remembered_but_rejections_are(live) -> None:
    spy = spy_on(live)
    acct = await individual_account(live)
    body = await resting_buy(live, acct)
    placed_body = {**body, "confNum": await preview(live, body)}
    live.context.live.set(False, "tray")
    assert_error(await place(live, placed_body, key="k-1"), 403, "LIVE_TRADING_DISABLED")
    live.context.live.set(True, "tray")
    assert (await place(live, placed_body, key="k-1"))[0] == 200  # the key was free again

    original = placed_body["confNum"]
    replacement = {**body, "orig_conf_num": original, "qty": 2}
    replace_body = {**replacement, "confNum": await preview(live, replacement, "replace")}
    await live.call("POST", f"{API}/orders/{original}/cancel", json={"acct_num": acct, "action_code": "B"})
    path = f"{API}/orders/replace/place"
    first = await post_raw(live, path, replace_body, "k-2")
    second = await post_raw(live, path, replace_body, "k-2")
    assert first[0] == second[0] == 422 and second[1] == first[1] and second[2] == "true"
    assert spy.calls["place_replace"] == 1


async def test_keys_and_the_journal_survive_a_restart(start_service, clock) -> None:
    service = await start_service(clock=clock, live_trading="true")
    await service.login()
    acct = await individual_account(service)
    body = await resting_buy(service, acct)
    placed_body = {**body, "confNum": await preview(service, body)}
    path = f"{API}/orders/equity/place"
    first = await post_raw(service, path, placed_body, "survivor")
    assert first[0] == 200
    before = await journal(service)
    # A place in flight when the process dies: its row was written before the broker call, never finished.
    in_flight = {**body, "qty": 7, "confNum": "DIEDDIED"}
    in_flight_hash = EquityPlaceBody.model_validate_json(json.dumps(in_flight)).body_hash()
    journal_db = service.context.orders.journal
    journal_db.claim_key("crashed", "POST /api/v1/orders/equity/place", in_flight_hash)
    journal_db.begin(
        JournalDraft(
            request_id="req-crash",
            endpoint="POST /api/v1/orders/equity/place",
            action=JournalAction.PLACE,
            order_kind="equity",
            facts=OrderFacts(acct_num=acct, symbol="AAPL", side="B", qty=7, conf_nums=("DIEDDIED",)),
            body_hash=in_flight_hash,
            idempotency_key="crashed",
        )
    )
    await service.runtime.stop()

    again = await start_service(clock=clock, live_trading="true")
    await again.login()
    spy = spy_on(again)
    after = await journal(again)
    assert after[1:] == before
    crashed = after[0]
    assert (crashed["request_id"], crashed["outcome"], crashed["qty"]) == ("req-crash", "unknown", 7)
    assert "check GET /api/v1/orders/status" in crashed["message"]

    replay = await post_raw(again, path, placed_body, "survivor")
    assert replay[:2] == first[:2] and replay[2] == "true"
    unknown = assert_error(await place(again, in_flight, key="crashed"), 409, "CONFLICT")
    assert unknown["details"]["state"] == "unknown"
    assert spy.places == 0
    assert [o["id_detail"]["conf_num"] for o in await orders(again)] == [placed_body["confNum"]]


# --- validation at the edge --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"limitPrice": None}, "limitPrice"),
        ({"priceTypeCode": "S"}, "limitPrice"),  # a stop order with a limit price and no stop price
        ({"qty": -5}, "qty"),
        ({"qty": 1.5}, "qty"),
        ({"orderActionCode": "BUY"}, "orderActionCode"),
        ({"limitPrice": 1e9}, "limitPrice"),
        ({"symbol": "AA PL"}, "symbol"),
        ({"tifCode": "X"}, "tifCode"),
    ],
)
async def test_invalid_orders_are_422_and_never_reach_the_broker(live, change: dict[str, Any], field: str) -> None:
    await assert_refused_before_the_broker(live, change, field, 422)


@pytest.mark.parametrize(
    ("change", "field"),
    [({"qty": True}, "qty"), ({"qty": "10"}, "qty"), ({"limitPrice": "1.50"}, "limitPrice")],
)
async def test_orders_of_the_wrong_json_types_are_400_and_never_reach_the_broker(
    live, change: dict[str, Any], field: str
) -> None:
    await assert_refused_before_the_broker(live, change, field, 400)


async def assert_refused_before_the_broker(live, change: dict[str, Any], field: str, expected: int) -> None:
    spy = spy_on(live, "preview_equity_order", *PLACE_METHODS)
    acct = await individual_account(live)
    body = {k: v for k, v in {**(await resting_buy(live, acct)), **change}.items() if v is not None}
    for kind, extra in (("preview", {}), ("place", {"confNum": "AAAAAAAA"})):
        status, answer = await live.call("POST", f"{API}/orders/equity/{kind}", json={**body, **extra})
        error = assert_error((status, answer), expected, "VALIDATION_ERROR")
        assert field in {d["field"] for d in error["details"]}, error
    assert sum(spy.calls.values()) == 0
    assert await journal(live) == []


async def test_a_stop_order_names_the_missing_stop_price(live) -> None:
    acct = await individual_account(live)
    body = {"acctNum": acct, "symbol": "AAPL", "orderActionCode": "S", "qty": 1, "priceTypeCode": "S"}
    error = assert_error(await live.call("POST", f"{API}/orders/equity/preview", json=body), 422, "VALIDATION_ERROR")
    (detail,) = error["details"]
    assert detail["field"] == "stopPrice" and "required when priceTypeCode is S or SL" in detail["message"]
