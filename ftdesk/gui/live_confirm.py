"""The question asked before live trading is switched on: what it means, with Cancel as the default.

It names the broker, the accounts orders can reach and the local risk limits in force, so the trader
sees what the switch opens before opening it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from types import MappingProxyType

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QStyle,
    QVBoxLayout,
    QWidget,
)

BROKER_NAMES = MappingProxyType({"paper": "Paper", "fidelity": "Fidelity"})
CONFIRM_TEXT = "Enable live trading"


def _context(broker: str, accounts: Sequence[str], limits: Sequence[str] | None) -> list[str]:
    name = BROKER_NAMES.get(broker, broker)
    where = f"Accounts: {', '.join(accounts)} ({name})" if accounts else f"Accounts: every account of this {name} login"
    points = [where]
    if limits is not None:
        if limits:
            points.append("Local risk limits in force: " + "; ".join(limits) + ".")
        else:
            points.append("No local risk limits are on (set them in Settings or with FTSERVICE_* variables).")
    return points


def _consequences(broker: str, paper_market: str = "simulated") -> list[str]:
    name = BROKER_NAMES.get(broker, broker)
    if broker == "paper" and paper_market == "fidelity":
        reach = (
            "Orders placed through the API will be filled by the Paper brokerage on Fidelity's live quotes. "
            "No real order is possible: nothing is ever sent to Fidelity, and no real money is involved."
        )
    elif broker == "paper":
        # Paper never touches money; saying otherwise would teach traders to ignore this dialog.
        reach = (
            f"Orders placed through the API will be sent to the {name} brokerage and filled against its "
            "simulated market. No real money is involved with the paper broker, but scripts behave "
            "exactly as they would with a real account."
        )
    else:
        reach = f"Orders placed through the API will be sent to {name} and trade real money in your {name} account."
    return [
        reach,
        "A preview is still required before every order: a place must carry the confirmation number of a "
        "matching, unexpired preview.",
        "You can switch live trading off at any time from the tray menu (Live trading); cancelling orders "
        "always works.",
    ]


class LiveTradingConfirmDialog(QDialog):
    """Ask before leaving dry run; ``accepted`` means the trader chose to enable live trading."""

    def __init__(
        self,
        broker: str,
        parent: QWidget | None = None,
        *,
        accounts: Sequence[str] = (),
        limits: Sequence[str] | None = None,
        paper_market: str = "simulated",
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Enable live trading? - ftdesk")
        self.setMinimumWidth(440)
        self._broker = broker
        on_fidelity = broker == "paper" and paper_market == "fidelity"
        self._title = "Paper on Fidelity's market" if on_fidelity else BROKER_NAMES.get(broker, broker)

        icon = QLabel()
        size = self.style().pixelMetric(QStyle.PixelMetric.PM_MessageBoxIconSize, None, self)
        icon.setPixmap(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning).pixmap(size, size))
        icon.setObjectName("icon")

        heading = QLabel(f"Turn on live trading with {self._title}?")
        heading.setObjectName("heading")
        font = heading.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        font.setBold(True)
        heading.setFont(font)

        self._points = [*_context(broker, accounts, limits), *_consequences(broker, paper_market)]
        body = QLabel(
            "<ul style='margin-left: -20px'>" + "".join(f"<li>{html.escape(p)}</li>" for p in self._points) + "</ul>"
        )
        body.setObjectName("body")
        body.setWordWrap(True)

        buttons = QDialogButtonBox()
        self._confirm_button = QPushButton(CONFIRM_TEXT)
        self._confirm_button.setObjectName("confirm_button")
        self._confirm_button.setAutoDefault(False)
        buttons.addButton(self._confirm_button, QDialogButtonBox.ButtonRole.AcceptRole)
        self._cancel_button = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self._cancel_button.setObjectName("cancel_button")
        # Enter answers Cancel: turning on real orders must take a deliberate click.
        self._cancel_button.setDefault(True)
        self._cancel_button.setAutoDefault(True)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)

        text_column = QVBoxLayout()
        text_column.addWidget(heading)
        text_column.addWidget(body)
        row = QHBoxLayout()
        row.addWidget(icon, 0)
        row.addLayout(text_column, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(buttons)
        self._cancel_button.setFocus()

    @property
    def broker(self) -> str:
        """Return the broker the question is about."""
        return self._broker

    @property
    def message(self) -> str:
        """Return the question and its explanation as plain text."""
        return "\n".join([f"Turn on live trading with {self._title}?", *self._points])

    @property
    def confirm_button(self) -> QPushButton:
        """Return the button that enables live trading."""
        return self._confirm_button

    @property
    def cancel_button(self) -> QPushButton:
        """Return the button that keeps dry run."""
        return self._cancel_button
