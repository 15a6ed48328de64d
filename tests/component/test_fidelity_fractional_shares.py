"""Through the public API against the fake Fidelity: a fraction of a share is refused before any upstream call.

No captured upstream exchange shows fractional order entry, so the Fidelity adapter sends whole shares only:
a fractional equity preview or replace is 422 VALIDATION_ERROR naming ``qty`` and nothing reaches the upstream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.conftest import RunningService
from tests.fakes import fidelity_payloads as payloads
from tests.fakes.fidelity_orders import BASE
from tests.fakes.fidelity_server import FakeFidelity

API = "/api/v1"
BUY = {"acctNum": payloads.MARGIN, "symbol": "AAPL", "orderActionCode": "B", "priceTypeCode": "M", "tifCode": "D"}


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


def order_calls(upstream: FakeFidelity) -> list[str]:
    """Return the paths of the order-entry calls the fake received (background reads such as alerts aside)."""
    return [r.path for r in upstream.requests if r.path.startswith(BASE)]


def refused_for_fractions(answer: dict[str, Any]) -> None:
    error = answer["error"]
    assert error["code"] == "VALIDATION_ERROR" and answer["data"] is None
    (problem,) = error["details"]
    assert problem["field"] == "qty"
    assert "Fidelity broker adapter does not support fractional shares" in problem["message"]


async def test_a_fractional_equity_preview_is_refused_and_nothing_reaches_the_upstream(
    service: RunningService, upstream: FakeFidelity
) -> None:
    status, answer = await service.call("POST", f"{API}/orders/equity/preview", json={**BUY, "qty": 2.5})
    assert status == 422, answer
    refused_for_fractions(answer)
    assert order_calls(upstream) == []

    status, whole = await service.call("POST", f"{API}/orders/equity/preview", json={**BUY, "qty": 2})
    assert status == 200, whole
    assert order_calls(upstream) == [f"{BASE}/equity/preview/v1"]  # the whole order went up, once


async def test_a_fractional_replace_is_refused_and_nothing_reaches_the_upstream(
    service: RunningService, upstream: FakeFidelity
) -> None:
    replace = {**BUY, "priceTypeCode": "L", "limitPrice": 150.0, "qty": 0.5, "orig_conf_num": "24A0B1C2"}
    status, answer = await service.call("POST", f"{API}/orders/replace/preview", json=replace)
    assert status == 422, answer
    refused_for_fractions(answer)
    assert order_calls(upstream) == []
    status, journal = await service.call("GET", f"{API}/orders/journal")
    assert journal["data"][0]["outcome"] != "accepted" and journal["data"][0]["error_code"] == "VALIDATION_ERROR"
