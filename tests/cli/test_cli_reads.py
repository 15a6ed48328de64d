"""``ftdesk quote|positions|balances|orders|chain|status|stream`` through the paper service on a real socket."""

from __future__ import annotations

import json
import re
import socket

import pytest

from ftdesk.client import AsyncClient
from tests.cli.cli_rig import ANSI, ftdesk
from tests.client.test_client_api import individual
from tests.fakes.clock import ManualClock

THOUSANDS = re.compile(r"\b\d{1,3}(?:,\d{3})+(?:\.\d\d)?\b")


@pytest.fixture
async def service(start_service):
    running = await start_service(clock=ManualClock())
    async with AsyncClient(running.base_url, running.api_key) as api:
        await api.login("trader", "paper-pass")
    return running


async def test_quote_prints_a_table_with_thousands_separators_and_json_for_scripts(service, monkeypatch) -> None:
    table = await ftdesk(service, "quote", "aapl", "MSFT", monkeypatch=monkeypatch)
    assert table.code == 0 and table.err == ""
    rows = {line.split("│")[1].strip(): line for line in table.out.splitlines() if line.startswith("│")}
    assert set(rows) == {"AAPL", "MSFT"}
    async with AsyncClient(service.base_url, service.api_key) as api:
        quotes = {q.symbol: q for q in (await api.get_quotes(["AAPL", "MSFT"])).quotes}
    assert f"{quotes['AAPL'].volume:,}" in rows["AAPL"] and THOUSANDS.search(rows["AAPL"])
    assert not ANSI.search(table.out), "no colour when stdout is not a terminal"

    scripted = await ftdesk(service, "quote", "AAPL", "--json", monkeypatch=monkeypatch)
    answer = json.loads(scripted.out)
    assert scripted.code == 0 and [q["symbol"] for q in answer["quotes"]] == ["AAPL"]
    assert answer["quotes"][0]["last"] == quotes["AAPL"].last


async def test_a_symbol_the_broker_does_not_quote_is_named_and_exits_1(service, monkeypatch) -> None:
    ran = await ftdesk(service, "quote", "AAPL", "ZZZZQ", monkeypatch=monkeypatch)
    assert ran.code == 1 and "AAPL" in ran.out and "does not quote ZZZZQ" in ran.err


async def test_colour_only_on_a_terminal(service, monkeypatch) -> None:
    coloured = await ftdesk(service, "positions", terminal=True, monkeypatch=monkeypatch)
    plain = await ftdesk(service, "positions", monkeypatch=monkeypatch)
    assert coloured.code == plain.code == 0
    assert ANSI.search(coloured.out) and not ANSI.search(plain.out)
    assert "AAPL" in ANSI.sub("", coloured.out) and "AAPL" in plain.out


async def test_positions_and_balances_as_tables_and_json(service, monkeypatch) -> None:
    async with AsyncClient(service.base_url, service.api_key) as api:
        acct = (await api.list_accounts())[0].acct_num
        held = await api.get_positions(acct)
        balance = await api.get_balances(acct)
    table = await ftdesk(service, "positions", monkeypatch=monkeypatch)
    assert table.code == 0 and f"Positions of account {acct}" in table.out
    for position in held:
        row = next(line for line in table.out.splitlines() if f"│ {position.symbol} " in line)
        assert f"{position.market_value:,.2f}" in row
    scripted = await ftdesk(service, "positions", "--json", monkeypatch=monkeypatch)
    assert [p["symbol"] for p in json.loads(scripted.out)] == [p.symbol for p in held]

    balances = await ftdesk(service, "balances", "--account", acct, monkeypatch=monkeypatch)
    net_worth = next(line for line in balances.out.splitlines() if "Net worth" in line)
    assert balances.code == 0 and f"{balance.net_worth:,.2f}" in net_worth and "," in net_worth
    as_json = json.loads((await ftdesk(service, "balances", "--json", monkeypatch=monkeypatch)).out)
    assert as_json["acct_num"] == acct and as_json["net_worth"] == balance.net_worth


