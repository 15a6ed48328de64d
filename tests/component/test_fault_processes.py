"""Faults a real ftdesk process survives: a crash during a halt, a halted restart, damaged files, a full disk."""

from __future__ import annotations

import asyncio
import errno
import json
import signal
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography.fernet import Fernet

from ftdesk.brokers.paper.broker import PaperBroker, paper_db_path
from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.domain.clock import SystemClock
from ftdesk.domain.safety import HaltState
from ftdesk.service.orders.journal import (
    JOURNAL_FILE_NAME,
    JournalAction,
    JournalDraft,
    OrderFacts,
    OrderJournal,
    Outcome,
)
from ftdesk.service.safety.store import SafetyRecord, SafetyStore
from tests.component.processes import ServiceProcess, free_port, main_py, service_env

pytestmark = pytest.mark.slow

API = "/api/v1"
WORKING = ("OPEN", "PARTIALLY_FILLED", "PENDING_TRIGGER")


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


class Api:
    """JSON calls to a service process with its API key."""

    def __init__(self, http: aiohttp.ClientSession, base_url: str, api_key: str) -> None:
        self.http, self.base_url, self.headers = http, base_url, {"Authorization": f"Bearer {api_key}"}

    async def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        async with self.http.request(method, self.base_url + API + path, json=body, headers=self.headers) as answer:
            return answer.status, await answer.json()

    async def ok(self, method: str, path: str, body: object = None) -> Any:
        status, answer = await self.call(method, path, body)
        assert status == 200, answer
        return answer["data"]

    async def working(self) -> list[str]:
        orders = await self.ok("GET", "/orders/status")
        return [o["id_detail"]["conf_num"] for o in orders if o["status_detail"]["status"] in WORKING]

    async def place_resting_orders(self, count: int) -> list[str]:
        """Leave ``count`` limit buys of AAPL working (5 % under the market); return their conf_nums."""
        acct = (await self.ok("GET", "/accounts"))[0]["acct_num"]
        last = (await self.ok("GET", "/market-data/quotes?symbols=AAPL"))["quotes"][0]["last"]
        placed = []
        for qty in range(1, count + 1):
            order = {
                "acctNum": acct,
                "symbol": "AAPL",
                "orderActionCode": "B",
                "qty": qty,
                "priceTypeCode": "L",
                "limitPrice": round(last * 0.95, 2),
                "tifCode": "G",
            }
            conf = (await self.ok("POST", "/orders/equity/preview", order))["conf_num"]
            placed.append((await self.ok("POST", "/orders/equity/place", {**order, "confNum": conf}))["conf_num"])
        return placed


def halted_on_disk(data_dir: Path) -> bool:
    try:
        return bool(json.loads((data_dir / "safety.json").read_text())["halt"]["halted"])
    except (OSError, ValueError, KeyError):
        return False


async def test_kill_9_during_a_halt_leaves_no_working_order_after_the_restart(tmp_path: Path) -> None:
    port = free_port()
    env = service_env(
        tmp_path, port, FTSERVICE_LIVE_TRADING="true", FTSERVICE_ENCRYPTION_KEY=Fernet.generate_key().decode()
    )
    service = await ServiceProcess.start([*main_py(), "--headless"], env, port)
    try:
        async with aiohttp.ClientSession() as http:
            api = Api(http, service.base_url, (tmp_path / "api-key").read_text().strip())
            await api.ok("POST", "/auth/login", {"username": "trader", "password": "paper-pass", "remember": True})
            placed = await api.place_resting_orders(30)
            halt = asyncio.ensure_future(api.call("POST", "/safety/halt", {"reason": "crash test"}))
            # Killed the moment the halt is saved: its cancels (one journaled broker call each) are under way.
            while not halted_on_disk(tmp_path):
                answered, _ = await asyncio.wait([halt], timeout=0.0005)
                if answered:
                    break
            service.proc.send_signal(signal.SIGKILL)
            await service.proc.wait()
            await asyncio.gather(halt, return_exceptions=True)
    finally:
        await service.kill()

    assert halted_on_disk(tmp_path)
    restarted = await ServiceProcess.start(
        [*main_py(), "--headless"], {**env, "FTSERVICE_LOGIN_AT_STARTUP": "true"}, port
    )
    try:
        assert "LIVE TRADING" not in restarted.banner
        async with aiohttp.ClientSession() as http:
            api = Api(http, restarted.base_url, (tmp_path / "api-key").read_text().strip())
            assert await api.working() == []  # the first answer of the new run: nothing is left working
            state = await api.ok("GET", "/safety")
            assert state["halt"]["halted"] is True and state["live_trading"] is False
            journal = await api.ok("GET", "/orders/journal?limit=500")
            # Each order's cancel is journaled: accepted, or unknown when the kill came during its broker call.
            canceled = {e["conf_num"] for e in journal if e["action"] == "cancel" and e["outcome"] != "rejected"}
            assert canceled == set(placed)
            halts = [e for e in journal if e["action"] == "halt"]
            assert halts[0]["endpoint"] == "safety (restart)" and halts[0]["outcome"] == "accepted"
            # The halt's own row is there unless the kill came between its two saves (the file came first).
            assert [h["endpoint"] for h in halts[1:]] in ([], ["safety (api)"])
            if halts[1:] and halts[1]["outcome"] == "unknown":  # cut short: the restart's sweep finished it
                assert halts[0]["conf_nums"], halts[0]
    finally:
        await restarted.kill()


