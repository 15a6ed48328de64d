"""The settings dialog's fields: which settings it edits, in which groups, and the editor of one setting.

Every label's tooltip, every check and every error message comes from ``ftdesk.config.SETTINGS`` (the one
table that declares a setting). A value fixed by an ``FTSERVICE_*`` environment variable is shown
read-only with a note naming the variable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any

from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from ftdesk.service.control import ConfigError, SettingSpec, validate_setting

ERROR_STYLE = "color: #C62828;"
NOTE_STYLE = "color: palette(mid); font-style: italic;"


class Kind(Enum):
    """How a setting is edited."""

    TEXT = "text"
    CHECK = "check"
    CHOICE = "choice"


@dataclass(frozen=True)
class Row:
    """One editable setting as the dialog shows it."""

    name: str
    label: str
    kind: Kind
    choices: tuple[tuple[str, str], ...] = ()  # (value, what the trader reads)
    unit: str = ""
    grouped: bool = False  # a quantity or an amount: shown with thousands separators, typed with or without
    off_when_empty: bool = False  # a risk limit: empty (or 0) turns it off


def _limit(name: str, label: str, *, unit: str = "", grouped: bool = True) -> Row:
    """Return a risk limit's row: empty (or 0) turns it off."""
    return Row(name, label, Kind.TEXT, unit=unit, grouped=grouped, off_when_empty=True)


