"""``ftdesk buy|sell|short|cover|cancel|halt|resume`` through the paper service: previews first, asks, refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ftdesk.client import AsyncClient
from tests.api.test_orders_api import option_symbols
from tests.cli.cli_rig import ftdesk
from tests.client.test_client_api import individual
from tests.fakes.clock import ManualClock


async def places(service: Any) -> list[dict[str, Any]]:
    """The journal's place rows, newest first."""
    async with AsyncClient(service.base_url, service.api_key) as api:
        entries: list[dict[str, Any]] = await api.request("GET", "/orders/journal")
    return [entry for entry in entries if entry["action"] == "place"]


async def logged_in(start_service, **env: str) -> tuple[Any, str, float]:
    """A paper service (frozen clock) logged in; its individual account and KO's bid."""
    service = await start_service(clock=ManualClock(), **env)
    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
        acct = await individual(api)
        bid = (await api.get_quotes(["KO"])).quotes[0].bid
    return service, acct, bid


async def test_without_a_terminal_and_without_yes_nothing_is_placed(start_service, monkeypatch) -> None:
    service, acct, bid = await logged_in(start_service, live_trading="true")
    price = round(bid * 0.9, 2)
    ran = await ftdesk(service, "buy", "1", "KO", "--limit", str(price), "--account", acct, monkeypatch=monkeypatch)
    assert ran.code == 4
    assert ran.out.startswith("Preview ") and f"account {acct}: Buy 1 KO limit {price}" in ran.out
    assert "Nothing was placed: there is no terminal to ask on and --yes was not given." in ran.err
    assert await places(service) == []


async def test_yes_places_after_the_preview_and_the_order_is_listed_then_canceled(start_service, monkeypatch) -> None:
    service, acct, bid = await logged_in(start_service, live_trading="true")
    price = round(bid * 0.9, 2)
    ran = await ftdesk(
        service, "buy", "1,000", "KO", "--limit", str(price), "--account", acct, "--yes", monkeypatch=monkeypatch
    )
    assert ran.code == 0, ran.err
    preview_line, placed_line = ran.out.splitlines()[0], ran.out.splitlines()[-1]
    assert preview_line.startswith("Preview ") and "Buy 1,000 KO" in preview_line
    assert placed_line.startswith("Placed: conf_num ") and "status OPEN" in placed_line
    conf = placed_line.split()[2].rstrip(",")
    [row] = await places(service)
    assert row["outcome"] == "accepted" and conf in row["conf_nums"]

    listed = await ftdesk(service, "orders", "--open", "--account", acct, monkeypatch=monkeypatch)
    assert conf in listed.out
    canceled = await ftdesk(service, "cancel", conf, monkeypatch=monkeypatch)
    assert canceled.code == 0 and f"Cancel of {conf} (KO) accepted: 1,000 of 1,000 canceled" in canceled.out
    assert conf not in (await ftdesk(service, "orders", "--open", "--account", acct, monkeypatch=monkeypatch)).out


async def test_on_a_terminal_it_asks_and_only_a_yes_places(start_service, monkeypatch) -> None:
    service, acct, bid = await logged_in(start_service, live_trading="true")
    argv = ["buy", "5", "KO", "--limit", str(round(bid * 0.9, 2)), "--account", acct]
    declined = await ftdesk(service, *argv, terminal=True, typed="n\n", monkeypatch=monkeypatch)
    assert declined.code == 4 and "Place this order? [y/N]" in declined.out and "declined" in declined.err
    assert await places(service) == []
    accepted = await ftdesk(service, *argv, terminal=True, typed="y\n", monkeypatch=monkeypatch)
    assert accepted.code == 0 and "Placed: conf_num" in accepted.out
    assert [row["outcome"] for row in await places(service)] == ["accepted"]


async def test_dry_run_refuses_the_place_in_the_services_words(start_service, monkeypatch) -> None:
    service, acct, _ = await logged_in(start_service)
    ran = await ftdesk(service, "buy", "1", "KO", "--account", acct, "--yes", "--json", monkeypatch=monkeypatch)
    assert ran.code == 1
    assert "refused by the service: LIVE_TRADING_DISABLED: Live trading is off (dry-run mode)" in ran.err
    assert "Preview " in ran.err and ran.out == "", "the preview goes to stderr with --json; no JSON for a refusal"
    [row] = await places(service)
    assert row["outcome"] == "refused"


