"""Atomic units of work whose account events are published only after the commit.

The ledger and the order engine share one ``Outbox``: a fill, its order update and its ledger
writes form one SQLite transaction, and the events they raise reach the sinks only once that
transaction has committed (and never if it rolled back), so a listener never hears of a fill the
database does not hold. A nested unit runs in a savepoint: when it raises, its writes and events
are undone while the outer unit goes on.

An event that is costly to build (the balances after a fill: every working order's hold on buying power
priced) is published as a function (``publish_built``), built after the commit. Inside ``deferring()`` (the
paper broker works orders on a quote a market pushed, inside the quote hub's fan-out) it is built
``BUILD_DELAY`` later on the running event loop, so the quote and fill frames before it are written to the
clients without waiting for it; the balances are then read from the committed state (which may hold a later
change too). Elsewhere (a place, a tick) it is built at once, after the events before it, as before.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ftdesk.brokers.paper.ports import EventSink
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.domain.events import AccountEvent

log = logging.getLogger(__name__)

BUILD_DELAY = 0.02
"""Seconds a costly event waits after its commit, so the events before it reach the clients first: writing
them takes a few turns of the loop (the account-event hub, then each stream's writer), which a build on the
very next turn would hold up for as long as it runs."""


class Outbox:
    """Transactions of the paper store with events held back until the outermost commit."""

    def __init__(self, store: PaperStore) -> None:
        self._store = store
        self._depth = 0
        self._pending: list[tuple[EventSink, AccountEvent | Callable[[], AccountEvent]]] = []
        self._quiet = False
        self._defer = False

    @property
    def quiet(self) -> bool:
        """True inside a quiet unit of work (world seeding): events are dropped, not built."""
        return self._quiet

    @contextmanager
    def deferring(self) -> Iterator[None]:
        """Build the costly events of the units run inside ``BUILD_DELAY`` after their commit (see the docstring)."""
        before, self._defer = self._defer, True
        try:
            yield
        finally:
            self._defer = before

    @contextmanager
    def atomic(self, *, quiet: bool = False) -> Iterator[sqlite3.Connection]:
        """Run a block in one transaction; publish its events after the outermost commit."""
        outer = self._depth == 0
        if outer:
            self._quiet = quiet
        mark = len(self._pending)
        self._depth += 1
        try:
            with self._store.transaction() as conn:
                if outer:
                    yield conn
                else:
                    yield from self._savepoint(conn)
        except BaseException:
            del self._pending[mark:]
            raise
        finally:
            self._depth -= 1
            if outer:
                self._quiet = False
        if outer:
            pending, self._pending = self._pending, []
            for sink, event in pending:
                if isinstance(event, AccountEvent):
                    sink(event)
                else:
                    self._deliver_built(sink, event)

    def _savepoint(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        # A nested unit that fails is undone on its own, so its caller may recover and go on.
        name = f"unit{self._depth}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")

    def publish_built(self, sink: EventSink, build: Callable[[], AccountEvent]) -> None:
        """Publish the event ``build`` makes: now, or after the commit and the events before it."""
        if self._quiet:
            return
        if self._depth:
            self._pending.append((sink, build))
        else:
            self._deliver_built(sink, build)

    def _deliver_built(self, sink: EventSink, build: Callable[[], AccountEvent]) -> None:
        """Build and publish an event now, or ``BUILD_DELAY`` from now on the running loop when deferring."""
        loop = None
        if self._defer:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        if loop is None:
            sink(build())
        else:
            loop.call_later(BUILD_DELAY, _build_and_publish, sink, build)

    def publish(self, sink: EventSink, event: AccountEvent) -> None:
        """Publish now, or after the commit when inside a unit of work."""
        if self._quiet:
            return
        if self._depth:
            self._pending.append((sink, event))
        else:
            sink(event)


def _build_and_publish(sink: EventSink, build: Callable[[], AccountEvent]) -> None:
    try:
        sink(build())
    except Exception:  # the world closed meanwhile, or the event could not be made: the change itself stands
        log.exception("A deferred paper account event could not be built")
