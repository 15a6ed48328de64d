"""Fidelity user data: watchlists, preferences, alerts and price triggers.

The calls and mappings live in ``user_data_*.py``, one module per upstream API; this group gives them the
logged-in client.
"""

from __future__ import annotations

from collections.abc import Sequence

from ftdesk.brokers.fidelity import user_data_alerts as alerts
from ftdesk.brokers.fidelity import user_data_preferences as prefs
from ftdesk.brokers.fidelity import user_data_watchlists as lists
from ftdesk.brokers.fidelity.session import FidelitySession
from ftdesk.domain.clock import Clock
from ftdesk.domain.user_data import (
    AlertSubscription,
    PriceTrigger,
    PriceTriggerDraft,
    Watchlist,
    WatchlistDraft,
)

ALERT_DELIVERY = "/api/v1/streaming/events"


class FidelityUserData:
    """The user-data group: watchlists, the alert subscription, price triggers and the preference store."""

    def __init__(self, session: FidelitySession, clock: Clock) -> None:
        self._session = session
        self._clock = clock

    async def get_watchlists(self) -> list[Watchlist]:
        """Return watchlists in the order they were created."""
        return await lists.fetch_watchlists(self._session.require())

    async def save_watchlist(self, draft: WatchlistDraft) -> Watchlist:
        """Create or replace a watchlist."""
        return await lists.save_watchlist(self._session.require(), draft, self._clock.now())

    async def subscribe_alerts(self) -> AlertSubscription:
        """Activate Fidelity's alert subscription; alerts then arrive as account events."""
        http = self._session.require()
        activation = await alerts.sign_on(http)
        active = await alerts.fetch_triggers(http, ("active",))
        return AlertSubscription(active=activation.active, delivery=ALERT_DELIVERY, active_triggers=len(active))

    async def get_price_triggers(self) -> list[PriceTrigger]:
        """Return price alerts, active and fired, in the order they were created."""
        return await alerts.fetch_triggers(self._session.require())

    async def create_price_trigger(self, draft: PriceTriggerDraft) -> PriceTrigger:
        """Create a price alert."""
        return await alerts.create_trigger(self._session.require(), draft)

    async def delete_price_trigger(self, trigger_id: str) -> None:
        """Delete a price alert; raise ``NotFound`` for an unknown id."""
        await alerts.delete_trigger(self._session.require(), trigger_id)

    async def get_preferences(self) -> dict[str, str]:
        """Return the key/value preference store."""
        return await prefs.fetch_preferences(self._session.require())

    async def put_preferences(self, values: dict[str, str]) -> dict[str, str]:
        """Merge values into the preference store and return the whole store."""
        return await prefs.put_preferences(self._session.require(), values)

    async def delete_preferences(self, keys: Sequence[str] | None) -> dict[str, str]:
        """Delete some keys (or all when None) and return what remains."""
        return await prefs.delete_preferences(self._session.require(), keys)
