"""The settings dialog: env-locked fields, inline validation, saving only what changed, restart and new key."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QGroupBox,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QWidget,
)
from pytestqt.qtbot import QtBot

from ftdesk.autostart import XdgAutostart
from ftdesk.config import SETTINGS_BY_NAME, Settings, load_settings, save_settings_file
from ftdesk.gui.settings_dialog import SettingsDialog
from ftdesk.service.control import SaveOutcome
from tests.fakes.waiting import wait_until

BEPS_TOKEN = "eyJhbGciOiJIUzI1NiJ9.beps-secret-token"


class FakeSettingsService:
    """Saves into a real settings file the way the bridge does, reports what needs a restart, makes keys."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.received: list[dict[str, Any]] = []
        self.refuse: dict[str, str] = {}
        self.gate: asyncio.Future[None] | None = None  # when set, each call waits for the test to open it
        self.api_key = "key-1"
        self.restarts = 0

    async def _wait_for_gate(self) -> None:
        if self.gate is not None:
            await self.gate

    async def save_settings(self, changes: Mapping[str, Any]) -> SaveOutcome:
        self.received.append(dict(changes))
        await self._wait_for_gate()
        if self.refuse:
            return SaveOutcome(errors=dict(self.refuse))
        save_settings_file(self.data_dir, changes)
        later = [name for name in changes if SETTINGS_BY_NAME[name].restart_required]
        return SaveOutcome(applied=[name for name in changes if name not in later], needs_restart=later)

    async def regenerate_api_key(self) -> None:
        await self._wait_for_gate()
        self.api_key = f"key-{int(self.api_key.split('-')[1]) + 1}"

    async def restart_service(self) -> None:
        await self._wait_for_gate()
        self.restarts += 1

    def file(self) -> dict[str, Any]:
        path = self.data_dir / "settings.json"
        return json.loads(path.read_text()) if path.exists() else {}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def service(data_dir: Path) -> FakeSettingsService:
    return FakeSettingsService(data_dir)


@pytest.fixture
def login_item(tmp_path: Path) -> XdgAutostart:
    return XdgAutostart(tmp_path / "config", ["/opt/ftdesk/ftdesk"])


@pytest.fixture
def open_dialog(
    qtbot: QtBot, data_dir: Path, service: FakeSettingsService, login_item: XdgAutostart
) -> Callable[..., SettingsDialog]:
    def build(with_login_item: bool = True, **env: str) -> SettingsDialog:
        settings: Settings = load_settings({"FTSERVICE_DATA_DIR": str(data_dir), **env})
        dialog = SettingsDialog(settings, service, login_item=login_item if with_login_item else None)
        qtbot.addWidget(dialog)
        dialog.open()
        return dialog

    return build


def line(dialog: SettingsDialog, name: str) -> QLineEdit:
    editor = dialog.editor(name)
    assert isinstance(editor, QLineEdit)
    return editor


def retype(qtbot: QtBot, dialog: SettingsDialog, name: str, text: str) -> None:
    editor = line(dialog, name)
    editor.selectAll()
    if text:
        qtbot.keyClicks(editor, text)
    else:
        qtbot.keyClick(editor, Qt.Key.Key_Delete)


def choose(dialog: SettingsDialog, name: str, value: str) -> None:
    combo = dialog.editor(name)
    assert isinstance(combo, QComboBox)
    combo.setCurrentIndex(combo.findData(value))


def all_text(widget: QWidget) -> str:
    parts = [widget.windowTitle(), widget.toolTip()]
    for child in widget.findChildren(QWidget):
        parts.append(child.toolTip())
        if isinstance(child, QLabel | QLineEdit | QCheckBox | QPushButton):
            parts.append(child.text())
        if isinstance(child, QLineEdit):
            parts.append(child.placeholderText())
    return "\n".join(parts)


