"""``ftdesk login`` and ``ftdesk logout`` through the paper service on a real socket."""

from __future__ import annotations

import json

from ftdesk.client import AsyncClient
from tests.cli.cli_rig import ftdesk
from tests.fakes.clock import ManualClock


async def test_a_script_logs_in_with_the_password_on_stdin_then_reads_and_logs_out(start_service, monkeypatch) -> None:
    service = await start_service(clock=ManualClock())
    before = await ftdesk(service, "positions", monkeypatch=monkeypatch)
    assert before.code == 1 and "AUTH_REQUIRED" in before.err

    logged = await ftdesk(service, "login", "trader", "--password-stdin", typed="paper-pass\n", monkeypatch=monkeypatch)
    assert logged.code == 0 and "Session: logged_in" in logged.out
    assert "paper-pass" not in logged.out + logged.err
    assert (await ftdesk(service, "positions", "--json", monkeypatch=monkeypatch)).code == 0

    out = await ftdesk(service, "logout", "--json", monkeypatch=monkeypatch)
    assert out.code == 0 and json.loads(out.out)["state"] == "logged_out"
    async with AsyncClient(service.base_url, service.api_key) as api:
        assert (await api.get_auth_status()).state.value == "logged_out"


async def test_the_password_is_asked_on_a_terminal_and_a_wrong_one_is_the_services_refusal(
    start_service, monkeypatch
) -> None:
    service = await start_service(clock=ManualClock(), paper_password="paper-pass")
    wrong = await ftdesk(service, "login", "trader", terminal=True, typed="not-it\n", monkeypatch=monkeypatch)
    assert wrong.code == 1 and "Password for trader" in wrong.err and "refused by the service" in wrong.err
    assert "not-it" not in wrong.out + wrong.err
    right = await ftdesk(service, "login", "trader", terminal=True, typed="paper-pass\n", monkeypatch=monkeypatch)
    assert right.code == 0 and "logged_in" in right.out


async def test_without_a_terminal_or_password_stdin_nothing_is_sent(start_service, monkeypatch) -> None:
    service = await start_service(clock=ManualClock())
    piped = await ftdesk(service, "login", "trader", typed="paper-pass\n", monkeypatch=monkeypatch)
    assert piped.code == 2 and "--password-stdin" in piped.err
    bad_code = await ftdesk(
        service, "login", "trader", "--password-stdin", "--code", "12ab", typed="paper-pass\n", monkeypatch=monkeypatch
    )
    assert bad_code.code == 2 and "6 digits" in bad_code.err
    async with AsyncClient(service.base_url, service.api_key) as api:
        assert (await api.get_auth_status()).state.value == "logged_out"
