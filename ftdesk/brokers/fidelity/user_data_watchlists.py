"""Watchlists on dpservice: list, and save (create or replace).

Both calls take flat bodies (no ``request``/``parameters`` wrapper) and answer ``sysMsgs`` with code ``2000``
on success. A save sends the whole list, so a replace first reads the lists: to answer ``NotFound`` for an
unknown id and ``Conflict`` for a name another list has (the service's rules), and to send back the
``securityId`` of symbols the list already holds. Every record keeps its upstream ``watchListDetails`` entry
in ``raw``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DPSERVICE, FidelityHttp
from ftdesk.brokers.fidelity.user_data_common import check_sys_msgs
from ftdesk.domain.errors import BrokerError, Conflict, NotFound, ValidationFailed
from ftdesk.domain.user_data import Watchlist, WatchlistDraft

WATCHLISTS_URL = f"{DPSERVICE}/ftgw/dp/retail-watchlist/v1/customers/watchlists"
GET_URL = f"{WATCHLISTS_URL}/get"
SAVE_URL = f"{WATCHLISTS_URL}/save"
LIST_TYPE = "WL"
SUCCESS_CODE = "2000"
# Fields of a held security the app keeps on a list; a replace sends them back unchanged.
_KEPT_SECURITY_FIELDS = ("securityId", "shareQuantity", "priceDetail")
_NEVER = datetime.max.replace(tzinfo=UTC)


def _succeeded(message: dict[str, Any]) -> bool:
    return v.text(message.get("code")) == SUCCESS_CODE


def list_request() -> dict[str, Any]:
    """Return the body of a request for every watchlist with its securities (as captured)."""
    return {
        "watchlists": [{"watchListIds": [], "watchListTypeCode": LIST_TYPE}],
        "includeWatchListSecurityDetails": True,
        "positionTypes": ["H", "O"],
    }


async def fetch_watchlists(http: FidelityHttp, *, fresh: bool = False) -> list[Watchlist]:
    """Return every watchlist; ``fresh`` skips sharing a read already in flight (a read before a write)."""
    payload = await http.json("POST", GET_URL, body=list_request(), read=not fresh, what="watchlist request")
    check_sys_msgs(payload, "watchlist request", _succeeded)
    return map_watchlists(payload)


def map_watchlists(payload: Any) -> list[Watchlist]:
    """Map the list answer, in the order the lists were created (upstream order where no time is given)."""
    entries = [raw for raw in v.items(payload, "watchListDetails") if v.text(raw.get("watchListId"))]
    ranked = sorted(
        enumerate(entries), key=lambda pair: (v.timestamp(pair[1].get("createdTimeStamp")) or _NEVER, pair[0])
    )
    return [map_watchlist(raw) for _, raw in ranked]


def map_watchlist(raw: dict[str, Any]) -> Watchlist:
    """Map one ``watchListDetails`` entry."""
    return Watchlist(
        watchlist_id=v.text_or(raw.get("watchListId")),
        name=v.text_or(raw.get("watchListName")),
        symbols=symbols_of(raw),
        update_date=v.iso_time(v.first(raw, "lastUpdatedTime", "createdTimeStamp")) or "",
        raw=raw,
    )


def symbols_of(raw: dict[str, Any]) -> list[str]:
    """Return a list's symbols in display order (``rankId``), upper case, without blanks or repeats."""
    securities = list(enumerate(v.items(raw, "securityDetails")))
    securities.sort(key=lambda pair: (v.number(pair[1].get("rankId")) or float("inf"), pair[0]))
    return normalize_symbols(v.text_or(security.get("symbol")) for _, security in securities)


def normalize_symbols(symbols: Iterable[str]) -> list[str]:
    """Return symbols trimmed and upper-cased, blanks and repeats dropped, order kept."""
    return list(dict.fromkeys(s.strip().upper() for s in symbols if s.strip()))


def save_request(name: str, symbols: list[str], current: Watchlist | None) -> dict[str, Any]:
    """Return the save body: the whole list, with the ids and holdings of securities it already had."""
    held = {
        v.text_or(security.get("symbol")).upper(): security
        for security in v.items(current.raw if current is not None else None, "securityDetails")
    }
    securities: list[dict[str, Any]] = []
    for rank, symbol in enumerate(symbols, start=1):
        # The capture sends rankId and shareQuantity as strings.
        security: dict[str, Any] = {"symbol": symbol, "shareQuantity": "0", "rankId": str(rank)}
        security["priceDetail"] = {"purchasePrice": 0}
        previous = held.get(symbol, {})
        security.update({key: previous[key] for key in _KEPT_SECURITY_FIELDS if not v.is_null(previous.get(key))})
        securities.append(security)
    detail: dict[str, Any] = {
        "watchListName": name,
        "productCode": LIST_TYPE,
        "isDefault": v.flag_or((current.raw or {}).get("isDefault")) if current is not None else False,
        "watchListTypeCode": LIST_TYPE,
        "securityDetails": securities,
    }
    if current is not None:
        detail["watchListId"] = current.watchlist_id
    return {"watchListDetails": [detail]}


async def save_watchlist(http: FidelityHttp, draft: WatchlistDraft, now: datetime) -> Watchlist:
    """Create a watchlist (no id) or replace one's name and symbols; return it as saved."""
    name = draft.name.strip()
    if not name:
        raise ValidationFailed.for_field("name", "must not be blank")
    symbols = normalize_symbols(draft.symbols)
    existing = await fetch_watchlists(http, fresh=True)
    current: Watchlist | None = None
    if draft.watchlist_id is not None:
        current = next((w for w in existing if w.watchlist_id == draft.watchlist_id), None)
        if current is None:
            raise NotFound(f"No watchlist with id {draft.watchlist_id}")
    clash = next((w for w in existing if w.name.casefold() == name.casefold() and w is not current), None)
    if clash is not None:
        raise Conflict(f"You already have a watchlist named {clash.name!r}", details={"name": name})
    payload = await http.json("POST", SAVE_URL, body=save_request(name, symbols, current), read=False,
                              what="watchlist save")  # fmt: skip
    check_sys_msgs(payload, "watchlist save", _succeeded)
    return await _saved(http, payload, name, symbols, current, now)


async def _saved(
    http: FidelityHttp, payload: Any, name: str, symbols: list[str], current: Watchlist | None, now: datetime
) -> Watchlist:
    """Return the saved list from the save answer, or from a fresh read when the answer names no list."""
    entries = [raw for raw in v.items(payload, "watchListDetails") if v.text(raw.get("watchListId"))]
    wanted = current.watchlist_id if current is not None else None
    entry = next((raw for raw in entries if v.text(raw.get("watchListId")) == wanted), None)
    if entry is None and entries and current is None:
        entry = entries[0]
    if entry is None:
        # Whether a save of a new list echoes its id was never captured: look it up by name.
        for watchlist in await fetch_watchlists(http, fresh=True):
            if watchlist.name.casefold() == name.casefold():
                return watchlist
        raise BrokerError(f"Fidelity accepted the watchlist {name!r} but does not list it")
    return Watchlist(
        watchlist_id=v.text_or(entry.get("watchListId")),
        name=v.text(entry.get("watchListName")) or name,
        # The save answer echoes the securities it stored; trust it over what was sent.
        symbols=symbols_of(entry) or symbols,
        update_date=v.iso_time(entry.get("lastUpdatedTime")) or now.astimezone(UTC).isoformat(timespec="seconds"),
        raw=entry,
    )
