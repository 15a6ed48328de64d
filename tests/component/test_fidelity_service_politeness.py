"""Fidelity politeness as a script sees it: the running service, its public API, the fake upstream pushing back.

Service and fake share a hand-driven clock, so a Retry-After is waited for on that clock, not for real.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest

from tests.component.test_fidelity_politeness import WatchedClock
from tests.conftest import RunningService
from tests.fakes import fidelity_payloads as payloads
from tests.fakes.fidelity_server import FakeFidelity

API = "/api/v1"
POSITIONS = "/ftgw/dp/position/v2"
EQUITY_PLACE = "/ftgw/dp/orderentry/equity/place/v1"

Started = tuple[RunningService, FakeFidelity, WatchedClock]
StartFidelity = Callable[..., Coroutine[Any, Any, Started]]


@pytest.fixture
async def start_fidelity(start_service: Callable[..., Any]) -> AsyncIterator[StartFidelity]:
    """Start the fake upstream and a Fidelity service in front of it, both on one ``WatchedClock``."""
    fakes: list[FakeFidelity] = []

    async def start(**env: str) -> Started:
        clock = WatchedClock()
        fake = FakeFidelity(clock=clock)
        await fake.start()
        fakes.append(fake)
        # The account-event stream retries on the same clock: keep its waits out of the ones tests look for.
        env.setdefault("stream_backoff", "3600")
        service = await start_service(clock=clock, broker="fidelity", fidelity_upstream=fake.base_url, **env)
        return service, fake, clock

    yield start
    for fake in fakes:
        await fake.close()


async def login(service: RunningService) -> tuple[int, dict[str, Any]]:
    return await service.call("POST", f"{API}/auth/login", json={"username": "trader", "password": "correct-horse"})


async def test_a_read_answered_429_with_retry_after_1_is_retried_and_the_client_gets_its_200(
    start_fidelity: StartFidelity,
) -> None:
    service, fake, clock = await start_fidelity()
    status, body = await login(service)
    assert status == 200, body
    fake.push_back(POSITIONS, 429, retry_after=1)

    read = asyncio.create_task(service.call("GET", f"{API}/accounts/{payloads.MARGIN}/positions"))
    await clock.asked_to_sleep(1.0, 1.25)  # the read waits out the Retry-After (plus at most 0.25 s of jitter)
    assert fake.hits[POSITIONS] == 1 and not read.done()
    await clock.advance(1.3)  # Retry-After plus at most 0.25 s of jitter
    status, positions = await asyncio.wait_for(read, 10)

    assert status == 200, positions
    assert {"SPAXX", "AAPL"} <= {position["symbol"] for position in positions["data"]}
    assert fake.hits[POSITIONS] == 2


async def test_a_place_answered_429_is_not_retried_and_the_client_gets_a_clear_error(
    start_fidelity: StartFidelity,
) -> None:
    service, fake, _ = await start_fidelity(live_trading="true")
    await login(service)
    order = {
        "acctNum": payloads.MARGIN,
        "symbol": "AAPL",
        "orderActionCode": "B",
        "qty": 2,
        "priceTypeCode": "L",
        "limitPrice": 150.0,
        "tifCode": "G",
    }
    status, preview = await service.call("POST", f"{API}/orders/equity/preview", json=order)
    assert status == 200, preview
    fake.push_back(EQUITY_PLACE, 429, retry_after=1)

    async with asyncio.timeout(10):  # the clock never moves: a retry would wait forever
        status, placed = await service.call(
            "POST", f"{API}/orders/equity/place", json={**order, "confNum": preview["data"]["conf_num"]}
        )

    assert status == 502 and placed["error"]["code"] == "BROKER_ERROR", placed
    assert "HTTP 429" in placed["error"]["message"] and "never sends a write twice" in placed["error"]["message"]
    assert placed["error"]["details"]["retried"] is False
    assert fake.hits[EQUITY_PLACE] == 1  # exactly one upstream place, the refused one


async def test_logins_past_the_budget_get_a_clear_error_not_a_hang(start_fidelity: StartFidelity) -> None:
    service, fake, clock = await start_fidelity(fidelity_logins_per_minute="2")
    async with asyncio.timeout(10):  # the clock never moves: a queued login would wait forever
        for _ in range(2):
            status, body = await login(service)
            assert status == 200, body
        status, body = await login(service)

    assert status == 502 and body["error"]["code"] == "BROKER_ERROR", body
    assert "try again in 30 s" in body["error"]["message"]
    assert body["error"]["details"] == {"reason": "LOGIN_RATE_LIMITED", "retry_after": 30.0}
    assert fake.logins == 2
    await clock.advance(30)
    status, body = await login(service)
    assert status == 200, body
