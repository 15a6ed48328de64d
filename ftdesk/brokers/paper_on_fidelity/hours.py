"""The regular US equity and option session: when a paper order on Fidelity's market may fill.

09:30 to 16:00 New York time on NYSE trading days, 13:00 on the early-close days; closed on weekends and
NYSE holidays (the rules in ``brokers.paper.calendar``). Extended hours are not traded: an order entered
outside the session rests until it opens, as a day order at Fidelity does. "Now" is the injected clock's.
"""

from __future__ import annotations

from datetime import datetime, time

from ftdesk.brokers.paper.calendar import is_trading_day, nyse_early_closes, to_new_york

SESSION_OPEN = time(9, 30)
SESSION_CLOSE = time(16, 0)
EARLY_CLOSE = time(13, 0)


def session_open(moment: datetime) -> bool:
    """Return True while the regular session is open at ``moment`` (an aware datetime)."""
    local = to_new_york(moment)
    day = local.date()
    if not is_trading_day(day):
        return False
    close = EARLY_CLOSE if day in nyse_early_closes(day.year) else SESSION_CLOSE
    return SESSION_OPEN <= local.time() < close
