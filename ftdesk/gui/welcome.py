"""The welcome window: what ftdesk is, how it runs now, the API key, the URLs and a first Python call.

Opened on the very first start (``ftdesk.service.first_run``) and from "Getting started..." in the tray menu
and the status window. The key is never shown, only copied: the example is displayed with a placeholder,
and "Copy example" puts it on the clipboard with the key filled in, ready to run. "Log in to Fidelity"
asks ``UserActions`` to switch the broker (the settings file and a service restart, as the settings dialog
does) and to open the login dialog; the window says how that went.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ftdesk.gui.bridge import AppStatus, ServiceBridge

KEY_PLACEHOLDER = "<your API key>"
"""Where the example shows the key; "Copy example" puts the real key there."""
MASKED_KEY = "\u2022" * 20
ERROR_STYLE = "color: #B3261E;"
LIVE_STYLE = "color: #B3261E; font-weight: bold;"
WHAT_IT_IS = (
    "ftdesk puts your brokerage account behind a local API on this computer: REST calls, streaming quotes "
    "and account events, for your own scripts and tools. It lives in the system tray (where the desktop has "
    "none, in its status window)."
)


def python_example(api_url: str, key: str = KEY_PLACEHOLDER) -> str:
    """Return five lines of Python (standard library only) that ask the service for its session status."""
    return "\n".join(
        [
            "import json, urllib.request",
            f'API, AUTH = "{api_url}", {{"Authorization": "Bearer {key}"}}',
            'request = urllib.request.Request(API + "/auth/status", headers=AUTH)',
            'status = json.load(urllib.request.urlopen(request))["data"]',
            'print(status["broker"], status["state"], "LIVE" if status["live_trading"] else "dry-run")',
        ]
    )


def mode_sentence(status: AppStatus) -> str:
    """Return, as rich text, which broker ftdesk runs on and whether orders can reach it."""
    if status.paper_on_fidelity:
        broker = (
            "the <b>paper</b> broker on <b>Fidelity's market</b>: Fidelity's live quotes, paper accounts,"
            " no real order possible"
        )
    elif status.broker == "paper":
        broker = "the <b>paper</b> broker: simulated accounts and prices, no real money"
    else:
        broker = f"<b>{escape(status.broker.capitalize())}</b>, your real brokerage account"
    if status.live:
        mode = f'<span style="{LIVE_STYLE}">live trading is ON</span>: placed orders reach the broker'
    else:
        mode = "<b>live trading is off</b>: orders can be previewed, and placing them is refused"
    return f"It runs on {broker}, and {mode}."


class WelcomeDialog(QDialog):
    """The welcome window (see the module docstring); shown with ``show()``, never ``exec()``."""

    fidelity_requested = Signal()

    def __init__(self, bridge: ServiceBridge, *, broker_locked: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._broker_locked = broker_locked
        self.setWindowTitle("Welcome to ftdesk")
        self.setMinimumWidth(720)

        title = QLabel("Welcome to ftdesk")
        font = title.font()
        font.setPointSizeF(font.pointSizeF() * 1.4)
        font.setBold(True)
        title.setFont(font)
        what = QLabel(WHAT_IT_IS)
        what.setWordWrap(True)
        self.mode_label = QLabel()
        self.mode_label.setObjectName("mode")
        self.mode_label.setWordWrap(True)
        self.mode_label.setTextFormat(Qt.TextFormat.RichText)

        self.key_label = QLabel(MASKED_KEY)
        self.key_label.setObjectName("api_key")
        self.key_label.setToolTip("The key is never shown; Copy puts it on the clipboard")
        self.copy_key_button = QPushButton("Copy")
        self.copy_key_button.setObjectName("copy_key")
        self.copy_key_button.setAutoDefault(False)
        self.copy_key_button.clicked.connect(bridge.copy_api_key)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_label)
        key_row.addWidget(self.copy_key_button)
        key_row.addStretch(1)
        self.url_label = QLabel()
        self.url_label.setObjectName("base_url")
        self.url_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.docs_label = QLabel()
        self.docs_label.setObjectName("docs_link")
        self.docs_label.setTextFormat(Qt.TextFormat.RichText)
        self.docs_label.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.docs_label.linkActivated.connect(lambda _url: bridge.open_docs())
        form = QFormLayout()
        form.addRow("API key", key_row)
        form.addRow("Base URL", self.url_label)
        form.addRow("Documentation", self.docs_label)

        example_intro = QLabel(
            "Try it from Python (standard library only). <b>Copy example</b> copies it with your key filled in:"
        )
        example_intro.setWordWrap(True)
        self.example = QPlainTextEdit()
        self.example.setObjectName("example")
        self.example.setReadOnly(True)
        self.example.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.example.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        line_height = self.example.fontMetrics().lineSpacing()
        self.example.setFixedHeight(line_height * 5 + 2 * self.example.frameWidth() + 12)
        self.copy_example_button = QPushButton("Copy example")
        self.copy_example_button.setObjectName("copy_example")
        self.copy_example_button.setAutoDefault(False)
        self.copy_example_button.clicked.connect(self._copy_example)
        next_steps = QLabel(
            "It prints the broker, the session state and the trading mode. Once you are logged in, "
            "<code>/accounts</code> lists your accounts; every endpoint is described in the documentation."
        )
        next_steps.setWordWrap(True)
        example_row = QHBoxLayout()
        example_row.addWidget(next_steps, 1)
        example_row.addWidget(self.copy_example_button, 0, Qt.AlignmentFlag.AlignTop)

        self.message = QLabel()
        self.message.setObjectName("message")
        self.message.setWordWrap(True)
        self.message.hide()
        self.fidelity_button = QPushButton("Log in to Fidelity")
        self.fidelity_button.setObjectName("fidelity")
        self.fidelity_button.setAutoDefault(False)
        self.fidelity_button.clicked.connect(self._fidelity_clicked)
        self.close_button = QPushButton()
        self.close_button.setObjectName("keep")
        self.close_button.setDefault(True)
        self.close_button.clicked.connect(self.accept)
        hint = QLabel("Getting started… in the tray menu or the status window opens this again")
        hint.setObjectName("hint")
        hint.setEnabled(False)
        buttons = QHBoxLayout()
        buttons.addWidget(hint, 1)
        buttons.addWidget(self.fidelity_button)
        buttons.addWidget(self.close_button)

        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(what)
        layout.addWidget(self.mode_label)
        layout.addSpacing(6)
        layout.addLayout(form)
        layout.addSpacing(6)
        layout.addWidget(example_intro)
        layout.addWidget(self.example)
        layout.addLayout(example_row)
        layout.addSpacing(6)
        layout.addWidget(self.message)
        layout.addLayout(buttons)

        self._busy = False
        bridge.status_changed.connect(self.show_status)
        self.show_status(bridge.status)

    def show_status(self, status: AppStatus) -> None:
        """Make the texts and buttons say how ftdesk runs now (a restart may change the broker or the port)."""
        self.mode_label.setText(mode_sentence(status))
        self.url_label.setText(status.api_url)
        self.docs_label.setText(f'<a href="{escape(status.docs_url)}">{escape(status.docs_url)}</a>')
        self.example.setPlainText(python_example(status.api_url))
        on_paper = status.broker == "paper"
        self.close_button.setText("Keep using paper" if on_paper else "Close")
        locked = on_paper and self._broker_locked
        self.fidelity_button.setToolTip(
            "FTSERVICE_BROKER fixes the broker to paper: change that variable to use Fidelity" if locked else ""
        )
        self.fidelity_button.setEnabled(status.running and not locked and not self._busy)
        self.copy_key_button.setEnabled(status.running)
        self.copy_example_button.setEnabled(status.running)

    def set_busy(self, text: str) -> None:
        """Say what is being done, with the buttons that would start it again disabled; '' ends it."""
        self._busy = bool(text)
        self._show_message(text, error=False)
        self.show_status(self._bridge.status)

    def show_error(self, text: str) -> None:
        """End a busy phase with an error the trader can act on."""
        self._busy = False
        self._show_message(text, error=True)
        self.show_status(self._bridge.status)

    @property
    def message_text(self) -> str:
        """Return the progress or error line under the example ('' when none is shown)."""
        return self.message.text() if self.message.isVisibleTo(self) else ""

    def _show_message(self, text: str, *, error: bool) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(ERROR_STYLE if error else "")
        self.message.setVisible(bool(text))
        self.adjustSize()

    def _fidelity_clicked(self) -> None:
        if not self._busy:
            self.fidelity_requested.emit()

    def _copy_example(self) -> None:
        self._bridge.copy_with_api_key(python_example(self._bridge.status.api_url), KEY_PLACEHOLDER, "Example")
