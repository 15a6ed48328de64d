"""An order the paper broker refuses for a business reason is a client error: 422 ORDER_REJECTED, not a 502."""

from __future__ import annotations

import pytest

from tests.api.test_orders_api import individual_account, last_price, resting_buy
from tests.fakes.clock import ManualClock

API = "/api/v1"


@pytest.fixture
async def service(start_service):
    running = await start_service(clock=ManualClock(), live_trading="true")
    await running.login()
    return running


async def test_a_limit_far_from_the_market_is_order_rejected_with_the_brokers_words(service) -> None:
    acct = await individual_account(service)
    body = {**(await resting_buy(service, acct)), "limitPrice": round(await last_price(service, "AAPL") * 10, 2)}
    status, answer = await service.call("POST", f"{API}/orders/equity/preview", json=body)
    assert status == 422, answer
    error = answer["error"]
    assert error["code"] == "ORDER_REJECTED" and answer["data"] is None
    details = error["details"]
    assert details["reason"] == details["broker_code"] == "PRICE_OUT_OF_BOUNDS"
    assert "too far from the market" in details["broker_message"] and details["broker_message"] == error["message"]


async def test_an_order_over_the_buying_power_is_order_rejected_and_journaled_so(service) -> None:
    acct = await individual_account(service)
    body = {**(await resting_buy(service, acct)), "qty": 900_000}
    status, refused = await service.call("POST", f"{API}/orders/equity/preview", json=body)
    assert status == 422 and refused["error"]["code"] == "ORDER_REJECTED", refused
    details = refused["error"]["details"]
    assert details["broker_code"] == "INSUFFICIENT_BUYING_POWER" and details["available"] < details["needed"]
    assert details["broker_message"].startswith("Insufficient buying power")
    status, journal = await service.call("GET", f"{API}/orders/journal")
    assert status == 200
    latest = journal["data"][0]
    assert (latest["action"], latest["outcome"], latest["error_code"]) == ("preview", "rejected", "ORDER_REJECTED")


async def test_the_openapi_documents_order_rejected_on_order_operations(service) -> None:
    status, spec = await service.call("GET", "/docs/openapi.json")
    assert status == 200
    for path in ("/api/v1/orders/equity/preview", "/api/v1/orders/equity/place", "/api/v1/orders/{conf_num}/cancel"):
        documented = spec["paths"][path]["post"]["responses"]
        assert "ORDER_REJECTED" in documented["422"]["content"]["application/json"]["examples"], path
        assert "ORDER_REJECTED" not in documented["502"]["description"], path
