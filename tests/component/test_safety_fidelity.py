"""The kill switch and the risk limits through the public API against the fake Fidelity upstream.

A limit refuses before any upstream order call (the fake counts every request by path); a halt cancels each
open order at the upstream, one cancel call per order, and then refuses previews without calling it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.conftest import RunningService
from tests.fakes import fidelity_payloads as payloads
from tests.fakes.fidelity_orders import BASE
from tests.fakes.fidelity_server import FakeFidelity
from tests.fakes.mdds_server import FakeMdds

API = "/api/v1"
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
    mdds = FakeMdds()  # quotes for the price-distance check come from MDDS, as in production
    await mdds.start()
    fake = FakeFidelity(mdds=mdds)
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()
        await mdds.close()


@pytest.fixture
def start(start_service: Callable[..., Any], upstream: FakeFidelity) -> Callable[..., Any]:
    async def started(**limits: str) -> RunningService:
        running: RunningService = await start_service(
            broker="fidelity", fidelity_upstream=upstream.base_url, live_trading="true", **limits
        )
        status, body = await running.call(
            "POST", f"{API}/auth/login", json={"username": "trader", "password": "correct-horse"}
        )
        assert status == 200, body
        return running

    return started


def order_calls(upstream: FakeFidelity) -> int:
    """Return how many requests reached the upstream's order entry (previews, places, cancels)."""
    return sum(1 for r in upstream.requests if r.path.startswith(BASE))


async def test_a_risk_limit_refuses_before_any_upstream_order_call(start, upstream: FakeFidelity) -> None:
    service = await start(max_equity_qty="10", max_equity_notional="1800", symbol_deny="TSLA")
    assert (await service.call("POST", f"{API}/orders/equity/preview", json=BUY))[0] == 200  # 10 x $180 at both
    before = order_calls(upstream)
    for body, limit in (
        ({**BUY, "qty": 11}, "max_equity_qty"),
        ({**BUY, "limitPrice": 180.01}, "max_equity_notional"),
        ({**BUY, "symbol": "TSLA", "qty": 1}, "symbol_deny"),
    ):
        status, refused = await service.call("POST", f"{API}/orders/equity/preview", json=body)
        assert status == 422 and refused["error"]["code"] == "RISK_LIMIT", refused
        assert refused["error"]["details"]["limit"] == limit
    assert order_calls(upstream) == before, "no upstream order call for a refused order"


async def test_a_halt_cancels_the_open_orders_at_the_upstream_and_previews_stop_reaching_it(
    start, upstream: FakeFidelity
) -> None:
    service = await start()
    placed = []
    for qty in (1, 2):
        status, preview = await service.call("POST", f"{API}/orders/equity/preview", json={**BUY, "qty": qty})
        assert status == 200, preview
        body = {**BUY, "qty": qty, "confNum": preview["data"]["conf_num"]}
        status, place = await service.call("POST", f"{API}/orders/equity/place", json=body)
        assert status == 200, place
        placed.append(place["data"]["conf_num"])
    assert {o.status for o in upstream.orders.book.values()} == {"OPEN"}

    cancels_before = upstream.hits_for("/cancel/place/v1")
    status, halted = await service.call("POST", f"{API}/safety/halt", json={"reason": "fidelity"})
    assert status == 200, halted
    assert sorted(c["conf_num"] for c in halted["data"]["canceled"]) == sorted(placed)
    assert halted["data"]["failures"] == []
    assert {o.status for o in upstream.orders.book.values()} == {"VERIFIED_CANCEL"}
    assert upstream.hits_for("/cancel/place/v1") - cancels_before == len(placed), "one cancel call per order"

    before = order_calls(upstream)
    status, refused = await service.call("POST", f"{API}/orders/equity/preview", json=BUY)
    assert status == 409 and refused["error"]["code"] == "TRADING_HALTED", refused
    assert order_calls(upstream) == before


async def test_the_price_distance_is_measured_from_the_mdds_quote(start, upstream: FakeFidelity) -> None:
    service = await start(max_price_distance_pct="10")
    status, quotes = await service.call("GET", f"{API}/market-data/quotes", params={"symbols": "AAPL"})
    assert status == 200, quotes
    quote = quotes["data"]["quotes"][0]
    assert 0 < quote["bid"] <= quote["ask"]  # two-sided: measured from the midpoint
    mid = round((quote["bid"] + quote["ask"]) / 2, 4)
    near = {**BUY, "qty": 1, "limitPrice": round(mid * 0.9 + 0.01, 2)}  # inside 10 %
    far = {**BUY, "qty": 1, "limitPrice": round(mid * 0.9 - 0.01, 2)}  # just past it

    before = order_calls(upstream)
    status, refused = await service.call("POST", f"{API}/orders/equity/preview", json=far)
    assert status == 422 and refused["error"]["details"]["limit"] == "max_price_distance_pct", refused
    assert refused["error"]["details"]["quote"] == mid
    assert refused["error"]["details"]["quote_basis"] == "bid/ask midpoint"
    assert order_calls(upstream) == before
    status, answer = await service.call("POST", f"{API}/orders/equity/preview", json=near)
    assert status == 200 or answer["error"]["code"] == "ORDER_REJECTED", answer  # the fake prices AAPL its own way
    assert order_calls(upstream) == before + 1, "inside the limit, the preview went to the upstream"
