"""The fake Fidelity upstream's market-data REST (reference 4.20-4.24)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.fakes.fidelity_routes import GroupRoutes

if TYPE_CHECKING:
    from tests.fakes.fidelity_server import FakeFidelity


class FakeMarketData:
    """State and routes of this group; routes() maps (host, path) to a handler."""

    def __init__(self, upstream: FakeFidelity) -> None:
        self.upstream = upstream

    def routes(self) -> GroupRoutes:
        """Return this group's handlers by (host, path)."""
        return {}
