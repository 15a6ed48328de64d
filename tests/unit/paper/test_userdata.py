"""Research notebooks, watchlists and preferences of the paper user, persisted in SQLite."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.userdata import USERDATA_SCHEMA, UserData
from ftdesk.domain.errors import Conflict, NotFound, ValidationFailed
from ftdesk.domain.research import NoteDraft, NoteUpdate
from ftdesk.domain.user_data import WatchlistDraft
from tests.fakes.clock import ManualClock
from tests.fakes.paper_market import ScriptedMarket


class World:
    """A store on disk that a test can close and reopen, with the UserData on top of it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = ManualClock()
        self.market = ScriptedMarket(self.clock)
        for symbol, price in {"AAPL": 190.0, "MSFT": 410.0, "NVDA": 120.0, "SPY": 560.0, "TSLA": 250.0}.items():
            self.market.add_equity(symbol, price)
        self.store = PaperStore(path, [USERDATA_SCHEMA])
        self.store.open()
        self.data = UserData(self.store, self.market, self.clock, random.Random(7))

    def reopen(self) -> UserData:
        self.store.close()
        self.store = PaperStore(self.path, [USERDATA_SCHEMA])
        self.store.open()
        self.data = UserData(self.store, self.market, self.clock, random.Random(7))
        return self.data

    def later(self, seconds: float) -> None:
        self.clock.set_wall(self.clock.now() + timedelta(seconds=seconds))


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path / "paper.db")
    yield w
    w.store.close()


def field_names(err: ValidationFailed) -> list[str]:
    return [entry["field"] for entry in err.details]


# --- research notebooks ------------------------------------------------------------------------


def test_create_note_returns_it_with_id_channel_and_dates(world: World) -> None:
    note = world.data.create_note(NoteDraft(note="Watch the 200-day average", symbol="aapl", title="Setup"))
    assert note.note_id
    assert note.symbol == "AAPL"
    assert note.title == "Setup"
    assert note.note == "Watch the 200-day average"
    assert note.channel == "ATN"
    assert datetime.fromisoformat(note.create_date) == world.clock.now()
    assert note.update_date == note.create_date
    assert world.data.notes() == [note]


def test_note_ids_are_unique(world: World) -> None:
    ids = {world.data.create_note(NoteDraft(note=f"n{i}")).note_id for i in range(30)}
    assert len(ids) == 30


def test_notes_are_listed_newest_update_first(world: World) -> None:
    first = world.data.create_note(NoteDraft(note="first", symbol="AAPL"))
    world.later(60)
    second = world.data.create_note(NoteDraft(note="second", symbol="MSFT"))
    assert [n.note_id for n in world.data.notes()] == [second.note_id, first.note_id]
    world.later(60)
    world.data.update_note(first.note_id, NoteUpdate(note="first, revised"))
    assert [n.note_id for n in world.data.notes()] == [first.note_id, second.note_id]
    # Equal timestamps still keep the order in which the notes were touched.
    world.data.update_note(second.note_id, NoteUpdate(note="second, revised"))
    assert [n.note_id for n in world.data.notes()] == [second.note_id, first.note_id]


def test_update_note_changes_text_title_and_symbol(world: World) -> None:
    note = world.data.create_note(NoteDraft(note="old text", symbol="AAPL", title="Old"))
    world.later(3600)
    updated = world.data.update_note(
        note.note_id, NoteUpdate(note="new text", title="New", old_symbol="AAPL", new_symbol="msft")
    )
    assert (updated.note, updated.title, updated.symbol) == ("new text", "New", "MSFT")
    assert updated.create_date == note.create_date
    assert datetime.fromisoformat(updated.update_date) == datetime.fromisoformat(note.create_date) + timedelta(hours=1)
    assert world.data.notes() == [updated]


def test_update_note_without_title_or_new_symbol_keeps_them(world: World) -> None:
    note = world.data.create_note(NoteDraft(note="v1", symbol="NVDA", title="Chips"))
    updated = world.data.update_note(note.note_id, NoteUpdate(note="v2"))
    assert (updated.note, updated.title, updated.symbol) == ("v2", "Chips", "NVDA")


def test_update_note_with_stale_old_symbol_conflicts_and_changes_nothing(world: World) -> None:
    note = world.data.create_note(NoteDraft(note="v1", symbol="NVDA"))
    with pytest.raises(Conflict, match="NVDA, not AAPL"):
        world.data.update_note(note.note_id, NoteUpdate(note="v2", old_symbol="AAPL", new_symbol="TSLA"))
    assert world.data.notes() == [note]


