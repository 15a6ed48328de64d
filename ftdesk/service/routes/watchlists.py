"""Watchlists: named lists of symbols, listed and saved (created or replaced)."""

from __future__ import annotations

from pydantic import Field

from ftdesk.domain import errors as e
from ftdesk.domain.user_data import Watchlist, WatchlistDraft
from ftdesk.service.routes.common import Symbol, in_user_data
from ftdesk.service.web.routing import BodyModel, Call, RouteTable

routes = RouteTable(tag="watchlists")

MAX_WATCHLIST_SYMBOLS = 500


class WatchlistBody(BodyModel):
    """A watchlist to create (no `watchlist_id`) or to replace (with the id of an existing one)."""

    watchlist_id: str | None = Field(
        default=None, min_length=1, max_length=64, description="Omit to create; give an existing id to replace it."
    )
    name: str = Field(min_length=1, max_length=100, description="Unique among your watchlists (case-insensitive).")
    symbols: list[Symbol] = Field(
        default_factory=list,
        max_length=MAX_WATCHLIST_SYMBOLS,
        description=f"Tickers in display order (upper-cased, duplicates dropped), at most {MAX_WATCHLIST_SYMBOLS}.",
    )

    def draft(self) -> WatchlistDraft:
        """Return the domain draft."""
        return WatchlistDraft(watchlist_id=self.watchlist_id, name=self.name, symbols=self.symbols)


@routes.get("/watchlists", summary="Watchlists", response=list[Watchlist], needs_session=True)
async def list_watchlists(call: Call[None, None]) -> list[Watchlist]:
    """List your watchlists in the order they were created, each with its symbols in display order."""
    return await in_user_data(call, lambda user_data: user_data.get_watchlists())


@routes.post(
    "/watchlists/save",
    summary="Create or replace a watchlist",
    body=WatchlistBody,
    response=Watchlist,
    needs_session=True,
    errors=(e.NotFound, e.Conflict),
)
async def save_watchlist(call: Call[WatchlistBody, None]) -> Watchlist:
    """Create a watchlist (body without `watchlist_id`) or replace one's name and symbols (with it); return it.

    Answers 200 either way. An unknown symbol is a `VALIDATION_ERROR` naming it, a name another
    watchlist already has is a `CONFLICT`, and an unknown `watchlist_id` is `NOT_FOUND`.
    """
    draft = call.body.draft()
    return await in_user_data(call, lambda user_data: user_data.save_watchlist(draft))
