"""The tray's approval window: a place held for the trader, shown as the broker understood it, with Approve/Reject.

The service holds a place from the assistant (``ftdesk mcp``), or from any client while require_approval is on,
and asks every attached approver; ``ApprovalWindows`` is the tray's, attached through the control surface. Each
request gets one window. The service owns the outcome: a click answers it, and the window then shows how it
ended (approved, rejected, timed out, or withdrawn because trading was halted or the preview expired meanwhile).
"""

from __future__ import annotations

import html
from types import MappingProxyType

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QDialogButtonBox, QLabel, QPushButton, QVBoxLayout, QWidget

from ftdesk.domain.orders import OrderPreview
from ftdesk.service.control import ApprovalRequest, ServiceControl, Verdict

APPROVE_TEXT = "Approve"
REJECT_TEXT = "Reject"

ENDINGS = MappingProxyType(
    {
        Verdict.APPROVED: "Approved: the order was sent to the broker.",
        Verdict.REJECTED: "Rejected: nothing was placed.",
        Verdict.TIMED_OUT: "No answer in time: nothing was placed.",
    }
)


def order_lines(request: ApprovalRequest) -> list[str]:
    """Return what the window says about the order: the broker's reading of it, its quote, cost and warnings."""
    preview: OrderPreview | None = request.preview
    lines = [request.summary]
    if preview is None:
        return lines
    if preview.broker_action_desc:
        code = f"{preview.broker_action_code} " if preview.broker_action_code else ""
        lines.append(f"The broker understood: {code}{preview.broker_action_desc}")
    if preview.quote is not None:
        lines.append(
            f"Quote: last {preview.quote.price:,.2f}, bid {preview.quote.bid:,.2f}, ask {preview.quote.ask:,.2f}"
        )
    money = (
        f"Estimated cost {preview.est_cost:,.2f}"
        if preview.est_cost
        else f"Estimated proceeds {preview.est_proceeds:,.2f}"
    )
    lines.append(f"{money}, commission {preview.est_commission:,.2f}; preview {preview.conf_num}")
    lines.extend(f"Warning: {warning}" for warning in preview.warnings)
    return lines


class ApprovalWindow(QWidget):
    """One held place: who asks, the order as the broker understood it, time left, Approve and Reject."""

    def __init__(self, control: ServiceControl, request: ApprovalRequest) -> None:
        super().__init__(None, Qt.WindowType.Window | Qt.WindowType.WindowStaysOnTopHint)
        self._control = control
        self.request = request
        self._left = int(request.timeout)
        self.setWindowTitle("Approve this order? - ftdesk")
        layout = QVBoxLayout(self)
        self.asker = QLabel(f"<b>{html.escape(request.client)}</b> asks to place this order:")
        self.order = QLabel("<br>".join(html.escape(line) for line in order_lines(request)))
        self.order.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.state = QLabel()
        self.state.setWordWrap(True)
        buttons = QDialogButtonBox()
        self.approve_button: QPushButton = buttons.addButton(APPROVE_TEXT, QDialogButtonBox.ButtonRole.AcceptRole)
        self.reject_button: QPushButton = buttons.addButton(REJECT_TEXT, QDialogButtonBox.ButtonRole.RejectRole)
        self.reject_button.setDefault(True)  # Enter never places an order
        self.approve_button.clicked.connect(lambda: self._answer(True))
        self.reject_button.clicked.connect(lambda: self._answer(False))
        for widget in (self.asker, self.order, self.state):
            layout.addWidget(widget)
        layout.addWidget(buttons)
        self._ticker = QTimer(self)
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self._tick)
        self._show_left()
        self._ticker.start()

    @property
    def answerable(self) -> bool:
        """Say whether Approve and Reject still do something."""
        return self.approve_button.isEnabled()

    def _show_left(self) -> None:
        self.state.setText(f"Nothing is placed unless you approve. It waits {max(self._left, 0)} s more.")

    def _tick(self) -> None:
        self._left -= 1
        self._show_left()

    def _answer(self, approve: bool) -> None:
        if not self._control.answer_approval(self.request.number, approve):
            self.ended("This order no longer waits for approval.")

    def ended(self, words: str) -> None:
        """Show how the request ended and disable the buttons."""
        self._ticker.stop()
        self.approve_button.setEnabled(False)
        self.reject_button.setEnabled(False)
        self.state.setText(words)


class ApprovalWindows:
    """The tray's approver: a window for each held place, updated when the service settles it."""

    def __init__(self, control: ServiceControl) -> None:
        self._control = control
        self.windows: dict[int, ApprovalWindow] = {}

    def asked(self, request: ApprovalRequest) -> None:
        """Show a window for a new request, in front."""
        window = ApprovalWindow(self._control, request)
        self.windows[request.number] = window
        window.show()
        window.raise_()
        window.activateWindow()

    def settled(self, request: ApprovalRequest) -> None:
        """Say in the request's window how it ended; an approved or rejected one closes."""
        window = self.windows.get(request.number)
        if window is None:
            return
        if request.verdict is Verdict.WITHDRAWN:
            window.ended(f"This order can no longer be approved: {request.why}. Nothing was placed.")
        elif request.verdict is not None:
            window.ended(ENDINGS[request.verdict])
        if request.verdict in (Verdict.APPROVED, Verdict.REJECTED):
            self.windows.pop(request.number).close()

    def close_all(self) -> None:
        """Close every window (the app is quitting; the service then refuses what still waits)."""
        for window in self.windows.values():
            window.close()
        self.windows.clear()
