"""The kill switch in action: halt (refuse, live off, cancel every open order) and resume.

A halt, in this order:

1. turns the kill switch on, in memory first and then in ``safety.json``: from that moment every new preview
   and place is refused with ``TRADING_HALTED``;
2. turns live trading off (the live switch, source ``halt``; its listeners audit it and tell the desktop app);
3. waits for the places already past the gate to get the broker's answer, so an order they create is seen;
4. lists the working orders of every account and cancels each one through the order journal (journaled, never
   gated, never retried: one cancel call per order); an order that a linked cancel already ended is not a
   failure; then it lists once more and cancels what is still working (a conditional leg that became live);
5. journals one ``halt`` row naming who asked, what was canceled and every cancel that failed and why.

A resume turns the kill switch off and journals it. It leaves live trading off: turning live trading on again is
the trader's own step in the tray (or the settings), as it always is.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from ftdesk.domain.errors import FtdeskError
from ftdesk.domain.orders import Order
from ftdesk.domain.safety import CanceledOrder, CancelFailure, HaltOutcome, HaltState, SafetyState
from ftdesk.service.orders.journal import JournalAction
from ftdesk.service.orders.listed_cancels import listed_cancel
from ftdesk.service.orders.recorder import OrderRecorder, PlacesInFlight
from ftdesk.service.safety.guard import SafetyGuard
from ftdesk.service.session import SessionManager
from ftdesk.service.switches import LiveTradingSwitch
from ftdesk.service.web.errors import spec_for

log = logging.getLogger(__name__)

SETTLE_SECONDS = 30.0
"""Longest a halt waits for places already at the broker before it lists the open orders anyway."""
SWEEPS = 2
"""Listings of the open orders a halt makes (the second catches conditional legs a cancel released)."""


def _failure(error: FtdeskError, order: Order | None) -> CancelFailure:
    return CancelFailure(
        conf_num=order.id_detail.conf_num if order else None,
        acct_num=order.acct_num if order else None,
        error_code=spec_for(error).code,
        message=error.message,
    )


def _summary(outcome: HaltOutcome, reason: str | None) -> str:
    parts = [f"Trading halted by {outcome.source}" + (f" ({reason})" if reason else "")]
    if outcome.already_halted:
        parts.append("already halted: canceled again")
    if outcome.live_was_on:
        parts.append("live trading turned off")
    parts.append(f"canceled {len(outcome.canceled)}: " + (", ".join(c.conf_num for c in outcome.canceled) or "none"))
    if outcome.failures:
        parts.append(
            f"{len(outcome.failures)} cancel(s) failed: "
            + "; ".join(f"{f.conf_num or 'order list'} {f.error_code}: {f.message}" for f in outcome.failures)
        )
    return "; ".join(parts)


class KillSwitch:
    """Halt and resume trading on the running service; built once, before the order desk that may pull it."""

    def __init__(
        self,
        guard: SafetyGuard,
        live: LiveTradingSwitch,
        session: SessionManager,
        recorder: OrderRecorder,
        in_flight: PlacesInFlight,
    ) -> None:
        self._guard = guard
        self._live = live
        self._session = session
        self._recorder = recorder
        self._in_flight = in_flight

    async def _working(self) -> list[Order]:
        # One listing, never repeated after a session expiry.
        orders = await self._session.run(lambda broker: broker.orders.get_order_status(None), retry_on_expiry=False)
        return [order for order in orders if order.status_detail.status.is_working]

    async def cancel_everything(self, request_id: str, source: str) -> tuple[list[CanceledOrder], list[CancelFailure]]:
        """Cancel every working order on every account; return what was canceled and what failed, with why."""
        canceled: list[CanceledOrder] = []
        failed: dict[str, tuple[Order, FtdeskError]] = {}
        attempted: set[str] = set()
        for _sweep in range(SWEEPS):
            try:
                working = await self._working()
            except FtdeskError as exc:
                return canceled, [_failure(exc, None)]  # not logged in, broker down: nothing could be listed
            still = {order.id_detail.conf_num for order in working}
            for conf_num in list(failed):
                if conf_num not in still:
                    del failed[conf_num]  # ended meanwhile (a linked cancel, a fill): not a failure
            todo = [order for order in working if order.id_detail.conf_num not in attempted]
            if not todo:
                break
            for order in todo:
                attempted.add(order.id_detail.conf_num)
                try:
                    command, ticket = listed_cancel(order, request_id=request_id, endpoint=f"HALT cancel ({source})")
                    await self._recorder.run(command, ticket, self._session, retry_on_expiry=False)
                except FtdeskError as exc:
                    failed[order.id_detail.conf_num] = (order, exc)
                    continue
                canceled.append(
                    CanceledOrder(
                        conf_num=order.id_detail.conf_num, acct_num=order.acct_num, symbol=order.order_detail.symbol
                    )
                )
        if failed:  # one last look: an order that ended by itself after its cancel failed is not left open
            try:
                still = {order.id_detail.conf_num for order in await self._working()}
            except FtdeskError:
                still = set(failed)
            failed = {conf_num: item for conf_num, item in failed.items() if conf_num in still}
        return canceled, [_failure(error, order) for order, error in failed.values()]

    async def halt(self, source: str, reason: str | None = None) -> HaltOutcome:
        """Pull the kill switch: refuse previews and places, live trading off, cancel every open order, journal it."""
        guard = self._guard
        request_id = f"halt-{uuid.uuid4().hex[:16]}"
        async with guard.halt_lock:
            state, already = await guard.set_halted(source, reason)
            # The journal's copy of the halt, before any cancel: a restart finds it even without the safety file.
            halt_row = await guard.begin_halt_row(source, reason, request_id)
            live_was_on = self._live.enabled
            self._live.set(False, "halt")
            log.warning("Trading halted by %s%s", source, f" ({reason})" if reason else "")
            try:
                await asyncio.wait_for(self._in_flight.settled(), SETTLE_SECONDS)
            except TimeoutError:
                log.error(
                    "Places still at the broker after %.0f s; the halt lists the open orders anyway", SETTLE_SECONDS
                )
            canceled, failures = await self.cancel_everything(request_id, source)
            assert state.since is not None
            outcome = HaltOutcome(
                halted_since=state.since,
                source=source,
                already_halted=already,
                live_was_on=live_was_on,
                canceled=canceled,
                failures=failures,
                saved=guard.saved,
            )
            conf_nums = tuple(c.conf_num for c in canceled)
            error_code = "CANCEL_FAILED" if failures else None
            summary = _summary(outcome, reason)
            if halt_row is not None:
                await guard.finish_halt_row(halt_row, summary, conf_nums=conf_nums, error_code=error_code)
            else:  # the first write failed: one more try, as a finished row
                await guard.journal(
                    JournalAction.HALT,
                    source,
                    summary,
                    conf_nums=conf_nums,
                    error_code=error_code,
                    request_id=request_id,
                )
            return outcome

    async def restart_sweep(self, reason: str) -> bool:
        """Cancel every working order of a run that found a halt; journal it; return whether the orders were listed."""
        guard = self._guard
        request_id = f"halt-{uuid.uuid4().hex[:16]}"
        async with guard.halt_lock:
            if not guard.halted:  # resumed meanwhile: nothing owed
                return True
            halt = guard.halt_state
            log.warning("Trading is halted (since %s by %s): canceling every working order", halt.since, halt.by)
            canceled, failures = await self.cancel_everything(request_id, "restart")
            outcome = HaltOutcome(
                halted_since=halt.since or guard.now(),
                source="restart",
                already_halted=True,
                live_was_on=False,
                canceled=canceled,
                failures=failures,
            )
            summary = _summary(outcome, reason)
            log.warning("%s", summary)
            await guard.journal(
                JournalAction.HALT,
                "restart",
                summary,
                conf_nums=tuple(c.conf_num for c in canceled),
                error_code="CANCEL_FAILED" if failures else None,
                request_id=request_id,
            )
            return not any(f.conf_num is None for f in failures)

    async def resume(self, source: str) -> HaltState:
        """Lift the kill switch (live trading stays off) and journal who did; return the halt that was lifted."""
        guard = self._guard
        async with guard.halt_lock:
            before = await guard.set_resumed()
            if before.halted:
                since = before.since.isoformat(timespec="seconds") if before.since else "unknown"
                await guard.journal(
                    JournalAction.RESUME,
                    source,
                    f"Trading resumed by {source} (halted since {since} by {before.by}); live trading stays off until "
                    "turned on in the tray",
                )
                log.warning("Trading resumed by %s", source)
            return before

    def state(self) -> SafetyState:
        """Return the halt, the live switch and its last change, the limits and their usage."""
        guard = self._guard
        return SafetyState(
            halt=guard.halt_state,
            live_trading=self._live.enabled,
            last_live_change=guard.last_live_change,
            limits=guard.limits.limits,
            usage=guard.limits.usage(guard.record),
        )


SWEEP_HOLD_SECONDS = 2 * SETTLE_SECONDS
"""Longest a request waits for a start-up sweep before it is served anyway (previews and places stay refused)."""


class RestartSweep:
    """The sweep of a run that starts halted: cancel every working order before the service answers.

    A run that finds a halt (a crash during a halt, or an ordinary halted restart) cancels every working order,
    journaled like a halt's cancels (endpoint ``HALT cancel (restart)``) plus one ``halt`` row saying what it
    did, while requests wait (``SafetyGuard.requests_may_proceed``). The orders can only be listed while logged
    in: the sweep runs once the start-up login is done, or at the first login after it, and until it could list
    the orders every login brings it back.
    """

    def __init__(self, guard: SafetyGuard, kill_switch: KillSwitch) -> None:
        self._guard = guard
        self._kill_switch = kill_switch
        self.pending = guard.halted
        self._task: asyncio.Task[None] | None = None
        if self.pending:
            guard.hold_requests()  # until the start-up login and sweep are done

    def session_changed(self, logged_in: bool) -> None:
        """Start the sweep when a login happens while it is still owed."""
        if logged_in and self.pending and self._task is None:
            self._guard.hold_requests()
            self._task = asyncio.get_running_loop().create_task(self._sweep())

    async def after_start(self, logged_in: bool) -> None:
        """Run the sweep when the start-up login succeeded; either way, let requests through afterwards."""
        self.session_changed(logged_in)
        task = self._task
        if task is not None:
            await asyncio.shield(task)
        self._guard.release_requests()

    async def close(self) -> None:
        """Stop a sweep still running (the service is stopping)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._guard.release_requests()

    async def _sweep(self) -> None:
        halt = self._guard.halt_state
        try:
            listed = await self._kill_switch.restart_sweep(f"a start that found the halt by {halt.by}")
            self.pending = not listed  # the orders could not be listed: the next login tries again
        except Exception:
            log.exception("The start-up sweep of a halted run failed; halt again to cancel the open orders")
        finally:
            self._task = None
            self._guard.release_requests()
