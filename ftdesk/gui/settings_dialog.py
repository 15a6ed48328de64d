"""The settings dialog: edits what the settings file holds and runs save, key regeneration and restart.

The fields themselves (which settings, in which groups, each with its validation) are in
``ftdesk.gui.setting_fields``. Saving, regenerating the API key and restarting the service are coroutines
of ``SettingsActions`` run as asyncio tasks, so the dialog never blocks the loop.

"Start at login" is not a setting: the platform's autostart entry (``ftdesk.autostart``) is its only
record, read when the dialog opens and written when it is saved.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ftdesk.gui.contracts import SettingsActions
from ftdesk.gui.setting_fields import (
    ERROR_STYLE,
    FIDELITY_GROUP,
    GROUPS,
    LIMITS_NOTE,
    NOTE_STYLE,
    RISK_LIMITS_GROUP,
    ROWS,
    SettingEditor,
)
from ftdesk.service.control import SETTINGS_BY_NAME, LoginItem, SaveOutcome, Settings

log = logging.getLogger(__name__)

BEPS_TOKEN_ENV = SETTINGS_BY_NAME["beps_token"].env
API_KEY_ENV = SETTINGS_BY_NAME["api_key"].env


_RIGHT_COLUMN = (RISK_LIMITS_GROUP, FIDELITY_GROUP)
"""The groups of the dialog's right column (the others are on the left), so it stays short enough for a laptop."""


