"""What a paper user keeps besides money: research notes, watchlists and preferences, all in SQLite.

The helpers at the top (``iso_time``, ``unique_id``, ``invalid``) are shared with the price alerts.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from ftdesk.brokers.paper.ports import MarketView
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import Conflict, NotFound, ValidationFailed
from ftdesk.domain.research import NoteDetail, NoteDraft, NoteUpdate
from ftdesk.domain.user_data import Watchlist, WatchlistDraft

USERDATA_SCHEMA = """
CREATE TABLE IF NOT EXISTS research_notes (
    note_id     TEXT PRIMARY KEY,
    symbol      TEXT NOT NULL,
    title       TEXT NOT NULL,
    note        TEXT NOT NULL,
    create_date TEXT NOT NULL,
    update_date TEXT NOT NULL,
    touched     INTEGER NOT NULL  -- increases on every create/update: "newest update first" survives equal times
);
CREATE TABLE IF NOT EXISTS watchlists (
    watchlist_id TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE COLLATE NOCASE,
    symbols      TEXT NOT NULL,  -- JSON array, in the user's order
    update_date  TEXT NOT NULL,
    seq          INTEGER NOT NULL  -- creation order, the order watchlists are listed in
);
CREATE TABLE IF NOT EXISTS preferences (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

DEFAULT_WATCHLIST_NAME = "My Watchlist"
DEFAULT_WATCHLIST_SYMBOLS = ("AAPL", "MSFT", "NVDA", "SPY")
MAX_PREFERENCES = 500
MAX_PREFERENCE_KEY = 100
MAX_PREFERENCE_VALUE = 10_000

_SEEDED_META_KEY = "userdata.seeded"
_PREFERENCE_KEY = re.compile(r"[A-Za-z0-9._-]+")


# --- helpers shared with the alerts ------------------------------------------------------------


def iso_time(when: datetime) -> str:
    """Return a UTC ISO 8601 timestamp to the second."""
    return when.astimezone(UTC).isoformat(timespec="seconds")


def unique_id(conn: sqlite3.Connection, rng: random.Random, prefix: str, table: str, column: str) -> str:
    """Return a new id drawn from ``rng`` that no row of ``table`` uses yet."""
    while True:
        candidate = f"{prefix}{rng.getrandbits(40):010X}"
        # A reopened world with the same seed draws the same ids again, so collisions are real.
        if conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ?", (candidate,)).fetchone() is None:
            return candidate


def invalid(message: str, errors: Iterable[tuple[str, str]]) -> ValidationFailed:
    """Return a ValidationFailed whose details list each bad field with what is wrong with it."""
    return ValidationFailed.for_fields(message, errors)


def normalize_symbol(symbol: str) -> str:
    """Return a symbol as the market lists it: trimmed and upper case."""
    return symbol.strip().upper()


# --- user data ---------------------------------------------------------------------------------


class UserData:
    """Research notebooks, watchlists and the preference store of the paper user."""

    def __init__(self, store: PaperStore, market: MarketView, clock: Clock, rng: random.Random) -> None:
        self._store = store
        self._market = market
        self._clock = clock
        self._rng = rng

    def seed_world(self) -> None:
        """Create the default watchlist on a fresh world; later calls do nothing."""
        with self._store.transaction() as conn:
            if self._store.get_meta(_SEEDED_META_KEY) is not None:
                return
            taken = conn.execute("SELECT 1 FROM watchlists WHERE name = ?", (DEFAULT_WATCHLIST_NAME,)).fetchone()
            if taken is None:
                listed = [s for s in DEFAULT_WATCHLIST_SYMBOLS if not self._unknown_symbols([s])]
                self._insert_watchlist(conn, DEFAULT_WATCHLIST_NAME, listed)
            self._store.set_meta(_SEEDED_META_KEY, iso_time(self._clock.now()))

    # --- research notebooks ----------------------------------------------------------------

    def notes(self) -> list[NoteDetail]:
        """Return every note, the most recently updated first."""
        rows = self._store.query("SELECT * FROM research_notes ORDER BY touched DESC")
        return [self._note(row) for row in rows]

    def create_note(self, draft: NoteDraft) -> NoteDetail:
        """Create a note and return it with its new note_id."""
        now = iso_time(self._clock.now())
        with self._store.transaction() as conn:
            note_id = unique_id(conn, self._rng, "N", "research_notes", "note_id")
            conn.execute(
                "INSERT INTO research_notes(note_id, symbol, title, note, create_date, update_date, touched) "
                "VALUES(?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(touched), 0) + 1 FROM research_notes))",
                (note_id, normalize_symbol(draft.symbol), draft.title.strip(), draft.note, now, now),
            )
            return self._note(self._note_row(conn, note_id))

    def update_note(self, note_id: str, update: NoteUpdate) -> NoteDetail:
        """Replace a note's text; change its title and symbol when given (old_symbol guards the change)."""
        with self._store.transaction() as conn:
            row = self._note_row(conn, note_id)
            current = str(row["symbol"])
            old_symbol = normalize_symbol(update.old_symbol)
            if old_symbol and old_symbol != current:
                raise Conflict(
                    f"Note {note_id} is filed under {current or 'no symbol'}, not {old_symbol}; "
                    "reload the note and try again",
                    details={"note_id": note_id, "symbol": current, "old_symbol": old_symbol},
                )
            symbol = normalize_symbol(update.new_symbol) or current
            title = update.title.strip() or str(row["title"])
            conn.execute(
                "UPDATE research_notes SET symbol = ?, title = ?, note = ?, update_date = ?, "
                "touched = (SELECT MAX(touched) + 1 FROM research_notes) WHERE note_id = ?",
                (symbol, title, update.note, iso_time(self._clock.now()), note_id),
            )
            return self._note(self._note_row(conn, note_id))

    def delete_note(self, note_id: str, symbol: str) -> None:
        """Delete a note; the symbol must be the one the note is filed under."""
        with self._store.transaction() as conn:
            current = str(self._note_row(conn, note_id)["symbol"])
            given = normalize_symbol(symbol)
            if given != current:
                raise Conflict(
                    f"Note {note_id} is filed under {current or 'no symbol'}, not {given or 'no symbol'}; "
                    "nothing was deleted",
                    details={"note_id": note_id, "symbol": current},
                )
            conn.execute("DELETE FROM research_notes WHERE note_id = ?", (note_id,))

    # --- watchlists ------------------------------------------------------------------------

    def watchlists(self) -> list[Watchlist]:
        """Return every watchlist in the order they were created."""
        return [self._watchlist(row) for row in self._store.query("SELECT * FROM watchlists ORDER BY seq")]

    def save_watchlist(self, draft: WatchlistDraft) -> Watchlist:
        """Create a watchlist (no id) or replace one (with id) and return it."""
        name = draft.name.strip()
        if not name:
            raise invalid("A watchlist needs a name", [("name", "must not be blank")])
        symbols = self._checked_symbols(draft.symbols)
        with self._store.transaction() as conn:
            same_name = conn.execute("SELECT watchlist_id, name FROM watchlists WHERE name = ?", (name,)).fetchone()
            if draft.watchlist_id is None:
                if same_name is not None:
                    raise Conflict(f"You already have a watchlist named {same_name['name']!r}", details={"name": name})
                watchlist_id = self._insert_watchlist(conn, name, symbols)
            else:
                watchlist_id = draft.watchlist_id
                if conn.execute("SELECT 1 FROM watchlists WHERE watchlist_id = ?", (watchlist_id,)).fetchone() is None:
                    raise NotFound(f"No watchlist with id {watchlist_id}")
                if same_name is not None and same_name["watchlist_id"] != watchlist_id:
                    raise Conflict(
                        f"You already have another watchlist named {same_name['name']!r}", details={"name": name}
                    )
                conn.execute(
                    "UPDATE watchlists SET name = ?, symbols = ?, update_date = ? WHERE watchlist_id = ?",
                    (name, json.dumps(symbols), iso_time(self._clock.now()), watchlist_id),
                )
            row = conn.execute("SELECT * FROM watchlists WHERE watchlist_id = ?", (watchlist_id,)).fetchone()
            return self._watchlist(row)

    # --- preferences -----------------------------------------------------------------------

    def preferences(self) -> dict[str, str]:
        """Return the whole preference store, keys in order."""
        rows = self._store.query("SELECT key, value FROM preferences ORDER BY key")
        return {str(row["key"]): str(row["value"]) for row in rows}

    def put_preferences(self, values: dict[str, str]) -> dict[str, str]:
        """Merge values into the preference store and return the whole store."""
        errors = [(key, problem) for key, value in values.items() if (problem := _preference_problem(key, value))]
        if errors:
            listed = "; ".join(f"{_show_key(key)}: {problem}" for key, problem in errors)
            raise invalid(
                f"Cannot store preferences: {listed}", [(f"values.{key}", problem) for key, problem in errors]
            )
        with self._store.transaction() as conn:
            existing = {str(row["key"]) for row in conn.execute("SELECT key FROM preferences")}
            added = [key for key in values if key not in existing]
            if len(existing) + len(added) > MAX_PREFERENCES:
                room = MAX_PREFERENCES - len(existing)
                raise invalid(
                    f"At most {MAX_PREFERENCES} preferences can be stored; {len(existing)} exist and "
                    f"{len(added)} new keys were sent (room for {room})",
                    [(f"values.{key}", "no room for another preference key") for key in added[room:]],
                )
            conn.executemany(
                "INSERT INTO preferences(key, value) VALUES(?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                list(values.items()),
            )
        return self.preferences()

    def delete_preferences(self, keys: Sequence[str] | None) -> dict[str, str]:
        """Delete the given keys (all when None; unknown keys are ignored) and return what remains."""
        with self._store.transaction() as conn:
            if keys is None:
                conn.execute("DELETE FROM preferences")
            else:
                conn.executemany("DELETE FROM preferences WHERE key = ?", [(key,) for key in keys])
        return self.preferences()

    # --- internals -------------------------------------------------------------------------

    def _note_row(self, conn: sqlite3.Connection, note_id: str) -> sqlite3.Row:
        row: sqlite3.Row | None = conn.execute("SELECT * FROM research_notes WHERE note_id = ?", (note_id,)).fetchone()
        if row is None:
            raise NotFound(f"No research note with id {note_id}")
        return row

    @staticmethod
    def _note(row: sqlite3.Row) -> NoteDetail:
        return NoteDetail(
            note_id=row["note_id"],
            symbol=row["symbol"],
            title=row["title"],
            note=row["note"],
            create_date=row["create_date"],
            update_date=row["update_date"],
        )

    @staticmethod
    def _watchlist(row: sqlite3.Row) -> Watchlist:
        return Watchlist(
            watchlist_id=row["watchlist_id"],
            name=row["name"],
            symbols=json.loads(row["symbols"]),
            update_date=row["update_date"],
        )

    def _insert_watchlist(self, conn: sqlite3.Connection, name: str, symbols: list[str]) -> str:
        watchlist_id = unique_id(conn, self._rng, "W", "watchlists", "watchlist_id")
        conn.execute(
            "INSERT INTO watchlists(watchlist_id, name, symbols, update_date, seq) "
            "VALUES(?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM watchlists))",
            (watchlist_id, name, json.dumps(symbols), iso_time(self._clock.now())),
        )
        return watchlist_id

    def _checked_symbols(self, raw: Sequence[str]) -> list[str]:
        symbols: list[str] = []
        errors: list[tuple[str, str]] = []
        for index, entry in enumerate(raw):
            symbol = normalize_symbol(entry)
            if not symbol:
                errors.append((f"symbols[{index}]", "blank symbol"))
            elif symbol not in symbols:
                symbols.append(symbol)
        unknown = self._unknown_symbols(symbols)
        errors.extend((f"symbols[{_raw_index(raw, symbol)}]", f"unknown symbol {symbol}") for symbol in unknown)
        if errors:
            names = ", ".join(unknown)
            message = f"Unknown symbols: {names}" if unknown else "The watchlist has blank symbols"
            raise invalid(message, errors)
        return symbols

    def _unknown_symbols(self, symbols: Iterable[str]) -> list[str]:
        unknown: list[str] = []
        for symbol in symbols:
            try:
                self._market.instrument(symbol)
            except NotFound:
                unknown.append(symbol)
        return unknown


def _raw_index(raw: Sequence[str], symbol: str) -> int:
    """Return where a normalized symbol first appears in the list the user sent."""
    return next(i for i, entry in enumerate(raw) if normalize_symbol(entry) == symbol)


def _show_key(key: str) -> str:
    """Return a preference key quoted for a message, shortened when it is absurdly long."""
    return repr(key if len(key) <= 40 else key[:40] + "...")


def _preference_problem(key: str, value: str) -> str | None:
    """Say what is wrong with one preference, or None when it can be stored."""
    if not key or len(key) > MAX_PREFERENCE_KEY:
        return f"key must be 1 to {MAX_PREFERENCE_KEY} characters"
    if not _PREFERENCE_KEY.fullmatch(key):
        return "key may only hold letters, digits, '.', '_' and '-'"
    if not isinstance(value, str):
        return "value must be a string"
    if len(value) > MAX_PREFERENCE_VALUE:
        return f"value is {len(value):,} characters; at most {MAX_PREFERENCE_VALUE:,} are allowed"
    return None
