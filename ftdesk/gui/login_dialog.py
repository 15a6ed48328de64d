"""The login dialog: username, password, a TOTP code when the account needs one, and inline errors.

The dialog never blocks the loop: pressing "Log in" starts ``submit`` as an asyncio task (the app runs
Qt on a qasync loop) and the dialog shows a busy state until it answers. Cancel and Escape always work,
even mid-login; they cancel the pending task.
"""

from __future__ import annotations

import asyncio
import logging
import re
import traceback
from types import MappingProxyType

from PySide6.QtCore import QRegularExpression, Qt, Signal
from PySide6.QtGui import QRegularExpressionValidator, QResizeEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ftdesk.gui.contracts import LoginOutcome, LoginRequest, LoginResult, LoginSubmit

log = logging.getLogger(__name__)

BROKER_TITLES = MappingProxyType(
    {
        "paper": "Paper (simulated brokerage)",
        "fidelity": "Fidelity",
        # Paper trading on Fidelity's market: the login is Fidelity's (its password and 6-digit code).
        "paper-fidelity": "Fidelity (paper trading on its market: no real order)",
    }
)
TOTP_EXPLANATION = "This account uses two-step verification: enter the 6-digit code from your authenticator app."
GENERIC_FAILURE = "Login failed for an unexpected reason; details are in the log. Try again."
_SIX_DIGITS = re.compile(r"\d{6}")
_MASK = "***"


