"""Cancel and cancel preview check action_code against the order, through the running service on paper."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.test_orders_api import (
    individual_account,
    option_symbols,
    order_status,
    preview_and_place,
    resting_buy,
)
from tests.fakes.clock import ManualClock

API = "/api/v1"


@pytest.fixture
async def service(start_service):
    running = await start_service(clock=ManualClock(), live_trading="true")
    await running.login()
    return running


async def cancel(service, conf: str, acct: str, code: str, *, preview: bool = False) -> tuple[int, dict[str, Any]]:
    path = f"{API}/orders/{conf}/cancel/preview" if preview else f"{API}/orders/{conf}/cancel"
    status, body = await service.call("POST", path, json={"acct_num": acct, "action_code": code})
    return status, body


async def status_of(service, acct: str, conf: str) -> str:
    return next(o for o in await order_status(service, acct) if o["id_detail"]["conf_num"] == conf)["status_detail"][
        "status"
    ]


async def assert_refused(service, conf: str, acct: str, code: str, allowed: list[str]) -> None:
    for preview in (True, False):
        status, body = await cancel(service, conf, acct, code, preview=preview)
        assert status == 422 and body["error"]["code"] == "VALIDATION_ERROR", body
        (detail,) = body["error"]["details"]
        assert detail["field"] == "action_code" and detail["allowed"] == allowed
        assert conf in body["error"]["message"]
    assert await status_of(service, acct, conf) == "OPEN"


async def test_an_equity_buy_refuses_a_sell_code_then_cancels_with_its_own(service) -> None:
    acct = await individual_account(service)
    conf = (await preview_and_place(service, "equity", await resting_buy(service, acct, qty=2)))["conf_num"]

    await assert_refused(service, conf, acct, "S", ["B"])
    await assert_refused(service, conf, acct, "SS", ["B"])
    # BC is an equity buy to cover: another order than a plain buy, though on the same side.
    await assert_refused(service, conf, acct, "BC", ["B"])

    status, preview = await cancel(service, conf, acct, "B", preview=True)
    assert status == 200 and preview["data"]["cancel_preview_detail"][0]["remaining_qty"] == 2
    status, canceled = await cancel(service, conf, acct, "B")
    assert status == 200 and canceled["data"]["is_accepted"] is True
    assert await status_of(service, acct, conf) == "CANCELED"


async def test_a_single_leg_option_accepts_its_code_or_its_side(service) -> None:
    acct = await individual_account(service)
    call_symbol, _, bid, _ = await option_symbols(service)
    body = {
        "acctNum": acct,
        "symbol": call_symbol,
        "orderActionCode": "BC",
        "qty": 1,
        "priceTypeCode": "L",
        "limitPrice": round(bid / 2, 2),
        "tifCode": "G",
    }
    conf = (await preview_and_place(service, "option", body))["conf_num"]

    await assert_refused(service, conf, acct, "SC", ["B", "BC"])
    await assert_refused(service, conf, acct, "S", ["B", "BC"])

    status, preview = await cancel(service, conf, acct, "BC", preview=True)
    assert status == 200 and preview["data"]["is_accepted"] is True
    status, canceled = await cancel(service, conf, acct, "B")
    assert status == 200 and canceled["data"]["is_accepted"] is True
    assert await status_of(service, acct, conf) == "CANCELED"


async def test_a_spread_accepts_its_leg_codes_and_sides(service) -> None:
    acct = await individual_account(service)
    low, high, low_bid, high_ask = await option_symbols(service, "MSFT")
    status, accepted = await service.call(
        "POST", f"{API}/orders/trade-agreement", json={"acct_num": acct, "agreement_id": "MULTI_LEG_OPTIONS"}
    )
    assert status == 200, accepted
    spread = {
        "acct_num": acct,
        "underlying": "MSFT",
        "legs": [{"symbol": low, "action": "BO", "qty": 1}, {"symbol": high, "action": "SO", "qty": 1}],
        "price_type": "L",
        "net_price": round(max(low_bid - high_ask, 0.05) / 2, 2),
        "debit_credit": "DB",
        "tif": "G",
    }
    status, preview = await service.call("POST", f"{API}/orders/options/preview", json=spread)
    assert status == 200, preview
    status, placed = await service.call(
        "POST", f"{API}/orders/options/place", json={**spread, "conf_num": preview["data"]["conf_num"]}
    )
    assert status == 200, placed
    conf = placed["data"]["conf_num"]

    await assert_refused(service, conf, acct, "BC", ["B", "BO", "S", "SO"])

    for code in ("BO", "SO", "B"):
        status, answer = await cancel(service, conf, acct, code, preview=True)
        assert status == 200 and answer["data"]["is_accepted"] is True, (code, answer)
    status, canceled = await cancel(service, conf, acct, "S")
    assert status == 200 and canceled["data"]["is_accepted"] is True
    assert await status_of(service, acct, conf) == "CANCELED"