def test_update_unknown_note_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        world.data.update_note("N-missing", NoteUpdate(note="x"))


def test_delete_note_needs_its_symbol(world: World) -> None:
    keep = world.data.create_note(NoteDraft(note="keep", symbol="SPY"))
    note = world.data.create_note(NoteDraft(note="drop", symbol="TSLA"))
    with pytest.raises(Conflict, match="TSLA"):
        world.data.delete_note(note.note_id, "AAPL")
    assert len(world.data.notes()) == 2
    world.data.delete_note(note.note_id, "tsla")
    assert world.data.notes() == [keep]
    with pytest.raises(NotFound):
        world.data.delete_note(note.note_id, "TSLA")


def test_note_without_symbol_is_deleted_with_empty_symbol(world: World) -> None:
    note = world.data.create_note(NoteDraft(note="general thoughts"))
    assert note.symbol == ""
    world.data.delete_note(note.note_id, "")
    assert world.data.notes() == []


# --- watchlists --------------------------------------------------------------------------------


def test_seed_world_creates_the_default_watchlist_once(world: World) -> None:
    world.data.seed_world()
    world.data.seed_world()
    lists = world.data.watchlists()
    assert [(w.name, w.symbols) for w in lists] == [("My Watchlist", ["AAPL", "MSFT", "NVDA", "SPY"])]
    world.reopen().seed_world()
    assert world.data.watchlists() == lists


def test_seed_world_skips_default_symbols_the_market_does_not_list(tmp_path: Path) -> None:
    clock = ManualClock()
    market = ScriptedMarket(clock)
    market.add_equity("AAPL", 190.0)
    market.add_equity("SPY", 560.0)
    store = PaperStore(tmp_path / "p.db", [USERDATA_SCHEMA])
    store.open()
    try:
        UserData(store, market, clock, random.Random(1)).seed_world()
        assert [w.symbols for w in UserData(store, market, clock, random.Random(1)).watchlists()] == [["AAPL", "SPY"]]
    finally:
        store.close()


def test_create_watchlist_normalizes_symbols(world: World) -> None:
    created = world.data.save_watchlist(
        WatchlistDraft(name=" Tech ", symbols=["nvda", " aapl", "NVDA", "msft", "Aapl"])
    )
    assert created.watchlist_id
    assert created.name == "Tech"
    assert created.symbols == ["NVDA", "AAPL", "MSFT"]
    assert datetime.fromisoformat(created.update_date) == world.clock.now()
    assert world.data.watchlists() == [created]


def test_unknown_symbols_are_each_named(world: World) -> None:
    with pytest.raises(ValidationFailed) as err:
        world.data.save_watchlist(WatchlistDraft(name="Bad", symbols=["AAPL", "zzzz", "MSFT", "QQQQ"]))
    assert "ZZZZ" in err.value.message
    assert "QQQQ" in err.value.message
    assert field_names(err.value) == ["symbols[1]", "symbols[3]"]
    assert world.data.watchlists() == []


def test_blank_symbol_is_rejected(world: World) -> None:
    with pytest.raises(ValidationFailed) as err:
        world.data.save_watchlist(WatchlistDraft(name="Blank", symbols=["AAPL", "  "]))
    assert field_names(err.value) == ["symbols[1]"]


def test_watchlist_names_are_unique(world: World) -> None:
    world.data.save_watchlist(WatchlistDraft(name="Growth", symbols=["NVDA"]))
    with pytest.raises(Conflict, match="Growth"):
        world.data.save_watchlist(WatchlistDraft(name="growth", symbols=["TSLA"]))
    assert len(world.data.watchlists()) == 1


def test_replace_watchlist_by_id(world: World) -> None:
    growth = world.data.save_watchlist(WatchlistDraft(name="Growth", symbols=["NVDA"]))
    value = world.data.save_watchlist(WatchlistDraft(name="Value", symbols=["SPY"]))
    world.later(120)
    replaced = world.data.save_watchlist(
        WatchlistDraft(watchlist_id=growth.watchlist_id, name="Growth+", symbols=["NVDA", "TSLA"])
    )
    assert replaced.watchlist_id == growth.watchlist_id
    assert (replaced.name, replaced.symbols) == ("Growth+", ["NVDA", "TSLA"])
    assert replaced.update_date > growth.update_date
    assert world.data.watchlists() == [replaced, value]
    # Keeping its own name is fine; taking another list's name is not.
    world.data.save_watchlist(WatchlistDraft(watchlist_id=growth.watchlist_id, name="growth+", symbols=[]))
    with pytest.raises(Conflict):
        world.data.save_watchlist(WatchlistDraft(watchlist_id=growth.watchlist_id, name="Value", symbols=[]))


