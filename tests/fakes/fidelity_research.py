"""The fake Fidelity upstream's research endpoints (notebook shapes assumed).

The screener's SAML hops hold state: digital issues an assertion per session, financial.com trades a live
assertion for a JWT once, LiveVol runs a scan only with a JWT it issued. Notes live in ``notes`` by id.
"""

from __future__ import annotations

import itertools
import secrets
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes import fidelity_market_data_payloads as mp
from tests.fakes import fidelity_research_payloads as rp
from tests.fakes.fidelity_routes import GroupRoutes

if TYPE_CHECKING:
    from tests.fakes.fidelity_server import FakeFidelity

DIG = "digital.fidelity.com"
DP = "dpservice.fidelity.com"
WIDGETS = "fidelity-widgets.financial.com"
LIVEVOL = "fidelity.apps.livevol.com"
NOTE_PATH = "/ftgw/dp/research/tool/notebook/note/{}/v1"


class FakeResearch:
    """State and routes of this group; routes() maps (host, path) to a handler."""

    def __init__(self, upstream: FakeFidelity) -> None:
        self.upstream = upstream
        self.assertions: set[str] = set()
        self.tokens: set[str] = set()
        self.notes: dict[str, dict[str, Any]] = {}
        self._note_ids = itertools.count(1)

    def routes(self) -> GroupRoutes:
        """Return this group's handlers by (host, path)."""
        return {
            (DP, "/ftgw/dpdirect/research/earning/v1"): self._earnings,
            (DP, "/ftgw/dpdirect/research/dividend/v1"): self._dividends,
            (DP, "/ftgw/dpdirect/search/autosuggest/v1"): self._autosuggest,
            (DP, "/ftgw/dp/research/option/positions/analytics/v1"): self._analytics,
            (DIG, "/ftgw/digital/rschwidgets/api/saml"): self._saml,
            (WIDGETS, "/auth/api/v1/sessions/samllogin"): self._saml_login,
            (LIVEVOL, "/DataService/ScannerServiceReference.asmx/ExecuteScan"): self._scan,
            (DP, NOTE_PATH.format("detail")): self._note_detail,
            (DP, NOTE_PATH.format("create")): self._note_create,
            (DP, NOTE_PATH.format("update")): self._note_update,
            (DP, NOTE_PATH.format("delete")): self._note_delete,
        }

    # --- earnings, dividends, autosuggest --------------------------------------------------------

    async def _earnings(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        symbols = request.query.get("fvSymbol", "").split("|")
        return web.json_response(rp.earnings(symbols, upstream.today()))

    async def _dividends(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        return web.json_response(rp.dividends(request.query.get("fvSymbol", "").split("|")))

    async def _autosuggest(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        return web.json_response(rp.autosuggest(request.query.get("q", "")))

    # --- option position analytics --------------------------------------------------------------

    async def _analytics(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        positions = (body or {}).get("posDetails")
        if not isinstance(positions, list) or not positions or not isinstance(positions[0], list):
            return web.json_response({"message": "posDetails must be a list of positions of legs"}, status=400)
        listing = mp.UNIVERSE.get(str(body.get("underlyingSymbol")))
        price = listing.last if listing else 0.0
        return web.json_response(rp.analytics(positions[0], price))

    # --- screener: SAML, JWT, LiveVol scan -------------------------------------------------------

    async def _saml(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        assertion = rp.saml_assertion(secrets.token_hex(6))
        self.assertions.add(assertion)
        return web.Response(text=assertion, content_type="text/plain")

    async def _saml_login(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        form = await request.post()
        assertion = str(form.get("SAMLResponse", ""))
        if request.query.get("fetchToken") != "true" or assertion not in self.assertions:
            return web.json_response({"message": "invalid SAML response"}, status=401)
        self.assertions.discard(assertion)
        token = f"eyJhbGciOiJIUzI1NiJ9.{secrets.token_hex(8)}.sig"
        self.tokens.add(token)
        expires = int(upstream.now().timestamp()) + 3600
        return web.json_response({"sid": secrets.token_hex(8), "expiresAt": expires, "token": token})

    async def _scan(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        form = await request.post()
        if str(form.get("TOKEN", "")) not in self.tokens or form.get("SCANID") != "2":
            return web.Response(status=401, text="invalid token")
        return web.Response(text=rp.scan_xml(), content_type="text/xml")

    # --- notebook ------------------------------------------------------------------------------

    async def _note_detail(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        if not self.notes:
            return web.json_response({"notes": [], "messages": [{"code": "204", "message": "no notes"}]})
        return web.json_response({"notes": list(self.notes.values())})

    async def _note_create(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        data = body or {}
        if not str(data.get("note", "")).strip():
            refusal = {"type": "error", "detail": "Code=N1,Text=A note needs text,Source="}
            return web.json_response({"respTypeCode": "E", "messages": [refusal]})
        stamp = int(upstream.now().timestamp())
        note_id = f"NB{next(self._note_ids):06d}"
        self.notes[note_id] = {
            "noteId": note_id,
            "symbol": data.get("symbol", ""),
            "title": data.get("title", ""),
            "note": data["note"],
            "channel": data.get("channel", "ATN"),
            "createDate": stamp,
            "updateDate": str(stamp),
        }
        return web.json_response({"note": self.notes[note_id]})

    async def _note_update(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        data = body or {}
        note = self.notes.get(str(data.get("noteId")))
        if note is None:
            return web.json_response({"respTypeCode": "E", "messages": [{"type": "error", "detail": "no such note"}]})
        note.update(
            note=data["note"],
            title=data.get("title", note["title"]),
            symbol=data.get("newSymbol") or note["symbol"],
            updateDate=int(upstream.now().timestamp()) + 1,
        )
        return web.json_response({"note": note})

    async def _note_delete(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        data = body or {}
        if self.notes.pop(str(data.get("noteId")), None) is None:
            return web.json_response({"respTypeCode": "E", "messages": [{"type": "error", "detail": "no such note"}]})
        return web.json_response({"messages": [{"code": "0000", "message": "deleted"}]})