async def test_json_prints_the_preview_and_the_placement(start_service, monkeypatch) -> None:
    service, acct, bid = await logged_in(start_service, live_trading="true")
    price = round(bid * 0.9, 2)
    ran = await ftdesk(
        service, "buy", "2", "KO", "--limit", str(price), "--account", acct, "--yes", "--json", monkeypatch=monkeypatch
    )
    answer = json.loads(ran.out)
    assert ran.code == 0 and answer["preview"]["symbol"] == "KO" and answer["preview"]["qty"] == 2
    assert answer["placement"]["conf_num"] and answer["placement"]["status"] == "OPEN"
    declined = await ftdesk(service, "buy", "2", "KO", "--account", acct, "--json", monkeypatch=monkeypatch)
    assert declined.code == 4 and json.loads(declined.out)["placement"] is None


async def test_an_option_order_states_contracts_and_intent_as_the_broker_understood_it(
    start_service, monkeypatch
) -> None:
    service, acct, _ = await logged_in(start_service, live_trading="true")
    call, _, bid, _ = await option_symbols(service)
    price = round(max(bid * 0.5, 0.05), 2)
    ran = await ftdesk(
        service,
        "buy",
        "1",
        call,
        "--to-open",
        "--limit",
        str(price),
        "--account",
        acct,
        "--yes",
        monkeypatch=monkeypatch,
    )
    assert ran.code == 0, ran.err
    assert f"Buy Call to open 1 contract {call} limit {price} per share" in ran.out and "Placed: conf_num" in ran.out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["buy", "1", "KO", "--to-open"], "--to-open and --to-close are for option orders"),
        (["short", "1", "AAPL271217C200"], "an option order is a buy or a sell"),
        (["buy", "1.5", "AAPL271217C200", "--to-open"], "whole contracts"),
        (["buy", "1", "KO", "--limit", "1", "--stop", "2"], "not allowed with argument"),
    ],
)
async def test_orders_that_do_not_make_sense_are_exit_2_and_send_nothing(
    start_service, monkeypatch, argv: list[str], words: str
) -> None:
    service, _, _ = await logged_in(start_service, live_trading="true")
    ran = await ftdesk(service, *argv, "--yes", monkeypatch=monkeypatch)
    assert ran.code == 2 and words in ran.err and ran.out == ""


async def test_halt_refuses_orders_and_resume_asks_first(start_service, monkeypatch) -> None:
    service, acct, _ = await logged_in(start_service, live_trading="true")
    halted = await ftdesk(service, "halt", "--reason", "from the terminal", monkeypatch=monkeypatch)
    assert halted.code == 0 and "Trading halted since" in halted.out and "Live trading was turned off." in halted.out
    status = json.loads((await ftdesk(service, "status", "--json", monkeypatch=monkeypatch)).out)
    assert status["safety"]["halt"]["halted"] is True and status["safety"]["halt"]["reason"] == "from the terminal"

    refused = await ftdesk(service, "buy", "1", "KO", "--account", acct, "--yes", monkeypatch=monkeypatch)
    assert refused.code == 1 and "refused by the service: TRADING_HALTED: " in refused.err

    unasked = await ftdesk(service, "resume", monkeypatch=monkeypatch)
    assert unasked.code == 4 and "Not resumed: there is no terminal to ask on" in unasked.err
    declined = await ftdesk(service, "resume", terminal=True, typed="no\n", monkeypatch=monkeypatch)
    assert declined.code == 4 and "Resume trading (live trading stays off)? [y/N]" in declined.out
    assert json.loads((await ftdesk(service, "status", "--json", monkeypatch=monkeypatch)).out)["safety"]["halt"][
        "halted"
    ]
    resumed = await ftdesk(service, "resume", terminal=True, typed="y\n", monkeypatch=monkeypatch)
    assert resumed.code == 0 and "Trading resumed" in resumed.out
    after = json.loads((await ftdesk(service, "status", "--json", monkeypatch=monkeypatch)).out)
    assert after["safety"]["halt"]["halted"] is False
