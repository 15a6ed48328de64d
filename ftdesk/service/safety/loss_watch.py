"""The daily loss limit on a timer: a losing day halts trading even when no script sends an order.

The order desk checks the limit at every preview and place; this adds a check of every account every
``LOSS_WATCH_SECONDS`` while the limit is set and trading is not halted, so open orders are canceled and live
trading turned off as soon as the loss is seen, not at the next order. Each round costs two reads per account
(positions and order status, plus a quote for a symbol held overnight and sold out today), and none while the
limit is off. A round that cannot read (logged out, the broker down) waits for the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import FtdeskError
from ftdesk.service.safety.guard import SafetyGuard
from ftdesk.service.safety.sweep import KillSwitch

log = logging.getLogger(__name__)

LOSS_WATCH_SECONDS = 30.0
"""Seconds between two checks of every account's P&L against the daily loss limit."""


class LossWatch:
    """Checks every account against the daily loss limit on the service clock."""

    def __init__(self, guard: SafetyGuard, kill_switch: KillSwitch, clock: Clock) -> None:
        self._guard = guard
        self._kill_switch = kill_switch
        self._clock = clock
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start checking in the background."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="daily-loss-watch")

    async def close(self) -> None:
        """Stop checking."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await self._clock.sleep(LOSS_WATCH_SECONDS)
            if self._guard.limits.limits.daily_loss_limit is None or self._guard.halted:
                continue
            try:
                await self.check_all()
            except FtdeskError as exc:
                log.debug("Daily loss check skipped: %s", exc.message)
            except Exception:  # the watch must outlive a broker that fails in its own way
                log.exception("Daily loss check failed")

    async def check_all(self) -> None:
        """Check each account once; stop at the first that halts trading."""
        for acct in await self._guard.account_numbers():
            crossed = await self._guard.check_account_loss(acct)
            if crossed is not None:
                await self._kill_switch.halt("daily-loss-limit", crossed.reason)
                log.warning("Daily loss limit crossed on account %s: trading halted", acct)
                return
