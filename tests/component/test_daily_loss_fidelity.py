"""The daily loss limit on the fake Fidelity upstream counts a round trip made today, from its fills.

Fidelity's closed-positions answer has no close date, so the limit counts sales from the order status (each
order's executed quantity and average price). On the margin account, which holds AAPL and the rest overnight
(their day loss as the positions answer carries it), 10 TSLA bought today at 250.00 and sold today at 248.00 add a
20.00 loss: a limit equal to the whole loss passes, one cent less halts. The service runs on an injected clock
(Monday 16 November 2026, as the fake's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ftdesk.service.safety.reads import PNL_MAX_AGE
from tests.component.test_safety_fidelity import API, upstream
from tests.component.test_safety_limits_fidelity import MARGIN_DAY_LOSS
from tests.conftest import RunningService
from tests.fakes import fidelity_payloads as payloads
from tests.fakes.clock import ManualClock
from tests.fakes.fidelity_server import FakeFidelity

__all__ = ["upstream"]  # the fake Fidelity upstream fixture, shared with test_safety_fidelity

TSLA = {
    "acctNum": payloads.MARGIN,
    "symbol": "TSLA",
    "qty": 10,
    "priceTypeCode": "L",
    "tifCode": "D",
}
ROUND_TRIP_LOSS = 20.0  # 10 x (248.00 - 250.00)


async def start(start_service: Callable[..., Any], upstream: FakeFidelity, clock: ManualClock, limit: float) -> Any:
    service: RunningService = await start_service(
        broker="fidelity",
        fidelity_upstream=upstream.base_url,
        live_trading="true",
        clock=clock,
        daily_loss_limit=f"{limit:.2f}",
    )
    status, body = await service.call(
        "POST", f"{API}/auth/login", json={"username": "trader", "password": "correct-horse"}
    )
    assert status == 200, body
    return service


async def trade(service: RunningService, upstream: FakeFidelity, action: str, price: float) -> None:
    """Preview, place and (at the upstream) fill a TSLA order at a price."""
    order = {**TSLA, "orderActionCode": action, "limitPrice": price}
    status, preview = await service.call("POST", f"{API}/orders/equity/preview", json=order)
    assert status == 200, preview
    status, placed = await service.call(
        "POST", f"{API}/orders/equity/place", json={**order, "confNum": preview["data"]["conf_num"]}
    )
    assert status == 200, placed
    upstream.orders.fill(placed["data"]["conf_num"], price)


async def round_trip_then_check(start_service: Callable[..., Any], upstream: FakeFidelity, limit: float) -> Any:
    """Buy and sell 10 TSLA today, then ask for one more preview after the P&L read has aged; return its answer."""
    clock = ManualClock()
    service = await start(start_service, upstream, clock, limit)
    await trade(service, upstream, "B", 250.00)
    await trade(service, upstream, "S", 248.00)
    await clock.advance(PNL_MAX_AGE + 1)  # the read made before the fills is too old: read again
    order = {**TSLA, "orderActionCode": "B", "qty": 1, "limitPrice": 240.00}
    status, answer = await service.call("POST", f"{API}/orders/equity/preview", json=order)
    _, state = await service.call("GET", f"{API}/safety")
    return status, answer, state["data"]


async def test_a_round_trip_loss_today_counts_and_equal_to_the_limit_passes(
    start_service: Callable[..., Any], upstream: FakeFidelity
) -> None:
    loss = round(MARGIN_DAY_LOSS + ROUND_TRIP_LOSS, 2)
    status, answer, state = await round_trip_then_check(start_service, upstream, loss)
    assert status == 200, answer
    assert state["halt"]["halted"] is False
    (pnl,) = [p for p in state["usage"]["pnl"] if p["acct_num"] == payloads.MARGIN]
    assert pnl["realized"] == -ROUND_TRIP_LOSS and pnl["total"] == -loss and pnl["uncounted"] == []


async def test_a_round_trip_loss_today_one_cent_past_the_limit_halts(
    start_service: Callable[..., Any], upstream: FakeFidelity
) -> None:
    loss = round(MARGIN_DAY_LOSS + ROUND_TRIP_LOSS, 2)
    status, answer, state = await round_trip_then_check(start_service, upstream, round(loss - 0.01, 2))
    assert status == 422 and answer["error"]["details"]["limit"] == "daily_loss_limit", answer
    assert answer["error"]["details"]["halted"] is True
    assert state["halt"]["halted"] is True and state["halt"]["by"] == "daily-loss-limit"
