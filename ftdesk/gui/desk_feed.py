"""The cockpit's data: positions, open orders and today's fills, kept fresh by the service's own events.

``DeskFeed`` reads through ``ServiceControl.cockpit`` on the app's one loop (never blocking it) and emits a
``DeskSnapshot`` whenever what it holds changes. What makes it read:

* an account event (the service's own stream, on either broker): an order event re-reads the order book and
  that account's positions (a fill moves them), a position or balance event that account's positions.
  Events arriving together are read once (``debounce_ms``);
* logging in (everything) and logging out (cleared);
* while the status window is visible, a slow timer (``pnl_refresh_ms``, default 10 s) re-reads positions
  and orders, because quotes move the P&L without any account event. Hidden, nothing is polled: the tray's
  P&L line says how old it is.

One read runs at a time; what is asked meanwhile is merged into the next one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType

from PySide6.QtCore import QObject, QTimer, Signal

from ftdesk.domain.errors import FtdeskError
from ftdesk.domain.events import AccountEvent, EventCategory
from ftdesk.domain.orders import Order
from ftdesk.domain.session import SessionState
from ftdesk.gui.bridge import AppStatus, ServiceBridge
from ftdesk.gui.cockpit_rows import DeskSnapshot

log = logging.getLogger(__name__)

DEBOUNCE_MS = 250
"""Account events within this many milliseconds share one read."""
PNL_REFRESH_MS = 10_000
"""How often positions and orders are re-read while the status window is visible (quotes move the P&L)."""
CANCEL_SOURCE = "status window"
"""The source the journal records for a cancel from the cockpit."""
_POSITION_CATEGORIES = frozenset({EventCategory.ORDER, EventCategory.POSITION, EventCategory.BALANCE})


@dataclass
class _Work:
    """What the next read must fetch."""

    accounts: bool = False  # the account list
    all_positions: bool = False
    positions: set[str] = field(default_factory=set)
    orders: bool = False

    def __bool__(self) -> bool:
        return self.accounts or self.all_positions or bool(self.positions) or self.orders


class DeskFeed(QObject):
    """Reads and holds what the cockpit shows (see the module docstring)."""

    changed = Signal(object)  # DeskSnapshot

    def __init__(
        self,
        bridge: ServiceBridge,
        *,
        debounce_ms: int = DEBOUNCE_MS,
        pnl_refresh_ms: int = PNL_REFRESH_MS,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._snapshot = DeskSnapshot()
        self._work = _Work()
        self._loading = False
        self._unsubscribe: Callable[[], None] | None = None
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(debounce_ms)
        self._debounce.timeout.connect(self._flush)
        self._pnl_timer = QTimer(self)
        self._pnl_timer.setInterval(pnl_refresh_ms)
        self._pnl_timer.timeout.connect(self.refresh)
        self._watching = False
        self._reads = 0

    @property
    def snapshot(self) -> DeskSnapshot:
        """Return what the feed holds now."""
        return self._snapshot

    @property
    def reads(self) -> int:
        """Return how many reads the feed has made (each is one round of broker calls)."""
        return self._reads

    @property
    def _started(self) -> bool:
        return self._unsubscribe is not None

    @property
    def polling(self) -> bool:
        """Say whether the slow P&L timer runs (only while the status window is visible)."""
        return self._pnl_timer.isActive()

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Listen to the service's account events and session; read everything once logged in."""
        if self._unsubscribe is None:
            self._unsubscribe = self._bridge.control.subscribe_account_events(self._on_event)
            self._bridge.status_changed.connect(self._on_status)
        self._on_status(self._bridge.status)

    def stop(self) -> None:
        """Stop the timers and stop listening (no Qt timer may outlive the app's objects)."""
        self._debounce.stop()
        self._pnl_timer.stop()
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()
            self._bridge.status_changed.disconnect(self._on_status)

    def set_watching(self, watching: bool) -> None:
        """Poll the P&L slowly while the window shows it; stop when it is hidden."""
        self._watching = watching
        if watching and self._snapshot.logged_in and self._started:
            self.refresh()
            self._pnl_timer.start()
        else:
            self._pnl_timer.stop()

    # --- what makes it read -----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-read every account's positions and the order book now."""
        self._work.all_positions = True
        self._work.orders = True
        self._flush()

    def _on_status(self, status: AppStatus) -> None:
        logged_in = status.running and status.session is SessionState.LOGGED_IN
        if logged_in == self._snapshot.logged_in:
            return
        if logged_in:
            self._set(dataclasses.replace(self._snapshot, logged_in=True, error=None))
            self._work.accounts = True
            self.refresh()
            if self._watching:
                self._pnl_timer.start()
        else:
            self._pnl_timer.stop()
            self._work = _Work()
            self._set(DeskSnapshot(last_event=self._snapshot.last_event))

    def _on_event(self, event: AccountEvent) -> None:
        self._set(dataclasses.replace(self._snapshot, last_event=datetime.now(UTC)))
        acct = event.desc.get("acct_num")
        if event.category is EventCategory.ORDER:
            self._work.orders = True
        if event.category in _POSITION_CATEGORIES:
            if isinstance(acct, str) and acct:
                self._work.positions.add(acct)
            else:
                self._work.all_positions = True
        if self._work and self._snapshot.logged_in and not self._debounce.isActive():
            self._debounce.start()

    def _flush(self) -> None:
        self._debounce.stop()
        if self._loading or not self._work or not self._snapshot.logged_in or not self._started:
            return
        work, self._work = self._work, _Work()
        self._loading = True
        self._bridge.spawn(self._read(work))

    # --- reading ------------------------------------------------------------------------------------------

    async def _read(self, work: _Work) -> None:
        cockpit = self._bridge.control.cockpit
        snapshot = self._snapshot
        self._reads += 1
        try:
            accounts = snapshot.accounts
            if work.accounts or not accounts:
                accounts = tuple(await cockpit.accounts())
            known = [a.acct_num for a in accounts]
            wanted = known if work.all_positions else [acct for acct in known if acct in work.positions]
            held = await asyncio.gather(*(cockpit.positions(acct) for acct in wanted))
            book = await cockpit.order_book() if work.orders else None
        except FtdeskError as exc:
            log.info("The cockpit could not read the account: %s", exc.message)
            self._set(dataclasses.replace(self._snapshot, error=exc.message))
            return
        except Exception:  # a bug or an unreadable answer: say so in the cockpit, not in a notification per read
            log.exception("The cockpit could not read the account")
            self._set(dataclasses.replace(self._snapshot, error="unexpected error, see the log"))
            return
        finally:
            self._loading = False
            if self._work and self._started:  # asked for while this read ran
                self._debounce.start()
        if not self._snapshot.logged_in:  # logged out while reading: what was read is stale
            return
        now = datetime.now(UTC)
        positions = dict(self._snapshot.positions)
        positions.update({acct: tuple(rows) for acct, rows in zip(wanted, held, strict=True)})
        changes: dict[str, object] = {
            "accounts": accounts,
            "positions": MappingProxyType(positions),
            "error": None,
        }
        if wanted:
            changes["positions_as_of"] = now
        if book is not None:
            changes["open_orders"] = tuple(book.open)
            changes["fills"] = tuple(book.filled_today)
            changes["fill_times"] = MappingProxyType(dict(book.fill_times))
            changes["orders_as_of"] = now
        self._set(dataclasses.replace(self._snapshot, **changes))  # type: ignore[arg-type]

    def _set(self, snapshot: DeskSnapshot) -> None:
        self._snapshot = snapshot
        self.changed.emit(snapshot)

    # --- cancels -------------------------------------------------------------------------------------------

    def cancel(self, conf_num: str) -> None:
        """Cancel one open order (journaled; never gated); a refusal is shown as a notification."""
        order = self._snapshot.open_order(conf_num)
        if order is not None and conf_num not in self._snapshot.canceling:
            self._start_cancels([order])

    def cancel_all(self) -> None:
        """Cancel every open order listed now, on every account."""
        orders = [o for o in self._snapshot.open_orders if o.id_detail.conf_num not in self._snapshot.canceling]
        if orders:
            self._start_cancels(orders)

    def _start_cancels(self, orders: Sequence[Order]) -> None:
        conf_nums = frozenset(o.id_detail.conf_num for o in orders)
        self._set(dataclasses.replace(self._snapshot, canceling=self._snapshot.canceling | conf_nums))
        self._bridge.spawn(self._cancel(orders))

    async def _cancel(self, orders: Sequence[Order]) -> None:
        cockpit = self._bridge.control.cockpit

        async def one(order: Order) -> str | None:
            try:
                await cockpit.cancel(order, source=CANCEL_SOURCE)
            except FtdeskError as exc:
                return f"{order.id_detail.conf_num} ({order.order_detail.symbol}): {exc.message}"
            except Exception:
                log.exception("Cancel of %s failed", order.id_detail.conf_num)
                return f"{order.id_detail.conf_num} ({order.order_detail.symbol}): unexpected error, see the log"
            return None

        try:
            failures = [f for f in await asyncio.gather(*(one(o) for o in orders)) if f is not None]
        finally:
            done = frozenset(o.id_detail.conf_num for o in orders)
            self._set(dataclasses.replace(self._snapshot, canceling=self._snapshot.canceling - done))
            self._work.orders = True
            self._flush()
        if failures:
            title = "Cancel failed" if len(failures) == 1 else f"{len(failures)} cancels failed"
            self._bridge.notify.emit(title, "; ".join(failures))
