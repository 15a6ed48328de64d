"""The kill switch in the desktop app, on a real paper service: Halt acts at once, Resume asks first.

The tray menu and the status window follow the service's safety state, whoever pulled the switch (the
desktop app or a script through the API).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from PySide6.QtWidgets import QGroupBox, QLineEdit

from ftdesk.gui.icons import TrayLook
from ftdesk.gui.live_confirm import LiveTradingConfirmDialog
from ftdesk.gui.resume_confirm import ResumeConfirmDialog
from tests.fakes.waiting import wait_until
from tests.gui.desktop_rig import Desktop
from tests.gui.test_cockpit import individual_account, order_status, resting_buy
from tests.gui.test_tray import log_in, menu_texts

API = "/api/v1"


async def safety(desktop: Desktop) -> dict[str, Any]:
    status, body = await desktop.call("GET", f"{API}/safety")
    assert status == 200, body
    return dict(body["data"])


def titles(desktop: Desktop) -> list[str]:
    return [n.title for n in desktop.app.notifier.history]


async def test_halt_acts_at_once_and_resume_asks_first(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False, FTSERVICE_LIVE_TRADING="true")
    window, actions = desktop.app.window, desktop.app.actions
    await log_in(desktop)
    acct = await individual_account(desktop)
    confs = [await resting_buy(desktop, acct, symbol) for symbol in ("AAPL", "MSFT")]
    await wait_until(lambda: window.cockpit.orders.rowCount() == 2)
    assert window.halt_button.isVisible() and not window.halt_banner.isVisible()

    window.halt_button.click()  # no question asked
    assert actions.resume_dialog is None and actions.live_dialog is None
    await wait_until(lambda: window.halt_banner.isVisible())
    assert "TRADING HALTED" in window.halt_banner.text() and "by tray" in window.halt_banner.text()
    assert not window.halt_button.isVisible() and window.resume_button.isVisible()
    await wait_until(lambda: "Trading halted" in titles(desktop))  # the halt's sweep is done
    assert [await order_status(desktop, conf) for conf in confs] == ["CANCELED", "CANCELED"]
    await wait_until(lambda: window.cockpit.orders.rowCount() == 0)
    halted = next(n for n in desktop.app.notifier.history if n.title == "Trading halted")
    assert halted.message.startswith("2 open orders canceled; live trading switched off")
    state = await safety(desktop)
    assert state["halt"]["halted"] is True and state["halt"]["by"] == "tray" and state["live_trading"] is False
    assert not window.live_check.isChecked()

    window.resume_button.click()
    dialog = actions.resume_dialog
    assert isinstance(dialog, ResumeConfirmDialog) and dialog.isVisible()
    assert "Live trading stays off" in dialog.message
    dialog.cancel_button.click()  # declining keeps the halt
    assert actions.resume_dialog is None
    assert (await safety(desktop))["halt"]["halted"] is True and window.halt_banner.isVisible()

    window.resume_button.click()
    actions.resume_dialog.confirm_button.click()  # type: ignore[union-attr]
    await wait_until(lambda: window.halt_button.isVisible() and not window.halt_banner.isVisible())
    state = await safety(desktop)
    assert state["halt"]["halted"] is False and state["live_trading"] is False


async def test_the_tray_menu_follows_a_halt_from_a_script_and_resumes_with_a_question(make_desktop) -> None:
    desktop = await make_desktop(has_tray=True)
    tray, actions = desktop.app.tray, desktop.app.actions
    assert tray is not None
    assert tray.halt_action.isVisible() and not tray.resume_action.isVisible()
    status, body = await desktop.call("POST", f"{API}/safety/halt", json={"reason": "script test"})
    assert status == 200, body
    await wait_until(lambda: tray.resume_action.isVisible() and not tray.halt_action.isVisible())
    assert tray.icon.toolTip().startswith("TRADING HALTED")
    # Not the trader's own halt: a message says who halted and why.
    await wait_until(lambda: "Trading halted" in titles(desktop))
    assert "by api: script test" in desktop.app.notifier.history[-1].message
    tray.resume_action.trigger()
    assert isinstance(actions.resume_dialog, ResumeConfirmDialog)
    assert "by api: script test" in actions.resume_dialog.message
    actions.resume_dialog.reject()
    assert (await safety(desktop))["halt"]["halted"] is True
    tray.resume_action.trigger()
    actions.resume_dialog.confirm_button.click()  # type: ignore[union-attr]
    await wait_until(lambda: tray.halt_action.isVisible() and not tray.resume_action.isVisible())
    assert not tray.icon.toolTip().startswith("TRADING HALTED")
    assert not any("outside the desktop app" in n.message for n in desktop.app.notifier.history)
    tray.halt_action.trigger()  # from the menu too: at once
    await wait_until(lambda: tray.resume_action.isVisible())
    assert (await safety(desktop))["halt"]["by"] == "tray"
    assert (await desktop.call("POST", f"{API}/safety/resume"))[0] == 200  # a script lifts it: the trader is told
    await wait_until(lambda: tray.halt_action.isVisible())
    await wait_until(lambda: "outside the desktop app" in desktop.app.notifier.history[-1].message)


async def test_a_halt_has_its_own_tray_icon_and_a_first_status_line_in_the_menu_and_the_window(make_desktop) -> None:
    desktop = await make_desktop(has_tray=True)
    tray, window = desktop.app.tray, desktop.app.window
    assert tray is not None
    await log_in(desktop)
    await wait_until(lambda: tray.look is TrayLook.PAPER)
    assert not tray.halt_line_action.isVisible() and window.halt_line_label.isHidden()

    status, body = await desktop.call("POST", f"{API}/safety/halt", json={"reason": "glance test"})
    assert status == 200, body
    await wait_until(lambda: tray.look is TrayLook.HALTED)
    since = datetime.fromisoformat((await safety(desktop))["halt"]["since"]).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    line = f"TRADING HALTED since {since} by api"
    texts = menu_texts(desktop)
    assert texts[0] == line and texts[1].startswith("Session: logged in")
    assert tray.halt_line_action.isEnabled() and tray.halt_line_action.font().bold()  # not greyed out
    assert tray.icon.icon().cacheKey() == desktop.app.icons.tray_icon(TrayLook.HALTED).cacheKey()
    assert window.halt_line_label.text() == line and not window.halt_line_label.isHidden()

    assert (await desktop.call("POST", f"{API}/safety/resume"))[0] == 200
    await wait_until(lambda: tray.look is TrayLook.PAPER)
    assert not tray.halt_line_action.isVisible() and window.halt_line_label.isHidden()
    assert menu_texts(desktop)[0].startswith("Session: logged in")


async def test_live_trading_cannot_be_switched_on_while_halted(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False)
    window, actions = desktop.app.window, desktop.app.actions
    window.halt_button.click()
    await wait_until(lambda: window.halt_banner.isVisible())
    window.live_check.click()
    assert actions.live_dialog is None and not window.live_check.isChecked()
    assert "Trading is halted" in titles(desktop)


async def test_a_live_confirmation_accepted_after_a_script_halted_leaves_live_trading_off(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False)
    window, actions = desktop.app.window, desktop.app.actions
    window.live_check.click()
    dialog = actions.live_dialog
    assert isinstance(dialog, LiveTradingConfirmDialog)
    assert (await desktop.call("POST", f"{API}/safety/halt"))[0] == 200  # while the question is open
    await wait_until(lambda: window.halt_banner.isVisible())

    dialog.accept()

    state = await safety(desktop)
    assert state["halt"]["halted"] is True and state["live_trading"] is False
    await wait_until(lambda: "Trading is halted" in titles(desktop))
    assert not window.live_check.isChecked()


async def test_live_trading_saved_in_the_settings_while_halted_stays_off_until_resumed(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False)
    assert (await desktop.call("POST", f"{API}/safety/halt"))[0] == 200

    outcome = await desktop.bridge.save_settings({"live_trading": True})

    assert not outcome.errors
    state = await safety(desktop)
    assert state["halt"]["halted"] is True and state["live_trading"] is False


async def test_the_live_confirmation_names_the_accounts_the_broker_and_the_limits(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False, FTSERVICE_MAX_OPEN_ORDERS="7")
    window, actions = desktop.app.window, desktop.app.actions
    await log_in(desktop)
    acct = await individual_account(desktop)
    await wait_until(lambda: bool(desktop.app.feed.snapshot.accounts))
    window.live_check.click()
    dialog = actions.live_dialog
    assert isinstance(dialog, LiveTradingConfirmDialog)
    assert dialog.message.startswith("Turn on live trading with Paper?")
    accounts_line = dialog.message.splitlines()[1]
    assert accounts_line.startswith("Accounts: ") and acct in accounts_line and accounts_line.endswith("(Paper)")
    assert "at most 7 open orders" in dialog.message
    dialog.reject()


async def test_risk_limits_set_in_the_settings_dialog_apply_to_the_next_order(make_desktop) -> None:
    desktop = await make_desktop(has_tray=False, FTSERVICE_LIVE_TRADING="true")
    actions = desktop.app.actions
    await log_in(desktop)
    acct = await individual_account(desktop)
    actions.open_settings()
    await wait_until(lambda: actions.settings_dialog is not None)
    dialog = actions.settings_dialog
    assert dialog is not None
    limits_box = dialog.findChild(QGroupBox, "group_risk limits")
    assert limits_box is not None and limits_box.isVisible()
    open_orders = dialog.editor("max_open_orders")
    deny = dialog.editor("symbol_deny")
    assert isinstance(open_orders, QLineEdit) and isinstance(deny, QLineEdit)
    assert open_orders.text() == "100" and deny.text() == ""  # the defaults
    open_orders.setText("1")
    deny.setText("gme, amc")
    dialog.save_button.click()
    await wait_until(lambda: actions.settings_dialog is None)  # applied at once: no restart offered

    status, body = await desktop.call("GET", f"{API}/safety/limits")
    assert status == 200, body
    assert body["data"]["limits"]["max_open_orders"] == 1 and body["data"]["limits"]["symbol_deny"] == ["GME", "AMC"]
    await resting_buy(desktop, acct, "AAPL")
    with pytest.raises(AssertionError, match="RISK_LIMIT"):  # a second open order crosses the new limit
        await resting_buy(desktop, acct, "MSFT")
    actions.open_settings()
    await wait_until(lambda: actions.settings_dialog is not None)
    again = actions.settings_dialog.editor("symbol_deny")  # type: ignore[union-attr]
    assert isinstance(again, QLineEdit) and again.text() == "GME, AMC"
    actions.settings_dialog.reject()  # type: ignore[union-attr]
