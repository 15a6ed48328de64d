"""Through the public API against the fake Fidelity: a refusal is 422 ORDER_REJECTED, a broken upstream 502.

Fidelity refuses an order with HTTP 200 and ``respTypeCode "E"``, its words in ``Code=<X>,Text=<msg>``: the client
gets that code and text. An upstream that fails (HTTP 500) is not a refusal and stays 502 BROKER_ERROR.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.conftest import RunningService
from tests.fakes import fidelity_payloads as payloads
from tests.fakes.fidelity_orders import BASE
from tests.fakes.fidelity_orders_payloads import rejection
from tests.fakes.fidelity_server import FakeFidelity

API = "/api/v1"
EQUITY_PREVIEW_UPSTREAM = f"{BASE}/equity/preview/v1"
BUY = {
    "acctNum": payloads.MARGIN,
    "symbol": "AAPL",
    "orderActionCode": "B",
    "qty": 10,
    "priceTypeCode": "L",
    "limitPrice": 180.00,
    "tifCode": "D",
}


@pytest.fixture
async def upstream() -> AsyncIterator[FakeFidelity]:
    """The fake Fidelity."""
    fake = FakeFidelity()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()


@pytest.fixture
async def service(start_service: Callable[..., Any], upstream: FakeFidelity) -> RunningService:
    """A service with live trading on, logged in to the fake."""
    running: RunningService = await start_service(
        broker="fidelity", fidelity_upstream=upstream.base_url, live_trading="true", fidelity_read_share="0"
    )
    status, body = await running.call(
        "POST", f"{API}/auth/login", json={"username": "trader", "password": "correct-horse"}
    )
    assert status == 200, body
    return running


async def test_a_buying_power_refusal_is_order_rejected_with_the_upstreams_code_and_text(
    service: RunningService, upstream: FakeFidelity
) -> None:
    upstream.orders.buying_power = 1000.0
    status, refused = await service.call("POST", f"{API}/orders/equity/preview", json=BUY)
    assert status == 422, refused
    error = refused["error"]
    assert error["code"] == "ORDER_REJECTED" and refused["data"] is None
    assert error["details"]["reason"] == "UPSTREAM_REJECTED"
    assert error["details"]["broker_code"] == "BP0001"
    assert error["details"]["broker_message"] == "This order exceeds your available buying power of $1,000.00."
    assert error["details"]["broker_message"] in error["message"]

    upstream.orders.buying_power = None
    status, preview = await service.call("POST", f"{API}/orders/equity/preview", json=BUY)
    assert status == 200, preview


async def test_a_limit_far_from_the_last_trade_is_order_rejected_on_a_place_too(
    service: RunningService, upstream: FakeFidelity
) -> None:
    status, preview = await service.call("POST", f"{API}/orders/equity/preview", json=BUY)
    assert status == 200, preview
    conf_num = preview["data"]["conf_num"]
    # The upstream's own captured refusal, answered to the place.
    upstream.failures[f"{BASE}/equity/place/v1"] = (200, _captured_far_limit_refusal(conf_num))
    status, refused = await service.call("POST", f"{API}/orders/equity/place", json={**BUY, "confNum": conf_num})
    assert status == 422 and refused["error"]["code"] == "ORDER_REJECTED", refused
    assert refused["error"]["details"]["broker_code"] == "MA5010"
    assert refused["error"]["details"]["broker_message"].startswith("The limit price entered is too far away")
    status, journal = await service.call("GET", f"{API}/orders/journal")
    assert journal["data"][0]["outcome"] == "rejected" and journal["data"][0]["error_code"] == "ORDER_REJECTED"


async def test_an_upstream_answering_500_is_still_broker_error(service: RunningService, upstream: FakeFidelity) -> None:
    upstream.failures[EQUITY_PREVIEW_UPSTREAM] = (500, {"message": "internal error"})
    status, failed = await service.call("POST", f"{API}/orders/equity/preview", json=BUY)
    assert status == 502 and failed["error"]["code"] == "BROKER_ERROR", failed
    assert "broker_code" not in (failed["error"]["details"] or {})


def _captured_far_limit_refusal(conf_num: str) -> dict[str, Any]:
    text = (
        "The limit price entered is too far away from the last trade for this security. "
        "Please correct and re-submit your order."
    )
    return rejection("place", payloads.MARGIN, "MA5010", text, conf_num)
