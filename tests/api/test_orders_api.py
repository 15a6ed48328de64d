"""The order endpoints through the real server and the paper broker: what a script author sees."""

from __future__ import annotations

from typing import Any

import pytest

from ftdesk.domain.accounts import AccountType
from tests.fakes.clock import ManualClock

API = "/api/v1"


@pytest.fixture
async def service(start_service):
    running = await start_service(clock=ManualClock(), live_trading="true")
    await running.login()
    return running


async def individual_account(service) -> str:
    accounts = await service.context.broker.accounts.get_accounts()
    return next(a.acct_num for a in accounts if a.acct_type is AccountType.INDIVIDUAL)


async def last_price(service, symbol: str) -> float:
    (quote,) = await service.context.broker.quote_feed.snapshot([symbol])
    return quote.last


async def resting_buy(service, acct: str, *, qty: int = 1, symbol: str = "AAPL") -> dict[str, Any]:
    """An equity limit buy 20% under the market: it rests OPEN."""
    return {
        "acctNum": acct,
        "symbol": symbol,
        "orderActionCode": "B",
        "qty": qty,
        "priceTypeCode": "L",
        "limitPrice": round(await last_price(service, symbol) * 0.8, 2),
        "tifCode": "G",
    }


async def preview_and_place(service, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    status, preview = await service.call("POST", f"{API}/orders/{kind}/preview", json=body)
    assert status == 200, preview
    status, placed = await service.call(
        "POST", f"{API}/orders/{kind}/place", json={**body, "confNum": preview["data"]["conf_num"]}
    )
    assert status == 200, placed
    return placed["data"]


async def order_status(service, acct: str | None = None) -> list[dict[str, Any]]:
    params = {"acct": acct} if acct else None
    status, body = await service.call("GET", f"{API}/orders/status", params=params)
    assert status == 200, body
    return body["data"]


async def test_equity_order_from_preview_to_cancel(service) -> None:
    acct = await individual_account(service)
    body = await resting_buy(service, acct, qty=3)
    assert await order_status(service, acct) == []

    status, preview = await service.call("POST", f"{API}/orders/equity/preview", json=body)
    assert status == 200 and preview["ok"] is True
    data = preview["data"]
    assert len(data["conf_num"]) == 8
    assert (data["acct_num"], data["symbol"], data["action"], data["qty"], data["price_type"], data["tif"]) == (
        acct,
        "AAPL",
        "B",
        3,
        "L",
        "G",
    )
    assert data["limit_price"] == body["limitPrice"] and data["est_cost"] > 0

    status, placed = await service.call(
        "POST", f"{API}/orders/equity/place", json={**body, "confNum": data["conf_num"]}
    )
    assert status == 200, placed
    assert (placed["data"]["conf_num"], placed["data"]["status"]) == (data["conf_num"], "OPEN")
    conf = data["conf_num"]

    (listed,) = await order_status(service, acct)
    assert listed["id_detail"]["conf_num"] == conf
    assert listed["status_detail"]["cancelable_ind"] is True and listed["status_detail"]["replaceable_ind"] is True
    assert [o["id_detail"]["conf_num"] for o in await order_status(service)] == [conf]

    status, detail = await service.call("GET", f"{API}/orders/{conf}/detail", params={"acct": acct})
    assert status == 200
    assert detail["data"]["order"]["id_detail"]["conf_num"] == conf
    assert [o["id_detail"]["conf_num"] for o in detail["data"]["orders"]] == [conf]

    status, cancel_preview = await service.call(
        "POST", f"{API}/orders/{conf}/cancel/preview", json={"acct_num": acct, "action_code": "B"}
    )
    assert status == 200 and cancel_preview["data"]["is_accepted"] is True
    (cp,) = cancel_preview["data"]["cancel_preview_detail"]
    assert (cp["conf_num"], cp["remaining_qty"], cp["exec_qty"]) == (conf, 3, 0)

    status, canceled = await service.call(
        "POST", f"{API}/orders/{conf}/cancel", json={"acctNum": acct, "actionCode": "B"}
    )
    assert status == 200 and canceled["data"]["is_accepted"] is True
    assert canceled["data"]["cancel_confirm_detail"][0]["remaining_qty"] == 3
    (after,) = await order_status(service, acct)
    assert after["status_detail"]["status"] == "CANCELED"

    status, again = await service.call(
        "POST", f"{API}/orders/{conf}/cancel", json={"acct_num": acct, "action_code": "B"}
    )
    assert status == 409 and again["error"]["code"] == "CONFLICT"


async def test_unknown_orders_and_accounts_are_404(service) -> None:
    acct = await individual_account(service)
    status, body = await service.call("GET", f"{API}/orders/ZZZZZZZZ/detail", params={"acct": acct})
    assert status == 404 and body["error"]["code"] == "NOT_FOUND"
    status, body = await service.call("GET", f"{API}/orders/status", params={"acct": "NOPE123"})
    assert status == 404 and body["error"]["code"] == "NOT_FOUND"
    status, body = await service.call(
        "POST", f"{API}/orders/ZZZZZZZZ/cancel/preview", json={"acct_num": acct, "action_code": "S"}
    )
    assert status == 404 and body["error"]["code"] == "NOT_FOUND"
    status, body = await service.call("GET", f"{API}/orders/status", params={"account": acct})
    assert status == 422 and body["error"]["details"][0]["field"] == "account"
    status, body = await service.call("GET", f"{API}/orders/bad!id/detail")
    assert status == 422 and body["error"]["details"][0] == {
        "field": "order_id",
        "location": "path",
        "message": "must be 1 to 64 letters, digits, '-' or '_'",
        "type": "value_error",
    }


async def test_equity_preview_refused_by_the_broker_is_order_rejected(service) -> None:
    acct = await individual_account(service)
    body = {**(await resting_buy(service, acct)), "symbol": "NOSUCHSYM"}
    status, answer = await service.call("POST", f"{API}/orders/equity/preview", json=body)
    assert status == 422 and answer["error"]["code"] == "ORDER_REJECTED"
    assert answer["error"]["details"]["reason"] == answer["error"]["details"]["broker_code"] == "UNKNOWN_SYMBOL"
    assert answer["error"]["details"]["broker_message"] == "Unknown symbol NOSUCHSYM"


async def test_snake_case_spelling_is_accepted_for_equity_orders(service) -> None:
    acct = await individual_account(service)
    camel = await resting_buy(service, acct)
    snake = {
        "acct_num": acct,
        "symbol": "aapl",
        "order_action_code": "B",
        "qty": 1.0,
        "price_type_code": "L",
        "limit_price": camel["limitPrice"],
        "tif_code": "G",
    }
    status, preview = await service.call("POST", f"{API}/orders/equity/preview", json=snake)
    assert status == 200 and preview["data"]["symbol"] == "AAPL"
    # The camelCase spelling of the same order matches the snake_case preview.
    placed = await service.call(
        "POST", f"{API}/orders/equity/place", json={**camel, "conf_num": preview["data"]["conf_num"]}
    )
    assert placed[0] == 200, placed[1]


async def option_symbols(service, underlying: str = "AAPL") -> tuple[str, str, float, float]:
    """Two calls of one expiry near the money: (lower strike, higher strike, lower's bid, higher's ask)."""
    chain = await service.context.broker.market_data.get_option_chain(underlying)
    expiration = chain.expirations[1]
    strikes = sorted(
        (s for s in expiration.strikes if s.call is not None and s.call.bid > 0),
        key=lambda s: abs(s.strike - chain.underlying_price),
    )
    low, high = sorted(strikes[:2], key=lambda s: s.strike)
    assert low.call is not None and high.call is not None
    return low.call.symbol, high.call.symbol, low.call.bid, high.call.ask


async def test_single_leg_option_order(service) -> None:
    acct = await individual_account(service)
    call_symbol, _, bid, _ = await option_symbols(service)
    body = {
        "acctNum": acct,
        "symbol": call_symbol,
        "orderActionCode": "BC",
        "qty": 2,
        "priceTypeCode": "L",
        "limitPrice": round(bid / 2, 2),
        "tifCode": "G",
    }
    placed = await preview_and_place(service, "option", body)
    assert placed["status"] == "OPEN"
    (order,) = await order_status(service, acct)
    assert order["order_detail"]["symbol"] == call_symbol and order["order_detail"]["security_type"] == "OPTION"

    wrong = {**body, "orderActionCode": "B"}
    status, answer = await service.call("POST", f"{API}/orders/option/preview", json=wrong)
    assert status == 422 and answer["error"]["details"][0]["field"] == "orderActionCode"
    equity_symbol = {**body, "symbol": "AAPL"}
    status, answer = await service.call("POST", f"{API}/orders/option/preview", json=equity_symbol)
    assert status == 422 and answer["error"]["details"]["reason"] == "WRONG_SECURITY_TYPE"


async def test_multi_leg_order_needs_the_trade_agreement(service) -> None:
    acct = await individual_account(service)
    # MSFT, not AAPL: the account holds no MSFT options, so the spread is judged on its own.
    low, high, low_bid, high_ask = await option_symbols(service, "MSFT")
    spread = {
        "acct_num": acct,
        "underlying": "MSFT",
        "legs": [{"symbol": low, "action": "BO", "qty": 1}, {"symbol": high, "action": "SO", "qty": 1}],
        "price_type": "L",
        "net_price": round(max(low_bid - high_ask, 0.05) / 2, 2),
        "debit_credit": "DB",
        "tif": "G",
    }
    status, refused = await service.call("POST", f"{API}/orders/options/preview", json=spread)
    assert status == 422 and refused["error"]["code"] == "ORDER_REJECTED"
    assert refused["error"]["details"]["reason"] == "TRADE_AGREEMENT_REQUIRED"

    status, unknown = await service.call(
        "POST", f"{API}/orders/trade-agreement", json={"acct_num": acct, "agreement_id": "NOT_A_THING"}
    )
    assert status == 422 and unknown["error"]["code"] == "VALIDATION_ERROR"
    status, accepted = await service.call(
        "POST", f"{API}/orders/trade-agreement", json={"acctNum": acct, "agreementId": "MULTI_LEG_OPTIONS"}
    )
    assert status == 200, accepted
    assert accepted["data"]["accepted"] is True and accepted["data"]["agreement_id"] == "MULTI_LEG_OPTIONS"

    status, preview = await service.call("POST", f"{API}/orders/options/preview", json=spread)
    assert status == 200, preview
    # Each leg as the broker (paper) understood it, in the order sent, beside the net debit of one spread.
    assert (preview["data"]["symbol"], preview["data"]["action"], preview["data"]["qty"]) == ("MSFT", "DB", 1)
    assert preview["data"]["legs"] == [
        {
            "symbol": low,
            "action": "BO",
            "qty": 1,
            "position_intent": "open",
            "broker_action_code": "BO",
            "broker_action_desc": "Buy to Open",
        },
        {
            "symbol": high,
            "action": "SO",
            "qty": 1,
            "position_intent": "open",
            "broker_action_code": "SO",
            "broker_action_desc": "Sell to Open",
        },
    ]
    status, placed = await service.call(
        "POST", f"{API}/orders/options/place", json={**spread, "conf_num": preview["data"]["conf_num"]}
    )
    assert status == 200 and placed["data"]["status"] == "OPEN", placed
    (order,) = await order_status(service, acct)
    assert order["order_detail"]["security_type"] == "MULTI_LEG"
    assert [leg["symbol"] for leg in order["order_detail"]["legs"]] == [low, high]


async def test_cancel_and_replace(service) -> None:
    acct = await individual_account(service)
    body = await resting_buy(service, acct, qty=2)
    old = (await preview_and_place(service, "equity", body))["conf_num"]
    replacement = {**body, "orig_conf_num": old, "qty": 5, "limitPrice": round(body["limitPrice"] - 1, 2)}
    new = await preview_and_place(service, "replace", replacement)
    assert new["status"] == "OPEN" and new["conf_num"] != old
    orders = {o["id_detail"]["conf_num"]: o for o in await order_status(service, acct)}
    assert orders[old]["status_detail"]["status"] == "REPLACED"
    assert orders[old]["id_detail"]["replaced_by"] == new["conf_num"]
    assert orders[new["conf_num"]]["order_detail"]["qty"] == 5

    sell_instead = {**replacement, "orig_conf_num": new["conf_num"], "orderActionCode": "S"}
    status, refused = await service.call("POST", f"{API}/orders/replace/preview", json=sell_instead)
    assert status == 422 and refused["error"]["details"]["reason"] == "REPLACE_MISMATCH"
    alias = {**replacement, "orderNumOrig": new["conf_num"]}
    del alias["orig_conf_num"]
    status, preview = await service.call("POST", f"{API}/orders/replace/preview", json=alias)
    assert status == 200, preview


async def test_conditional_order_and_conditional_replace(service) -> None:
    acct = await individual_account(service)
    last = await last_price(service, "AAPL")
    legs = [
        {"symbol": "AAPL", "order_action_code": "B", "qty": 10, "price_type_code": "L",
         "limit_price": round(last * 0.8, 2), "tif_code": "G"},
        {"symbol": "AAPL", "order_action_code": "S", "qty": 10, "price_type_code": "L",
         "limit_price": round(last * 1.2, 2), "tif_code": "G"},
        {"symbol": "AAPL", "order_action_code": "S", "qty": 10, "price_type_code": "S",
         "stop_price": round(last * 0.7, 2), "tif_code": "G"},
    ]  # fmt: skip
    order = {"acct_num": acct, "cond_order_type_code": "OTOCO", "legs": legs}
    status, preview = await service.call("POST", f"{API}/orders/conditional/preview", json=order)
    assert status == 200, preview
    conf_nums = preview["data"]["conf_nums"]
    assert len(conf_nums) == 3 and [leg["conf_num"] for leg in preview["data"]["legs"]] == conf_nums
    status, placed = await service.call(
        "POST", f"{API}/orders/conditional/place", json={**order, "conf_nums": conf_nums}
    )
    assert status == 200, placed
    assert placed["data"]["conf_nums"] == conf_nums
    statuses = {o["id_detail"]["conf_num"]: o["status_detail"]["status"] for o in await order_status(service, acct)}
    assert [statuses[c] for c in conf_nums] == ["OPEN", "PENDING_TRIGGER", "PENDING_TRIGGER"]
    status, detail = await service.call("GET", f"{API}/orders/{conf_nums[0]}/detail", params={"acct": acct})
    assert [o["id_detail"]["conf_num"] for o in detail["data"]["orders"]] == conf_nums

    target = conf_nums[1]
    new_legs = [legs[0], {**legs[1], "limit_price": round(last * 1.25, 2)}, legs[2]]
    change = {"acct_num": acct, "cond_order_type_code": "OTOCO", "legs": new_legs, "orig_conf_nums": [target]}
    status, preview = await service.call("POST", f"{API}/orders/conditional/replace/preview", json=change)
    assert status == 200, preview
    status, placed = await service.call(
        "POST", f"{API}/orders/conditional/replace/place", json={**change, "conf_nums": preview["data"]["conf_nums"]}
    )
    assert status == 200, placed
    statuses = {o["id_detail"]["conf_num"]: o["status_detail"]["status"] for o in await order_status(service, acct)}
    assert statuses[target] == "REPLACED" and statuses[placed["data"]["conf_num"]] == "PENDING_TRIGGER"

    status, answer = await service.call(
        "POST", f"{API}/orders/conditional/replace/preview", json={**change, "orig_conf_nums": []}
    )
    assert status == 422 and answer["error"]["details"][0]["field"] == "orig_conf_nums"
    status, answer = await service.call(
        "POST", f"{API}/orders/conditional/replace/preview", json={**change, "orig_conf_nums": ["ZZZZZZZZ"]}
    )
    assert status == 404 and answer["error"]["code"] == "NOT_FOUND"

    too_many = {**order, "cond_order_type_code": "OCO"}
    status, answer = await service.call("POST", f"{API}/orders/conditional/preview", json=too_many)
    assert status == 422 and [d["field"] for d in answer["error"]["details"]] == ["legs"]
    assert "exactly 2 legs" in answer["error"]["details"][0]["message"]


async def test_staged_orders_are_saved_listed_and_deleted(service) -> None:
    acct = await individual_account(service)
    status, empty = await service.call("GET", f"{API}/orders/staged")
    assert status == 200 and empty["data"] == {"staged_orders": None}
    saved_order = {"symbol": "MSFT", "orderActionCode": "B", "qty": 5}
    status, saved = await service.call(
        "POST", f"{API}/orders/staged/save", json={"acct_num": acct, "description": "on a dip", "order": saved_order}
    )
    assert status == 200 and saved["data"]["is_success"] is True
    stage_id = saved["data"]["stage_id"]
    status, listed = await service.call("GET", f"{API}/orders/staged")
    (staged,) = listed["data"]["staged_orders"]
    assert (staged["stage_id"], staged["order"], staged["description"]) == (stage_id, saved_order, "on a dip")

    status, deleted = await service.call("DELETE", f"{API}/orders/staged/{stage_id}")
    assert status == 200 and deleted["data"]["is_success"] is True
    status, gone = await service.call("DELETE", f"{API}/orders/staged/{stage_id}")
    assert status == 200 and gone["data"]["is_success"] is False
    assert gone["data"]["messages"][0]["severity"] == "ERROR"

    status, invalid = await service.call("POST", f"{API}/orders/staged/save", json={"acct_num": acct, "order": {}})
    assert status == 422 and invalid["error"]["details"][0]["field"] == "order"


async def test_static_order_paths_are_not_taken_for_order_ids(service) -> None:
    status, body = await service.call("POST", f"{API}/orders/staged")
    assert status == 405 and body["error"]["details"] == {"allowed_methods": ["GET"]}
    status, body = await service.call("POST", f"{API}/orders/journal")
    assert status == 405 and body["error"]["details"] == {"allowed_methods": ["GET"]}
    status, body = await service.call("GET", f"{API}/orders/journal")
    assert status == 200 and isinstance(body["data"], list)


async def test_journal_lists_every_order_action_newest_first(service) -> None:
    acct = await individual_account(service)
    body = await resting_buy(service, acct)
    placed = await preview_and_place(service, "equity", body)
    conf = placed["conf_num"]
    await service.call("POST", f"{API}/orders/{conf}/cancel", json={"acct_num": acct, "action_code": "B"})

    status, journal = await service.call("GET", f"{API}/orders/journal")
    assert status == 200
    entries = journal["data"]
    assert [(e["action"], e["order_kind"], e["outcome"]) for e in entries] == [
        ("cancel", None, "accepted"),
        ("place", "equity", "accepted"),
        ("preview", "equity", "accepted"),
    ]
    cancel, place, preview = entries
    assert [e["entry_id"] for e in entries] == sorted((e["entry_id"] for e in entries), reverse=True)
    assert place["endpoint"] == "POST /api/v1/orders/equity/place"
    assert (place["acct_num"], place["symbol"], place["side"], place["qty"], place["price"]) == (
        acct,
        "AAPL",
        "B",
        1,
        body["limitPrice"],
    )
    assert place["conf_num"] == preview["conf_num"] == cancel["conf_num"] == conf
    assert len(place["body_hash"]) == 64 and place["request_id"] and place["finished_time"]
    assert place["message"] == "Open"  # the broker's message on an accepted place

    status, limited = await service.call("GET", f"{API}/orders/journal", params={"limit": "1"})
    assert [e["action"] for e in limited["data"]] == ["cancel"]
    today = place["time"][:10]
    status, same_day = await service.call(
        "GET", f"{API}/orders/journal", params={"start_date": today, "end_date": today}
    )
    assert len(same_day["data"]) == 3
    status, later = await service.call("GET", f"{API}/orders/journal", params={"start_date": "2099-01-01"})
    assert later["data"] == []
    for params, field in [
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"start_date": "yesterday"}, "start_date"),
        ({"start_date": "2026-11-20", "end_date": "2026-11-19"}, "end_date"),
    ]:
        status, bad = await service.call("GET", f"{API}/orders/journal", params=params)
        assert status == 422 and bad["error"]["details"][0]["field"] == field, params

    await service.call("POST", f"{API}/auth/logout")
    status, logged_out = await service.call("GET", f"{API}/orders/journal")
    assert status == 200 and len(logged_out["data"]) == 3


async def test_order_endpoints_need_a_brokerage_session(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    for method, path in [
        ("GET", "/orders/status"),
        ("GET", "/orders/staged"),
        ("GET", "/orders/ABCDEFGH/detail"),
        ("DELETE", "/orders/staged/STG1"),
    ]:
        status, body = await service.call(method, f"{API}{path}")
        assert status == 401 and body["error"]["code"] == "AUTH_REQUIRED", path
    body = {"acctNum": "PAP1", "symbol": "AAPL", "orderActionCode": "B", "qty": 1, "priceTypeCode": "M"}
    status, answer = await service.call("POST", f"{API}/orders/equity/preview", json=body)
    assert status == 401 and answer["error"]["code"] == "AUTH_REQUIRED"
    status, journal = await service.call("GET", f"{API}/orders/journal")
    assert [(e["action"], e["outcome"], e["error_code"]) for e in journal["data"]] == [
        ("preview", "error", "AUTH_REQUIRED")
    ]
