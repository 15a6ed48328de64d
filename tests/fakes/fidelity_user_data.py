"""The fake Fidelity upstream's user-data endpoints.

State: watchlists, preference data by path, price triggers (each in the ``active`` or ``expired`` list)
and the alert subscription. Bodies are checked for the captured envelope (flat, no ``request`` wrapper);
a wrong shape answers 400 as a strict upstream would. Tests steer refusals with ``watchlist_refusal``,
``sign_on_success`` and ``sign_on_fault``, and read what arrived in ``soap_requests`` (SOAP bodies) and
``trigger_list_queries``.
"""

from __future__ import annotations

import secrets
import uuid
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes import fidelity_user_data_payloads as u
from tests.fakes.fidelity_routes import GroupRoutes

if TYPE_CHECKING:
    from tests.fakes.fidelity_server import FakeFidelity

DP = "dpservice.fidelity.com"
ECAWS = "ecawsgateway.fidelity.com"
WATCHLISTS = "/ftgw/dp/retail-watchlist/v1/customers/watchlists"
PREFS = "/ftgw/dp/retail-customers/v1/personalization/atn-prefs"
TRIGGERS = "/ftgw/dp/retail-price-triggers/v1/investments/research/alert/price-triggers"
SUBSCRIPTION = "/ftgw/alerts/services/ATBTSubscription"
HOLIDAYS = "/ftgw/dpdirect/market/holidaycalendar/v1"
OPERATORS = ("greaterThan", "lessThan", "greaterThanPercent", "lessThanPercent")
TRIGGER_PAGE_SIZE = 2  # small, so a client that ignores paging misses triggers


class BadRequest(Exception):
    """A request body the real upstream would not accept."""


