"""The welcome window: shown on the very first start only, on a real paper service, and every button works."""

from __future__ import annotations

import asyncio
import json
import stat
import subprocess
import sys

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QLabel, QLineEdit, QPlainTextEdit, QPushButton

from ftdesk.gui.icons import TrayLook
from ftdesk.gui.login_dialog import LoginDialog
from ftdesk.gui.welcome import KEY_PLACEHOLDER, WelcomeDialog
from ftdesk.service.first_run import WELCOME_PENDING_NAME, note_headless_start, welcome_mark
from tests.fakes.waiting import wait_until
from tests.gui.desktop_rig import Desktop


def welcome_of(desktop: Desktop) -> WelcomeDialog:
    dialog = desktop.app.actions.welcome_dialog
    assert isinstance(dialog, WelcomeDialog) and dialog.isVisible(), "the welcome window is not open"
    return dialog


def texts_shown(dialog: WelcomeDialog) -> str:
    """Return every text the window displays."""
    labels = [label.text() for label in dialog.findChildren(QLabel)]
    boxes = [box.toPlainText() for box in dialog.findChildren(QPlainTextEdit)]
    return "\n".join(labels + boxes)


async def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """Run a Python snippet in a fresh interpreter, off the loop (the service it calls runs on this loop)."""
    return await asyncio.to_thread(
        subprocess.run, [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=30
    )


async def test_the_first_start_opens_the_welcome_and_records_it_privately(make_desktop) -> None:
    desktop = await make_desktop(welcome_seen=False)
    dialog = welcome_of(desktop)
    shown = texts_shown(dialog)
    assert "paper" in dialog.mode_label.text() and "live trading is off" in dialog.mode_label.text()
    assert f"{desktop.runtime.url}/api/v1" in shown and f'href="{desktop.runtime.url}/docs"' in shown
    assert desktop.api_key not in shown, "the key is copied, never shown"
    mark = welcome_mark(desktop.settings().data_dir)
    await wait_until(mark.exists)
    assert stat.S_IMODE(mark.stat().st_mode) == 0o600


async def test_the_second_start_does_not_open_it(make_desktop) -> None:
    first = await make_desktop(welcome_seen=False)
    welcome_of(first).close_button.click()
    await wait_until(welcome_mark(first.settings().data_dir).exists)
    await first.app.shutdown()
    second = await make_desktop(welcome_seen=False)  # same data dir, as left by the first run
    assert second.app.actions.welcome_dialog is None


async def test_only_the_mark_keeps_it_away_when_the_environment_configures_everything(make_desktop) -> None:
    # No settings file ever exists here; the first start welcomes, and the mark alone stops the second one.
    first = await make_desktop(welcome_seen=False, FTSERVICE_LIVE_TRADING="false", FTSERVICE_AUTO_REAUTH="true")
    data_dir = first.settings().data_dir
    await wait_until(welcome_mark(data_dir).exists)
    await first.app.shutdown()
    (data_dir / "journal.sqlite3").unlink()
    assert not (data_dir / "settings.json").exists()
    second = await make_desktop(welcome_seen=False, FTSERVICE_LIVE_TRADING="false", FTSERVICE_AUTO_REAUTH="true")
    assert second.app.actions.welcome_dialog is None


async def test_a_saved_settings_file_means_ftdesk_was_set_up_before(make_desktop) -> None:
    desktop = await make_desktop(welcome_seen=False, settings_file={"preview_ttl": 120})
    assert desktop.app.actions.welcome_dialog is None


async def test_an_install_from_before_the_welcome_existed_is_not_welcomed(make_desktop) -> None:
    earlier = await make_desktop()  # has served from this data dir: its order journal stays behind
    data_dir = earlier.settings().data_dir
    await earlier.app.shutdown()
    welcome_mark(data_dir).unlink()  # that version wrote no mark
    desktop = await make_desktop(welcome_seen=False)
    assert desktop.app.actions.welcome_dialog is None


async def test_copy_puts_the_key_on_the_clipboard(make_desktop) -> None:
    desktop = await make_desktop(welcome_seen=False)
    dialog = welcome_of(desktop)
    QGuiApplication.clipboard().setText("something else")
    dialog.copy_key_button.click()
    assert QGuiApplication.clipboard().text() == desktop.api_key
    assert desktop.app.notifier.history[-1].title == "API key copied"


async def test_the_copied_example_runs_against_the_service_and_reports_the_session(make_desktop) -> None:
    desktop = await make_desktop(welcome_seen=False)
    dialog = welcome_of(desktop)
    shown = dialog.example.toPlainText()
    assert len(shown.splitlines()) == 5 and KEY_PLACEHOLDER in shown and desktop.api_key not in shown
    dialog.copy_example_button.click()
    code = QGuiApplication.clipboard().text()
    assert code == shown.replace(KEY_PLACEHOLDER, desktop.api_key)
    last = desktop.app.notifier.history[-1]
    assert last.title == "Example copied" and desktop.api_key not in last.message

    result = await run_python(code)
    assert (result.returncode, result.stdout, result.stderr) == (0, "paper logged_out dry-run\n", "")
    status, _body = await desktop.call("POST", "/api/v1/auth/login", json={"username": "me", "password": "pw"})
    assert status == 200
    result = await run_python(code)
    assert result.stdout == "paper logged_in dry-run\n", result.stderr


async def test_the_docs_link_opens_this_services_docs_page(make_desktop, opened_urls) -> None:
    desktop = await make_desktop(welcome_seen=False)
    dialog = welcome_of(desktop)
    dialog.docs_label.linkActivated.emit(f"{desktop.runtime.url}/docs")  # what a click on the link sends
    assert [url.toString() for url in opened_urls] == [f"{desktop.runtime.url}/docs"]


async def test_keep_using_paper_closes_it_and_changes_nothing(make_desktop) -> None:
    desktop = await make_desktop(welcome_seen=False)
    dialog = welcome_of(desktop)
    assert dialog.close_button.text() == "Keep using paper" and dialog.close_button.isDefault()
    dialog.close_button.click()
    assert not dialog.isVisible() and desktop.app.actions.welcome_dialog is None
    assert desktop.bridge.status.broker == "paper"
    assert not (desktop.settings().data_dir / "settings.json").exists()


async def test_getting_started_in_the_tray_menu_opens_it_again_once(make_desktop) -> None:
    desktop = await make_desktop()
    tray = desktop.app.tray
    assert tray is not None and desktop.app.actions.welcome_dialog is None
    tray.welcome_action.trigger()
    dialog = welcome_of(desktop)
    tray.welcome_action.trigger()
    assert desktop.app.actions.welcome_dialog is dialog, "a second click must not open a second window"
    dialog.close()
    assert desktop.app.actions.welcome_dialog is None
    tray.welcome_action.trigger()
    assert welcome_of(desktop) is not dialog


async def test_getting_started_is_in_the_status_window_where_there_is_no_tray(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False)
    window = desktop.app.window
    assert window.isVisible() and desktop.app.actions.welcome_dialog is None
    window.welcome_button.click()
    welcome_of(desktop)


async def test_without_a_tray_the_first_start_shows_the_welcome_over_the_status_window(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False, welcome_seen=False)
    assert desktop.app.window.isVisible()
    welcome_of(desktop)


async def test_log_in_to_fidelity_switches_the_broker_and_opens_the_login_dialog(
    make_desktop, fidelity_upstream
) -> None:
    desktop = await make_desktop(welcome_seen=False, FTSERVICE_FIDELITY_UPSTREAM=fidelity_upstream.base_url)
    tray = desktop.app.tray
    assert tray is not None
    dialog = welcome_of(desktop)
    dialog.fidelity_button.click()
    assert "Switching to Fidelity" in dialog.message_text and not dialog.fidelity_button.isEnabled()
    await wait_until(lambda: desktop.app.actions.login_dialog is not None)
    login = desktop.app.actions.login_dialog
    assert isinstance(login, LoginDialog) and login.isVisible()
    assert desktop.app.actions.welcome_dialog is None  # closed (and deleted)
    # Switched the way the settings dialog switches: saved in settings.json, the service restarted on it.
    saved = json.loads((desktop.settings().data_dir / "settings.json").read_text())
    assert saved == {"broker": "fidelity"}
    assert desktop.runtime.settings.broker == "fidelity" and desktop.bridge.status.broker == "fidelity"
    assert any("Fidelity" in label.text() for label in login.findChildren(QLabel))
    assert not desktop.bridge.status.live, "switching the broker never turns live trading on"

    login.findChild(QLineEdit, "username").setText(fidelity_upstream.username)
    login.findChild(QLineEdit, "password").setText(fidelity_upstream.password)
    login.findChild(QPushButton, "login_button").click()
    await wait_until(lambda: tray.look is TrayLook.DRY_RUN)
    _status, body = await desktop.call("GET", "/api/v1/auth/status")
    assert (body["data"]["broker"], body["data"]["state"]) == ("fidelity", "logged_in")


async def test_log_in_to_fidelity_is_disabled_when_the_environment_fixes_paper(make_desktop) -> None:
    desktop = await make_desktop(welcome_seen=False, FTSERVICE_BROKER="paper")
    dialog = welcome_of(desktop)
    assert not dialog.fidelity_button.isEnabled()
    assert "FTSERVICE_BROKER" in dialog.fidelity_button.toolTip()


async def test_when_fidelity_is_already_the_broker_the_button_only_opens_the_login(
    make_desktop, fidelity_upstream
) -> None:
    desktop = await make_desktop(
        welcome_seen=False, FTSERVICE_BROKER="fidelity", FTSERVICE_FIDELITY_UPSTREAM=fidelity_upstream.base_url
    )
    dialog = welcome_of(desktop)
    assert "Fidelity" in dialog.mode_label.text() and dialog.close_button.text() == "Close"
    first_runtime = desktop.runtime
    dialog.fidelity_button.click()
    await wait_until(lambda: desktop.app.actions.login_dialog is not None)
    assert desktop.runtime is first_runtime, "no restart was needed"
    assert not (desktop.settings().data_dir / "settings.json").exists()


async def test_switching_to_fidelity_never_carries_live_trading_over_from_paper(
    make_desktop, fidelity_upstream
) -> None:
    desktop = await make_desktop(FTSERVICE_FIDELITY_UPSTREAM=fidelity_upstream.base_url)
    desktop.bridge.set_live_trading(True)  # harmless on paper
    desktop.app.actions.show_welcome()
    welcome_of(desktop).fidelity_button.click()
    await wait_until(lambda: desktop.app.actions.login_dialog is not None)
    assert desktop.bridge.status.broker == "fidelity" and not desktop.bridge.status.live
    _status, body = await desktop.call("GET", "/api/v1/health")
    assert body["data"]["live_trading"] is False
    assert "Live trading switched off" in [n.title for n in desktop.app.notifier.history]


async def test_it_tells_the_truth_when_the_environment_turns_live_trading_on(make_desktop) -> None:
    desktop = await make_desktop(welcome_seen=False, FTSERVICE_LIVE_TRADING="true")
    text = welcome_of(desktop).mode_label.text()
    assert "live trading is ON" in text and "live trading is off" not in text


async def test_a_first_start_that_was_headless_leaves_the_welcome_for_the_first_tray_start(make_desktop) -> None:
    # The README's first command over SSH: headless, the journal made; the tray later still welcomes, once.
    headless = await make_desktop()  # only for its data dir; the mark it was given goes below
    data_dir = headless.settings().data_dir
    await headless.app.shutdown()
    welcome_mark(data_dir).unlink()
    (data_dir / WELCOME_PENDING_NAME).unlink(missing_ok=True)
    journal = data_dir / "journal.sqlite3"
    kept = journal.rename(data_dir / "journal.kept")  # a real journal: an empty file is a damaged one
    note_headless_start(data_dir)  # what `ftdesk --headless` does before it serves, on a fresh data dir
    kept.rename(journal)  # and serving leaves the journal behind
    pending = data_dir / WELCOME_PENDING_NAME
    assert pending.exists() and stat.S_IMODE(pending.stat().st_mode) == 0o600

    tray = await make_desktop(welcome_seen=False)
    welcome_of(tray).close_button.click()
    await wait_until(lambda: welcome_mark(data_dir).exists() and not pending.exists())
    await tray.app.shutdown()
    again = await make_desktop(welcome_seen=False)
    assert again.app.actions.welcome_dialog is None


async def test_a_headless_start_after_the_first_leaves_nothing_pending(make_desktop) -> None:
    earlier = await make_desktop()  # the welcome seen, the journal made
    data_dir = earlier.settings().data_dir
    await earlier.app.shutdown()
    note_headless_start(data_dir)
    assert not (data_dir / WELCOME_PENDING_NAME).exists()
