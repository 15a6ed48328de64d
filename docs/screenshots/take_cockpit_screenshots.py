"""Take the cockpit screenshots offscreen: the status window on the paper broker with positions and open orders.

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/screenshots/take_cockpit_screenshots.py

No display, tray host or D-Bus needed (unlike take_screenshots.sh): it runs the real desktop app (paper
broker, temp data dir, free port, live trading on for paper's simulated money), logs in, buys a few
positions and leaves a few limit orders resting through the API as a script would, waits until the
cockpit shows them (it follows the account events), and saves ``QWidget.grab()`` of the status window as
cockpit.png next to this file; then it pulls the kill switch from the window and saves cockpit-halted.png.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")

import aiohttp  # noqa: E402
from PySide6.QtGui import QPixmap  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from ftdesk.app import ServiceRuntime  # noqa: E402
from ftdesk.config import Settings, load_settings  # noqa: E402
from ftdesk.gui.application import DesktopApp  # noqa: E402
from ftdesk.gui.contracts import LoginRequest  # noqa: E402
from ftdesk.gui.event_loop import DesktopEventLoop  # noqa: E402
from ftdesk.service.control import ServiceControl  # noqa: E402
from ftdesk.service.routes.app_window import DesktopWindow  # noqa: E402

MAX_BYTES = 300_000
"""A screenshot kept in the repository stays under this size."""
BUYS = (("AAPL", 40), ("MSFT", 25), ("NVDA", 60), ("KO", 100))
RESTING = (("AAPL", "B", 0.95, 10), ("TSLA", "B", 0.94, 5), ("MSFT", "S", 1.06, 10))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def until(condition: Callable[[], bool], within: float = 15.0) -> None:
    """Wait on the running loop until the condition holds (the cockpit updates from account events)."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("the cockpit did not show the orders in time")
        await asyncio.sleep(0.05)


def save(pixmap: QPixmap, name: str) -> None:
    path = HERE / name
    if not pixmap.save(str(path), "PNG", 9):
        raise SystemExit(f"could not write {path}")
    size = path.stat().st_size
    print(f"wrote {path} ({pixmap.width()}x{pixmap.height()}, {size // 1000} KB)")
    if size > MAX_BYTES:
        raise SystemExit(f"{path} is over {MAX_BYTES // 1000} KB")


async def post(http: aiohttp.ClientSession, path: str, body: dict[str, object]) -> dict[str, object]:
    async with http.post(path, json=body) as answer:
        envelope = await answer.json()
        if answer.status != 200:
            raise SystemExit(f"{path}: {envelope}")
        data: dict[str, object] = envelope["data"]
        return data


async def order(http: aiohttp.ClientSession, body: dict[str, object]) -> None:
    """Preview and place an equity order, as a script would."""
    preview = await post(http, "/api/v1/orders/equity/preview", body)
    await post(http, "/api/v1/orders/equity/place", {**body, "confNum": preview["conf_num"]})


async def shoot(app: QApplication, data_dir: str) -> None:
    os.environ.update(
        {
            "FTSERVICE_DATA_DIR": data_dir,
            "FTSERVICE_PORT": str(free_port()),
            "FTSERVICE_LIVE_TRADING": "true",
            "FTSERVICE_PAPER_SEED": "20261125",
        }
    )
    (Path(data_dir) / "welcome-shown").touch()  # not a first start: no welcome window on top

    def make_runtime(current: Settings, window: DesktopWindow | None) -> ServiceRuntime:
        return ServiceRuntime(current, window=window)

    desktop = DesktopApp(ServiceControl(load_settings(), make_runtime, reload_settings=load_settings), has_tray=False)
    await desktop.start()
    try:
        await desktop.bridge.submit_login(LoginRequest("trader", "paper-pass", None, remember=False))
        control = desktop.bridge.control
        http = aiohttp.ClientSession(base_url=control.url, headers={"Authorization": f"Bearer {control.api_key}"})
        async with http.get("/api/v1/accounts") as answer:
            account = (await answer.json())["data"][0]["acct_num"]
        for symbol, qty in BUYS:
            await order(
                http, {"acctNum": account, "symbol": symbol, "orderActionCode": "B", "qty": qty, "priceTypeCode": "M"}
            )
        symbols = ",".join(sorted({symbol for symbol, *_rest in RESTING}))
        async with http.get("/api/v1/market-data/quotes", params={"symbols": symbols}) as answer:
            quotes = {q["symbol"]: q["last"] for q in (await answer.json())["data"]["quotes"]}
        for symbol, side, factor, qty in RESTING:
            body = {"acctNum": account, "symbol": symbol, "orderActionCode": side, "qty": qty, "priceTypeCode": "L"}
            await order(http, {**body, "limitPrice": round(quotes[symbol] * factor, 2), "tifCode": "G"})
        await http.close()

        window = desktop.window
        window.resize(1040, 1200)  # room for every position row in the picture
        window.bring_to_front()
        cockpit = window.cockpit
        await until(lambda: cockpit.orders.rowCount() == len(RESTING) and cockpit.fills.rowCount() == len(BUYS))
        await asyncio.sleep(0.5)
        app.processEvents()
        save(window.grab(), "cockpit.png")

        halt = getattr(window, "halt_button", None)
        if halt is None:
            print("this tree has no halt button yet: cockpit-halted.png not taken")
            return
        halt.click()
        await until(lambda: window.halt_banner.isVisible() and cockpit.orders.rowCount() == 0)
        await asyncio.sleep(0.5)
        app.processEvents()
        save(window.grab(), "cockpit-halted.png")
    finally:
        await desktop.shutdown()


def main() -> int:
    app = QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)
    with tempfile.TemporaryDirectory() as data_dir, asyncio.Runner(loop_factory=lambda: DesktopEventLoop(app)) as run:
        run.run(shoot(app, data_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
