"""The fake Fidelity upstream's user-data endpoints (reference 4.29-4.33)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.fakes.fidelity_routes import GroupRoutes

if TYPE_CHECKING:
    from tests.fakes.fidelity_server import FakeFidelity


class FakeUserData:
    """State and routes of this group; routes() maps (host, path) to a handler."""

    def __init__(self, upstream: FakeFidelity) -> None:
        self.upstream = upstream

    def routes(self) -> GroupRoutes:
        """Return this group's handlers by (host, path)."""
        return {}