def test_replace_unknown_watchlist_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        world.data.save_watchlist(WatchlistDraft(watchlist_id="W-nope", name="X", symbols=["AAPL"]))
    assert world.data.watchlists() == []


# --- preferences -------------------------------------------------------------------------------


def test_preferences_merge_and_return_the_whole_store(world: World) -> None:
    assert world.data.preferences() == {}
    assert world.data.put_preferences({"theme": "dark", "chart.interval": "5"}) == {
        "chart.interval": "5",
        "theme": "dark",
    }
    merged = world.data.put_preferences({"theme": "light", "layout_v2": "grid"})
    assert merged == {"chart.interval": "5", "layout_v2": "grid", "theme": "light"}
    assert world.data.preferences() == merged


@pytest.mark.parametrize(
    "key",
    ["", "x" * 101, "has space", "semi;colon", "ünicode"],
)
def test_bad_preference_keys_are_named(world: World, key: str) -> None:
    with pytest.raises(ValidationFailed) as err:
        world.data.put_preferences({"ok": "1", key: "v"})
    assert field_names(err.value) == [f"values.{key}"]
    assert world.data.preferences() == {}  # nothing of a refused request is stored


def test_preference_value_length_limit(world: World) -> None:
    world.data.put_preferences({"big": "v" * 10_000})
    with pytest.raises(ValidationFailed, match="'bigger'") as err:
        world.data.put_preferences({"bigger": "v" * 10_001})
    assert field_names(err.value) == ["values.bigger"]
    assert list(world.data.preferences()) == ["big"]


def test_at_most_500_preference_keys(world: World) -> None:
    world.data.put_preferences({f"k{i:03d}": str(i) for i in range(499)})
    world.data.put_preferences({"k000": "changed", "k499": "last"})  # 500 keys: allowed
    with pytest.raises(ValidationFailed, match="500") as err:
        world.data.put_preferences({"k000": "again", "one.too.many": "x"})
    assert field_names(err.value) == ["values.one.too.many"]
    prefs = world.data.preferences()
    assert len(prefs) == 500
    assert prefs["k000"] == "changed"


def test_delete_some_preferences_ignores_unknown_keys(world: World) -> None:
    world.data.put_preferences({"a": "1", "b": "2", "c": "3"})
    assert world.data.delete_preferences(["b", "never-set"]) == {"a": "1", "c": "3"}


def test_delete_all_preferences(world: World) -> None:
    world.data.put_preferences({"a": "1", "b": "2"})
    assert world.data.delete_preferences(None) == {}
    assert world.data.preferences() == {}


# --- persistence -------------------------------------------------------------------------------


def test_everything_survives_closing_and_reopening_the_store(world: World) -> None:
    world.data.seed_world()
    note = world.data.create_note(NoteDraft(note="thesis", symbol="AAPL", title="Long"))
    tech = world.data.save_watchlist(WatchlistDraft(name="Tech", symbols=["NVDA", "MSFT"]))
    world.data.put_preferences({"theme": "dark"})
    notes, lists, prefs = world.data.notes(), world.data.watchlists(), world.data.preferences()

    reopened = world.reopen()
    assert reopened.notes() == notes
    assert reopened.watchlists() == lists
    assert reopened.preferences() == prefs
    # The same seed draws the same ids again: new records must still get fresh ones.
    second = reopened.create_note(NoteDraft(note="another"))
    assert second.note_id != note.note_id
    other = reopened.save_watchlist(WatchlistDraft(name="Other", symbols=["SPY"]))
    assert other.watchlist_id not in {w.watchlist_id for w in lists}
    assert [w.name for w in reopened.watchlists()] == ["My Watchlist", "Tech", "Other"]
    assert tech in reopened.watchlists()


def test_same_seed_and_clock_give_the_same_ids(tmp_path: Path) -> None:
    def run(name: str) -> list[str]:
        clock = ManualClock(datetime(2026, 1, 5, 15, tzinfo=UTC))
        market = ScriptedMarket(clock)
        market.add_equity("AAPL", 190.0)
        store = PaperStore(tmp_path / name, [USERDATA_SCHEMA])
        store.open()
        try:
            data = UserData(store, market, clock, random.Random(42))
            note = data.create_note(NoteDraft(note="x"))
            wl = data.save_watchlist(WatchlistDraft(name="A", symbols=["AAPL"]))
            return [note.note_id, wl.watchlist_id, note.create_date]
        finally:
            store.close()

    assert run("one.db") == run("two.db")
