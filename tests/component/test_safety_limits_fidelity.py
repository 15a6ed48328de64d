"""The risk limits not covered in test_safety_fidelity, each at its boundary and one past it, on the fake Fidelity.

At the boundary the order reaches the upstream's preview; one past it the service answers 422 RISK_LIMIT naming
the limit, its value and the order's value, and no request reaches the upstream's order entry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.component.test_safety_fidelity import API, BUY, order_calls, upstream
from tests.conftest import RunningService
from tests.fakes import fidelity_payloads as payloads
from tests.fakes.clock import ManualClock
from tests.fakes.fidelity_server import FakeFidelity

__all__ = ["upstream"]  # the fake Fidelity upstream fixture, shared with test_safety_fidelity

CALL = {  # an option the fake prices (QS270115C7, last $1.54), bought at a limit the upstream accepts
    "acctNum": payloads.MARGIN,
    "symbol": "QS270115C7",
    "orderActionCode": "BC",
    "qty": 1,
    "priceTypeCode": "L",
    "limitPrice": 1.50,
    "tifCode": "D",
}
RESTING = {**BUY, "tifCode": "G"}  # $180 under the fake's $182.50 last: the upstream books it OPEN


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def start(start_service: Callable[..., Any], upstream: FakeFidelity, clock: ManualClock) -> Callable[..., Any]:
    async def started(**limits: str) -> RunningService:
        running: RunningService = await start_service(
            broker="fidelity", fidelity_upstream=upstream.base_url, live_trading="true", clock=clock, **limits
        )
        status, body = await running.call(
            "POST", f"{API}/auth/login", json={"username": "trader", "password": "correct-horse"}
        )
        assert status == 200, body
        return running

    return started


async def reaches_upstream(service: RunningService, upstream: FakeFidelity, body: dict[str, Any], kind: str) -> str:
    """Preview an order the limits pass; assert the preview went to the upstream and return its confNum."""
    before = order_calls(upstream)
    status, answer = await service.call("POST", f"{API}/orders/{kind}/preview", json=body)
    assert status == 200, answer
    assert order_calls(upstream) == before + 1, "the preview reached the upstream"
    return str(answer["data"]["conf_num"])


async def refused_locally(
    service: RunningService,
    upstream: FakeFidelity,
    body: dict[str, Any],
    kind: str,
    expected: tuple[str, Any, Any],
) -> dict[str, Any]:
    """Preview an order one past a limit; assert the RISK_LIMIT refusal and that no order call was made."""
    before = order_calls(upstream)
    status, answer = await service.call("POST", f"{API}/orders/{kind}/preview", json=body)
    assert status == 422 and answer["error"]["code"] == "RISK_LIMIT", answer
    details: dict[str, Any] = answer["error"]["details"]
    assert (details["limit"], details["limit_value"], details["order_value"]) == expected, details
    assert order_calls(upstream) == before, "no upstream order call for a refused order"
    return details


async def place(service: RunningService, upstream: FakeFidelity, body: dict[str, Any]) -> str:
    """Preview and place an equity order through the service; return the upstream's confNum."""
    conf = await reaches_upstream(service, upstream, body, "equity")
    status, placed = await service.call("POST", f"{API}/orders/equity/place", json={**body, "confNum": conf})
    assert status == 200, placed
    return str(placed["data"]["conf_num"])


async def test_option_contracts_at_the_limit_reach_the_upstream_one_more_does_not(
    start: Callable[..., Any], upstream: FakeFidelity
) -> None:
    service = await start(max_option_contracts="2")
    await reaches_upstream(service, upstream, {**CALL, "qty": 2}, "option")
    await refused_locally(service, upstream, {**CALL, "qty": 3}, "option", ("max_option_contracts", 2, 3))


async def test_option_notional_counts_the_multiplier_at_the_limit_and_one_cent_past(
    start: Callable[..., Any], upstream: FakeFidelity
) -> None:
    service = await start(max_option_notional="300")  # 2 contracts x 100 x $1.50
    await reaches_upstream(service, upstream, {**CALL, "qty": 2}, "option")
    one_cent_more = {**CALL, "qty": 2, "limitPrice": 1.51}  # 2 x 100 x $0.01 = $2 more
    await refused_locally(service, upstream, one_cent_more, "option", ("max_option_notional", 300.0, 302.0))


