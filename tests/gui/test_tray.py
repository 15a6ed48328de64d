"""The tray: its look follows the service state, and every menu action does what it says, on a real service."""

from __future__ import annotations

import aiohttp
from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QLineEdit, QPushButton

from ftdesk.gui.contracts import LoginRequest, LoginResult
from ftdesk.gui.icons import TrayLook
from ftdesk.gui.live_confirm import LiveTradingConfirmDialog
from ftdesk.gui.login_dialog import LoginDialog
from ftdesk.gui.settings_dialog import SettingsDialog
from tests.fakes.clock import ManualClock
from tests.fakes.waiting import wait_until
from tests.gui.desktop_rig import Desktop


async def log_in(desktop: Desktop, **fields: object) -> None:
    request = LoginRequest(
        username=str(fields.get("username", "trader")),
        password=str(fields.get("password", "paper-pass")),
        totp_code=None,
        remember=bool(fields.get("remember", False)),
    )
    outcome = await desktop.bridge.submit_login(request)
    assert outcome.result is LoginResult.OK, outcome


def menu_texts(desktop: Desktop) -> list[str]:
    assert desktop.app.tray is not None
    return [action.text() for action in desktop.app.tray.menu.actions() if action.isVisible() and action.text()]


async def test_the_menu_lists_status_lines_then_the_actions_of_issue_6(make_desktop) -> None:
    desktop = await make_desktop()
    assert menu_texts(desktop) == [
        "Session: logged out",
        "Broker: paper",
        "Mode: DRY-RUN (orders are refused)",
        "Streaming: market data waiting for session, account events waiting for session",
        "Clients: 0 (0 SSE, 0 WebSocket, 0 event streams)",
        "Log in…",
        "Live trading",
        "Halt trading",
        "Settings…",
        "Status window…",
        "Copy API key",
        "Open API docs",
        "Open log folder",
        "Getting started…",
        "Quit",
    ]
    tray = desktop.app.tray
    assert tray is not None
    assert not any(action.isEnabled() for action in tray.status_actions)
    assert tray.live_action.isCheckable() and not tray.live_action.isChecked()


async def test_on_paper_the_icon_goes_logged_out_then_paper_live_or_not_then_error_on_expiry(make_desktop) -> None:
    clock = ManualClock()
    desktop = await make_desktop(clock=clock, FTSERVICE_PAPER_SESSION_LIFETIME="60", FTSERVICE_AUTO_REAUTH="false")
    tray = desktop.app.tray
    assert tray is not None and tray.look is TrayLook.LOGGED_OUT
    await log_in(desktop)
    await wait_until(lambda: tray.look is TrayLook.PAPER)
    assert "paper, dry-run" in tray.icon.toolTip()
    desktop.bridge.set_live_trading(True)
    # Paper money either way: the look stays paper, and the tooltip and the menu tell the mode.
    await wait_until(lambda: "paper, LIVE" in tray.icon.toolTip())
    assert tray.look is TrayLook.PAPER and "Mode: LIVE TRADING" in menu_texts(desktop)

    await clock.advance(61)  # the paper session lapses after 60 s; the next broker call finds it gone
    status, body = await desktop.call("GET", "/api/v1/accounts")
    assert status == 401 and body["error"]["code"] == "SESSION_EXPIRED"
    await wait_until(lambda: tray.look is TrayLook.ERROR)
    assert "Session: expired: log in again" in menu_texts(desktop)
    assert tray.login_action.isVisible() and tray.logout_action.isVisible()


async def test_the_tooltip_names_broker_mode_and_api_url(make_desktop) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None
    tip = tray.icon.toolTip()
    assert "paper" in tip and "dry-run" in tip and f"{desktop.runtime.url}/api/v1" in tip


async def test_log_in_opens_the_dialog_and_a_login_there_turns_the_session_on(make_desktop) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None
    tray.login_action.trigger()
    dialog = desktop.app.actions.login_dialog
    assert isinstance(dialog, LoginDialog) and dialog.isVisible()
    tray.login_action.trigger()
    assert desktop.app.actions.login_dialog is dialog, "a second click must not open a second dialog"
    dialog.findChild(QLineEdit, "username").setText("trader")
    dialog.findChild(QLineEdit, "password").setText("secret-pass")
    dialog.findChild(QPushButton, "login_button").click()
    await wait_until(lambda: tray.look is TrayLook.PAPER)
    assert "Session: logged in as tr***er" in menu_texts(desktop)
    assert not tray.login_action.isVisible() and tray.logout_action.isVisible()
    await wait_until(lambda: desktop.app.actions.login_dialog is None)
    _status, body = await desktop.call("GET", "/api/v1/auth/status")
    assert body["data"]["state"] == "logged_in"


async def test_log_out_ends_the_session(make_desktop) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None
    await log_in(desktop)
    await wait_until(lambda: tray.logout_action.isVisible())
    tray.logout_action.trigger()
    await wait_until(lambda: tray.look is TrayLook.LOGGED_OUT)
    _status, body = await desktop.call("GET", "/api/v1/auth/status")
    assert body["data"]["state"] == "logged_out"


async def test_live_trading_asks_first_and_cancel_leaves_it_off(make_desktop) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None
    tray.live_action.trigger()
    dialog = desktop.app.actions.live_dialog
    assert isinstance(dialog, LiveTradingConfirmDialog) and dialog.isVisible()
    assert not tray.live_action.isChecked(), "the item stays unchecked until the trader confirms"
    dialog.cancel_button.click()
    assert desktop.app.actions.live_dialog is None
    assert not tray.live_action.isChecked() and not desktop.bridge.status.live
    _status, body = await desktop.call("GET", "/api/v1/health")
    assert body["data"]["live_trading"] is False


