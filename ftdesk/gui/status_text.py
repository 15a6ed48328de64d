"""How an ``AppStatus`` reads: the tray look, the tooltip and the status lines the menu and the window share."""

from __future__ import annotations

from dataclasses import dataclass

from ftdesk.domain.safety import HaltState
from ftdesk.domain.session import SessionState
from ftdesk.gui.bridge import AppStatus
from ftdesk.gui.icons import TrayLook
from ftdesk.service.control import HubState


def tray_look(status: AppStatus, halt: HaltState | None = None) -> TrayLook:
    """Return the icon that tells the state at a glance (a halt outranks trouble, which outranks the rest)."""
    if status.running and halt is not None and halt.halted:
        return TrayLook.HALTED
    if not status.running or status.session is SessionState.EXPIRED or status.upstream_error or status.problems:
        return TrayLook.ERROR
    if status.session is SessionState.LOGGED_OUT:
        return TrayLook.LOGGED_OUT
    if status.broker == "paper":  # simulated money: one look whether or not the switch lets places through
        return TrayLook.PAPER_FIDELITY if status.paper_on_fidelity else TrayLook.PAPER
    return TrayLook.LIVE if status.live else TrayLook.DRY_RUN


def broker_text(status: AppStatus) -> str:
    """Return the broker as the trader should read it ("paper on Fidelity's market" for that mode)."""
    return "paper on Fidelity's market" if status.paper_on_fidelity else status.broker


def mode_text(status: AppStatus) -> str:
    """Return the trading mode as the trader should read it."""
    return "LIVE TRADING" if status.live else "DRY-RUN (orders are refused)"


def session_text(status: AppStatus) -> str:
    """Return the session state in words."""
    if not status.running:
        return "service not running"
    if status.session is SessionState.LOGGED_IN:
        return f"logged in as {status.username}" if status.username else "logged in"
    if status.session is SessionState.EXPIRED:
        return "expired: log in again"
    return "logged out"


def _hub_text(state: HubState) -> str:
    return state.value.replace("_", " ")


WHY_NOT_LIMIT = 140
"""Characters of the reason account events are not live that a status line shows."""


def events_text(status: AppStatus) -> str:
    """Return whether account events are live, and why not when they should be."""
    state = status.events
    if state is HubState.CONNECTED:
        return "live"
    why = status.events_why_not
    if not why or state is HubState.WAITING_FOR_SESSION:
        return _hub_text(state)
    if len(why) > WHY_NOT_LIMIT:
        why = why[: WHY_NOT_LIMIT - 3].rstrip() + "..."
    return f"not live: {why}"


def clients_text(status: AppStatus) -> str:
    """Return the connected clients, with the count by kind."""
    clients = status.clients
    parts = [
        f"{clients.get('sse', 0)} SSE",
        f"{clients.get('ws', 0)} WebSocket",
        f"{clients.get('events', 0)} event stream{'s' if clients.get('events', 0) != 1 else ''}",
    ]
    return f"{status.client_count} ({', '.join(parts)})"


def halt_line(halt: HaltState | None) -> str | None:
    """Return the first status line while halted ("TRADING HALTED since 2026-12-04 14:05:09 by tray"), else None."""
    if halt is None or not halt.halted:
        return None
    since = halt.since.astimezone().strftime("%Y-%m-%d %H:%M:%S") if halt.since is not None else "an unknown time"
    return f"TRADING HALTED since {since} by {halt.by or 'unknown'}"


@dataclass(frozen=True)
class StatusLines:
    """The status lines of the menu and the window, in order."""

    session: str
    broker: str
    mode: str
    streaming: str
    clients: str

    def as_list(self) -> list[str]:
        """Return the lines in display order."""
        return [self.session, self.broker, self.mode, self.streaming, self.clients]


def status_lines(status: AppStatus) -> StatusLines:
    """Return the status lines for a status."""
    return StatusLines(
        session=f"Session: {session_text(status)}",
        broker=f"Broker: {broker_text(status)}",
        mode=f"Mode: {mode_text(status)}",
        streaming=f"Streaming: market data {_hub_text(status.quotes)}, account events {events_text(status)}",
        clients=f"Clients: {clients_text(status)}",
    )


def tooltip(status: AppStatus, pnl_line: str | None = None) -> str:
    """Return the tray tooltip: broker, mode, session, the day's P&L (when known) and the API URL."""
    mode = "LIVE" if status.live else "dry-run"
    lines = [f"ftdesk: {broker_text(status)}, {mode}, {session_text(status)}"]
    if status.paper_on_fidelity:
        lines.append("Paper money on Fidelity's quotes: no real order is possible")
    if pnl_line and status.session is SessionState.LOGGED_IN:
        lines.append(pnl_line)
    lines.append(status.api_url)
    if status.last_error and tray_look(status) is TrayLook.ERROR:
        lines.append(status.last_error)
    lines.extend(status.problems)  # a damaged file moved aside, a full disk: until the service restarts
    return "\n".join(lines)