def test_a_value_fixed_by_the_environment_is_read_only_with_a_note_naming_the_variable(
    qtbot: QtBot, open_dialog: Callable[..., SettingsDialog]
) -> None:
    dialog = open_dialog(FTSERVICE_PORT="9000", FTSERVICE_LOG_LEVEL="debug", FTSERVICE_AUTO_REAUTH="false")

    port = line(dialog, "port")
    assert port.text() == "9000" and port.isReadOnly()
    qtbot.keyClicks(port, "1")
    assert port.text() == "9000"
    assert dialog.is_locked("port") and dialog.lock_note("port") == "Set by FTSERVICE_PORT"
    note = dialog.findChild(QLabel, "port_note")
    assert note is not None and note.isVisible()

    assert not dialog.editor("log_level").isEnabled()
    assert dialog.lock_note("log_level") == "Set by FTSERVICE_LOG_LEVEL"
    auto_reauth = dialog.editor("auto_reauth")
    assert isinstance(auto_reauth, QCheckBox) and not auto_reauth.isChecked() and not auto_reauth.isEnabled()
    assert dialog.lock_note("auto_reauth") == "Set by FTSERVICE_AUTO_REAUTH"

    # Everything else stays editable and says nothing about the environment.
    assert not line(dialog, "unsubscribe_delay").isReadOnly()
    assert dialog.lock_note("unsubscribe_delay") == "" and not dialog.is_locked("broker")


async def test_invalid_input_is_shown_inline_and_nothing_is_saved(
    qtbot: QtBot, open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService
) -> None:
    dialog = open_dialog()
    retype(qtbot, dialog, "port", "70000")
    qtbot.keyClick(line(dialog, "port"), Qt.Key.Key_Return)  # finishing the edit checks the field
    assert dialog.field_error("port") == "Expected an integer from 0 to 65535"

    retype(qtbot, dialog, "unsubscribe_delay", "soon")
    retype(qtbot, dialog, "beps_stream_url", "http://beps.example/ws")
    choose(dialog, "broker", "fidelity")  # a valid change alongside: must not be saved either
    dialog.save_button.click()

    assert dialog.field_error("unsubscribe_delay") == "Expected a number of seconds at least 0 and at most 3600"
    assert "ws:// or wss://" in dialog.field_error("beps_stream_url")
    assert "nothing was saved" in dialog.error_text
    assert dialog.isVisible() and not dialog.busy  # a save in flight shows busy from the click on

    # Editing a field clears its stale error.
    retype(qtbot, dialog, "port", "8788")
    assert dialog.field_error("port") == ""

    # Once every field is valid the next save goes through, and it is the first the service ever gets.
    retype(qtbot, dialog, "unsubscribe_delay", "5")
    retype(qtbot, dialog, "beps_stream_url", "")
    dialog.save_button.click()
    await wait_until(lambda: dialog.restart_offered)
    assert service.received == [{"port": 8788, "unsubscribe_delay": 5.0, "broker": "fidelity"}]


async def test_save_sends_only_changed_unlocked_values_and_closes_when_all_apply_at_once(
    qtbot: QtBot, open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService
) -> None:
    dialog = open_dialog(FTSERVICE_PORT="9000")
    auto_reauth = dialog.editor("auto_reauth")
    assert isinstance(auto_reauth, QCheckBox) and auto_reauth.isChecked()
    auto_reauth.click()
    retype(qtbot, dialog, "session_keepalive_interval", "300.0")  # same value as the default 300
    retype(qtbot, dialog, "port", "1234")  # locked: typing does nothing
    service.gate = asyncio.get_running_loop().create_future()
    dialog.save_button.click()

    await wait_until(lambda: len(service.received) == 1)
    assert service.received == [{"auto_reauth": False}]
    assert dialog.busy and not dialog.save_button.isEnabled() and not dialog.editor("broker").isEnabled()
    service.gate.set_result(None)
    await wait_until(lambda: not dialog.isVisible())

    assert dialog.result() == QDialog.DialogCode.Accepted
    assert service.file() == {"auto_reauth": False}
    assert not dialog.restart_offered


async def test_changes_that_need_a_restart_say_so_and_restart_now_restarts(
    qtbot: QtBot, open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService
) -> None:
    dialog = open_dialog()
    choose(dialog, "broker", "fidelity")
    retype(qtbot, dialog, "beps_host", "beps.example.com")
    dialog.save_button.click()
    await wait_until(lambda: dialog.restart_offered)

    assert service.received == [{"broker": "fidelity", "beps_host": "beps.example.com"}]
    assert service.file() == {"broker": "fidelity", "beps_host": "beps.example.com"}
    assert "Broker" in dialog.restart_text and "Fidelity event host" in dialog.restart_text
    assert dialog.isVisible() and dialog.restart_button.isVisible()

    dialog.save_button.click()  # saved values are the new baseline: nothing left to send, so it just closes
    await wait_until(lambda: not dialog.isVisible())
    assert len(service.received) == 1 and service.restarts == 0

    dialog.open()
    assert dialog.restart_offered
    service.gate = asyncio.get_running_loop().create_future()
    qtbot.mouseClick(dialog.restart_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: dialog.busy)
    assert not dialog.restart_button.isEnabled()
    service.gate.set_result(None)
    await wait_until(lambda: not dialog.isVisible())
    assert service.restarts == 1
    assert dialog.result() == QDialog.DialogCode.Accepted


