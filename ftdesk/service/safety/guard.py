"""The safety guard: the kill switch's state, the live switch's audit trail, and the gate the order desk asks.

``SafetyGuard`` holds what ``safety.json`` keeps (``safety.store``) and answers the order desk's question
"may this preview or place go on?" (``admit``): while halted, no (``TRADING_HALTED``); then the local risk
limits (``safety.limits``). Cancels never ask. Every halt, resume and live-switch change is written to the
order journal (actions ``halt``, ``resume``, ``live_switch``) and to the safety file; listeners (the control
surface, which tells the desktop app) hear of each change.

What a halt does to the orders (cancel every open one) is in ``safety.sweep``; the guard only keeps the state.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime
from typing import Any

from ftdesk.config import Settings
from ftdesk.domain.clock import Clock, trading_day
from ftdesk.domain.safety import HaltState, LiveSwitchChange, RiskLimitExceeded, TradingHalted, limit_details
from ftdesk.service.orders.journal import JournalAction, JournalDraft, OrderFacts, OrderJournal, Outcome
from ftdesk.service.safety.limits import LimitChecker, order_lines
from ftdesk.service.safety.reads import BrokerReads
from ftdesk.service.safety.store import SafetyRecord, SafetyStore

log = logging.getLogger(__name__)

HALTED_MESSAGE = (
    "Trading is halted (kill switch, since {since} by {by}): previews and places are refused until the trader "
    "resumes in the tray or with POST /api/v1/safety/resume. Cancels still work."
)

LiveSwitcher = Callable[[bool, str], None]
"""Switches live trading (``ServiceControl.set_live_trading``): enabled, source."""
Halter = Callable[[str, str | None], Awaitable[object]]
"""Pulls the kill switch (``safety.sweep.halt_trading`` on the running service): source, reason."""


class SafetyGuard:
    """The kill switch's state, persisted; the audit of the live switch; the halt check of the order desk."""

    def __init__(self, store: SafetyStore, journal: OrderJournal, clock: Clock, record: SafetyRecord) -> None:
        self._store = store
        self._journal = journal
        self._clock = clock
        self._record = record
        self._listeners: list[Callable[[], None]] = []
        self._switch_live: LiveSwitcher | None = None
        self._writes: set[asyncio.Task[None]] = set()
        self.halt_lock = asyncio.Lock()  # one halt or resume at a time
        self._save_lock = asyncio.Lock()  # one write of the safety file at a time, so the newest is the last
        self._settings: Callable[[], Settings] | None = None
        self._reads: BrokerReads | None = None
        self._halt: Halter | None = None
        self.limits = LimitChecker(clock, lambda: self._settings() if self._settings else None)

    @classmethod
    async def open(cls, store: SafetyStore, journal: OrderJournal, clock: Clock) -> SafetyGuard:
        """Read the safety file (off the loop) and return the guard in the state it keeps."""
        record = await asyncio.to_thread(store.load, clock.now())
        if record.halt.halted:
            log.warning("Trading is halted since %s (by %s): kept from the last run", record.halt.since, record.halt.by)
        return cls(store, journal, clock, record)

    async def close(self) -> None:
        """Finish the audit writes still in flight."""
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)

    # --- what it is -------------------------------------------------------------------------------------

    @property
    def record(self) -> SafetyRecord:
        """Return what the safety file keeps, as it is now."""
        return self._record

    @property
    def halt_state(self) -> HaltState:
        """Return whether trading is halted, since when, by whom."""
        return self._record.halt

    @property
    def halted(self) -> bool:
        """Say whether the kill switch is on."""
        return self._record.halt.halted

    @property
    def last_live_change(self) -> LiveSwitchChange | None:
        """Return the last change of the live-trading switch this data dir saw."""
        return self._record.last_live_change

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` on every change of the safety state; return the unsubscriber."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def bind_live_switch(self, switch: LiveSwitcher | None) -> None:
        """Let a halt turn live trading off through the control surface (the one place that switches it)."""
        self._switch_live = switch

    def switch_live_off(self, source: str) -> None:
        """Turn live trading off through the bound switch (nothing bound: places stay refused by the halt)."""
        if self._switch_live is not None:
            self._switch_live(False, source)

    def bind(self, settings: Callable[[], Settings], reads: BrokerReads, halt: Halter) -> None:
        """Give the guard the settings it reads limits from, its broker reads and the halt (composition root)."""
        self._settings, self._reads, self._halt = settings, reads, halt

    # --- the gate ------------------------------------------------------------------------------------------

    async def admit(
        self, order: object | None, *, place_conf_nums: tuple[str, ...] | None = None
    ) -> Callable[[], None]:
        """Refuse a preview or place while halted, or when the order crosses a risk limit (before any order call).

        The halt is checked again after the limits' broker reads: a halt that arrived meanwhile wins. A place
        let through (``place_conf_nums``: its preview's) holds an open-order slot (``limits.check``) until the
        returned release is called.
        """
        self.check_not_halted()
        release: Callable[[], None] = _no_slot
        if order is not None and self._reads is not None:
            release = await self.limits.check(
                order, self._reads.quote, self._reads.open_orders, place_conf_nums=place_conf_nums
            )
        try:
            if order is not None and self._reads is not None:
                await self._check_daily_loss(order, self._reads)
            self.check_not_halted()
        except BaseException:
            release()
            raise
        return release

    async def _check_daily_loss(self, order: object, reads: BrokerReads) -> None:
        """Refuse the order, halting trading, when its account lost more than the daily loss limit today."""
        lines = order_lines(order)
        if not lines:
            return
        crossed = await self.check_account_loss(lines[0].acct_num, reads)
        if crossed is None:
            return
        limit, loss, reason = crossed
        raise RiskLimitExceeded(
            f"Risk limit daily_loss_limit ({limit}): {reason}; trading is halted and open orders were canceled. "
            "Resume in the tray or with POST /api/v1/safety/resume",
            details=limit_details("daily_loss_limit", limit, loss, acct_num=lines[0].acct_num, halted=True),
        )

    async def check_account_loss(self, acct: str, reads: BrokerReads) -> tuple[float, float, str] | None:
        """Halt trading (source ``daily-loss-limit``) when the account lost more than the limit today.

        Return the limit, the loss and the reason when it halted. It halts once per account and day: after the
        trader resumes, the same day's loss does not halt again.
        """
        limit = self.limits.limits.daily_loss_limit
        if limit is None:
            return None
        pnl = await reads.pnl(acct)
        self.limits.pnl[acct] = pnl
        loss = -pnl.total
        if loss <= limit or self._record.loss_halted_on(acct) == trading_day(self._clock.now()):
            return None
        await self.note_loss_halt(acct)
        reason = f"account {acct} lost ${loss:,.2f} today, over the daily loss limit ${limit:,.2f}"
        if self._halt is not None:
            await self._halt("daily-loss-limit", reason)
        return limit, loss, reason

    def check_not_halted(self) -> None:
        """Raise ``TradingHalted`` while the kill switch is on."""
        if self._record.halt.halted:
            raise self.halted_error()

    def halted_error(self) -> TradingHalted:
        """Return the refusal of a preview or place while the kill switch is on."""
        halt = self._record.halt
        since = halt.since.isoformat(timespec="seconds") if halt.since else "unknown"
        return TradingHalted(
            HALTED_MESSAGE.format(since=since, by=halt.by or "unknown"),
            details={"halted_since": since, "halted_by": halt.by, "reason": halt.reason},
        )

    # --- changes -------------------------------------------------------------------------------------------

    async def set_halted(self, source: str, reason: str | None) -> tuple[HaltState, bool]:
        """Turn the kill switch on (kept if already on) and persist it; return the state and whether it was on."""
        already = self._record.halt.halted
        if not already:
            halt = HaltState(halted=True, since=self._clock.now(), by=source, reason=reason)
            await self._change(dataclasses.replace(self._record, halt=halt))
        return self._record.halt, already

    async def set_resumed(self) -> HaltState:
        """Turn the kill switch off and persist it; return the state it had."""
        before = self._record.halt
        if before.halted:
            await self._change(dataclasses.replace(self._record, halt=HaltState(halted=False)))
        return before

    async def note_loss_halt(self, acct_num: str) -> None:
        """Remember that the daily loss limit halted trading for this account today."""
        await self._change(self._record.with_loss_halt(acct_num, trading_day(self._clock.now())))

    def live_changed(self, enabled: bool, source: str) -> None:
        """Record a change of the live-trading switch: in the safety file and the journal (written off the loop)."""
        change = LiveSwitchChange(enabled=enabled, source=source, time=self._clock.now())
        self._record = dataclasses.replace(self._record, last_live_change=change)
        message = f"Live trading switched {'ON' if enabled else 'off'} by {source}"
        # No listener call: the control surface tells its listeners LIVE_TRADING, which covers this record.
        self._later(self._persist_and_journal(JournalAction.LIVE_SWITCH, source, message))

    async def journal(
        self,
        action: JournalAction,
        source: str,
        message: str,
        *,
        conf_nums: tuple[str, ...] = (),
        error_code: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """Write one safety row to the order journal (a failure is logged: the state change stands)."""
        draft = JournalDraft(
            request_id=request_id or f"safety-{uuid.uuid4().hex[:16]}",
            endpoint=f"safety ({source})",
            action=action,
            order_kind=None,
            facts=OrderFacts(conf_nums=conf_nums),
            body_hash="",
        )
        try:
            await asyncio.to_thread(
                self._journal.record, draft, Outcome.ACCEPTED, error_code=error_code, message=message[:4000]
            )
        except Exception:
            log.exception("Could not journal a %s by %s", action.value, source)

    async def _change(self, record: SafetyRecord) -> None:
        self._record = record  # in memory first: the gate refuses from this moment on
        self._notify()
        try:
            await self._save()
        except Exception:
            log.exception("Could not write the safety file; the state holds for this run only")

    async def _save(self) -> None:
        # Writes run in threads; taken one at a time and each writing the record as it is when its turn comes,
        # an older record (a live-switch audit written in the background) never lands over a newer halt.
        async with self._save_lock:
            await asyncio.to_thread(self._store.save, self._record)

    async def _persist_and_journal(self, action: JournalAction, source: str, text: str) -> None:
        try:
            await self._save()
        except Exception:
            log.exception("Could not write the safety file")
        await self.journal(action, source, text)

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    def _notify(self) -> None:
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:  # a listener must never break the guard
                log.exception("Safety listener failed")

    def now(self) -> datetime:
        """Return the injected clock's now."""
        return self._clock.now()


def _no_slot() -> None:
    return None