async def test_an_unknown_account_is_the_services_refusal_with_its_words(service, monkeypatch) -> None:
    ran = await ftdesk(service, "balances", "--account", "NOPE123", monkeypatch=monkeypatch)
    assert ran.code == 1 and ran.err.startswith("ftdesk: refused by the service: NOT_FOUND: ")
    assert "NOPE123" in ran.err


async def test_orders_lists_them_and_open_keeps_the_working_ones(start_service, monkeypatch) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
        acct = await individual(api)
        below = round((await api.get_quotes(["KO"])).quotes[0].bid * 0.5, 2)  # rests: far under the market
        resting = await api.preview_equity_order(acct, "KO", "B", 1200, "L", limit_price=below)
        working = await api.place_equity_order(acct, "KO", "B", 1200, "L", conf_num=resting.conf_num, limit_price=below)
        filled = await api.preview_and_place(acct, "MSFT", "B", 1, confirm=lambda p: True, show=lambda p: None)
    assert filled is not None
    everything = await ftdesk(service, "orders", "--account", acct, "--json", monkeypatch=monkeypatch)
    assert {o["id_detail"]["conf_num"] for o in json.loads(everything.out)} >= {working.conf_num, filled.conf_num}
    open_only = await ftdesk(service, "orders", "--account", acct, "--open", monkeypatch=monkeypatch)
    assert open_only.code == 0 and working.conf_num in open_only.out and filled.conf_num not in open_only.out
    row = next(line for line in open_only.out.splitlines() if working.conf_num in line)
    assert "1,200" in row and f"limit {below:,.2f}" in row


async def test_chain_prints_the_nearest_expiration_or_the_one_asked(service, monkeypatch) -> None:
    async with AsyncClient(service.base_url, service.api_key) as api:
        chain = await api.get_option_chain("AAPL")
    nearest, later = chain.expirations[0], chain.expirations[1]
    table = await ftdesk(service, "chain", "AAPL", monkeypatch=monkeypatch)
    assert table.code == 0 and f"AAPL options expiring {nearest.expiration}" in table.out
    assert f"{nearest.strikes[0].strike:,.2f}" in table.out
    scripted = await ftdesk(
        service, "chain", "AAPL", "--expiry", str(later.expiration), "--json", monkeypatch=monkeypatch
    )
    assert scripted.code == 0, scripted.err
    assert [e["expiration"] for e in json.loads(scripted.out)["expirations"]] == [str(later.expiration)]
    bad = await ftdesk(service, "chain", "AAPL", "--expiry", "2001-01-01", monkeypatch=monkeypatch)
    assert bad.code == 2 and "no expiration on 2001-01-01" in bad.err


async def test_status_says_dry_run_session_and_halt(service, monkeypatch) -> None:
    table = await ftdesk(service, "status", monkeypatch=monkeypatch)
    assert table.code == 0 and "off (dry-run" in table.out and "logged_in" in table.out
    scripted = json.loads((await ftdesk(service, "status", "--json", monkeypatch=monkeypatch)).out)
    assert scripted["health"]["broker"] == "paper" and scripted["safety"]["halt"]["halted"] is False


async def test_stream_prints_json_lines_when_piped(service, monkeypatch) -> None:
    ran = await ftdesk(service, "stream", "AAPL", "--count", "2", monkeypatch=monkeypatch)
    lines = ran.out.splitlines()
    assert ran.code == 0 and len(lines) == 2 and all(json.loads(line)["symbol"] == "AAPL" for line in lines)


async def test_a_service_not_running_is_exit_3_saying_how_to_start_it(service, monkeypatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stopped = type(service)(f"http://127.0.0.1:{port}", service.api_key, service.http, service.runtime)
    ran = await ftdesk(stopped, "quote", "AAPL", monkeypatch=monkeypatch)
    assert ran.code == 3 and "not reachable" in ran.err and "ftdesk --headless" in ran.err


async def test_bad_arguments_are_exit_2_and_send_nothing(service, monkeypatch) -> None:
    for argv in (["quote"], ["buy", "AAPL"], ["buy", "-1", "AAPL"], ["chain"], ["buy", "1", "AAPL", "--limit", "x"]):
        ran = await ftdesk(service, *argv, monkeypatch=monkeypatch)
        assert ran.code == 2 and ran.err.startswith("ftdesk"), argv