async def test_errors_from_the_service_are_shown_inline_and_the_dialog_stays(
    qtbot: QtBot, open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService
) -> None:
    service.refuse = {"beps_mid": "rejected by the service", "": "the settings file is read-only"}
    dialog = open_dialog()
    retype(qtbot, dialog, "beps_mid", "M123")
    dialog.save_button.click()
    await wait_until(lambda: bool(dialog.error_text))
    assert dialog.field_error("beps_mid") == "rejected by the service"
    assert "the settings file is read-only" in dialog.error_text
    assert dialog.isVisible() and not dialog.busy and dialog.save_button.isEnabled()


async def test_clearing_an_optional_value_removes_it_from_the_settings_file(
    qtbot: QtBot, open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService, data_dir: Path
) -> None:
    save_settings_file(data_dir, {"beps_host": "beps.example.com", "beps_mid": "M1"})
    dialog = open_dialog()
    assert line(dialog, "beps_host").text() == "beps.example.com"
    retype(qtbot, dialog, "beps_host", "")
    dialog.save_button.click()
    await wait_until(lambda: dialog.restart_offered)
    assert service.received == [{"beps_host": None}]
    assert service.file() == {"beps_mid": "M1"}


async def test_regenerating_the_api_key_asks_first(
    qtbot: QtBot, open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService
) -> None:
    dialog = open_dialog()
    dialog.regenerate_button.click()
    prompt = dialog.regenerate_prompt
    assert isinstance(prompt, QMessageBox) and prompt.isVisible()
    assert "API_KEY_INVALID" in prompt.informativeText()
    assert prompt.defaultButton() is prompt.button(QMessageBox.StandardButton.Cancel)
    qtbot.mouseClick(prompt.button(QMessageBox.StandardButton.Cancel), Qt.MouseButton.LeftButton)
    # Answered: the prompt is gone and nothing started (a regeneration shows busy from the answer on).
    assert dialog.regenerate_prompt is None and not dialog.busy

    dialog.regenerate_button.click()
    prompt = dialog.regenerate_prompt
    assert prompt is not None
    confirm = prompt.findChild(QPushButton, "confirm_regenerate")
    assert confirm is not None and confirm.text() == "Generate new key"
    qtbot.mouseClick(confirm, Qt.MouseButton.LeftButton)
    await wait_until(lambda: bool(dialog.status_text))
    assert service.api_key == "key-2", "one regeneration in all: the cancelled prompt made none"
    assert "Copy API key" in dialog.status_text
    assert dialog.isVisible() and not dialog.busy


def test_a_key_fixed_by_the_environment_cannot_be_regenerated(open_dialog: Callable[..., SettingsDialog]) -> None:
    dialog = open_dialog(FTSERVICE_API_KEY="fixed-key-0123456789abcdef")
    assert not dialog.regenerate_button.isEnabled()
    note = dialog.findChild(QLabel, "api_key_note")
    assert note is not None and note.text() == "The API key is set by FTSERVICE_API_KEY"
    assert "fixed-key-0123456789abcdef" not in all_text(dialog)


def test_the_beps_token_is_reported_as_set_but_never_shown(open_dialog: Callable[..., SettingsDialog]) -> None:
    dialog = open_dialog(FTSERVICE_BEPS_TOKEN=BEPS_TOKEN)
    state = dialog.findChild(QLabel, "beps_token_state")
    assert state is not None and state.text() == "Set (from FTSERVICE_BEPS_TOKEN)"
    assert BEPS_TOKEN not in all_text(dialog)
    assert "FTSERVICE_BEPS_TOKEN" in dialog.findChild(QLabel, "beps_token_note").text()  # type: ignore[union-attr]


def test_an_unset_beps_token_says_so(open_dialog: Callable[..., SettingsDialog]) -> None:
    state = open_dialog().findChild(QLabel, "beps_token_state")
    assert state is not None and state.text() == "Not set"