class FakeUserData:
    """State and routes of this group; routes() maps (host, path) to a handler."""

    def __init__(self, upstream: FakeFidelity) -> None:
        self.upstream = upstream
        now = upstream.now()
        self.watchlists: list[dict[str, Any]] = u.initial_watchlists()
        self.preferences: dict[str, dict[str, Any]] = u.initial_preferences()
        # (list status, entry): "active" or "expired", the two lists the upstream serves.
        self.triggers: list[tuple[str, dict[str, Any]]] = u.initial_triggers(now)
        self.holiday_years = [now.year, now.year + 1]
        self.watchlist_refusal: tuple[str, str] | None = None  # (code, text) for the next saves
        self.sign_on_success = True
        self.sign_on_fault: str | None = None
        self.soap_requests: list[tuple[dict[str, str], str]] = []
        self.trigger_list_queries: list[dict[str, str]] = []

    def routes(self) -> GroupRoutes:
        """Return this group's handlers by (host, path)."""
        return {
            (DP, f"{WATCHLISTS}/get"): self._watchlists_get,
            (DP, f"{WATCHLISTS}/save"): self._watchlists_save,
            (DP, f"{PREFS}/getpreference"): self._prefs_get,
            (DP, f"{PREFS}/savepreference"): self._prefs_save,
            (DP, f"{PREFS}/deletepreference"): self._prefs_delete,
            (DP, f"{TRIGGERS}/list"): self._triggers_list,
            (DP, f"{TRIGGERS}/create"): self._triggers_create,
            (DP, f"{TRIGGERS}/delete"): self._triggers_delete,
            (ECAWS, SUBSCRIPTION): self._sign_on,
            (DP, HOLIDAYS): self._holidays,
        }

    def active_trigger_ids(self) -> list[str]:
        """Return the ids in the active list."""
        return [entry["id"] for status, entry in self.triggers if status == "active"]

    # --- watchlists -----------------------------------------------------------------------------

    async def _watchlists_get(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        query = _first(_field(body, "watchlists", list))
        if query.get("watchListTypeCode") != "WL" or not isinstance(query.get("watchListIds"), list):
            return _bad("watchlists[0] needs watchListTypeCode WL and watchListIds")
        wanted = set(query["watchListIds"])
        entries = [e for e in self.watchlists if not wanted or e["watchListId"] in wanted]
        return web.json_response(u.watchlists_answer(entries))

    async def _watchlists_save(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        if self.watchlist_refusal is not None:
            return web.json_response(u.refusal(*self.watchlist_refusal))
        try:
            details = _field(body, "watchListDetails", list)
            saved = [self._save_one(detail) for detail in details]
        except BadRequest as exc:
            return _bad(str(exc))
        return web.json_response(u.watchlist_saved_answer(upstream.username, saved))

    def _save_one(self, detail: Any) -> dict[str, Any]:
        if not isinstance(detail, dict) or not detail.get("watchListName") or detail.get("watchListTypeCode") != "WL":
            raise BadRequest("a watchlist needs watchListName and watchListTypeCode WL")
        securities = []
        for security in _field(detail, "securityDetails", list):
            if not isinstance(security.get("rankId"), str) or not isinstance(security.get("shareQuantity"), str):
                raise BadRequest("rankId and shareQuantity are strings")
            securities.append(
                {
                    "symbol": security["symbol"],
                    "cusip": "",
                    "securityType": "",
                    "newsStateInd": False,
                    "watchCloselyInd": False,
                    "rankId": int(security["rankId"]),
                    "securityId": security.get("securityId") or str(uuid.uuid4()),
                }
            )
        stamp = self.upstream.now().astimezone(u.NEW_YORK).strftime("%Y-%m-%d %H:%M:%S.%f")[:-5]
        list_id = detail.get("watchListId")
        current = next((e for e in self.watchlists if e["watchListId"] == list_id), None)
        if list_id is not None and current is None:
            raise BadRequest(f"no watchlist {list_id}")
        if current is None:
            current = {
                "watchListId": str(uuid.uuid4()),
                "watchListTypeCode": "WL",
                "createdTimeStamp": stamp,
                "sortOrder": len(self.watchlists) + 1,
            }
            self.watchlists.append(current)
        current.update(
            watchListName=detail["watchListName"],
            isDefault=bool(detail.get("isDefault")),
            lastUpdatedTime=stamp,
            securityDetails=securities,
        )
        return current

    # --- preferences ----------------------------------------------------------------------------

    async def _prefs_get(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        query = _first(_field(body, "preferences", list))
        path, keys = query.get("preferencePath"), query.get("prefKeys", "missing")
        if not isinstance(path, str) or not (keys is None or isinstance(keys, list)):
            return _bad("preferences[0] needs preferencePath and prefKeys (null or a list)")
        # "user/" reads every path below it, as the captured get did.
        blocks = {
            stored: {k: val for k, val in values.items() if keys is None or k in keys}
            for stored, values in self.preferences.items()
            if values and (stored == path or stored.startswith(path.rstrip("/") + "/"))
        }
        return web.json_response(u.preferences_answer(blocks))

    async def _prefs_save(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        query = _first(_field(body, "preferences", list))
        path, values = query.get("preferencePath"), query.get("prefValues")
        if not isinstance(path, str) or not isinstance(values, dict):
            return _bad("preferences[0] needs preferencePath and prefValues")
        self.preferences.setdefault(path, {}).update(values)
        return web.json_response(u.PREFERENCES_UPDATED)

    async def _prefs_delete(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        query = _first(_field(body, "preferences", list))
        path, keys = query.get("preferencePath"), query.get("prefKeys", "missing")
        if not isinstance(path, str) or not (keys is None or isinstance(keys, list)):
            return _bad("preferences[0] needs preferencePath and prefKeys (null or a list)")
        stored = self.preferences.get(path, {})
        for key in list(stored) if keys is None else keys:
            stored.pop(key, None)
        return web.json_response(u.PREFERENCES_UPDATED)

    # --- alerts ---------------------------------------------------------------------------------

    async def _sign_on(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        text = await request.text()
        self.soap_requests.append((dict(request.headers), text))
        try:
            root = ET.fromstring(text)
        except ET.ParseError:
            return _soap(u.soap_fault("Unparseable request"), 500)
        alert_code = next((e.text for e in root.iter() if e.tag.endswith("}AlertCode")), None)
        if request.headers.get("SOAPAction") != "CustomerSignOn" or alert_code != "ATBT":
            return _soap(u.soap_fault("Unknown operation"), 500)
        if self.sign_on_fault is not None:
            return _soap(u.soap_fault(self.sign_on_fault), 500)
        return _soap(u.sign_on_answer(self.sign_on_success), 200)

    async def _triggers_list(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        self.trigger_list_queries.append(dict(request.query))
        status, symbol = request.query.get("status"), request.query.get("symbol", "")
        if status not in ("active", "expired") or not request.query.get("offset", "").isdigit():
            return _bad("status must be active or expired, offset a number")
        offset = int(request.query["offset"])
        # A symbol parameter filters literally (the capture sent symbol=QS): an empty one matches no trigger.
        everything = "symbol" not in request.query
        listed = [e for s, e in self.triggers if s == status and (everything or e["symbol"] == symbol)]
        page = listed[offset : offset + TRIGGER_PAGE_SIZE]
        return web.json_response(u.triggers_answer(page, len(listed), offset))

    async def _triggers_create(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        trigger = _first(_field(body, "triggers", list))
        if not _field(body, "devices", list) or trigger.get("operator") not in OPERATORS:
            return _bad("triggers[0] needs an operator, and devices are required")
        value = trigger.get("value")
        if not isinstance(value, int | float) or value <= 0 or not trigger.get("symbol"):
            return web.json_response({"message": "Trigger value must be a positive number"}, status=400)
        entry = u.trigger_entry(
            str(1_095_000_000 + secrets.randbelow(1_000_000)),
            trigger["symbol"],
            trigger["operator"],
            value,
            upstream.now(),
            trigger.get("notes", ""),
        )
        self.triggers.append(("active", entry))
        return web.json_response({"triggers": [entry]})

    async def _triggers_delete(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        wanted = {t.get("id") for t in _field(body, "triggers", list) if isinstance(t, dict)}
        kept = [(s, e) for s, e in self.triggers if e["id"] not in wanted]
        if len(kept) == len(self.triggers):
            return web.json_response({"message": "Trigger not found"}, status=404)
        self.triggers = kept
        return web.json_response({"status": "success"})

    # --- reference ------------------------------------------------------------------------------

    async def _holidays(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        if request.method != "GET" or request.query.get("countryCode") != "US":
            return _bad("GET with countryCode=US")
        return web.json_response(u.holiday_calendar(self.holiday_years))


def _field(body: Any, name: str, kind: type) -> Any:
    value = body.get(name) if isinstance(body, dict) else None
    return value if isinstance(value, kind) else kind()


def _first(values: list[Any]) -> dict[str, Any]:
    return values[0] if values and isinstance(values[0], dict) else {}


def _bad(message: str) -> web.StreamResponse:
    return web.json_response({"message": f"bad request body: {message}"}, status=400)


def _soap(text: str, status: int) -> web.StreamResponse:
    return web.Response(text=text, status=status, content_type="text/xml")
