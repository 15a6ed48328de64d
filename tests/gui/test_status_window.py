"""The status window: the face of ftdesk where there is no tray, with the menu's information and actions."""

from __future__ import annotations

from PySide6.QtGui import QGuiApplication

from ftdesk.gui.live_confirm import LiveTradingConfirmDialog
from ftdesk.gui.login_dialog import LoginDialog
from ftdesk.gui.settings_dialog import SettingsDialog
from ftdesk.gui.status_window import NO_TRAY_NOTE
from tests.fakes.waiting import wait_until
from tests.gui.desktop_rig import Desktop
from tests.gui.test_bridge import startup_rows_written
from tests.gui.test_tray import log_in


def lines(desktop: Desktop) -> list[str]:
    return [label.text() for label in desktop.app.window.line_labels]


async def test_without_a_tray_the_window_opens_with_the_status_and_says_how_to_stop(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False)
    window = desktop.app.window
    assert desktop.app.tray is None
    assert window.isVisible()
    assert lines(desktop)[:3] == ["Session: logged out", "Broker: paper", "Mode: DRY-RUN (orders are refused)"]
    assert f"{desktop.runtime.url}/api/v1" in window.api_label.text()
    assert window.findChild(type(window.api_label), "note").text() == NO_TRAY_NOTE
    await log_in(desktop)
    await wait_until(lambda: lines(desktop)[0] == "Session: logged in as tr***er")
    assert window.logout_button.isVisible() and not window.login_button.isVisible()


async def test_the_buttons_are_the_menu_actions(make_desktop, opened_urls) -> None:
    desktop = await make_desktop(has_tray=False)
    window, actions = desktop.app.window, desktop.app.actions
    window.login_button.click()
    assert isinstance(actions.login_dialog, LoginDialog) and actions.login_dialog.isVisible()
    actions.login_dialog.reject()
    window.settings_button.click()
    await wait_until(lambda: isinstance(actions.settings_dialog, SettingsDialog))
    actions.settings_dialog.reject()  # type: ignore[union-attr]
    window.copy_key_button.click()
    assert QGuiApplication.clipboard().text() == desktop.api_key
    window.docs_button.click()
    window.logs_button.click()
    assert [url.toString() for url in opened_urls] == [
        f"{desktop.runtime.url}/docs",
        f"file://{desktop.settings().data_dir / 'logs'}",
    ]
    await log_in(desktop)
    await wait_until(lambda: window.logout_button.isVisible())
    window.logout_button.click()
    await wait_until(lambda: lines(desktop)[0] == "Session: logged out")
    window.quit_button.click()
    assert desktop.app.stop_requested.is_set()


async def test_the_live_box_asks_first_cancel_leaves_it_clear_and_clearing_is_immediate(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False)
    window, actions = desktop.app.window, desktop.app.actions
    window.live_check.click()
    assert isinstance(actions.live_dialog, LiveTradingConfirmDialog)
    assert not window.live_check.isChecked()
    actions.live_dialog.cancel_button.click()
    assert not window.live_check.isChecked() and not desktop.bridge.status.live
    window.live_check.click()
    actions.live_dialog.confirm_button.click()  # type: ignore[union-attr]
    assert window.live_check.isChecked() and lines(desktop)[2] == "Mode: LIVE TRADING"
    await log_in(desktop)
    await wait_until(lambda: lines(desktop)[0].startswith("Session: logged in"))
    assert window.live_check.isChecked() and lines(desktop)[2] == "Mode: LIVE TRADING"
    window.live_check.click()
    assert actions.live_dialog is None and not window.live_check.isChecked()
    _status, body = await desktop.call("GET", "/api/v1/health")
    assert body["data"]["live_trading"] is False


async def test_the_window_lists_the_newest_journal_entries(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False)
    await log_in(desktop)
    await startup_rows_written(desktop)
    accounts = await desktop.runtime.broker.accounts.get_accounts()
    order = {"acctNum": accounts[0].acct_num, "symbol": "KO", "orderActionCode": "B", "qty": 2, "priceTypeCode": "M"}
    assert (await desktop.call("POST", "/api/v1/orders/equity/preview", json=order))[0] == 200
    table = desktop.app.window.journal

    def rows() -> list[list[str]]:
        return [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]

    desktop.app.window.reload_journal()
    # Newest first: the preview, then the live switch's startup row (the journal records the switch too), in words.
    await wait_until(lambda: [row[1] for row in rows()] == ["Preview stock order", "Live trading switched"])
    row = rows()[0]
    assert row[3:6] == ["KO", "Buy", "2"] and row[7] == "Done"
    assert rows()[1][-1].startswith("Live trading switched off by ")


async def test_closing_the_window_hides_it_and_ftdesk_keeps_serving(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False)
    window = desktop.app.window
    window.close()
    assert not window.isVisible() and not desktop.app.stop_requested.is_set()
    assert (await desktop.call("GET", "/api/v1/health"))[0] == 200
