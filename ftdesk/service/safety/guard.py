"""The safety guard: the kill switch's state, the live switch's audit trail, and the checks the order desk asks.

``SafetyGuard`` holds what ``safety.json`` keeps (``safety.store``) and answers the order desk's questions
before a preview or place: is trading halted (``check_not_halted``, ``TRADING_HALTED``), does the order cross a
local risk limit (``check_limits``, ``safety.limits``), has its account lost more than the daily loss limit
(``loss_crossed``). Cancels never ask. The limits read the broker through the guard's own ``BrokerReads``
(``safety.reads``), inside the session. Every halt, resume and live-switch change is written to the order
journal (actions ``halt``, ``resume``, ``live_switch``) and to the safety file; listeners (the control surface,
which tells the desktop app) hear of each change.

What a halt does to the orders (cancel every open one) is ``safety.sweep.KillSwitch``; the guard only keeps the
state, so the guard needs nothing of the order desk and the desk and the kill switch are built after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ftdesk.data_dir import DataDirSpace
from ftdesk.domain.clock import Clock, trading_day
from ftdesk.domain.errors import FtdeskError, StorageFull
from ftdesk.domain.safety import HaltState, LiveSwitchChange, RiskLimitExceeded, TradingHalted, limit_details
from ftdesk.service.orders.journal import JournalAction, JournalDraft, OrderFacts, OrderJournal, Outcome
from ftdesk.service.safety.limits import LimitChecker, order_lines
from ftdesk.service.safety.reads import BrokerReads
from ftdesk.service.safety.store import SafetyRecord, SafetyStore
from ftdesk.service.switches import SettingsHolder

log = logging.getLogger(__name__)

_UNSAVED = "The kill switch's state could not be saved"  # how the problem lines of each kind begin
_DISK_FULL = "The disk of the data dir"

HALTED_MESSAGE = (
    "Trading is halted (kill switch, since {since} by {by}): previews and places are refused until the trader "
    "resumes in the tray or with POST /api/v1/safety/resume. Cancels still work."
)


@dataclass(frozen=True)
class LossCrossing:
    """An account that lost more than the daily loss limit today: the halt's reason and the order's refusal."""

    acct_num: str
    limit: float
    loss: float

    @property
    def reason(self) -> str:
        """Return why trading halts, for the journal and the log."""
        return f"account {self.acct_num} lost ${self.loss:,.2f} today, over the daily loss limit ${self.limit:,.2f}"

    def refusal(self) -> RiskLimitExceeded:
        """Return the refusal of the order that found the crossing (trading is halted by then)."""
        return RiskLimitExceeded(
            f"Risk limit daily_loss_limit ({self.limit}): {self.reason}; trading is halted and open orders were "
            "canceled. Resume in the tray or with POST /api/v1/safety/resume",
            details=limit_details("daily_loss_limit", self.limit, self.loss, acct_num=self.acct_num, halted=True),
        )


class SafetyGuard:
    """The kill switch's state, persisted; the audit of the live switch; the halt check of the order desk."""

    def __init__(
        self,
        store: SafetyStore,
        journal: OrderJournal,
        clock: Clock,
        record: SafetyRecord,
        *,
        settings: SettingsHolder | None = None,
        reads: BrokerReads | None = None,
    ) -> None:
        self._store = store
        self._journal = journal
        self._clock = clock
        self._record = record
        self._listeners: list[Callable[[], None]] = []
        self._writes: set[asyncio.Task[None]] = set()
        self.halt_lock = asyncio.Lock()  # one halt or resume at a time
        self._save_lock = asyncio.Lock()  # one write of the safety file at a time, so the newest is the last
        self._reads = reads
        self.limits = LimitChecker(clock, lambda: settings.current if settings is not None else None)
        self.problems: list[str] = []  # one line each: what the trader must know about the data dir's files
        self.saved = True  # whether the last change of the kill switch's state reached the disk
        self._space: DataDirSpace | None = None
        self._requests_may_proceed = asyncio.Event()  # held closed while a start-up sweep runs
        self._requests_may_proceed.set()

    @classmethod
    async def open(
        cls,
        store: SafetyStore,
        journal: OrderJournal,
        clock: Clock,
        *,
        settings: SettingsHolder | None = None,
        reads: BrokerReads | None = None,
        known_problems: Sequence[str] = (),
    ) -> SafetyGuard:
        """Read the halt from both its copies (off the loop) and return the guard in the state they keep.

        The safety file and the journal's last halt or resume row each keep the halt: either one saying halted
        keeps trading halted, and a safety file gone missing after a halt is reported (log, tray, /health), after
        the ``known_problems`` of the data dir found before it (damaged files moved aside).
        """
        existed = await asyncio.to_thread(store.path.exists)
        record = await asyncio.to_thread(store.load, clock.now())
        problems: list[str] = [*known_problems, *store.notices]
        try:
            journaled = await asyncio.to_thread(journal.last_halt)
        except Exception:  # the journal is open and was just read by the desk: this is not expected
            log.exception("Could not read the halt from the order journal")
            journaled = None
        if journaled is not None and journaled.halted and not record.halt.halted:
            since = journaled.time.isoformat(timespec="seconds")
            if existed:
                why = f"{store.path} says trading is not halted, but the order journal's last halt ({since}, "
            else:
                why = f"{store.path} is missing, but the order journal's last halt ({since}, "
            problem = why + f"{journaled.by}) was never resumed: trading stays halted; resume once checked"
            problems.append(problem)
            log.error("%s", problem)
            by = journaled.by.removeprefix("safety (").removesuffix(")")
            halt = HaltState(halted=True, since=journaled.time, by=by, reason=problem)
            record = dataclasses.replace(record, halt=halt)
        if record.halt.halted:
            log.warning("Trading is halted since %s (by %s): kept from the last run", record.halt.since, record.halt.by)
        guard = cls(store, journal, clock, record, settings=settings, reads=reads)
        guard.problems.extend(problems)
        return guard

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

    # --- the checks ----------------------------------------------------------------------------------------

    async def check_limits(
        self, order: object | None, *, place_conf_nums: tuple[str, ...] | None = None
    ) -> Callable[[], None]:
        """Refuse an order that crosses a local risk limit (``RISK_LIMIT``), reading the broker as the limits need.

        A place let through (``place_conf_nums``: its preview's) holds an open-order slot (``limits.check``) until
        the returned release is called.
        """
        if order is None or self._reads is None:
            return _no_slot
        return await self.limits.check(
            order, self._reads.quote, self._reads.open_orders, place_conf_nums=place_conf_nums
        )

    async def loss_crossed(self, order: object | None) -> LossCrossing | None:
        """Return the crossing when the order's account lost more than the daily loss limit today (then halt)."""
        lines = order_lines(order) if order is not None else []
        if not lines:
            return None
        return await self.check_account_loss(lines[0].acct_num)

    async def account_numbers(self) -> list[str]:
        """Return the account numbers of the session (what the loss watch checks)."""
        return [] if self._reads is None else await self._reads.account_numbers()

    async def check_account_loss(self, acct: str) -> LossCrossing | None:
        """Return the crossing when the account lost more than the limit today; the caller halts trading.

        A crossing is reported once per account and day: after the trader resumes, the same day's loss does not
        halt again.
        """
        limit = self.limits.limits.daily_loss_limit
        if limit is None or self._reads is None:
            return None
        pnl = await self._reads.pnl(acct)
        self.limits.pnl[acct] = pnl
        loss = -pnl.total
        if loss <= limit or self._record.loss_halted_on(acct) == trading_day(self._clock.now()):
            return None
        await self.note_loss_halt(acct)
        return LossCrossing(acct_num=acct, limit=limit, loss=loss)

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

    # --- the start-up sweep's hold on requests ---------------------------------------------------------------

    def hold_requests(self) -> None:
        """Make requests wait (``requests_may_proceed``) until ``release_requests``: a sweep is running."""
        self._requests_may_proceed.clear()

    def release_requests(self) -> None:
        """Let held requests go on."""
        self._requests_may_proceed.set()

    @property
    def requests_held(self) -> bool:
        """Say whether a start-up sweep holds requests now."""
        return not self._requests_may_proceed.is_set()

    async def requests_may_proceed(self) -> None:
        """Return once no start-up sweep holds requests."""
        await self._requests_may_proceed.wait()

    # --- changes -------------------------------------------------------------------------------------------

    async def set_halted(self, source: str, reason: str | None) -> tuple[HaltState, bool]:
        """Turn the kill switch on (kept if already on) and persist it; return the state and whether it was on."""
        already = self._record.halt.halted
        if self._space is not None:  # a disk nearly full: the halt, its rows and its cancels get the reserve
            await asyncio.to_thread(self._space.release_if_short, "a halt and its cancels")
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

    async def begin_halt_row(self, source: str, reason: str | None, request_id: str) -> int | None:
        """Write the journal's copy of a halt as it starts (``pending``); return its entry id (None if not written)."""
        draft = JournalDraft(
            request_id=request_id,
            endpoint=f"safety ({source})",
            action=JournalAction.HALT,
            order_kind=None,
            facts=OrderFacts(),
            body_hash="",
        )
        try:
            return await asyncio.to_thread(self._journal.begin, draft)
        except Exception:
            log.exception("Could not write the halt by %s to the order journal", source)
            return None

    async def finish_halt_row(
        self, entry_id: int, message: str, *, conf_nums: tuple[str, ...], error_code: str | None
    ) -> None:
        """Complete the journal's halt row with what the halt did."""
        try:
            await asyncio.to_thread(
                self._journal.finish,
                entry_id,
                Outcome.ACCEPTED,
                conf_nums=conf_nums,
                error_code=error_code,
                message=message[:4000],
            )
        except Exception:
            log.exception("Could not journal what the halt did: %s", message)

    async def _change(self, record: SafetyRecord) -> None:
        self._record = record  # in memory first: the gate refuses from this moment on
        self._notify()
        try:
            await self._save()
        except Exception as exc:
            self.saved = False
            why = exc.message if isinstance(exc, FtdeskError) else type(exc).__name__
            problem = f"{_UNSAVED} to {self._store.path} ({why}): it holds for this run only"
            log.error("%s", problem, exc_info=None if isinstance(exc, FtdeskError) else exc)
            self._set_problem(_UNSAVED, problem)
        else:
            self.saved = True
            self._set_problem(_UNSAVED, None)

    def watch_space(self, space: DataDirSpace) -> None:
        """Show a full data-dir disk among the problems (the tray, /health) while it lasts."""
        loop = asyncio.get_running_loop()
        self._space = space

        def changed() -> None:  # called from the journal's worker threads
            with contextlib.suppress(RuntimeError):  # a write finishing after the run's loop closed
                loop.call_soon_threadsafe(lambda: self._set_problem(_DISK_FULL, space.problem()))

        space.add_listener(changed)
        self._set_problem(_DISK_FULL, space.problem())

    def _set_problem(self, kind: str, line: str | None) -> None:
        """Replace the problem line of one kind (None: it is over) and tell the listeners when it changed."""
        kept = [p for p in self.problems if not p.startswith(kind)]
        wanted = kept + ([line] if line else [])
        if wanted != self.problems:
            self.problems[:] = wanted
            self._notify()

    async def _save(self) -> None:
        # Writes run in threads; taken one at a time and each writing the record as it is when its turn comes,
        # an older record (a live-switch audit written in the background) never lands over a newer halt.
        async with self._save_lock:
            await asyncio.to_thread(self._store.save, self._record)

    async def _persist_and_journal(self, action: JournalAction, source: str, text: str) -> None:
        try:
            await self._save()
        except StorageFull as exc:  # said in one line; the journal row below is the record that stays
            log.error("Could not write the safety file: %s", exc.message)
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
