"""Take the README's tray-app screenshots under Xvfb: the welcome window, the tray menu, the dialogs, the status window.

    docs/screenshots/take_screenshots.sh      # starts Xvfb, a tray host (trayer) and D-Bus, then this

Runs the real tray app (paper broker, temp data dir, free port) on the xcb platform, logs in, opens each
piece and saves it as a PNG next to this file. Needs the packages named in take_screenshots.sh.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import aiohttp  # noqa: E402
import qasync  # noqa: E402
from PySide6.QtCore import QPoint  # noqa: E402
from PySide6.QtGui import QGuiApplication, QPixmap  # noqa: E402
from PySide6.QtWidgets import QApplication, QComboBox, QWidget  # noqa: E402

from ftdesk.app import ServiceRuntime  # noqa: E402
from ftdesk.autostart import login_item_for_platform  # noqa: E402
from ftdesk.config import Settings, load_settings  # noqa: E402
from ftdesk.gui.application import DesktopApp  # noqa: E402
from ftdesk.gui.contracts import LoginRequest  # noqa: E402
from ftdesk.gui.live_confirm import LiveTradingConfirmDialog  # noqa: E402
from ftdesk.gui.login_dialog import LoginDialog  # noqa: E402
from ftdesk.gui.settings_dialog import SettingsDialog  # noqa: E402
from ftdesk.service.control import ServiceControl  # noqa: E402
from ftdesk.service.routes.app_window import DesktopWindow  # noqa: E402


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def settle(app: QApplication, seconds: float = 0.4) -> None:
    """Let Qt lay out and paint."""
    await asyncio.sleep(seconds)
    app.processEvents()


def save(pixmap: QPixmap, name: str) -> None:
    path = HERE / name
    if not pixmap.save(str(path)):
        raise SystemExit(f"could not write {path}")
    print(f"wrote {path} ({pixmap.width()}x{pixmap.height()})")


async def shoot(app: QApplication, data_dir: str) -> None:
    os.environ.update(
        {
            "FTSERVICE_DATA_DIR": data_dir,
            "FTSERVICE_PORT": str(free_port()),
        }
    )
    settings = load_settings()

    def make_runtime(current: Settings, window: DesktopWindow | None) -> ServiceRuntime:
        return ServiceRuntime(current, window=window)

    desktop = DesktopApp(ServiceControl(settings, make_runtime, reload_settings=load_settings))
    await desktop.start()
    try:
        # A fresh data dir is a first start: the welcome window opens by itself.
        welcome = desktop.actions.welcome_dialog
        if welcome is None:
            raise SystemExit("the welcome window did not open on a first start")
        await settle(app)
        save(welcome.grab(), "welcome-window.png")
        welcome.close()

        await desktop.bridge.submit_login(LoginRequest("trader", "paper-pass", None, remember=False))
        # Something to show: a script streaming quotes and a previewed order in the journal.
        control = desktop.bridge.control
        auth = {"Authorization": f"Bearer {control.api_key}"}
        http = aiohttp.ClientSession(base_url=control.url, headers=auth)
        stream = await http.get("/api/v1/streaming/quotes", params={"symbols": "AAPL,MSFT,NVDA"})
        async with http.get("/api/v1/accounts") as answer:
            account = (await answer.json())["data"][0]["acct_num"]
        order = {"acctNum": account, "symbol": "AAPL", "orderActionCode": "B", "qty": 10, "priceTypeCode": "M"}
        async with http.post("/api/v1/orders/equity/preview", json={**order, "tifCode": "D"}) as answer:
            assert answer.status == 200, await answer.text()
        await settle(app, 2.0)  # the streaming hubs connect and the status poll catches up

        screen = QGuiApplication.primaryScreen()
        if desktop.tray is not None:
            geometry = desktop.tray.icon.geometry()
            desktop.tray.menu.popup(geometry.bottomLeft() if geometry.isValid() else QPoint(900, 30))
            await settle(app)
            save(desktop.tray.menu.grab(), "tray-menu.png")
            # The top-right corner of the screen: the tray icon in its panel, with the menu open below it.
            corner = screen.grabWindow(0)
            save(corner.copy(corner.width() - 560, 0, 560, 360), "tray-corner.png")
            desktop.tray.menu.hide()

        login = LoginDialog(desktop.bridge.submit_login, username="trader", broker="paper", totp_needed=True)
        await show_and_save(app, login, "login-dialog.png")

        # The login item lives in the scratch data dir, so taking screenshots never touches the real one.
        login_item = login_item_for_platform("linux", home=Path(data_dir), environ={})
        dialog = SettingsDialog(desktop.bridge.settings, desktop.bridge, login_item=login_item)
        await show_and_save(app, dialog, "settings-dialog.png")
        # The same dialog with Fidelity chosen as the broker: its account-event (BEPS) settings appear.
        fidelity = SettingsDialog(desktop.bridge.settings, desktop.bridge, login_item=login_item)
        broker = fidelity.editor("broker")
        if not isinstance(broker, QComboBox):
            raise SystemExit("the settings dialog has no broker choice")
        broker.setCurrentIndex(broker.findData("fidelity"))
        await show_and_save(app, fidelity, "settings-dialog-fidelity.png")

        # As the menu opens it: naming the broker, the accounts and the local risk limits in force.
        desktop.actions.set_live_trading(True)
        confirm = desktop.actions.live_dialog
        if not isinstance(confirm, LiveTradingConfirmDialog):
            raise SystemExit("the live-trading confirmation did not open")
        await show_and_save(app, confirm, "live-trading-confirmation.png")

        desktop.window.bring_to_front()
        await settle(app)
        save(desktop.window.grab(), "status-window.png")
        desktop.window.hide()

        # Halted by a script: the tray's own look, the menu's first line and the status window's.
        async with http.post("/api/v1/safety/halt", json={"reason": "screenshot"}) as answer:
            assert answer.status == 200, await answer.text()
        await settle(app, 1.0)
        if desktop.tray is not None:
            geometry = desktop.tray.icon.geometry()
            desktop.tray.menu.popup(geometry.bottomLeft() if geometry.isValid() else QPoint(900, 30))
            await settle(app)
            save(desktop.tray.menu.grab(), "tray-menu-halted.png")
            corner = screen.grabWindow(0)
            save(corner.copy(corner.width() - 560, 0, 560, 360), "tray-corner-halted.png")
            desktop.tray.menu.hide()
        desktop.window.bring_to_front()
        await settle(app)
        save(desktop.window.grab(), "status-window-halted.png")
        desktop.window.hide()
        stream.close()
        await http.close()
    finally:
        await desktop.shutdown()


async def show_and_save(app: QApplication, widget: QWidget, name: str) -> None:
    widget.show()
    await settle(app)
    save(widget.grab(), name)
    widget.close()


def main() -> int:
    app = QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)
    with tempfile.TemporaryDirectory() as data_dir, asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as run:
        run.run(shoot(app, data_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
