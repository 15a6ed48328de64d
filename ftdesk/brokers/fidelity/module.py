"""What a group module (orders, market data, research, user data) may use of the broker it is mixed into."""

from __future__ import annotations

from datetime import date

from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.brokers.fidelity.http import FidelityHttp
from ftdesk.domain.clock import Clock


class FidelityModule:
    """Base of the group mixins: the logged-in HTTP client, the clock and the config."""

    config: FidelityConfig
    clock: Clock

    def _require(self) -> FidelityHttp:
        """Return the logged-in HTTP client; raise ``AuthRequired`` when logged out."""
        raise NotImplementedError

    def _today(self) -> date:
        """Return today's date in New York (the upstream's business day)."""
        raise NotImplementedError
