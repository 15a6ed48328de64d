"""The kill switch as the desktop sees it: the service's safety state as a Qt signal, and the words for it.

``SafetyWatch`` listens to the control's state changes (``ServiceChange.SAFETY`` when the service halts or
resumes, whoever asked: the tray, a script through the API, the daily loss limit) and emits the new
``SafetyState`` (None while the service is not running). The tray menu, the status window's halt bar and
the live-trading confirmation read it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from ftdesk.domain.safety import HaltOutcome, HaltState, RiskLimits, SafetyState
from ftdesk.service.control import ServiceChange, ServiceControl

DESKTOP_SOURCE = "tray"
"""Who the service records for a halt or resume from the desktop app (the tray menu or the status window)."""
_WATCHED = frozenset({ServiceChange.SAFETY, ServiceChange.RUNNING, ServiceChange.LIVE_TRADING, ServiceChange.SETTINGS})


def halt_text(halt: HaltState) -> str:
    """Return the halt banner's words: since when, by whom, why."""
    if not halt.halted:
        return "Trading is not halted"
    since = halt.since.astimezone().strftime("%Y-%m-%d %H:%M:%S") if halt.since else "an unknown time"
    why = f": {halt.reason}" if halt.reason else ""
    return f"TRADING HALTED since {since} by {halt.by or 'unknown'}{why}. Previews and places are refused."


def halt_outcome_text(outcome: HaltOutcome) -> str:
    """Return the notification after the halt button: what it canceled and what it could not."""
    count = len(outcome.canceled)
    parts = [f"{count} open order{'s' if count != 1 else ''} canceled"]
    if outcome.live_was_on:
        parts.append("live trading switched off")
    parts.append("previews and places are refused until you resume")
    text = "; ".join(parts)
    if outcome.failures:
        failed = ", ".join(f"{f.conf_num or 'listing'} ({f.error_code}: {f.message})" for f in outcome.failures)
        text += f". NOT canceled: {failed}"
    return text


def limit_lines(limits: RiskLimits) -> list[str]:
    """Return the local risk limits that are on, one line each (none when every limit is off)."""

    def number(value: float) -> str:
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"

    lines = []
    if limits.max_equity_qty is not None:
        lines.append(f"at most {number(limits.max_equity_qty)} shares per equity order")
    if limits.max_equity_notional is not None:
        lines.append(f"at most ${number(limits.max_equity_notional)} per equity order")
    if limits.max_option_contracts is not None:
        lines.append(f"at most {limits.max_option_contracts} contracts per option order")
    if limits.max_option_notional is not None:
        lines.append(f"at most ${number(limits.max_option_notional)} per option order")
    if limits.max_price_distance_pct is not None:
        lines.append(f"limit and stop prices within {number(limits.max_price_distance_pct)}% of the quote")
    if limits.max_orders_per_minute is not None:
        lines.append(f"at most {limits.max_orders_per_minute} orders per minute")
    if limits.max_open_orders is not None:
        lines.append(f"at most {limits.max_open_orders} open orders")
    if limits.daily_loss_limit is not None:
        lines.append(f"trading halts at a day's loss of ${number(limits.daily_loss_limit)} in an account")
    if limits.symbol_allow:
        lines.append(f"only {', '.join(limits.symbol_allow)}")
    if limits.symbol_deny:
        lines.append(f"never {', '.join(limits.symbol_deny)}")
    return lines


class SafetyWatch(QObject):
    """Emits the service's safety state whenever the halt, the live switch or the limits change."""

    changed = Signal(object)  # SafetyState | None
    notify = Signal(str, str)  # title, message: a halt or resume the desktop app did not make itself

    def __init__(self, control: ServiceControl, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._control = control
        self._state: SafetyState | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._scheduled = False
        self._resuming_here = False

    @property
    def state(self) -> SafetyState | None:
        """Return the last safety state (None while the service is not running)."""
        return self._state

    @property
    def halted(self) -> bool:
        """Say whether trading is halted."""
        return self._state is not None and self._state.halt.halted

    def start(self) -> None:
        """Listen to the service and read the state now."""
        if self._unsubscribe is None:
            self._unsubscribe = self._control.subscribe(self._on_change)
        self.refresh()

    def stop(self) -> None:
        """Stop listening."""
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()

    def _on_change(self, change: ServiceChange) -> None:
        # Listeners run inside the change; read the state once the change is complete.
        if change in _WATCHED and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_refresh)

    def _scheduled_refresh(self) -> None:
        if self._unsubscribe is not None:  # not stopped meanwhile
            self.refresh()
        self._scheduled = False

    def refresh(self) -> None:
        """Read the safety state; emit it when the halt, the live switch or the limits changed."""
        self._scheduled = False
        state = self._control.safety() if self._control.running else None
        before, self._state = self._state, state
        if _shown(before) != _shown(state):
            self.changed.emit(state)
        if before is None or state is None or before.halt.halted == state.halt.halted:
            return
        # The desktop app tells about its own halt and resume with what they did; these came from elsewhere.
        if state.halt.halted and state.halt.by != DESKTOP_SOURCE:
            self.notify.emit("Trading halted", halt_text(state.halt))
        elif not state.halt.halted and not self._resuming_here:
            self.notify.emit("Trading resumed", "The halt was lifted outside the desktop app; live trading is off")
        self._resuming_here = False

    def resuming_here(self) -> None:
        """Note that the desktop app itself is lifting the halt (it tells the trader itself)."""
        self._resuming_here = True


def _shown(state: SafetyState | None) -> object:
    # Usage (orders this minute, P&L) changes on every read and is not shown: it does not count as a change.
    return None if state is None else (state.halt, state.live_trading, state.limits)