def test_labels_carry_the_documentation_of_each_setting(open_dialog: Callable[..., SettingsDialog]) -> None:
    dialog = open_dialog()
    for name in ("broker", "session_keepalive_interval", "login_at_startup", "port", "beps_stream_url"):
        spec = SETTINGS_BY_NAME[name]
        tooltip = dialog.editor(name).toolTip()
        assert spec.doc.replace("`", "") in tooltip and spec.env in tooltip
    start = dialog.editor("login_at_startup")
    assert isinstance(start, QCheckBox) and "stored credentials" in start.text()


async def test_save_without_changes_just_closes(
    open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService
) -> None:
    dialog = open_dialog()
    dialog.save_button.click()
    assert not dialog.isVisible() and dialog.result() == QDialog.DialogCode.Accepted

    # A save the first dialog had sent would reach the service before this one's.
    second = open_dialog()
    auto_reauth = second.editor("auto_reauth")
    assert isinstance(auto_reauth, QCheckBox)
    auto_reauth.click()  # applies at once, so the dialog closes when it is saved
    second.save_button.click()
    await wait_until(lambda: not second.isVisible())
    assert service.received == [{"auto_reauth": False}]


def start_at_login(dialog: SettingsDialog) -> QCheckBox:
    box = dialog.start_at_login_box
    assert box is not None
    return box


async def test_start_at_login_writes_the_autostart_entry_without_touching_the_settings_file(
    open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService, login_item: XdgAutostart
) -> None:
    dialog = open_dialog()
    box = start_at_login(dialog)
    assert not box.isChecked()
    assert str(login_item.path) in box.toolTip()

    box.click()
    dialog.save_button.click()
    await wait_until(lambda: not dialog.isVisible())

    assert dialog.result() == QDialog.DialogCode.Accepted
    assert login_item.is_enabled()
    assert "Exec=/opt/ftdesk/ftdesk" in login_item.path.read_text()
    assert service.received == [] and service.file() == {}


async def test_start_at_login_shows_the_entry_as_found_and_unticking_removes_it_along_with_other_changes(
    open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService, login_item: XdgAutostart
) -> None:
    login_item.enable()  # e.g. written by the installer
    dialog = open_dialog()
    box = start_at_login(dialog)
    assert box.isChecked()

    box.click()
    dialog.editor("auto_reauth").click()
    dialog.save_button.click()
    await wait_until(lambda: not dialog.isVisible())

    assert not login_item.path.exists()
    assert service.file() == {"auto_reauth": False}


async def test_start_at_login_that_cannot_be_written_says_where_and_saves_nothing(
    open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService, login_item: XdgAutostart
) -> None:
    login_item.path.parent.parent.mkdir(parents=True)
    login_item.path.parent.write_text("a file where the autostart folder should be")
    dialog = open_dialog()
    start_at_login(dialog).click()
    dialog.editor("auto_reauth").click()
    dialog.save_button.click()
    await wait_until(lambda: bool(dialog.error_text))

    assert "Start at login could not be turned on" in dialog.error_text
    assert str(login_item.path) in dialog.error_text
    assert "Nothing was saved" in dialog.error_text
    assert dialog.isVisible() and not dialog.busy and start_at_login(dialog).isEnabled()
    assert service.received == []


def test_without_a_login_item_there_is_no_start_at_login_option(open_dialog: Callable[..., SettingsDialog]) -> None:
    dialog = open_dialog(with_login_item=False)
    assert dialog.start_at_login_box is None
    assert dialog.findChild(QCheckBox, "start_at_login") is None
    assert "Start ftdesk when I log in" not in all_text(dialog)


async def test_when_the_settings_are_refused_after_start_at_login_changed_the_message_says_which_was_saved(
    open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService, login_item: XdgAutostart
) -> None:
    service.refuse = {"": "the settings file is read-only"}
    dialog = open_dialog()
    start_at_login(dialog).click()
    dialog.editor("auto_reauth").click()
    dialog.save_button.click()
    await wait_until(lambda: bool(dialog.error_text))

    assert login_item.is_enabled()
    assert dialog.error_text.startswith("Start at login was changed; nothing else was saved.")
    assert "the settings file is read-only" in dialog.error_text

    service.refuse = {}
    dialog.save_button.click()  # only the settings are left to save
    await wait_until(lambda: not dialog.isVisible())
    assert service.file() == {"auto_reauth": False}


async def test_the_paper_market_is_offered_only_while_the_paper_broker_is_chosen(
    open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService
) -> None:
    dialog = open_dialog()
    market = dialog.editor("paper_market")
    assert market.isVisibleTo(dialog)  # the default broker is paper
    choose(dialog, "broker", "fidelity")
    assert not market.isVisibleTo(dialog)
    choose(dialog, "broker", "paper")
    assert market.isVisibleTo(dialog)
    choose(dialog, "paper_market", "fidelity")
    dialog.save_button.click()
    await wait_until(lambda: len(service.received) == 1)
    assert service.received == [{"paper_market": "fidelity"}]


