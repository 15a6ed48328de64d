"""The question asked before a halt is lifted: what was halted and what resuming means, with Cancel as the default.

Halting never asks (stopping is always safe); resuming does, because it lets scripts preview and place again.
"""

from __future__ import annotations

import html

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ftdesk.domain.safety import HaltState
from ftdesk.gui.safety_watch import halt_text

CONFIRM_TEXT = "Resume trading"


def resume_points(halt: HaltState | None) -> list[str]:
    """Return what the dialog says: the halt being lifted and what resuming does and does not do."""
    return [
        halt_text(halt) if halt is not None else "Trading is halted.",
        "Resuming lets scripts preview orders again and place them once live trading is on.",
        "Live trading stays off: switch it on from the menu (it asks again) when you are ready.",
        "Orders the halt canceled stay canceled.",
    ]


class ResumeConfirmDialog(QDialog):
    """Ask before lifting the halt; ``accepted`` means the trader chose to resume."""

    def __init__(self, halt: HaltState | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Resume trading? - ftdesk")
        self.setMinimumWidth(440)
        self._points = resume_points(halt)

        heading = QLabel("Lift the halt and resume trading?")
        heading.setObjectName("heading")
        font = heading.font()
        font.setBold(True)
        heading.setFont(font)
        body = QLabel("<ul>" + "".join(f"<li>{html.escape(p)}</li>" for p in self._points) + "</ul>")
        body.setObjectName("body")
        body.setWordWrap(True)

        buttons = QDialogButtonBox()
        self._confirm_button = QPushButton(CONFIRM_TEXT)
        self._confirm_button.setObjectName("confirm_button")
        self._confirm_button.setAutoDefault(False)
        buttons.addButton(self._confirm_button, QDialogButtonBox.ButtonRole.AcceptRole)
        self._cancel_button = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self._cancel_button.setObjectName("cancel_button")
        # Enter keeps the halt: lifting it must take a deliberate click.
        self._cancel_button.setDefault(True)
        self._cancel_button.setAutoDefault(True)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addWidget(body)
        layout.addWidget(buttons)
        self._cancel_button.setFocus()

    @property
    def message(self) -> str:
        """Return the question and its explanation as plain text."""
        return "\n".join(["Lift the halt and resume trading?", *self._points])

    @property
    def confirm_button(self) -> QPushButton:
        """Return the button that lifts the halt."""
        return self._confirm_button

    @property
    def cancel_button(self) -> QPushButton:
        """Return the button that keeps the halt."""
        return self._cancel_button
