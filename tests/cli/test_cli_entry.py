"""The ``ftdesk`` console script: subcommands in a real process import no Qt nor the app; app flags still work."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from ftdesk.cli.entry import SUBCOMMANDS, main
from ftdesk.client import AsyncClient
from tests.fakes.clock import ManualClock

ROOT = Path(__file__).resolve().parents[2]

# Run one subcommand as the console script does, then say which heavy modules the process had loaded.
PROBE = """
import sys
from ftdesk.cli.entry import main
code = main(sys.argv[1:])
loaded = sorted(m for m in ("PySide6", "qasync", "ftdesk.app", "ftdesk.service", "ftdesk.brokers") if m in sys.modules)
print("LOADED", ",".join(loaded) or "-", file=sys.stderr)
sys.exit(code)
"""


async def test_a_piped_buy_in_a_real_process_places_nothing_and_loads_no_qt(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
        price = round((await api.get_quotes(["KO"])).quotes[0].bid * 0.9, 2)
    env = {**os.environ, "FTSERVICE_API_KEY": service.api_key, "PYTHONPATH": str(ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        PROBE,
        "buy",
        "1",
        "KO",
        "--limit",
        str(price),
        "--url",
        service.base_url,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 4, err.decode()
    assert "Preview " in out.decode() and "Nothing was placed" in err.decode()
    assert "LOADED -" in err.decode(), "a subcommand loads neither Qt nor the app, the server or a broker"
    async with AsyncClient(service.base_url, service.api_key) as api:
        journal = await api.request("GET", "/orders/journal")
    assert [e["action"] for e in journal] == ["preview"]


def test_the_apps_own_flags_still_reach_the_app(capsys) -> None:
    with pytest.raises(SystemExit) as version:
        main(["--version"])
    assert version.value.code == 0 and capsys.readouterr().out.startswith("ftdesk ")
    with pytest.raises(SystemExit) as unknown:
        main(["--no-such-flag"])
    assert unknown.value.code == 2 and "--no-such-flag" in capsys.readouterr().err
    assert not {"--headless", "--print-api-key", "--reset-paper", "--autostart"} & SUBCOMMANDS


def test_a_console_script_made_before_the_cli_entry_still_runs_subcommands(capsys) -> None:
    from ftdesk.app import main as app_main  # what an `ftdesk` script installed by an older ftdesk calls

    assert app_main(["quote", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: ftdesk quote")
