"""``ftdesk mcp`` through the official SDK's own client over stdio, against the paper service on a real socket.

The service holds each place of the MCP server for the trader; an approver attached to the service's approval
book (what the tray's window is, without Qt) answers here.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ftdesk.client import AsyncClient
from ftdesk.service.orders.approvals import ApprovalRequest
from tests.fakes.clock import ManualClock

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "get_quotes",
    "get_positions",
    "get_balances",
    "get_orders",
    "get_option_chain",
    "search_symbols",
    "preview_equity_order",
    "preview_option_order",
    "place_order",
    "cancel_order",
    "halt_trading",
}


class TrayStandIn:
    """An approver with behaviour: answers each held place the way it was told, and remembers what it saw."""

    def __init__(self, decide: Callable[[ApprovalRequest], None]) -> None:
        self.decide = decide
        self.seen: list[ApprovalRequest] = []
        self.ended: list[ApprovalRequest] = []

    def asked(self, request: ApprovalRequest) -> None:
        self.seen.append(request)
        asyncio.get_running_loop().call_soon(self.decide, request)

    def settled(self, request: ApprovalRequest) -> None:
        self.ended.append(request)


@asynccontextmanager
async def assistant(service: Any) -> AsyncIterator[Client]:
    """The SDK's client talking to `ftdesk mcp` in a real process."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ftdesk.cli.entry", "mcp", "--url", service.base_url, "--approval-timeout", "30"],
        env={"FTSERVICE_API_KEY": service.api_key, "PYTHONPATH": str(ROOT)},
        cwd=str(ROOT),
    )
    async with Client(params) as client:
        yield client


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def started(start_service, clock: ManualClock) -> Any:
    service = await start_service(clock=clock, live_trading="true")
    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
    return service


async def preview_ko(client: Client) -> str:
    previewed = await client.call_tool(
        "preview_equity_order",
        {"symbol": "KO", "action": "buy", "quantity": 3, "order_type": "limit", "limit_price": 40},
    )
    assert not previewed.is_error, text_of(previewed)
    answer = json.loads(text_of(previewed))
    assert answer["as_the_broker_understood_it"].startswith(f"Preview {answer['conf_num']}")
    assert "Buy 3 KO limit 40" in answer["as_the_broker_understood_it"]
    return str(answer["conf_num"])


async def journal(service: Any) -> list[dict[str, Any]]:
    async with AsyncClient(service.base_url, service.api_key) as api:
        return list(await api.request("GET", "/orders/journal"))


async def test_tools_are_listed_with_described_schemas_and_reads_run(start_service) -> None:
    service = await started(start_service, ManualClock())
    async with assistant(service) as client:
        listed = (await client.list_tools()).tools
        assert {tool.name for tool in listed} == TOOLS
        for tool in listed:
            assert tool.description, tool.name
            for name, prop in tool.input_schema.get("properties", {}).items():
                assert prop.get("description"), f"{tool.name}.{name} has no description"
        quote = await client.call_tool("get_quotes", {"symbols": ["AAPL"]})
        assert not quote.is_error and json.loads(text_of(quote))["quotes"][0]["symbol"] == "AAPL"
        positions = await client.call_tool("get_positions", {})
        assert not positions.is_error and "AAPL" in {p["symbol"] for p in positions.structured_content["result"]}
        unknown = await client.call_tool("get_balances", {"account": "NOPE1"})
        assert unknown.is_error and "NOT_FOUND" in text_of(unknown)


async def test_a_place_without_a_tray_places_nothing_and_says_approval_needs_the_tray(start_service) -> None:
    service = await started(start_service, ManualClock())
    async with assistant(service) as client:
        conf = await preview_ko(client)
        placed = await client.call_tool("place_order", {"conf_num": conf})
    assert placed.is_error
    assert "approval needs the ftdesk tray" in text_of(placed) and "nothing was placed" in text_of(placed)
    assert "APPROVAL_UNAVAILABLE" in text_of(placed)
    place_rows = [row for row in await journal(service) if row["action"] == "place"]
    assert [(row["outcome"], row["error_code"]) for row in place_rows] == [("refused", "APPROVAL_UNAVAILABLE")]


