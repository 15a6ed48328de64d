"""Through the public API against the fake Fidelity: an order the broker understood otherwise never becomes placeable.

The evidence cannot say whether single-leg ``BC`` is "Buy Call" (captures) or "Buy to Close"
(the decompiled enum). In the decompiled world a buy call without a position intent comes back as "Buy To
Close"; in the captured world a put bought to close (sent as ``BC``) comes back as "Buy Call".
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.conftest import RunningService
from tests.fakes import fidelity_payloads as payloads
from tests.fakes.fidelity_orders_actions import CAPTURED, DECOMPILED
from tests.fakes.fidelity_server import FakeFidelity
from tests.fakes.mdds_server import FakeMdds

API = "/api/v1"
OPTION_PLACE_UPSTREAM = "/orderentry/option/place/v2"


@pytest.fixture
async def upstream() -> AsyncIterator[FakeFidelity]:
    """The fake Fidelity (with MDDS, for the leg quotes of a multi-leg preview) in the decompiled world."""
    mdds = FakeMdds()
    fake = FakeFidelity(mdds=mdds)
    fake.orders.world = DECOMPILED
    await mdds.start()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()
        await mdds.close()


@pytest.fixture
async def service(start_service: Callable[..., Any], upstream: FakeFidelity) -> RunningService:
    """A service with live trading on, logged in to the fake."""
    running: RunningService = await start_service(
        broker="fidelity",
        fidelity_upstream=upstream.base_url,
        live_trading="true",
        fidelity_read_share="0",  # the fake changes behind ftdesk's back: no answer reuse
    )
    status, body = await running.call(
        "POST", f"{API}/auth/login", json={"username": "trader", "password": "correct-horse"}
    )
    assert status == 200, body
    return running


CALL_ORDER = {"acctNum": payloads.MARGIN, "symbol": "QS270115C7", "orderActionCode": "BC", "qty": 1}
PUT_TO_CLOSE = {
    "acctNum": payloads.MARGIN,
    "symbol": "QS270115P5",
    "orderActionCode": "BP",
    "position_intent": "close",
    "qty": 1,
}


@pytest.mark.parametrize(
    ("world", "order", "words", "problem"),
    [
        (DECOMPILED, CALL_ORDER, "Buy To Close", "position_intent"),
        (CAPTURED, PUT_TO_CLOSE, "Buy Call", "is a put"),
    ],
)
async def test_a_contradicted_preview_is_action_mismatch_journaled_and_never_placeable(
    service: RunningService, upstream: FakeFidelity, world: str, order: dict[str, Any], words: str, problem: str
) -> None:
    upstream.orders.world = world
    status, refused = await service.call("POST", f"{API}/orders/option/preview", json=order)
    assert status == 502 and refused["error"]["code"] == "ACTION_MISMATCH", refused
    details = refused["error"]["details"]
    assert details["understood"][0]["desc"] == words and details["understood"][0]["code"] == "BC"
    assert words in refused["error"]["message"] and problem in refused["error"]["message"]

    # The upstream did make a preview; its conf_num is of no use: nothing was bound.
    (upstream_conf,) = upstream.orders.previews
    status, placed = await service.call("POST", f"{API}/orders/option/place", json={**order, "confNum": upstream_conf})
    assert status == 409 and placed["error"]["code"] == "PREVIEW_REQUIRED", placed
    assert upstream.hits_for(OPTION_PLACE_UPSTREAM) == 0

    status, journal = await service.call("GET", f"{API}/orders/journal")
    assert status == 200
    place_row, preview_row = journal["data"][:2]
    assert (preview_row["action"], preview_row["outcome"], preview_row["error_code"]) == (
        "preview",
        "rejected",
        "ACTION_MISMATCH",
    )
    assert words in preview_row["message"] and preview_row["conf_nums"] == []
    assert (place_row["action"], place_row["outcome"], place_row["error_code"]) == (
        "place",
        "refused",
        "PREVIEW_REQUIRED",
    )


async def test_a_stated_intent_the_broker_confirms_binds_shows_its_words_and_places(
    service: RunningService, upstream: FakeFidelity
) -> None:
    order = {**CALL_ORDER, "position_intent": "close"}
    status, preview = await service.call("POST", f"{API}/orders/option/preview", json=order)
    assert status == 200, preview
    data = preview["data"]
    assert (data["broker_action_desc"], data["broker_action_code"], data["position_intent"]) == (
        "Buy To Close",
        "BC",
        "close",
    )
    # The place must repeat the intent: without it the fields differ from the preview.
    status, mismatch = await service.call(
        "POST", f"{API}/orders/option/place", json={**CALL_ORDER, "confNum": data["conf_num"]}
    )
    assert status == 409 and mismatch["error"]["code"] == "PREVIEW_MISMATCH", mismatch
    status, placed = await service.call(
        "POST", f"{API}/orders/option/place", json={**order, "confNum": data["conf_num"]}
    )
    assert status == 200 and upstream.hits_for(OPTION_PLACE_UPSTREAM) == 1, placed
    status, journal = await service.call("GET", f"{API}/orders/journal")
    assert journal["data"][0]["side"] == "BC close" and journal["data"][0]["outcome"] == "accepted"


async def test_multileg_legs_in_words_reach_the_upstream_as_codes(
    service: RunningService, upstream: FakeFidelity
) -> None:
    order: dict[str, Any] = {
        "acct_num": payloads.MARGIN,
        "underlying": "QS",
        "legs": [
            {"symbol": "QS280121C7", "action": "buy_to_open", "qty": 1},
            {"symbol": "QS280121C12", "action": "sell", "position_intent": "open", "qty": 1},
        ],
        "price_type": "L",
        "net_price": 0.92,
        "debit_credit": "DB",
    }
    status, preview = await service.call("POST", f"{API}/orders/options/preview", json=order)
    assert status == 200, preview
    sent = [r.body for r in upstream.requests if r.path.endswith("/multilegoption/preview/v1")][-1]
    legs = sent["parameters"]["baseOrderDetail"]["optionDetail"]["complexOrderDetails"]
    assert [leg["orderActionCode"] for leg in legs] == ["BO", "SO"] and all("priceDetail" in leg for leg in legs)
    # The words and the codes are the same order: a place in codes matches the preview in words.
    coded = {
        **order,
        "legs": [{**order["legs"][0], "action": "BO"}, {"symbol": "QS280121C12", "action": "SO", "qty": 1}],
    }
    status, placed = await service.call(
        "POST", f"{API}/orders/options/place", json={**coded, "conf_num": preview["data"]["conf_num"]}
    )
    assert status == 200, placed
