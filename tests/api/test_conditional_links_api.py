"""Replacing a leg of a conditional order keeps the order's links, through the real server and the paper broker.

A replaced primary hands the legs waiting for it to its replacement, and a replaced OCO leg stays the other
leg's alternative: when the replacement fills, the waiting legs trigger and the other OCO leg is canceled.
"""

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


def leg(action: str, limit: float, *, qty: int = 1) -> dict[str, Any]:
    return {
        "symbol": "AAPL",
        "order_action_code": action,
        "qty": qty,
        "price_type_code": "L",
        "limit_price": round(limit, 2),
        "tif_code": "G",
    }


async def statuses(service, acct: str) -> dict[str, str]:
    status, body = await service.call("GET", f"{API}/orders/status", params={"acct": acct})
    assert status == 200, body
    return {o["id_detail"]["conf_num"]: o["status_detail"]["status"] for o in body["data"]}


async def place_conditional(service, acct: str, cond: str, legs: list[dict[str, Any]]) -> list[str]:
    order = {"acct_num": acct, "cond_order_type_code": cond, "legs": legs}
    status, preview = await service.call("POST", f"{API}/orders/conditional/preview", json=order)
    assert status == 200, preview
    conf_nums = preview["data"]["conf_nums"]
    status, placed = await service.call(
        "POST", f"{API}/orders/conditional/place", json={**order, "conf_nums": conf_nums}
    )
    assert status == 200, placed
    return list(conf_nums)


async def replace_conditional(service, acct: str, cond: str, legs: list[dict[str, Any]], orig: list[str]) -> list[str]:
    change = {"acct_num": acct, "cond_order_type_code": cond, "legs": legs, "orig_conf_nums": orig}
    status, preview = await service.call("POST", f"{API}/orders/conditional/replace/preview", json=change)
    assert status == 200, preview
    status, placed = await service.call(
        "POST", f"{API}/orders/conditional/replace/place", json={**change, "conf_nums": preview["data"]["conf_nums"]}
    )
    assert status == 200, placed
    return placed["data"]["conf_nums"] or [placed["data"]["conf_num"]]


async def test_replacing_both_legs_of_an_oto_triggers_the_new_child_when_the_new_primary_fills(service) -> None:
    acct = await individual_account(service)
    last = await last_price(service, "AAPL")
    legs = [leg("B", last * 0.8), leg("S", last * 1.5)]
    parent, child = await place_conditional(service, acct, "OTO", legs)
    assert [(await statuses(service, acct))[c] for c in (parent, child)] == ["OPEN", "PENDING_TRIGGER"]

    # The new primary is marketable: it fills as soon as it is placed.
    new_legs = [leg("B", last * 1.05), leg("S", last * 1.4)]
    new_parent, new_child = await replace_conditional(service, acct, "OTO", new_legs, [parent, child])
    now = await statuses(service, acct)
    assert now[parent] == now[child] == "REPLACED"
    assert now[new_parent] == "FILLED"
    assert now[new_child] == "OPEN"  # triggered by its new primary's fill, no longer waiting
    status, detail = await service.call("GET", f"{API}/orders/{new_child}/detail", params={"acct": acct})
    assert status == 200 and detail["data"]["order"]["id_detail"]["parent_conf_num"] == new_parent


async def test_replacing_only_the_primary_of_an_oto_hands_it_the_waiting_leg(service) -> None:
    acct = await individual_account(service)
    last = await last_price(service, "AAPL")
    legs = [leg("B", last * 0.8), leg("S", last * 1.5)]
    parent, child = await place_conditional(service, acct, "OTO", legs)
    (new_parent,) = await replace_conditional(service, acct, "OTO", [leg("B", last * 1.05), legs[1]], [parent])
    now = await statuses(service, acct)
    assert now[new_parent] == "FILLED" and now[child] == "OPEN"


async def test_plain_replace_of_an_oto_primary_hands_it_the_waiting_leg(service) -> None:
    acct = await individual_account(service)
    last = await last_price(service, "AAPL")
    parent, child = await place_conditional(service, acct, "OTO", [leg("B", last * 0.8), leg("S", last * 1.5)])
    body = {
        "acctNum": acct,
        "symbol": "AAPL",
        "orderActionCode": "B",
        "qty": 1,
        "priceTypeCode": "L",
        "limitPrice": round(last * 1.05, 2),
        "tifCode": "G",
        "orig_conf_num": parent,
    }
    status, preview = await service.call("POST", f"{API}/orders/replace/preview", json=body)
    assert status == 200, preview
    status, placed = await service.call(
        "POST", f"{API}/orders/replace/place", json={**body, "confNum": preview["data"]["conf_num"]}
    )
    assert status == 200, placed
    now = await statuses(service, acct)
    assert now[parent] == "REPLACED" and now[placed["data"]["conf_num"]] == "FILLED"
    assert now[child] == "OPEN"


async def test_a_replaced_oco_leg_that_fills_cancels_the_other_leg(service) -> None:
    acct = await individual_account(service)
    last = await last_price(service, "AAPL")
    legs = [leg("B", last * 0.8), leg("B", last * 0.7)]
    first, second = await place_conditional(service, acct, "OCO", legs)
    (new_first,) = await replace_conditional(service, acct, "OCO", [leg("B", last * 1.05), legs[1]], [first])
    now = await statuses(service, acct)
    assert now[first] == "REPLACED" and now[new_first] == "FILLED"
    assert now[second] == "CANCELED"


async def test_replacing_every_leg_of_an_otoco_keeps_the_primary_and_the_oco_pair(service) -> None:
    acct = await individual_account(service)
    last = await last_price(service, "AAPL")
    legs = [leg("B", last * 0.8), leg("S", last * 1.5), leg("S", last * 1.6)]
    confs = await place_conditional(service, acct, "OTOCO", legs)
    new_legs = [leg("B", last * 1.05), leg("S", last * 1.4), leg("S", last * 1.45)]
    new_parent, take_profit, other = await replace_conditional(service, acct, "OTOCO", new_legs, confs)
    now = await statuses(service, acct)
    assert [now[c] for c in confs] == ["REPLACED"] * 3
    assert now[new_parent] == "FILLED" and now[take_profit] == now[other] == "OPEN"

    # The two triggered legs are still one-cancels-other: canceling one takes the other along.
    status, body = await service.call(
        "POST", f"{API}/orders/{take_profit}/cancel", json={"acct_num": acct, "action_code": "S"}
    )
    assert status == 200, body
    now = await statuses(service, acct)
    assert now[take_profit] == now[other] == "CANCELED"