def damaged(path: Path, how: str) -> None:
    """Damage a data-dir file as a disk, a bad copy or a stray program would."""
    if how == "binary":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes(range(256)) * 4)
    elif how == "deep":
        path.write_text("[" * 100_000)
    elif how == "cut":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif how == "emptied":
        path.write_bytes(b"")
    for companion in ("-wal", "-shm"):  # what a copy of the main file alone leaves
        path.with_name(path.name + companion).unlink(missing_ok=True)


def one_line_about(stderr: str, path: Path) -> str:
    """Return the one line of the process's stderr about the damaged file, failing on a traceback or a second one."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if str(path) in line and " ERROR " in line]
    assert len(lines) == 1, stderr
    return lines[0]


def moved_aside(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".damaged-*"))


async def make_paper_world(data_dir: Path) -> None:
    broker = PaperBroker(PaperConfig(db_path=paper_db_path(data_dir), seed=20261121), SystemClock())
    await broker.start()
    await broker.close()


@pytest.mark.parametrize(
    ("name", "how", "says"),
    [
        ("safety.json", "binary", "Trading stays halted"),
        ("safety.json", "deep", "Trading stays halted"),
        ("settings.json", "binary", "Started with the default settings"),
        ("settings.json", "deep", "Started with the default settings"),
        ("api-key", "binary", "A new API key was made"),
        ("paper/paper.sqlite3", "cut", "Started a fresh paper world"),
        ("paper/paper.sqlite3", "emptied", "Started a fresh paper world"),
    ],
)
async def test_a_damaged_file_is_moved_aside_named_in_one_line_and_the_service_starts(
    tmp_path: Path, name: str, how: str, says: str
) -> None:
    path = tmp_path / name
    if name.startswith("paper/"):
        await make_paper_world(tmp_path)
    damaged(path, how)
    kept = path.read_bytes()
    port = free_port()
    service = await ServiceProcess.start([*main_py(), "--headless"], service_env(tmp_path, port), port)
    try:
        async with aiohttp.ClientSession() as http:
            api = Api(http, service.base_url, (tmp_path / "api-key").read_text().strip())
            health = await api.ok("GET", "/health")
            state = await api.ok("GET", "/safety")
        assert await service.stop() == 0
        line = one_line_about(await service.stderr_text(), path)
    finally:
        await service.kill()
    assert "was damaged" in line and says in line, line
    (copy,) = moved_aside(path)
    assert copy.name in line and copy.read_bytes() == kept  # moved, never deleted nor changed
    assert [problem for problem in health["problems"] if copy.name in problem] == [line.split(": ", 1)[1]]
    assert state["halt"]["halted"] is (name == "safety.json")


@pytest.mark.parametrize("how", ["cut", "emptied"])
async def test_a_damaged_journal_refuses_to_start_with_the_command_that_recovers(tmp_path: Path, how: str) -> None:
    journal = OrderJournal(tmp_path / JOURNAL_FILE_NAME, SystemClock())
    journal.open()
    for n in range(300):
        journal.record(JournalDraft(f"r{n}", "test", JournalAction.PREVIEW, None, OrderFacts(), "h"), Outcome.ACCEPTED)
    journal.close()
    path = tmp_path / JOURNAL_FILE_NAME
    damaged(path, how)
    kept = path.read_bytes()

    for attempt in ("first", "second"):  # the next start refuses too: the journal is never silently replaced
        port = free_port()
        refused = await ServiceProcess.start([*main_py(), "--headless"], service_env(tmp_path, port), port, ready=False)
        assert await asyncio.wait_for(refused.proc.wait(), 20) == 3, attempt
        stderr = (await refused.proc.stderr.read()).decode() if refused.proc.stderr else ""
        line = one_line_about(stderr, path)
        assert "ftdesk never trades without its journal" in line and "ftdesk --new-journal" in line, line
    (copy,) = moved_aside(path)
    assert copy.read_bytes() == kept and not path.exists()

    recovered = await asyncio.create_subprocess_exec(
        *main_py(), "--new-journal", env=service_env(tmp_path, free_port()), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await recovered.communicate()
    assert recovered.returncode == 0 and copy.name in out.decode()
    port = free_port()
    service = await ServiceProcess.start([*main_py(), "--headless"], service_env(tmp_path, port), port)
    await service.kill()
    assert moved_aside(path) == [copy]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs to fill up (mounting one needs root: skipped elsewhere; test_full_disk injects ENOSPC)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(mount_point)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill_disk(mount_point: Path) -> None:
    """Write zeros until the disk is full, as another program would."""
    written = 0
    with open(mount_point / "filler", "wb", buffering=0) as filler:
        while written < (1 << 20):
            try:
                filler.write(bytes(4096))
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                return
            written += 4096
    raise AssertionError("a 1 MiB disk took more than 1 MiB")


async def test_on_a_full_1_mib_data_dir_the_halt_cancels_everything_and_holds_after_a_restart(
    small_disk: Path,
) -> None:
    data_dir = small_disk / "data"
    port = free_port()
    env = service_env(data_dir, port, FTSERVICE_LIVE_TRADING="true")
    service = await ServiceProcess.start([*main_py(), "--headless"], env, port)
    try:
        async with aiohttp.ClientSession() as http:
            api = Api(http, service.base_url, (data_dir / "api-key").read_text().strip())
            await api.ok("POST", "/auth/login", {"username": "trader", "password": "paper-pass"})
            placed = await api.place_resting_orders(5)
            fill_disk(small_disk)

            acct = (await api.ok("GET", "/accounts"))[0]["acct_num"]
            order = {"acctNum": acct, "symbol": "AAPL", "orderActionCode": "B", "qty": 1, "priceTypeCode": "M"}
            status, refused = await api.call("POST", "/orders/equity/preview", {**order, "tifCode": "D"})
            assert status == 507 and refused["error"]["code"] == "STORAGE_FULL", refused
            assert refused["error"]["details"]["data_dir"] == str(data_dir)
            assert str(data_dir) in refused["error"]["message"] and "KiB free" in refused["error"]["message"]

            halt = await api.ok("POST", "/safety/halt", {"reason": "disk full"})
            assert sorted(c["conf_num"] for c in halt["canceled"]) == sorted(placed) and halt["failures"] == []
            assert halt["saved"] is True
            assert await api.working() == []
            problems = (await api.ok("GET", "/health"))["problems"]
            assert any("STORAGE_FULL" in problem and str(data_dir) in problem for problem in problems), problems
        assert await service.stop() == 0
        assert "Traceback" not in await service.stderr_text()
    finally:
        await service.kill()

    restarted = await ServiceProcess.start([*main_py(), "--headless"], env, port)  # the disk is still full
    try:
        assert "LIVE TRADING" not in restarted.banner
        async with aiohttp.ClientSession() as http:
            api = Api(http, restarted.base_url, (data_dir / "api-key").read_text().strip())
            await api.ok("POST", "/auth/login", {"username": "trader", "password": "paper-pass"})
            state = await api.ok("GET", "/safety")
            assert state["halt"]["halted"] is True and state["halt"]["reason"] == "disk full"
            assert await api.working() == []
            journal = await api.ok("GET", "/orders/journal?limit=100")
            canceled = {e["conf_num"] for e in journal if e["action"] == "cancel" and e["outcome"] == "accepted"}
            assert canceled == set(placed)  # every cancel's outcome reached the journal
    finally:
        await restarted.kill()