class LoginDialog(QDialog):
    """Ask for credentials and log in through ``submit`` without freezing the UI."""

    logged_in = Signal()

    def __init__(
        self,
        submit: LoginSubmit,
        *,
        username: str = "",
        broker: str = "paper",
        totp_needed: bool = False,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._submit = submit
        self._task: asyncio.Task[None] | None = None
        self.setWindowTitle("Log in - ftdesk")
        self.setMinimumWidth(380)

        heading = QLabel(f"Log in to {BROKER_TITLES.get(broker, broker)}")
        heading.setObjectName("heading")
        font = heading.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        font.setBold(True)
        heading.setFont(font)

        self._username = QLineEdit(username)
        self._username.setObjectName("username")
        self._username.setAccessibleName("Username")
        self._password = QLineEdit()
        self._password.setObjectName("password")
        self._password.setAccessibleName("Password")
        self._password.setEchoMode(QLineEdit.EchoMode.Password)
        self._totp = QLineEdit()
        self._totp.setObjectName("totp")
        self._totp.setAccessibleName("Verification code")
        self._totp.setPlaceholderText("123456")
        self._totp.setMaxLength(6)
        self._totp.setValidator(QRegularExpressionValidator(QRegularExpression(r"\d{0,6}"), self._totp))
        self._totp.setInputMethodHints(Qt.InputMethodHint.ImhDigitsOnly)
        self._totp_note = QLabel(TOTP_EXPLANATION)
        self._totp_note.setObjectName("totp_note")
        self._totp_note.setWordWrap(True)
        self._remember = QCheckBox("Remember credentials (stored encrypted)")
        self._remember.setObjectName("remember")
        self._remember.setToolTip(
            "Keep the username and password, encrypted, so ftdesk can log in again by itself "
            "when the session expires or at start."
        )

        form = QFormLayout()
        form.addRow("&Username", self._username)
        form.addRow("&Password", self._password)
        self._totp_label = QLabel("&Code")
        self._totp_label.setBuddy(self._totp)
        form.addRow(self._totp_label, self._totp)
        form.addRow("", self._totp_note)
        form.addRow("", self._remember)
        self._form = form

        self._error = QLabel()
        self._error.setObjectName("error")
        self._error.setWordWrap(True)
        self._error.setStyleSheet("color: #C62828;")
        self._error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._error.hide()

        self._progress = QProgressBar()
        self._progress.setRange(0, 0)  # indeterminate: a login has no measurable progress
        self._progress.setTextVisible(False)
        self._progress.setMaximumHeight(8)
        self._busy_label = QLabel("Logging in...")
        busy_row = QHBoxLayout()
        busy_row.addWidget(self._busy_label)
        busy_row.addWidget(self._progress, 1)
        self._busy_row = QWidget()
        self._busy_row.setLayout(busy_row)
        self._busy_row.hide()

        self._buttons = QDialogButtonBox()
        self._login_button = QPushButton("Log in")
        self._login_button.setObjectName("login_button")
        self._login_button.setDefault(True)
        self._buttons.addButton(self._login_button, QDialogButtonBox.ButtonRole.AcceptRole)
        self._cancel_button = self._buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self._cancel_button.setObjectName("cancel_button")
        self._cancel_button.setAutoDefault(False)
        self._buttons.accepted.connect(self._start_login)
        self._buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addLayout(form)
        layout.addWidget(self._error)
        layout.addWidget(self._busy_row)
        layout.addWidget(self._buttons)

        self._set_totp_visible(totp_needed)
        (self._password if username else self._username).setFocus()

    # --- what tests and the tray read ----------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """Say whether a login is running."""
        return self._task is not None

    @property
    def error_text(self) -> str:
        """Return the inline error shown, or an empty string."""
        return self._error.text() if not self._error.isHidden() else ""

    @property
    def totp_visible(self) -> bool:
        """Say whether the verification-code field is shown."""
        return not self._totp.isHidden()

    @property
    def totp_note(self) -> str:
        """Return the explanation shown above the verification-code field."""
        return self._totp_note.text()

    # --- behaviour -----------------------------------------------------------------------------------

    def done(self, result: int) -> None:
        """Close the dialog; a login still running is cancelled."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
            self._set_busy(False)
        super().done(result)

    def _set_totp_visible(self, visible: bool) -> None:
        for widget in (self._totp_label, self._totp, self._totp_note):
            widget.setVisible(visible)
        self._fit_height()

    def _fit_height(self) -> None:
        # Qt sizes a window without height-for-width, so a wrapped error line would squeeze the fields.
        layout = self.layout()
        if layout is not None:
            # totalHeightForWidth is -1 while no wrapped label is shown.
            needed = max(layout.totalMinimumSize().height(), layout.totalHeightForWidth(self.width()))
            self.setMinimumHeight(needed)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Keep room for wrapped lines at the new width."""
        super().resizeEvent(event)
        self._fit_height()

    def _show_error(self, text: str) -> None:
        self._error.setText(text)
        self._error.setVisible(bool(text))
        self._fit_height()

    def _invalid_field(self) -> tuple[str, QLineEdit] | None:
        if not self._username.text().strip():
            return "Enter your username.", self._username
        if not self._password.text():
            return "Enter your password.", self._password
        if self.totp_visible and not _SIX_DIGITS.fullmatch(self._totp.text()):
            return "Enter the 6-digit code from your authenticator app.", self._totp
        return None

    def _start_login(self) -> None:
        if self._task is not None:
            return
        invalid = self._invalid_field()
        if invalid is not None:
            message, field = invalid
            self._show_error(message)
            field.setFocus()
            return
        request = LoginRequest(
            username=self._username.text().strip(),
            password=self._password.text(),
            totp_code=self._totp.text() if self.totp_visible else None,
            remember=self._remember.isChecked(),
        )
        self._show_error("")
        self._set_busy(True)
        self._task = asyncio.get_running_loop().create_task(self._log_in(request), name="login-dialog")

    def _set_busy(self, busy: bool) -> None:
        for widget in (self._username, self._password, self._totp, self._remember, self._login_button):
            widget.setEnabled(not busy)
        self._busy_row.setVisible(busy)
        self._fit_height()
        # Cancel stays enabled on purpose: the trader can always walk away from a slow login.

    async def _log_in(self, request: LoginRequest) -> None:
        try:
            outcome = await self._submit(request)
        except asyncio.CancelledError:
            raise  # the dialog was closed; its widgets may already be gone
        except Exception as exc:
            self._log_failure(exc, request)
            outcome = LoginOutcome(LoginResult.FAILED, GENERIC_FAILURE)
        self._task = None
        self._set_busy(False)
        self._show_outcome(outcome)

    def _show_outcome(self, outcome: LoginOutcome) -> None:
        if outcome.result is LoginResult.OK:
            self.logged_in.emit()
            self.accept()
        elif outcome.result is LoginResult.TOTP_REQUIRED:
            self._totp_note.setText(outcome.message or TOTP_EXPLANATION)
            self._set_totp_visible(True)
            self._totp.clear()
            self._totp.setFocus()
        else:
            self._show_error(outcome.message or "Login failed.")
            self._password.clear()
            self._password.setFocus()

    @staticmethod
    def _log_failure(exc: Exception, request: LoginRequest) -> None:
        # The exception comes from code we do not control: mask anything typed before it reaches the log.
        text = "".join(traceback.format_exception(exc))
        for secret in (request.password, request.totp_code):
            if secret:
                text = text.replace(secret, _MASK)
        log.error("login from the dialog failed unexpectedly:\n%s", text.rstrip())