RISK_LIMITS_GROUP = "Risk limits"
"""The group the dialog shows in its own column, beside the others."""
FIDELITY_GROUP = "Fidelity account events"
"""Settings that only mean something on the Fidelity broker: the dialog shows them while Fidelity is chosen."""
LIMITS_NOTE = "0 or an empty field turns a limit off. Each applies to the next order, without a restart."
"""What the risk-limits group says first."""
GROUPS: tuple[tuple[str, tuple[Row, ...]], ...] = (
    (
        "General",
        (
            Row("broker", "Broker", Kind.CHOICE, (("paper", "Paper (simulated)"), ("fidelity", "Fidelity"))),
            Row(
                "paper_market",
                "Paper market",
                Kind.CHOICE,
                (("simulated", "Simulated"), ("fidelity", "Fidelity's live quotes (no real order possible)")),
            ),
            Row(
                "log_level",
                "Log level",
                Kind.CHOICE,
                tuple((level, level.capitalize()) for level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")),
            ),
        ),
    ),
    (
        "Session",
        (
            Row("auto_reauth", "Auto re-auth", Kind.CHECK),
            Row("session_keepalive_interval", "Keep-alive interval", Kind.TEXT, unit="seconds"),
            Row("login_at_startup", "Start with stored credentials", Kind.CHECK),
        ),
    ),
    (
        # Places held for the trader (docs/assistant.md): the assistant's always are; this holds every script's too.
        "Approval",
        (
            Row("require_approval", "Every place needs my approval", Kind.CHECK),
            Row("approval_timeout", "Approval wait", Kind.TEXT, unit="seconds"),
        ),
    ),
    (
        "Server",
        (
            Row("port", "Port", Kind.TEXT),
            Row("api_key_required", "API key required", Kind.CHECK),
        ),
    ),
    (
        "Streaming",
        (Row("unsubscribe_delay", "Unsubscribe delay", Kind.TEXT, unit="seconds"),),
    ),
    (
        FIDELITY_GROUP,
        (
            Row("beps_host", "Fidelity event host", Kind.TEXT),
            Row("beps_stream_url", "Fidelity event stream", Kind.TEXT),
            Row("beps_mid", "Fidelity member id", Kind.TEXT),
            Row("beps_app_id", "Fidelity app id", Kind.TEXT),
        ),
    ),
    (
        # Local risk limits (docs/safety.md): each applies to the next order, without a restart; 0 or off turns
        # one off. Only the trader changes them (here, the settings file or FTSERVICE_*): the API cannot.
        RISK_LIMITS_GROUP,
        (
            _limit("max_equity_qty", "Max shares per order", unit="shares"),
            _limit("max_equity_notional", "Max per equity order", unit="dollars"),
            _limit("max_option_contracts", "Max contracts per order", unit="contracts"),
            _limit("max_option_notional", "Max per option order", unit="dollars"),
            _limit("max_price_distance_pct", "Max price distance", unit="% of quote", grouped=False),
            _limit("max_orders_per_minute", "Max orders per minute"),
            _limit("max_open_orders", "Max open orders"),
            _limit("daily_loss_limit", "Daily loss limit", unit="dollars"),
            Row("symbol_allow", "Only these symbols", Kind.TEXT),
            Row("symbol_deny", "Never these symbols", Kind.TEXT),
        ),
    ),
)
ROWS: Mapping[str, Row] = MappingProxyType({row.name: row for _, rows in GROUPS for row in rows})


def _plain(doc: str) -> str:
    """Return a SETTINGS doc line without Markdown code marks."""
    return doc.replace("`", "")


def _reason(error: ConfigError) -> str:
    """Return what a setting accepts, as a sentence under its field."""
    return error.reason[:1].upper() + error.reason[1:]


def _shown(value: Any, grouped: bool = False) -> str:
    if value is None:
        return ""
    if isinstance(value, tuple | list):  # a symbol list: as it is typed
        return ", ".join(str(item) for item in value)
    if isinstance(value, bool):
        return str(value)
    if grouped and isinstance(value, int | float):
        return f"{value:,.2f}".rstrip("0").rstrip(".") if not float(value).is_integer() else f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class SettingEditor:
    """The editor of one setting: its widget, a lock note when the environment fixes it, an error line."""

    def __init__(self, row: Row, spec: SettingSpec, value: Any, locked: bool, relayout: Callable[[], None]) -> None:
        self.row = row
        self._relayout = relayout
        self.spec = spec
        self.locked = locked
        tooltip = f"{_plain(spec.doc)}\nAccepts: {spec.accepts}.\nEnvironment variable: {spec.env}."
        self.label = QLabel(row.label)
        self.label.setToolTip(tooltip)

        self.editor: QLineEdit | QCheckBox | QComboBox
        if row.kind is Kind.CHECK:
            self.editor = QCheckBox(_plain(spec.doc).rstrip("."))
            self.editor.setChecked(bool(value))
        elif row.kind is Kind.CHOICE:
            self.editor = QComboBox()
            for choice, shown in row.choices:
                self.editor.addItem(shown, choice)
            self.editor.setCurrentIndex(max(0, self.editor.findData(value)))
        else:
            self.editor = QLineEdit(_shown(value, row.grouped))
            if row.off_when_empty:
                self.editor.setPlaceholderText("off")
            elif spec.default is None:
                self.editor.setPlaceholderText("not set")
            self.editor.setClearButtonEnabled(not locked)
            # Room for an amount like 100,000,000 beside the clear button, whatever the column's width.
            self.editor.setMinimumWidth(self.editor.fontMetrics().horizontalAdvance("100,000,000") + 36)
        self.editor.setObjectName(row.name)
        self.editor.setToolTip(tooltip)
        self.editor.setAccessibleName(row.label)
        self.label.setBuddy(self.editor)

        self.error = QLabel()
        self.error.setObjectName(f"{row.name}_error")
        self.error.setWordWrap(True)
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.hide()
        self.note = QLabel(f"Set by {spec.env}")
        self.note.setObjectName(f"{row.name}_note")
        self.note.setStyleSheet(NOTE_STYLE)
        self.note.setVisible(locked)
        if locked:
            self.note.setToolTip(f"The environment variable {spec.env} fixes this value; change it there.")
            if isinstance(self.editor, QLineEdit):
                self.editor.setReadOnly(True)  # still selectable and copyable
            else:
                self.editor.setEnabled(False)

        editor_row = QHBoxLayout()
        editor_row.setContentsMargins(0, 0, 0, 0)
        editor_row.addWidget(self.editor, 1)
        # Every text field has a unit label, blank or not: the dialog gives them one width per column, so the
        # fields are all as wide as one another.
        self.unit: QLabel | None = QLabel(row.unit) if row.kind is Kind.TEXT else None
        if self.unit is not None:
            self.unit.setObjectName(f"{row.name}_unit")
            editor_row.addWidget(self.unit)
        column = QVBoxLayout()
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addLayout(editor_row)
        column.addWidget(self.note)
        column.addWidget(self.error)
        self.cell = QWidget()
        self.cell.setLayout(column)

        if isinstance(self.editor, QLineEdit):
            self.editor.textEdited.connect(lambda _text: self.set_error(""))
            self.editor.editingFinished.connect(self._finished)

    def _finished(self) -> None:
        # A valid amount is shown again with its thousands separators ("100000" reads "100,000").
        if self.check() and self.row.grouped and not self.locked and isinstance(self.editor, QLineEdit):
            self.editor.setText(_shown(self.parse(), grouped=True))

    def raw(self) -> Any:
        """Return what the trader entered, as the settings file would hold it before parsing."""
        if isinstance(self.editor, QCheckBox):
            return self.editor.isChecked()
        if isinstance(self.editor, QComboBox):
            return self.editor.currentData()
        text = self.editor.text()
        return text.replace(",", "").replace("_", "") if self.row.grouped else text

    def parse(self) -> Any:
        """Return the parsed value; raise ConfigError when the entry is not valid."""
        return validate_setting(self.spec.name, self.raw())

    def check(self) -> bool:
        """Validate the entry and show or clear its inline error; return whether it is valid."""
        if self.locked:
            return True
        try:
            self.parse()
        except ConfigError as exc:
            self.set_error(_reason(exc))
            return False
        self.set_error("")
        return True

    def set_error(self, text: str) -> None:
        """Show an inline error under the field (an empty text hides it)."""
        self.error.setText(text)
        self.error.setVisible(bool(text))
        self._relayout()

    def set_busy(self, busy: bool) -> None:
        """Disable editing while an action runs (locked fields stay as they are)."""
        if not self.locked:
            self.editor.setEnabled(not busy)