def test_fidelity_only_settings_are_grouped_and_shown_only_while_fidelity_is_the_broker(
    open_dialog: Callable[..., SettingsDialog],
) -> None:
    dialog = open_dialog()  # paper by default
    group = dialog.findChild(QGroupBox, "group_fidelity")
    assert group is not None and group.title() == "Fidelity account events"
    fields = {editor.objectName() for editor in group.findChildren(QLineEdit)}
    assert {"beps_host", "beps_stream_url", "beps_mid", "beps_app_id"} <= fields
    assert not any(name.startswith("beps") for g in dialog.findChildren(QGroupBox) if g is not group
                   for name in (e.objectName() for e in g.findChildren(QLineEdit)))  # fmt: skip
    assert not group.isVisibleTo(dialog), "BEPS jargon on paper"
    choose(dialog, "broker", "fidelity")
    assert group.isVisibleTo(dialog)
    assert dialog.findChild(QLabel, "beps_token_state") in group.findChildren(QLabel)
    choose(dialog, "broker", "paper")
    assert not group.isVisibleTo(dialog)
    fidelity = open_dialog(FTSERVICE_BROKER="fidelity")
    assert fidelity.findChild(QGroupBox, "group_fidelity").isVisibleTo(fidelity)  # type: ignore[union-attr]


async def test_limits_read_with_thousands_separators_say_0_is_off_and_save_as_numbers(
    qtbot: QtBot, open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService
) -> None:
    dialog = open_dialog(FTSERVICE_MAX_EQUITY_NOTIONAL="250000")
    assert line(dialog, "max_equity_notional").text() == "250,000"  # the environment's value, read-only
    assert line(dialog, "max_equity_qty").text() == f"{int(SETTINGS_BY_NAME['max_equity_qty'].default):,}"
    note = dialog.findChild(QLabel, "limits_note")
    assert note is not None and note.text().startswith("0 or an empty field turns a limit off")
    assert dialog.findChild(QGroupBox, "group_risk limits").isAncestorOf(note)  # type: ignore[union-attr]
    retype(qtbot, dialog, "max_open_orders", "")
    assert line(dialog, "max_open_orders").placeholderText() == "off"
    retype(qtbot, dialog, "daily_loss_limit", "12500")
    line(dialog, "daily_loss_limit").editingFinished.emit()
    assert line(dialog, "daily_loss_limit").text() == "12,500"
    retype(qtbot, dialog, "max_equity_qty", "20,000")
    dialog.save_button.click()
    await wait_until(lambda: len(service.received) == 1)
    assert service.received == [
        {"daily_loss_limit": 12500.0, "max_equity_qty": 20000.0, "max_open_orders": 0}
    ]  # 0: off


def test_the_fields_of_a_column_are_equally_wide(open_dialog: Callable[..., SettingsDialog]) -> None:
    dialog = open_dialog(FTSERVICE_BROKER="fidelity")
    dialog.resize(1000, 900)
    dialog.show()
    risk = dialog.findChild(QGroupBox, "group_risk limits")
    assert risk is not None
    widths = {editor.objectName(): editor.width() for editor in risk.findChildren(QLineEdit)}
    assert len(widths) == 10 and max(widths.values()) - min(widths.values()) <= 1, widths
    lefts = {editor.mapTo(dialog, editor.rect().topLeft()).x() for editor in risk.findChildren(QLineEdit)}
    assert len(lefts) == 1, "the fields start at one x"


async def test_require_approval_is_a_checkbox_saved_without_a_restart(
    qtbot: QtBot, open_dialog: Callable[..., SettingsDialog], service: FakeSettingsService
) -> None:
    dialog = open_dialog()
    require = dialog.editor("require_approval")
    assert isinstance(require, QCheckBox) and not require.isChecked() and "approval" in require.text()
    assert "FTSERVICE_REQUIRE_APPROVAL" in require.toolTip()
    require.click()
    retype(qtbot, dialog, "approval_timeout", "90")
    dialog.save_button.click()
    await wait_until(lambda: not dialog.isVisible())
    assert service.file() == {"require_approval": True, "approval_timeout": 90.0}
    assert not dialog.restart_offered