async def test_places_per_minute_are_counted_on_the_injected_clock(
    start: Callable[..., Any], upstream: FakeFidelity, clock: ManualClock
) -> None:
    service = await start(max_orders_per_minute="2")
    await place(service, upstream, {**RESTING, "qty": 1})
    await place(service, upstream, {**RESTING, "qty": 2})  # the second place of the minute: at the limit
    await refused_locally(service, upstream, {**RESTING, "qty": 3}, "equity", ("max_orders_per_minute", 2, 3))
    assert len(upstream.orders.book) == 2

    await clock.advance(60)  # the minute has passed on the service's clock: the count is empty again
    await place(service, upstream, {**RESTING, "qty": 3})
    assert len(upstream.orders.book) == 3


async def test_open_orders_at_the_limit_refuse_the_next_one_without_calling_the_upstream(
    start: Callable[..., Any], upstream: FakeFidelity
) -> None:
    service = await start(max_open_orders="2")
    await place(service, upstream, {**RESTING, "qty": 1})
    await place(service, upstream, {**RESTING, "qty": 2})  # one working before it: this one makes two
    assert [o.status for o in upstream.orders.book.values()] == ["OPEN", "OPEN"]
    await refused_locally(service, upstream, {**RESTING, "qty": 3}, "equity", ("max_open_orders", 2, 3))
    status, limits = await service.call("GET", f"{API}/safety/limits")
    assert status == 200 and limits["data"]["usage"]["open_orders"] == 2, limits


async def test_the_allow_list_passes_its_symbols_and_an_options_underlying_and_refuses_the_rest(
    start: Callable[..., Any], upstream: FakeFidelity
) -> None:
    service = await start(symbol_allow="AAPL,QS")
    await reaches_upstream(service, upstream, {**BUY, "qty": 1}, "equity")
    await reaches_upstream(service, upstream, CALL, "option")  # QS270115C7: its underlying QS is allowed
    tsla = {**BUY, "symbol": "TSLA", "qty": 1}
    await refused_locally(service, upstream, tsla, "equity", ("symbol_allow", ["AAPL", "QS"], "TSLA"))
    unh_call = {**CALL, "symbol": "UNH260618C350", "limitPrice": 4.65}
    await refused_locally(service, upstream, unh_call, "option", ("symbol_allow", ["AAPL", "QS"], "UNH"))


# The margin account's day loss as the upstream's positions answer carries it (each position's todaysGainLoss).
MARGIN_DAY_LOSS = -round(
    sum(float(p["marketValDetail"]["todaysGainLoss"]) for p in payloads.POSITIONS_BY_ACCOUNT[payloads.MARGIN]), 2
)


async def test_a_day_loss_equal_to_the_limit_has_not_crossed_it(
    start: Callable[..., Any], upstream: FakeFidelity
) -> None:
    service = await start(daily_loss_limit=f"{MARGIN_DAY_LOSS:.2f}")
    status, positions = await service.call("GET", f"{API}/accounts/{payloads.MARGIN}/positions")
    assert status == 200, positions
    assert MARGIN_DAY_LOSS > 0  # the trader sees the same day loss the limit is measured against
    assert round(sum(p["todays_gain_loss"] for p in positions["data"]), 2) == -MARGIN_DAY_LOSS
    await reaches_upstream(service, upstream, {**BUY, "qty": 1}, "equity")
    status, state = await service.call("GET", f"{API}/safety")
    assert status == 200 and state["data"]["halt"]["halted"] is False, state


async def test_a_day_loss_one_cent_past_the_limit_refuses_and_halts_without_an_order_call(
    start: Callable[..., Any], upstream: FakeFidelity
) -> None:
    limit = round(MARGIN_DAY_LOSS - 0.01, 2)
    service = await start(daily_loss_limit=f"{limit:.2f}")
    details = await refused_locally(
        service, upstream, {**BUY, "qty": 1}, "equity", ("daily_loss_limit", limit, MARGIN_DAY_LOSS)
    )
    assert details["halted"] is True and details["acct_num"] == payloads.MARGIN
    status, state = await service.call("GET", f"{API}/safety")
    assert status == 200, state
    assert state["data"]["halt"]["halted"] is True and state["data"]["halt"]["by"] == "daily-loss-limit"
    # Halted: an order on the other account, within every limit, is refused too and never reaches the upstream.
    # (Live trading is switched off by the tray's or the headless runner's control, which this bare runtime lacks.)
    before = order_calls(upstream)
    status, halted = await service.call(
        "POST", f"{API}/orders/equity/preview", json={**BUY, "acctNum": payloads.INDIVIDUAL, "qty": 1}
    )
    assert status == 409 and halted["error"]["code"] == "TRADING_HALTED", halted
    assert order_calls(upstream) == before
