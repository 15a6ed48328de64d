"""A multi-leg fill reads back as the net debit or credit it was, through the real server and the paper broker."""

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


async def call_pair(service, underlying: str) -> tuple[str, str]:
    """Two calls of one expiry near the money, the lower strike first (its premium is the larger)."""
    chain = await service.context.broker.market_data.get_option_chain(underlying)
    expiration = chain.expirations[1]
    strikes = sorted(
        (s for s in expiration.strikes if s.call is not None and s.call.bid > 0),
        key=lambda s: abs(s.strike - chain.underlying_price),
    )
    low, high = sorted(strikes[:2], key=lambda s: s.strike)
    assert low.call is not None and high.call is not None
    return low.call.symbol, high.call.symbol


async def filled_spread(service, acct: str, body: dict[str, Any]) -> dict[str, Any]:
    status, preview = await service.call("POST", f"{API}/orders/options/preview", json=body)
    assert status == 200, preview
    status, placed = await service.call(
        "POST", f"{API}/orders/options/place", json={**body, "conf_num": preview["data"]["conf_num"]}
    )
    assert status == 200, placed
    conf = placed["data"]["conf_num"]
    status, detail = await service.call("GET", f"{API}/orders/{conf}/detail", params={"acct": acct})
    assert status == 200, detail
    order = detail["data"]["order"]
    assert order["status_detail"]["status"] == "FILLED", order
    return order


async def test_a_credit_spread_fill_reads_back_as_a_credit(service) -> None:
    acct = await individual_account(service)
    status, body = await service.call(
        "POST", f"{API}/orders/trade-agreement", json={"acct_num": acct, "agreement_id": "MULTI_LEG_OPTIONS"}
    )
    assert status == 200, body
    low, high = await call_pair(service, "MSFT")
    # Selling the lower strike and buying the higher one takes in a net credit.
    credit_legs = [{"symbol": low, "action": "SO", "qty": 1}, {"symbol": high, "action": "BO", "qty": 1}]
    spread = {"acct_num": acct, "underlying": "MSFT", "legs": credit_legs, "tif": "D"}

    limit = await filled_spread(service, acct, {**spread, "price_type": "L", "net_price": 0.01, "debit_credit": "CR"})
    assert limit["order_detail"]["action"] == "CR" and limit["order_detail"]["action_desc"] == "Net Credit"
    assert limit["status_detail"]["avg_exec_price"] > 0.01
    assert limit["status_detail"]["status_desc"].endswith("credit")

    # A market spread states no side; its fill at a net credit reads back as a credit, never as a debit.
    market = await filled_spread(service, acct, {**spread, "price_type": "M"})
    assert market["order_detail"]["action"] == "CR" and market["order_detail"]["action_desc"] == "Net Credit"
    assert market["status_detail"]["avg_exec_price"] > 0
    assert market["status_detail"]["status_desc"].endswith("credit")

    # The opposite spread costs a net debit and says so.
    debit_legs = [{"symbol": low, "action": "BC", "qty": 1}, {"symbol": high, "action": "SC", "qty": 1}]
    debit = await filled_spread(service, acct, {**spread, "legs": debit_legs, "price_type": "M"})
    assert debit["order_detail"]["action"] == "DB" and debit["status_detail"]["status_desc"].endswith("debit")
