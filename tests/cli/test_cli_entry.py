"""The ``ftdesk`` console script: subcommands in a real process import no Qt nor the app; app flags still work."""

from __future__ import annotations

import asyncio
import json
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


# Run one subcommand as the console script does; the last line on stderr is every module the process loaded.
MODULES_PROBE = """
import json, sys
from ftdesk.cli.entry import main
code = main(sys.argv[1:])
print("MODULES", json.dumps(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""

# What a read leaves unloaded: Qt and the app; aiohttp (its client and its server: a one-shot request is sent by
# the standard library); the event loop; the streams; and the order models and the preview's words.
NOT_FOR_A_READ = (
    "PySide6",
    "qasync",
    "ftdesk.app",
    "ftdesk.service",
    "ftdesk.brokers",
    "aiohttp",
    "asyncio",
    "websockets",
    "ftdesk.client.sse",
    "ftdesk.client.ws",
    "ftdesk.client.orders",
    "ftdesk.domain.orders",
    "ftdesk.domain.order_actions",
    "ftdesk.domain.events",
)


async def run_in_a_process(service, *argv: str) -> tuple[int, str, list[str]]:
    """Run ``ftdesk *argv`` in a new process; return its exit code, its stdout and the modules it loaded."""
    env = {**os.environ, "FTSERVICE_API_KEY": service.api_key, "PYTHONPATH": str(ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        MODULES_PROBE,
        *argv,
        "--url",
        service.base_url,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    *said, last = err.decode().strip().splitlines()
    assert last.startswith("MODULES "), err.decode()
    assert proc.returncode is not None
    return proc.returncode, out.decode() + "\n".join(said), json.loads(last.removeprefix("MODULES "))


def loaded_of(modules: list[str], names: tuple[str, ...]) -> list[str]:
    """Return which of ``names`` (a module or any of its submodules) are among ``modules``."""
    return sorted({name for name in names for m in modules if m == name or m.startswith(name + ".")})


async def test_a_read_in_a_real_process_loads_no_qt_aiohttp_event_loop_nor_order_models(start_service) -> None:
    service = await start_service(clock=ManualClock())
    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
    code, out, modules = await run_in_a_process(service, "quote", "AAPL", "KO")
    assert code == 0, out
    assert "AAPL" in out and "KO" in out
    assert loaded_of(modules, NOT_FOR_A_READ) == []
    code, out, modules = await run_in_a_process(service, "status")
    assert code == 0, out
    assert loaded_of(modules, NOT_FOR_A_READ) == []
    # The same probe sees the order models once a subcommand needs them: the checks above can fail.
    code, out, modules = await run_in_a_process(service, "orders", "--open")
    assert code == 0, out
    assert "ftdesk.domain.orders" in loaded_of(modules, NOT_FOR_A_READ)


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


def test_the_apps_help_names_every_subcommand_whole(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    words = set(capsys.readouterr().out.replace(",", " ").split())
    assert not SUBCOMMANDS - words, sorted(SUBCOMMANDS - words)
