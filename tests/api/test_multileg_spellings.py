"""The multi-leg option body in the camelCase vocabulary of the other order bodies, through the running service."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.test_orders_api import API, individual_account, option_symbols, order_status
from tests.fakes.clock import ManualClock


@pytest.fixture
async def service(start_service):
    running = await start_service(clock=ManualClock(), live_trading="true")
    await running.login()
    return running


def snake_spread(acct: str, low: str, high: str, net: float) -> dict[str, Any]:
    return {
        "acct_num": acct,
        "underlying": "MSFT",
        "legs": [
            {"symbol": low, "action": "buy_to_open", "qty": 2},
            {"symbol": high, "action": "sell", "position_intent": "open", "qty": 2},
        ],
        "price_type": "L",
        "net_price": net,
        "debit_credit": "DB",
        "tif": "G",
    }


def camel_spread(acct: str, low: str, high: str, net: float) -> dict[str, Any]:
    return {
        "acctNum": acct,
        "underlying": "MSFT",
        "legs": [
            {"symbol": low, "orderActionCode": "buy_to_open", "qty": 2},
            {"symbol": high, "orderActionCode": "sell", "positionIntent": "open", "qty": 2},
        ],
        "priceTypeCode": "L",
        "netPrice": net,
        "debitCredit": "DB",
        "tifCode": "G",
    }


async def test_camel_case_multi_leg_preview_and_place_match_snake_case(service) -> None:
    acct = await individual_account(service)
    low, high, low_bid, high_ask = await option_symbols(service, "MSFT")
    net = round(max(low_bid - high_ask, 0.05) / 2, 2)  # under the market: the spread rests OPEN
    status, accepted = await service.call(
        "POST", f"{API}/orders/trade-agreement", json={"acctNum": acct, "agreementId": "MULTI_LEG_OPTIONS"}
    )
    assert status == 200, accepted
    snake, camel = snake_spread(acct, low, high, net), camel_spread(acct, low, high, net)

    status, snake_preview = await service.call("POST", f"{API}/orders/options/preview", json=snake)
    assert status == 200, snake_preview
    status, camel_preview = await service.call("POST", f"{API}/orders/options/preview", json=camel)
    assert status == 200, camel_preview
    assert camel_preview["data"]["conf_num"] != snake_preview["data"]["conf_num"]
    without_conf = [{k: v for k, v in p["data"].items() if k != "conf_num"} for p in (snake_preview, camel_preview)]
    assert without_conf[0] == without_conf[1]

    # Either spelling places the other's preview: the binding is on the validated fields, not their spelling.
    status, camel_placed = await service.call(
        "POST", f"{API}/orders/options/place", json={**camel, "confNum": snake_preview["data"]["conf_num"]}
    )
    assert status == 200 and camel_placed["data"]["status"] == "OPEN", camel_placed
    status, snake_placed = await service.call(
        "POST", f"{API}/orders/options/place", json={**snake, "conf_num": camel_preview["data"]["conf_num"]}
    )
    assert status == 200 and snake_placed["data"]["status"] == "OPEN", snake_placed

    orders = await order_status(service, acct)
    assert len(orders) == 2
    details = [o["order_detail"] for o in orders]
    for detail in details:
        assert detail["security_type"] == "MULTI_LEG"
        assert [(leg["symbol"], leg["action"], leg["qty"]) for leg in detail["legs"]] == [
            (low, "BO", 2),
            (high, "SO", 2),
        ]
    assert details[0]["legs"] == details[1]["legs"]

    # A camelCase place whose fields differ from its preview is refused like a snake_case one.
    status, fresh = await service.call("POST", f"{API}/orders/options/preview", json=camel)
    assert status == 200, fresh
    status, changed = await service.call(
        "POST", f"{API}/orders/options/place", json={**camel, "tifCode": "D", "confNum": fresh["data"]["conf_num"]}
    )
    assert status == 409 and changed["error"]["code"] == "PREVIEW_MISMATCH", changed
    assert "tif" in str(changed["error"]["details"])


async def test_camel_case_multi_leg_body_keeps_the_rules(service) -> None:
    acct = await individual_account(service)
    low, high, _, _ = await option_symbols(service, "MSFT")
    camel = camel_spread(acct, low, high, 0.5)

    async def refused(body: dict[str, Any]) -> list[str]:
        status, answer = await service.call("POST", f"{API}/orders/options/preview", json=body)
        assert status == 422 and answer["error"]["code"] == "VALIDATION_ERROR", answer
        return [d["field"] for d in answer["error"]["details"]]

    assert "bogus" in " ".join(await refused({**camel, "bogus": 1}))
    legs = [{**camel["legs"][0], "strikePrice": 200}, camel["legs"][1]]
    assert "strikePrice" in " ".join(await refused({**camel, "legs": legs}))
    # The same field in both spellings is one too many.
    assert "tif" in " ".join(await refused({**camel, "tif": "G"}))
    # The rules hold whatever the spelling: a limit needs its net price, a leg its action.
    no_price = {k: v for k, v in camel.items() if k != "netPrice"}
    assert any("net" in f.lower() for f in await refused(no_price))
    legs = [{**camel["legs"][0], "orderActionCode": "XX"}, camel["legs"][1]]
    assert any("orderActionCode" in f for f in await refused({**camel, "legs": legs}))
    contradicting = [{**camel["legs"][0], "positionIntent": "close"}, camel["legs"][1]]
    await refused({**camel, "legs": contradicting})