class SettingsDialog(QDialog):
    """Edit the settings file; env-fixed values are read-only; saving never blocks the loop."""

    def __init__(
        self,
        settings: Settings,
        actions: SettingsActions,
        parent: QWidget | None = None,
        *,
        login_item: LoginItem | None = None,
    ) -> None:
        super().__init__(parent)
        self._actions = actions
        self._login_item = login_item
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._regenerate_prompt: QMessageBox | None = None
        self._saved: dict[str, Any] = {name: getattr(settings, name) for name in ROWS}
        self._api_key_locked = settings.locked_by_env("api_key")
        self._editors: dict[str, SettingEditor] = {}
        self.setWindowTitle("Settings - ftdesk")
        self.setMinimumWidth(1000)

        layout = QVBoxLayout(self)
        # Two columns, so the dialog stays short enough for a laptop screen: the risk limits on the right.
        columns = QHBoxLayout()
        left, right = QVBoxLayout(), QVBoxLayout()
        columns.addLayout(left, 1)
        columns.addLayout(right, 1)
        layout.addLayout(columns)
        self._fidelity_group: QGroupBox | None = None
        for title, rows in GROUPS:
            group = QGroupBox(title)
            group.setObjectName("group_fidelity" if title == FIDELITY_GROUP else f"group_{title.lower()}")
            if title == FIDELITY_GROUP:
                self._fidelity_group = group
            form = QFormLayout(group)
            form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
            if title == RISK_LIMITS_GROUP:
                note = QLabel(LIMITS_NOTE)
                note.setObjectName("limits_note")
                note.setWordWrap(True)
                form.addRow(note)
            for row in rows:
                spec = SETTINGS_BY_NAME[row.name]
                value = getattr(settings, row.name)
                editor = SettingEditor(row, spec, value, settings.locked_by_env(row.name), self._fit_height)
                self._editors[row.name] = editor
                form.addRow(editor.label, editor.cell)
                if row.name == "api_key_required":
                    form.addRow("", self._build_regenerate(settings))
            if title == FIDELITY_GROUP:
                beps_token_label = QLabel("Fidelity event token")
                form.addRow(beps_token_label, self._build_beps_token(settings))
            (right if title in _RIGHT_COLUMN else left).addWidget(group)
        if login_item is not None:
            right.addWidget(self._build_desktop(login_item))
        left.addStretch(1)
        right.addStretch(1)
        # The paper market only means something on the paper broker, the BEPS settings only on Fidelity: each
        # is shown while its broker is chosen.
        broker_editor = self._editors["broker"].editor
        if isinstance(broker_editor, QComboBox):
            broker_editor.currentIndexChanged.connect(lambda _index: self._show_broker_settings())
        self._show_broker_settings()
        # One label width and one unit width per column, so the fields line up and are as wide as one another.
        on_right = {row.name for title, rows in GROUPS if title in _RIGHT_COLUMN for row in rows}
        left_editors = [e for name, e in self._editors.items() if name not in on_right]
        right_editors = [e for name, e in self._editors.items() if name in on_right]
        for editors, extra in ((left_editors, []), (right_editors, [beps_token_label])):
            labels = [e.label for e in editors] + extra
            label_width = max(label.sizeHint().width() for label in labels)
            for label in labels:
                label.setMinimumWidth(label_width)
            units = [e.unit for e in editors if e.unit is not None]
            unit_width = max(unit.sizeHint().width() for unit in units)
            for unit in units:
                unit.setFixedWidth(unit_width)

        self._error = QLabel()
        self._error.setObjectName("error")
        self._error.setWordWrap(True)
        self._error.setStyleSheet(ERROR_STYLE)
        self._error.hide()
        self._status = QLabel()
        self._status.setObjectName("status")
        self._status.setWordWrap(True)
        self._status.hide()

        self._restart_text = QLabel()
        self._restart_text.setObjectName("restart_text")
        self._restart_text.setWordWrap(True)
        self._restart_button = QPushButton("Restart now")
        self._restart_button.setObjectName("restart_button")
        self._restart_button.setAutoDefault(False)
        self._restart_button.clicked.connect(self._start_restart)
        restart_row = QHBoxLayout()
        restart_row.addWidget(self._restart_text, 1)
        restart_row.addWidget(self._restart_button)
        self._restart_panel = QFrame()
        self._restart_panel.setObjectName("restart_panel")
        self._restart_panel.setFrameShape(QFrame.Shape.StyledPanel)
        self._restart_panel.setLayout(restart_row)
        self._restart_panel.hide()

        self._progress = QProgressBar()
        self._progress.setRange(0, 0)
        self._progress.setTextVisible(False)
        self._progress.setMaximumHeight(8)
        self._busy_label = QLabel()
        busy_row = QHBoxLayout()
        busy_row.addWidget(self._busy_label)
        busy_row.addWidget(self._progress, 1)
        self._busy_row = QWidget()
        self._busy_row.setLayout(busy_row)
        self._busy_row.hide()

        self._buttons = QDialogButtonBox()
        self._save_button = QPushButton("Save")
        self._save_button.setObjectName("save_button")
        self._save_button.setDefault(True)
        self._buttons.addButton(self._save_button, QDialogButtonBox.ButtonRole.AcceptRole)
        self._cancel_button = self._buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self._cancel_button.setObjectName("cancel_button")
        self._cancel_button.setAutoDefault(False)
        self._buttons.accepted.connect(self._start_save)
        self._buttons.rejected.connect(self.reject)

        for widget in (self._error, self._status, self._restart_panel, self._busy_row, self._buttons):
            layout.addWidget(widget)

    def _show_broker_settings(self) -> None:
        paper = self._editors["broker"].raw() == "paper"
        market = self._editors["paper_market"]
        market.label.setVisible(paper)
        market.cell.setVisible(paper)
        if self._fidelity_group is not None:
            self._fidelity_group.setVisible(not paper)
        self._fit_height()

    def _build_desktop(self, login_item: LoginItem) -> QWidget:
        group = QGroupBox("Desktop")
        group.setObjectName("group_desktop")
        self._start_at_login_saved = login_item.is_enabled()
        self._start_at_login = QCheckBox("Start ftdesk when I log in")
        self._start_at_login.setObjectName("start_at_login")
        self._start_at_login.setChecked(self._start_at_login_saved)
        self._start_at_login.setToolTip(f"Adds ftdesk to what your desktop starts at login: {login_item.location}")
        column = QVBoxLayout(group)
        column.addWidget(self._start_at_login)
        return group

    def _build_regenerate(self, settings: Settings) -> QWidget:
        self._regenerate_button = QPushButton("Regenerate API key...")
        self._regenerate_button.setObjectName("regenerate_button")
        self._regenerate_button.setAutoDefault(False)
        self._regenerate_button.setToolTip("Replace the API key; scripts need the new one (Copy API key in the tray).")
        self._regenerate_button.clicked.connect(self._ask_regenerate)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self._regenerate_button)
        if self._api_key_locked:
            self._regenerate_button.setEnabled(False)
            note = QLabel(f"The API key is set by {API_KEY_ENV}")
            note.setObjectName("api_key_note")
            note.setStyleSheet(NOTE_STYLE)
            row.addWidget(note)
        row.addStretch(1)
        cell = QWidget()
        cell.setLayout(row)
        return cell

    @staticmethod
    def _build_beps_token(settings: Settings) -> QWidget:
        # A secret: say whether it is set, never what it is.
        state = QLabel(f"Set (from {BEPS_TOKEN_ENV})" if settings.beps_token else "Not set")
        state.setObjectName("beps_token_state")
        note = QLabel(f"A secret: set it only in the environment ({BEPS_TOKEN_ENV}); never shown or saved here.")
        note.setObjectName("beps_token_note")
        note.setWordWrap(True)
        note.setStyleSheet(NOTE_STYLE)
        column = QVBoxLayout()
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(state)
        column.addWidget(note)
        cell = QWidget()
        cell.setLayout(column)
        return cell

    # --- what tests and the tray read ----------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """Say whether a save, key regeneration or restart is running."""
        return self._task is not None

    @property
    def error_text(self) -> str:
        """Return the dialog-wide inline error, or an empty string."""
        return self._error.text() if not self._error.isHidden() else ""

    @property
    def status_text(self) -> str:
        """Return the dialog-wide status line (e.g. a new API key was generated), or an empty string."""
        return self._status.text() if not self._status.isHidden() else ""

    @property
    def restart_offered(self) -> bool:
        """Say whether the dialog offers to restart the service."""
        return not self._restart_panel.isHidden()

    @property
    def restart_text(self) -> str:
        """Return the explanation of which saved changes wait for a restart."""
        return self._restart_text.text()

    @property
    def restart_button(self) -> QPushButton:
        """Return the "Restart now" button."""
        return self._restart_button

    @property
    def save_button(self) -> QPushButton:
        """Return the Save button."""
        return self._save_button

    @property
    def regenerate_button(self) -> QPushButton:
        """Return the button that asks to regenerate the API key."""
        return self._regenerate_button

    @property
    def regenerate_prompt(self) -> QMessageBox | None:
        """Return the open "regenerate the API key?" question, if any."""
        return self._regenerate_prompt

    def editor(self, name: str) -> QWidget:
        """Return the editing widget of a setting."""
        return self._editors[name].editor

    def field_error(self, name: str) -> str:
        """Return the inline error shown under a setting, or an empty string."""
        error = self._editors[name].error
        return error.text() if not error.isHidden() else ""

    def is_locked(self, name: str) -> bool:
        """Say whether an environment variable fixes a setting (its editor is then read-only)."""
        return self._editors[name].locked

    def lock_note(self, name: str) -> str:
        """Return the note naming the variable that fixes a setting, or an empty string."""
        note = self._editors[name].note
        return note.text() if not note.isHidden() else ""

    @property
    def start_at_login_box(self) -> QCheckBox | None:
        """Return the "Start at login" check box (None where the platform has no login items)."""
        return self._start_at_login if self._login_item is not None else None

    def start_at_login_change(self) -> bool | None:
        """Return the wanted "Start at login" state when the box differs from the entry, else None."""
        if self._login_item is None:
            return None
        wanted = self._start_at_login.isChecked()
        return wanted if wanted != self._start_at_login_saved else None

    def changes(self) -> dict[str, Any]:
        """Return the parsed values that differ from the saved ones (unlocked fields only, all valid)."""
        changed: dict[str, Any] = {}
        for name, editor in self._editors.items():
            if editor.locked:
                continue
            value = editor.parse()
            if value != self._saved[name]:
                changed[name] = value
        return changed

    # --- behaviour -----------------------------------------------------------------------------------

    def done(self, result: int) -> None:
        """Close the dialog; an action already sent to the service finishes, but no longer updates it."""
        # Cancelling a half-written save or a half-done restart would leave the service in between states.
        self._task = None
        self._set_busy(False, "")
        if self._regenerate_prompt is not None:
            self._regenerate_prompt.reject()
        super().done(result)

    def _run(self, label: str, action: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self._set_busy(True, label)
        task = asyncio.get_running_loop().create_task(action(), name=f"settings-dialog: {label}")
        self._task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _current(self) -> bool:
        """Say whether the running task still owns the dialog (it was not closed meanwhile)."""
        return self._task is not None and asyncio.current_task() is self._task

    def _finish(self) -> None:
        self._task = None
        self._set_busy(False, "")

    def _set_busy(self, busy: bool, label: str) -> None:
        for editor in self._editors.values():
            editor.set_busy(busy)
        self._save_button.setEnabled(not busy)
        if self._login_item is not None:
            self._start_at_login.setEnabled(not busy)
        self._restart_button.setEnabled(not busy)
        self._regenerate_button.setEnabled(not busy and not self._api_key_locked)
        self._busy_label.setText(label)
        self._busy_row.setVisible(busy)
        self._fit_height()

    def _show_error(self, text: str) -> None:
        self._error.setText(text)
        self._error.setVisible(bool(text))
        self._fit_height()

    def _show_status(self, text: str) -> None:
        self._status.setText(text)
        self._status.setVisible(bool(text))
        self._fit_height()

    def _fit_height(self) -> None:
        # Qt sizes a window without height-for-width, so wrapped error lines would squeeze the fields.
        layout = self.layout()
        if layout is not None:
            # totalHeightForWidth is -1 while no wrapped label is shown.
            needed = max(layout.totalMinimumSize().height(), layout.totalHeightForWidth(self.width()))
            self.setMinimumHeight(needed)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Keep room for wrapped lines at the new width."""
        super().resizeEvent(event)
        self._fit_height()

    def _start_save(self) -> None:
        if self._task is not None:
            return
        self._show_error("")
        valid = [editor.check() for editor in self._editors.values()]
        if not all(valid):
            self._show_error("Fix the fields marked in red; nothing was saved.")
            return
        changes = self.changes()
        start_at_login = self.start_at_login_change()
        if not changes and start_at_login is None:
            self.accept()
            return
        self._run("Saving...", lambda: self._save(changes, start_at_login))

    async def _save(self, changes: Mapping[str, Any], start_at_login: bool | None) -> None:
        if start_at_login is not None:
            failure = await self._write_login_item(start_at_login)
            if not self._current():
                return
            if failure:
                self._finish()
                self._show_error(f"{failure} Nothing was saved.")
                return
            self._start_at_login_saved = start_at_login
            if not changes:
                self._finish()
                self.accept()
                return
        try:
            outcome = await self._actions.save_settings(changes)
        except Exception:
            log.exception("saving settings from the dialog failed")
            outcome = SaveOutcome(errors={"": "The settings could not be saved; details are in the log."})
        if not self._current():
            if outcome.errors:
                log.warning("settings not saved (dialog already closed): %s", outcome.errors)
            return
        self._finish()
        if outcome.errors:
            self._show_save_errors(outcome.errors, start_at_login_saved=start_at_login is not None)
            return
        self._saved.update(changes)
        if not outcome.needs_restart:
            self.accept()
            return
        names = ", ".join(ROWS[name].label if name in ROWS else name for name in outcome.needs_restart)
        self._restart_text.setText(
            f"Saved. These changes take effect after the service restarts: {names}. "
            "Restarting closes open streams; scripts reconnect."
        )
        self._restart_panel.show()
        self._fit_height()
        self._cancel_button.setText("Close")
        self._restart_button.setFocus()

    async def _write_login_item(self, wanted: bool) -> str:
        """Write or remove the autostart entry off the loop; return what went wrong, or ""."""
        item = self._login_item
        assert item is not None
        try:
            await asyncio.to_thread(item.enable if wanted else item.disable)
        except OSError as exc:
            log.warning("could not %s the login item at %s: %s", "write" if wanted else "remove", item.location, exc)
            verb = "turned on" if wanted else "turned off"
            return f"Start at login could not be {verb} ({item.location}: {exc.strerror or exc})."
        return ""

    def _show_save_errors(self, errors: Mapping[str, str], *, start_at_login_saved: bool = False) -> None:
        general: list[str] = []
        for name, reason in errors.items():
            if name in self._editors:
                self._editors[name].set_error(reason)
            else:
                general.append(f"{name}: {reason}" if name else reason)
        saved = "Start at login was changed; nothing else was saved." if start_at_login_saved else "Nothing was saved."
        self._show_error(" ".join([saved, *general]))

    def _start_restart(self) -> None:
        if self._task is None:
            self._run("Restarting the service...", self._restart)

    async def _restart(self) -> None:
        try:
            await self._actions.restart_service()
        except Exception:
            log.exception("restarting the service from the settings dialog failed")
            if self._current():
                self._finish()
                self._show_error("The service could not be restarted; details are in the log.")
            return
        if self._current():
            self._finish()
            self.accept()

    def _ask_regenerate(self) -> None:
        if self._task is not None or self._regenerate_prompt is not None:
            return
        prompt = QMessageBox(self)
        prompt.setObjectName("regenerate_prompt")
        prompt.setIcon(QMessageBox.Icon.Question)
        prompt.setWindowTitle("Regenerate API key? - ftdesk")
        prompt.setText("Generate a new API key?")
        prompt.setInformativeText(
            "The current key stops working at once: scripts get API_KEY_INVALID until they use the new "
            "key (Copy API key in the tray menu)."
        )
        confirm = prompt.addButton("Generate new key", QMessageBox.ButtonRole.AcceptRole)
        confirm.setObjectName("confirm_regenerate")
        cancel = prompt.addButton(QMessageBox.StandardButton.Cancel)
        prompt.setDefaultButton(cancel)
        prompt.setEscapeButton(cancel)
        prompt.finished.connect(lambda _result: self._regenerate_answered(prompt, confirm))
        self._regenerate_prompt = prompt
        prompt.open()

    def _regenerate_answered(self, prompt: QMessageBox, confirm: QPushButton) -> None:
        self._regenerate_prompt = None
        chosen = prompt.clickedButton() is confirm
        prompt.deleteLater()
        if chosen and self._task is None:
            self._run("Generating a new API key...", self._regenerate)

    async def _regenerate(self) -> None:
        try:
            await self._actions.regenerate_api_key()
        except Exception:
            log.exception("regenerating the API key from the settings dialog failed")
            if self._current():
                self._finish()
                self._show_error("A new API key could not be generated; details are in the log.")
            return
        if self._current():
            self._finish()
            self._show_status("A new API key is in use. Copy it from the tray menu (Copy API key) for your scripts.")
