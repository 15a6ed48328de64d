"""Move the wall clock of every Python process of a date-sweep run to the sweep's instant (time-machine).

``tests/date_sweep.py`` puts this folder on ``PYTHONPATH``, so Python imports it at start-up in pytest and
in every ``ftdesk`` process a test starts. ``FTDESK_TEST_NOW`` is the instant (ISO 8601 with an offset) the
sweep chose at the real time ``FTDESK_TEST_NOW_SET_AT`` (epoch seconds); each process travels to that
instant plus the real time elapsed since, and time runs on from there (``tick=True``), so all processes
of a run share one clock. Only the wall clock moves: ``time.monotonic()`` is untouched, so asyncio's and
Qt's timers behave. Without ``FTDESK_TEST_NOW`` nothing happens.
"""

from __future__ import annotations

import os
import time


def _travel() -> None:
    target = os.environ.get("FTDESK_TEST_NOW")
    if not target:
        return
    from datetime import datetime

    import time_machine

    set_at = float(os.environ.get("FTDESK_TEST_NOW_SET_AT") or time.time())
    destination = datetime.fromisoformat(target).timestamp() + (time.time() - set_at)
    time_machine.travel(destination, tick=True).start()


_travel()