async def test_the_trader_approves_rejects_or_lets_it_time_out(start_service) -> None:
    clock = ManualClock()
    service = await started(start_service, clock)
    book = service.runtime.context.orders.approvals
    answers = iter(["approve", "reject", "silence"])

    def decide(request: ApprovalRequest) -> None:
        choice = next(answers)
        if choice == "silence":
            asyncio.get_running_loop().create_task(clock.advance(request.timeout + 1))
        else:
            assert book.answer(request.number, choice == "approve")

    tray = TrayStandIn(decide)
    book.attach(tray)
    async with assistant(service) as client:
        approved = await client.call_tool("place_order", {"conf_num": await preview_ko(client)})
        assert not approved.is_error, text_of(approved)
        assert text_of(approved).count("Placed: the trader approved it.") == 1
        rejected = await client.call_tool("place_order", {"conf_num": await preview_ko(client)})
        assert rejected.is_error and "The trader rejected this order in the ftdesk tray" in text_of(rejected)
        silent = await client.call_tool(
            "place_order", {"conf_num": await preview_ko(client), "approval_timeout_seconds": 20}
        )
        assert silent.is_error and "did not answer in time" in text_of(silent)
    assert [r.client for r in tray.seen] == ["the assistant (ftdesk mcp)"] * 3
    assert tray.seen[0].preview is not None and tray.seen[0].preview.broker_action_desc
    assert "3 KO limit 40.00" in tray.seen[0].summary and tray.seen[2].timeout == 20
    assert [r.verdict.value for r in tray.ended if r.verdict] == ["approved", "rejected", "timed_out"]
    rows = await journal(service)
    approvals = [row for row in reversed(rows) if row["action"] == "approval"]
    assert [row["outcome"] for row in approvals] == ["accepted", "refused", "refused"]
    assert all("asked by the assistant (ftdesk mcp)" in row["message"] for row in approvals)
    places = [(row["outcome"], row["error_code"]) for row in reversed(rows) if row["action"] == "place"]
    assert places == [("accepted", None), ("refused", "APPROVAL_REJECTED"), ("refused", "APPROVAL_TIMEOUT")]


@pytest.mark.parametrize("require", ["true", "false"])
async def test_require_approval_holds_every_api_keys_places(start_service, require: str) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true", require_approval=require)
    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
        acct = (await api.list_accounts())[0].acct_num
        preview = await api.preview_equity_order(acct, "KO", "B", 1, "L", limit_price=40)
        if require == "true":
            with pytest.raises(Exception, match="APPROVAL_UNAVAILABLE") as held:
                await api.place_equity_order(acct, "KO", "B", 1, "L", conf_num=preview.conf_num, limit_price=40)
            assert "a script with the API key" in str(held.value)
        else:
            placed = await api.place_equity_order(acct, "KO", "B", 1, "L", conf_num=preview.conf_num, limit_price=40)
            assert placed.conf_num


async def test_a_bad_approval_timeout_header_is_refused_before_anything_is_held(start_service) -> None:
    service = await started(start_service, ManualClock())
    async with AsyncClient(service.base_url, service.api_key) as api:
        acct = (await api.list_accounts())[0].acct_num
        preview = await api.preview_equity_order(acct, "KO", "B", 1, "L", limit_price=40)
        body = {"acctNum": acct, "symbol": "KO", "orderActionCode": "B", "qty": 1, "priceTypeCode": "L",
                "limitPrice": 40, "tifCode": "D", "confNum": preview.conf_num}  # fmt: skip
        for bad in ("soon", "0", "601"):
            headers = {"X-Ftdesk-Client": "mcp", "X-Ftdesk-Approval-Timeout": bad}
            with pytest.raises(Exception, match="VALIDATION_ERROR") as refused:
                await api.request("POST", "/orders/equity/place", json=body, headers=headers)
            assert "X-Ftdesk-Approval-Timeout" in str(refused.value)


async def test_a_place_refused_before_the_trader_is_asked_says_it_also_needs_approval(start_service) -> None:
    service = await start_service(clock=ManualClock())  # dry-run, the default
    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
    async with assistant(service) as client:
        placed = await client.call_tool("place_order", {"conf_num": await preview_ko(client)})
    assert placed.is_error and "LIVE_TRADING_DISABLED" in text_of(placed) and "Nothing was placed." in text_of(placed)
    assert "also needs the trader's approval in the ftdesk tray" in text_of(placed)
