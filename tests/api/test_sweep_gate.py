"""While a halted run's start-up sweep holds requests they wait for it; otherwise they pass straight through."""

from __future__ import annotations

import asyncio


async def test_a_request_waits_while_the_sweep_holds_requests_and_goes_on_when_released(start_service) -> None:
    svc = await start_service()
    guard = svc.context.safety
    assert not guard.requests_held
    status, _ = await svc.call("GET", "/api/v1/health")
    assert status == 200

    guard.hold_requests()
    assert guard.requests_held
    held = asyncio.create_task(svc.call("GET", "/api/v1/health"))
    done, _ = await asyncio.wait({held}, timeout=0.3)  # a bounded look: it must still be waiting
    assert not done, "a request went through while the sweep held requests"
    guard.release_requests()
    status, body = await asyncio.wait_for(held, 5)
    assert status == 200 and body["ok"] is True
    assert not guard.requests_held
