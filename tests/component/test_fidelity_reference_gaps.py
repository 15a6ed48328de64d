"""Request shapes a review against the captures found wrong: closed-position dates, trigger list, Greeks flag."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date
from typing import Any

import pytest

from ftdesk.brokers.fidelity.broker import FidelityBroker
from tests.component.conftest import running_fake
from tests.fakes import fidelity_payloads as p
from tests.fakes.fidelity_server import FakeFidelity
from tests.fakes.mdds_server import FakeMdds

CLOSED = "/ftgw/dp/customer-am-position/v1/accounts/closedposition"
TRIGGERS = "/ftgw/dp/retail-price-triggers/v1/investments/research/alert/price-triggers"
PERCENT_TRIGGER = "1095172719"  # the fake's active SPY lessThanPercent trigger, as created in the capture


@pytest.fixture
async def fake() -> AsyncIterator[FakeFidelity]:
    """The fake upstream with MDDS."""
    async with running_fake(mdds=FakeMdds()) as server:
        yield server


def closed_parameters(fake: FakeFidelity) -> dict[str, Any]:
    body: dict[str, Any] = [r.body for r in fake.requests if r.path == CLOSED][-1]
    parameters: dict[str, Any] = body["request"]["parameters"]
    return parameters


async def test_closed_positions_send_ytd_or_explicit_dates_never_an_invented_type(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    await broker.accounts.get_closed_positions(p.MARGIN, None, None)
    ytd = closed_parameters(fake)
    assert ytd["dateType"] == "YTD" and ytd["startDate"].startswith("01/01/")
    await broker.accounts.get_closed_positions(p.MARGIN, date(2025, 3, 1), date(2025, 6, 30))
    explicit = closed_parameters(fake)
    assert (explicit["dateType"], explicit["startDate"], explicit["endDate"]) == (None, "03/01/2025", "06/30/2025")
    assert "dateType" in explicit and explicit["taxYear"] is None  # the app sends unset fields as null


async def test_the_trigger_list_names_no_symbol_and_every_trigger_can_be_deleted(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    listed = await broker.user_data.get_price_triggers()
    assert [(t.symbol, t.basis.value) for t in listed] == [("AAPL", "PRICE"), ("SPY", "PERCENT")]
    assert fake.user_data.trigger_list_queries and all("symbol" not in q for q in fake.user_data.trigger_list_queries)
    # A percent trigger made in Trader+ can be deleted like any other.
    assert PERCENT_TRIGGER in fake.user_data.active_trigger_ids()
    await broker.user_data.delete_price_trigger(PERCENT_TRIGGER)
    assert PERCENT_TRIGGER not in fake.user_data.active_trigger_ids()


async def test_an_equity_subscribe_carries_include_greeks_as_captured(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    assert fake.mdds is not None
    await broker.quote_feed.snapshot(["AAPL", "MSFT"])
    await broker.quote_feed.snapshot(["AAPL", "QS270115C7"])
    equity, mixed = (session.commands_named("subscribe")[0] for session in fake.mdds.sessions)
    assert equity["Symbol"] == "AAPL,MSFT" and equity["IncludeGreeks"] is False
    assert mixed["Symbol"] == "AAPL,-QS270115C7" and mixed["IncludeGreeks"] is True
