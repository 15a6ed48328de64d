"""A paper service under ServiceControl (the way the tray and the headless runner run it), for the safety tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr

from ftdesk.app import ServiceRuntime
from ftdesk.config import Settings, load_settings, save_settings_file
from ftdesk.domain.accounts import AccountType
from ftdesk.domain.session import Credentials
from ftdesk.logs import SecretRedactor
from ftdesk.service.control import ServiceControl
from ftdesk.service.routes.app_window import DesktopWindow
from tests.conftest import TEST_API_KEY
from tests.fakes.clock import ManualClock
from tests.fakes.keyring import InMemoryKeyring

API = "/api/v1"
LIMIT_NAMES = (
    "max_equity_qty",
    "max_equity_notional",
    "max_option_contracts",
    "max_option_notional",
    "max_price_distance_pct",
    "max_orders_per_minute",
    "max_open_orders",
)
TRADER = Credentials(username="trader", password=SecretStr("paper-pass"))


@dataclass
class Desk:
    """A running service behind its control surface, and an HTTP client for it."""

    control: ServiceControl
    http: aiohttp.ClientSession

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
        headers = {"Authorization": f"Bearer {TEST_API_KEY}", **kwargs.pop("headers", {})}
        async with self.http.request(method, self.control.url + API + path, headers=headers, **kwargs) as response:
            return response.status, await response.json()

    async def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        status, body = await self.call(method, path, **kwargs)
        assert status == 200, body
        return body["data"]

    @property
    def broker(self) -> Any:
        return self.control._require().context.broker  # the paper world, to set the scene

    async def account(self) -> str:
        accounts = await self.broker.accounts.get_accounts()
        return str(next(a.acct_num for a in accounts if a.acct_type is AccountType.INDIVIDUAL))

    async def last(self, symbol: str = "AAPL") -> float:
        (quote,) = await self.broker.quote_feed.snapshot([symbol])
        return float(quote.last)

    async def midpoint(self, symbol: str = "AAPL") -> float:
        """Return the bid/ask midpoint the price-distance limit measures from (paper quotes are two-sided)."""
        (quote,) = await self.broker.quote_feed.snapshot([symbol])
        assert 0 < quote.bid <= quote.ask
        return round((quote.bid + quote.ask) / 2, 4)

    async def resting_buy(
        self, acct: str, qty: float = 1, symbol: str = "AAPL", factor: float = 0.95
    ) -> dict[str, Any]:
        """An equity limit buy below the market (stays open), within the default price distance."""
        return {
            "acctNum": acct,
            "symbol": symbol,
            "orderActionCode": "B",
            "qty": qty,
            "priceTypeCode": "L",
            "limitPrice": round(await self.last(symbol) * factor, 2),
            "tifCode": "G",
        }

    async def place(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Preview and place an equity order; return the place's answer (or the preview's refusal)."""
        status, previewed = await self.call("POST", "/orders/equity/preview", json=body)
        if status != 200:
            return status, previewed
        conf = previewed["data"]["conf_num"]
        return await self.call("POST", "/orders/equity/place", json={**body, "confNum": conf})

    async def open_orders(self) -> list[dict[str, Any]]:
        orders = await self.ok("GET", "/orders/status")
        return [o for o in orders if o["status_detail"]["status"] in ("OPEN", "PARTIALLY_FILLED", "PENDING_TRIGGER")]

    async def journal(self) -> list[dict[str, Any]]:
        return list(await self.ok("GET", "/orders/journal", params={"limit": "500"}))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def make_desk(
    tmp_path: Path, memory_keyring: InMemoryKeyring, clock: ManualClock
) -> AsyncIterator[Callable[..., Any]]:
    """Start paper services under a ServiceControl (same data dir each time); each logs in, live as asked.

    The risk limits start off, as for every other test; ``limits`` sets some in the settings file (where the
    tray's dialog keeps them, so ``control.save_settings`` can change them later).
    """
    started: list[Desk] = []
    data_dir = tmp_path / "data"

    async def start(
        live: bool = True, limits: dict[str, Any] | None = None, system_clock: bool = False, **env: str
    ) -> Desk:
        environ = {
            "FTSERVICE_DATA_DIR": str(data_dir),
            "FTSERVICE_PORT": "0",
            "FTSERVICE_API_KEY": TEST_API_KEY,
            "FTSERVICE_PAPER_SEED": "20261121",
            **env,
        }
        save_settings_file(data_dir, {**{name: 0 for name in LIMIT_NAMES}, **(limits or {})})
        settings = load_settings(environ)

        def make_runtime(current: Settings, window: DesktopWindow | None) -> ServiceRuntime:
            return ServiceRuntime(
                current,
                clock=None if system_clock else clock,
                keyring_backend=memory_keyring,
                redactor=SecretRedactor(),
                window=window,
            )

        control = ServiceControl(settings, make_runtime, reload_settings=lambda: load_settings(environ))
        await control.start()
        desk = Desk(control, aiohttp.ClientSession())
        started.append(desk)
        await control.log_in(TRADER)
        if live:
            control.set_live_trading(True, source="test")
        return desk

    yield start
    for desk in started:
        await desk.http.close()
        await desk.control.stop()
