"""The scripts in examples/ run as a user runs them, as subprocesses against a running paper service."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RunningService
from tests.fakes.clock import ManualClock

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.slow


@dataclass
class Run:
    code: int
    out: str
    err: str


async def run_example(service: RunningService, script: str, *args: str, with_key: bool = True) -> Run:
    """Run one example with --base-url (and --api-key) and return its exit code and output."""
    command = [sys.executable, str(EXAMPLES / script), "--base-url", service.base_url, *args]
    if with_key:
        command += ["--api-key", service.api_key]
    env = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent)}
    env.pop("FTSERVICE_API_KEY", None)
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    async with asyncio.timeout(60):
        out, err = await process.communicate()
    assert process.returncode is not None
    return Run(process.returncode, out.decode(), err.decode())


async def test_positions_report_lists_each_accounts_positions_and_balance(start_service) -> None:
    service = await start_service()
    run = await run_example(service, "positions_report.py")
    assert run.code == 0, run.err
    await service.login()
    accounts = await service.context.broker.accounts.get_accounts()
    for account in accounts:
        assert account.acct_num in run.out
        for position in await service.context.broker.accounts.get_positions(account.acct_num):
            assert position.symbol in run.out
    assert run.out.count("net worth") == len(accounts)


async def test_preview_and_place_shows_the_preview_and_reports_the_dry_run_refusal(start_service) -> None:
    service = await start_service(clock=ManualClock())
    run = await run_example(service, "preview_and_place.py", "--symbol", "MSFT", "--qty", "3", "--yes")
    assert run.code == 0, run.err
    assert "Preview " in run.out and "3 MSFT at market" in run.out and "est. cost" in run.out
    assert "Dry-run" in run.out and "LIVE_TRADING_DISABLED" in run.out
    status, body = await service.call("GET", "/api/v1/orders/status")
    assert status == 200 and body["data"] == [], "nothing was placed"


async def test_preview_and_place_refused_by_a_risk_limit_prints_the_services_words_and_fails(start_service) -> None:
    service = await start_service(clock=ManualClock(), max_price_distance_pct="10")
    run = await run_example(service, "preview_and_place.py", "--symbol", "MSFT", "--limit", "180", "--yes")
    assert run.code == 1, (run.out, run.err)
    assert "Dry-run" not in run.out + run.err, "a refused preview is not dry-run"
    status, body = await service.call("GET", "/api/v1/safety/limits")
    assert status == 200, body
    # The service's own words: which limit, the price and what it was measured from.
    assert "Refused by a risk limit: Risk limit max_price_distance_pct (10.0) refuses this order" in run.err
    assert "limit_price 180 is" in run.err and "from the bid/ask midpoint" in run.err and "(RISK_LIMIT)" in run.err
    status, body = await service.call("GET", "/api/v1/orders/status")
    assert status == 200 and body["data"] == [], "nothing was placed"


async def test_preview_and_place_while_halted_says_so_and_fails(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    status, body = await service.call("POST", "/api/v1/safety/halt", json={"reason": "example test"})
    assert status == 200, body
    run = await run_example(service, "preview_and_place.py", "--symbol", "MSFT", "--qty", "1", "--yes")
    assert run.code == 1, (run.out, run.err)
    assert "Dry-run" not in run.out and "TRADING_HALTED" in run.err and "halted" in run.err.lower()


async def test_preview_and_place_without_a_terminal_declines(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    run = await run_example(service, "preview_and_place.py", "--symbol", "MSFT", "--qty", "1")
    assert run.code == 0, run.err
    assert "Not placed: declined" in run.out
    status, body = await service.call("GET", "/api/v1/orders/status")
    assert status == 200 and body["data"] == []


async def test_stream_quotes_to_csv_writes_the_asked_number_of_quotes(start_service, tmp_path: Path) -> None:
    service = await start_service(paper_tick_interval="0.05")
    for transport in ((), ("--ws",)):
        out = tmp_path / f"quotes{len(transport)}.csv"
        run = await run_example(
            service, "stream_quotes_csv.py", "--symbols", "AAPL,MSFT", "--count", "6", "--out", str(out), *transport
        )
        assert run.code == 0, run.err
        rows = list(csv.DictReader(io.StringIO(out.read_text())))
        assert len(rows) == 6 and {row["symbol"] for row in rows} <= {"AAPL", "MSFT"}
        assert all(float(row["last"]) > 0 and row["time"] for row in rows)
        assert "6 quotes written" in run.err


async def test_stream_quotes_to_csv_stops_after_the_time_limit(start_service) -> None:
    service = await start_service(paper_tick_interval="0.05")
    run = await run_example(service, "stream_quotes_csv.py", "--symbols", "AAPL", "--count", "100000", "--seconds", "1")
    assert run.code == 0, run.err
    rows = list(csv.DictReader(io.StringIO(run.out)))
    assert 0 < len(rows) < 100000


async def test_wait_for_fill_places_on_paper_with_live_on_and_sees_the_fill(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    run = await run_example(service, "wait_for_fill.py", "--symbol", "AAPL", "--qty", "2", "--timeout", "30")
    assert run.code == 0, run.err
    assert "Placed " in run.out and "Filled " in run.out
    conf_num = run.out.split("Placed ", 1)[1].split(":", 1)[0]
    status, body = await service.call("GET", f"/api/v1/orders/{conf_num}/detail")
    assert status == 200 and body["data"]["order"]["status_detail"]["status"] == "FILLED"


async def test_wait_for_fill_in_dry_run_explains_and_places_nothing(start_service) -> None:
    service = await start_service()
    run = await run_example(service, "wait_for_fill.py")
    assert run.code == 2 and "FTSERVICE_LIVE_TRADING=true" in run.out
    await service.login()  # logged out, the order list would answer 401 whatever had been placed
    status, body = await service.call("GET", "/api/v1/orders/status")
    assert status == 200 and body["data"] == []