async def test_live_trading_confirmed_turns_on_and_unchecking_turns_off_at_once(make_desktop) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None
    tray.live_action.trigger()
    dialog = desktop.app.actions.live_dialog
    assert dialog is not None
    dialog.confirm_button.click()
    assert tray.live_action.isChecked()
    _status, body = await desktop.call("GET", "/api/v1/health")
    assert body["data"]["live_trading"] is True
    assert "Mode: LIVE TRADING" in menu_texts(desktop)

    tray.live_action.trigger()  # unchecking: no question asked
    assert desktop.app.actions.live_dialog is None
    assert not tray.live_action.isChecked()
    _status, body = await desktop.call("GET", "/api/v1/health")
    assert body["data"]["live_trading"] is False


async def test_settings_opens_the_dialog_on_the_saved_settings(make_desktop) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None
    tray.settings_action.trigger()
    await wait_until(lambda: desktop.app.actions.settings_dialog is not None)
    dialog = desktop.app.actions.settings_dialog
    assert isinstance(dialog, SettingsDialog) and dialog.isVisible()
    tray.settings_action.trigger()
    assert desktop.app.actions.settings_dialog is dialog
    dialog.reject()
    assert desktop.app.actions.settings_dialog is None


async def test_copy_api_key_puts_the_key_on_the_clipboard_and_says_so_without_showing_it(make_desktop) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None
    QGuiApplication.clipboard().setText("something else")
    tray.copy_key_action.trigger()
    assert QGuiApplication.clipboard().text() == desktop.api_key
    last = desktop.app.notifier.history[-1]
    assert last.title == "API key copied" and desktop.api_key not in last.message


async def test_open_api_docs_opens_the_docs_page_of_this_service(make_desktop, opened_urls) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None
    tray.docs_action.trigger()
    assert [url.toString() for url in opened_urls] == [f"{desktop.runtime.url}/docs"]
    browser = {"Accept": "text/html,application/xhtml+xml"}
    async with aiohttp.ClientSession() as http, http.get(opened_urls[0].toString(), headers=browser) as response:
        assert response.status == 200 and "text/html" in response.headers["Content-Type"]


async def test_open_log_folder_opens_the_logs_in_the_data_dir(make_desktop, opened_urls) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None
    tray.logs_action.trigger()
    expected = desktop.settings().data_dir / "logs"
    assert opened_urls == [QUrl.fromLocalFile(str(expected))]


async def test_status_window_item_shows_the_window(make_desktop) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None and not desktop.app.window.isVisible()
    tray.window_action.trigger()
    assert desktop.app.window.isVisible()


async def test_quit_takes_the_shutdown_path_and_frees_the_port(make_desktop) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None
    url = desktop.runtime.url
    tray.quit_action.trigger()
    assert desktop.app.stop_requested.is_set()
    await desktop.app.shutdown()
    assert not tray.icon.isVisible()
    async with aiohttp.ClientSession() as http:
        try:
            async with http.get(f"{url}/api/v1/health") as response:
                raise AssertionError(f"the service still answers: {response.status}")
        except aiohttp.ClientConnectionError:
            pass


async def test_the_clients_line_counts_open_streams_by_kind(make_desktop) -> None:
    desktop = await make_desktop()
    url = f"{desktop.runtime.url}/api/v1/streaming/quotes?symbols=AAPL&api_key={desktop.api_key}"
    async with desktop.http.get(url) as stream:
        assert stream.status == 200
        async with desktop.http.ws_connect(
            f"{desktop.runtime.url}/ws/quotes", headers={"Authorization": f"Bearer {desktop.api_key}"}
        ):
            await wait_until(lambda: "Clients: 2 (1 SSE, 1 WebSocket, 0 event streams)" in menu_texts(desktop))
        # A closed WebSocket is noticed at once (an idle SSE reader only when its next frame is written).
        await wait_until(lambda: "Clients: 1 (1 SSE, 0 WebSocket, 0 event streams)" in menu_texts(desktop))


async def test_on_fidelity_the_icon_goes_logged_out_dry_run_live_then_error_when_the_session_dies(
    make_desktop, fidelity_upstream
) -> None:
    desktop = await make_desktop(
        FTSERVICE_BROKER="fidelity",
        FTSERVICE_FIDELITY_UPSTREAM=fidelity_upstream.base_url,
        FTSERVICE_AUTO_REAUTH="false",
    )
    tray = desktop.app.tray
    assert tray is not None and tray.look is TrayLook.LOGGED_OUT
    await log_in(desktop, password=fidelity_upstream.password)
    await wait_until(lambda: tray.look is TrayLook.DRY_RUN)
    assert "fidelity, dry-run" in tray.icon.toolTip()
    desktop.bridge.set_live_trading(True)
    await wait_until(lambda: tray.look is TrayLook.LIVE)
    assert "fidelity, LIVE" in tray.icon.toolTip()

    fidelity_upstream.expire()  # upstream trouble: Fidelity ended the session; auto re-auth is off
    status, body = await desktop.call("GET", "/api/v1/accounts")
    assert status == 401 and body["error"]["code"] == "SESSION_EXPIRED"
    await wait_until(lambda: tray.look is TrayLook.ERROR)
    assert "Session: expired: log in again" in menu_texts(desktop)
