"""The cockpit in the status window: positions and P&L, open orders with Cancel, today's fills, stream health.

Everything comes from the ``DeskFeed`` (which the service's own events keep fresh) and the bridge's status;
the panel itself never reads the service. The halt bar (kill switch) sits on top of it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ftdesk.gui.bridge import AppStatus
from ftdesk.gui.cockpit_rows import (
    FILL_COLUMNS,
    GROUP_SPAN,
    ORDER_COLUMNS,
    POSITION_COLUMNS,
    DeskSnapshot,
    clock_time,
    fill_row,
    fills_in_order,
    order_row,
    pnl_summary,
    rows_of,
)
from ftdesk.gui.desk_feed import DeskFeed
from ftdesk.gui.status_text import events_text

GAIN = QColor("#1b7a35")
LOSS = QColor("#b3261e")
GROUP_BACKGROUND = QColor("#e8eaed")
_NUMERIC_FROM = 1  # the positions' figures: right-aligned from here up to the description
_DESCRIPTION = POSITION_COLUMNS.index("Description")
_PNL_COLUMNS = (POSITION_COLUMNS.index("Day P&L"), POSITION_COLUMNS.index("Total P&L"))
ORDER_ROWS_SHOWN = 8
"""Most open orders and fills shown before their table scrolls: the positions keep the height."""


def table(columns: tuple[str, ...], rest: str) -> QTableWidget:
    """Return a read-only table with these headers, each column as wide as its content; ``rest`` takes the rest.

    The figures never share the spare width: it goes to a words column (a description, a status) on the right.
    """
    widget = QTableWidget(0, len(columns))
    widget.setHorizontalHeaderLabels(list(columns))
    widget.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    widget.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
    widget.verticalHeader().setVisible(False)
    widget.verticalHeader().setDefaultSectionSize(widget.fontMetrics().height() + 10)
    header = widget.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setStretchLastSection(False)
    header.setSectionResizeMode(columns.index(rest), QHeaderView.ResizeMode.Stretch)
    return widget


def fit_rows(widget: QTableWidget, most: int) -> None:
    """Make a table exactly as tall as its rows (up to ``most``, then it scrolls), so it takes no spare height."""
    rows = min(widget.rowCount(), most)
    height = widget.horizontalHeader().sizeHint().height() + 2 * widget.frameWidth()
    height += sum(widget.rowHeight(row) for row in range(rows))
    if widget.horizontalScrollBar().isVisible():
        height += widget.horizontalScrollBar().sizeHint().height()
    widget.setFixedHeight(height)


def cell(text: str, *, bold: bool = False, right: bool = False, value: float | None = None) -> QTableWidgetItem:
    """Return a table cell; a P&L ``value`` colours it green for a gain, red for a loss."""
    item = QTableWidgetItem(text)
    if bold:
        font = QFont(item.font())
        font.setBold(True)
        item.setFont(font)
    if right:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if value is not None and value != 0:
        item.setForeground(QBrush(GAIN if value > 0 else LOSS))
    return item


class CockpitPanel(QWidget):
    """Positions with P&L per account, open orders with Cancel and Cancel all, today's fills, stream health."""

    def __init__(self, feed: DeskFeed, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._feed = feed
        self._shown: tuple[object, object, object] | None = None  # what the tables show, by identity

        self.pnl_label = QLabel("Day P&L: -")
        font = self.pnl_label.font()
        font.setBold(True)
        self.pnl_label.setFont(font)
        self.freshness_label = QLabel()
        self.freshness_label.setObjectName("freshness")
        self.streams_label = QLabel()
        self.streams_label.setObjectName("streams")
        self.streams_label.setWordWrap(True)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read positions and orders now (they also follow the account events)")
        self.refresh_button.clicked.connect(feed.refresh)

        self.positions = table(POSITION_COLUMNS, "Description")
        positions_box = QGroupBox("Positions")
        positions_layout = QVBoxLayout(positions_box)
        header = QHBoxLayout()
        header.addWidget(self.pnl_label, 1)
        header.addWidget(self.freshness_label)
        header.addWidget(self.refresh_button)
        positions_layout.addLayout(header)
        positions_layout.addWidget(self.positions)

        self.orders = table(ORDER_COLUMNS, "Status")
        self.no_orders_label = QLabel("No open orders")
        self.cancel_all_button = QPushButton("Cancel all")
        self.cancel_all_button.setToolTip("Cancel every open order on every account (cancels are never blocked)")
        self.cancel_all_button.clicked.connect(feed.cancel_all)
        self.orders_box = QGroupBox("Open orders")
        orders_layout = QVBoxLayout(self.orders_box)
        orders_row = QHBoxLayout()
        orders_row.addWidget(self.orders, 1)
        orders_row.addWidget(self.no_orders_label, 1)
        orders_row.addWidget(self.cancel_all_button, 0, Qt.AlignmentFlag.AlignBottom)
        orders_layout.addLayout(orders_row)

        self.fills = table(FILL_COLUMNS, "Status")
        self.no_fills_label = QLabel("No fills today")
        self.fills_box = QGroupBox("Today's fills")
        fills_layout = QVBoxLayout(self.fills_box)
        fills_layout.addWidget(self.fills)
        fills_layout.addWidget(self.no_fills_label)
        fills_layout.setAlignment(Qt.AlignmentFlag.AlignTop)
        for box in (self.orders_box, self.fills_box):  # as tall as their rows: the positions get the height
            box.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.streams_label)
        layout.addWidget(positions_box, 1)
        layout.addWidget(self.orders_box, 0)

        self._status: AppStatus | None = None
        feed.changed.connect(self.show_snapshot)
        self.show_snapshot(feed.snapshot)

    # --- what it shows ----------------------------------------------------------------------------------

    def show_status(self, status: AppStatus) -> None:
        """Show the stream health from the bridge's status."""
        self._status = status
        self._show_streams(self._feed.snapshot)

    def _show_streams(self, snapshot: DeskSnapshot) -> None:
        status = self._status
        if status is None:
            return
        last = f" (last event {clock_time(snapshot.last_event)})" if snapshot.last_event else ""
        self.streams_label.setText(
            f"Stream health: account events {events_text(status)}{last}; "
            f"market data {status.quotes.value.replace('_', ' ')}"
        )

    def show_snapshot(self, snapshot: DeskSnapshot) -> None:
        """Show a snapshot (tables are rebuilt only when their data changed)."""
        self._show_streams(snapshot)
        self.pnl_label.setText(pnl_summary(snapshot))
        if snapshot.error:
            self.freshness_label.setText(f"Not updated: {snapshot.error}")
        elif not snapshot.logged_in:
            self.freshness_label.setText("Log in to see positions and orders")
        else:
            self.freshness_label.setText(f"as of {clock_time(snapshot.positions_as_of)}")
        self.refresh_button.setEnabled(snapshot.logged_in)
        shown = (snapshot.positions, snapshot.open_orders, snapshot.fills)
        if self._shown is None or any(a is not b for a, b in zip(shown, self._shown, strict=True)):
            self._shown = shown
            self._fill_positions(snapshot)
            self._fill_fills(snapshot)
        self._fill_orders(snapshot)

    def _fill_positions(self, snapshot: DeskSnapshot) -> None:
        rows = rows_of(snapshot)
        self.positions.clearSpans()
        self.positions.setRowCount(len(rows))
        for row, (is_group, cells, pnl) in enumerate(rows):
            for column, text in enumerate(cells):
                value = None
                if pnl is not None and column in _PNL_COLUMNS:
                    value = pnl[_PNL_COLUMNS.index(column)]
                right = (GROUP_SPAN if is_group else _NUMERIC_FROM) <= column < _DESCRIPTION
                item = cell(text, bold=is_group, right=right, value=value)
                if is_group:
                    item.setBackground(QBrush(GROUP_BACKGROUND))
                self.positions.setItem(row, column, item)
            if is_group:  # the account heads its positions: its name and number across Symbol, Qty and Last
                self.positions.setSpan(row, 0, 1, GROUP_SPAN)

    def _fill_orders(self, snapshot: DeskSnapshot) -> None:
        orders = snapshot.open_orders
        self.orders_box.setTitle(f"Open orders ({len(orders)})")
        self.orders.setRowCount(len(orders))
        self.orders.setVisible(bool(orders))
        self.no_orders_label.setVisible(not orders)
        last = len(ORDER_COLUMNS) - 1
        for row, order in enumerate(orders):
            for column, text in enumerate(order_row(order)[:last]):
                self.orders.setItem(row, column, cell(text, right=column in (4, 5, 7)))
            conf_num = order.id_detail.conf_num
            button = self.orders.cellWidget(row, last)
            if not isinstance(button, QPushButton) or button.objectName() != f"cancel-{conf_num}":
                button = QPushButton("Cancel")
                button.setObjectName(f"cancel-{conf_num}")
                button.clicked.connect(lambda _checked=False, conf=conf_num: self._feed.cancel(conf))
                self.orders.setCellWidget(row, last, button)
            canceling = conf_num in snapshot.canceling
            button.setText("Canceling…" if canceling else "Cancel")
            button.setEnabled(not canceling)
        self.cancel_all_button.setEnabled(bool(orders) and len(snapshot.canceling) < len(orders))
        self.orders.resizeColumnsToContents()
        fit_rows(self.orders, ORDER_ROWS_SHOWN)

    def _fill_fills(self, snapshot: DeskSnapshot) -> None:
        fills = fills_in_order(snapshot)
        self.fills_box.setTitle(f"Today's fills ({len(fills)})")
        self.fills.setRowCount(len(fills))
        for row, order in enumerate(fills):
            for column, text in enumerate(fill_row(order, snapshot.fill_times)):
                self.fills.setItem(row, column, cell(text, right=column in (5, 6)))
        self.fills.setVisible(bool(fills))
        self.no_fills_label.setVisible(not fills)
        fit_rows(self.fills, ORDER_ROWS_SHOWN)

    def cancel_button(self, conf_num: str) -> QPushButton | None:
        """Return the Cancel button of an open order's row, if the order is listed."""
        return self.orders.findChild(QPushButton, f"cancel-{conf_num}")
