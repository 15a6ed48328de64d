"""Faults a real ftdesk process survives: a crash during a halt, a halted restart, damaged files, a full disk."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from ftdesk.domain.safety import HaltState
from ftdesk.service.safety.store import SafetyRecord, SafetyStore
from tests.component.processes import ServiceProcess, free_port, main_py, service_env

pytestmark = pytest.mark.slow


def halted_data_dir(data_dir: Path) -> None:
    """Leave a data dir as a halted run leaves it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    SafetyStore(data_dir).save(
        SafetyRecord(halt=HaltState(halted=True, since=datetime(2026, 3, 2, 15, 0, tzinfo=UTC), by="api"))
    )


async def test_a_halted_restart_with_live_trading_configured_does_not_announce_live_trading(tmp_path: Path) -> None:
    halted_data_dir(tmp_path)
    port = free_port()
    env = service_env(tmp_path, port, FTSERVICE_LIVE_TRADING="true")
    service = await ServiceProcess.start([*main_py(), "--headless"], env, port)
    try:
        assert "LIVE TRADING" not in service.banner and "dry-run, HALTED" in service.banner, service.banner
    finally:
        await service.kill()
