"""Fidelity research: earnings, dividends, autosuggest, analytics, screener with SAML, notebooks.

The screener's three hops (SAML assertion on digital, JWT from financial.com, scan on LiveVol) go through the
same routed ``FidelityHttp`` and cookie jar as every other call. Notebook bodies are assumed (only the paths
are known, from the decompiled app): update and delete look the note up first, so an unknown id is
``NotFound`` and a symbol that does not match is ``Conflict`` whatever the upstream would answer. Pure
mappers: ``research_mapping``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from yarl import URL

from ftdesk.brokers.fidelity import research_mapping as rm
from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DIGITAL, DPSERVICE, FidelityHttp
from ftdesk.brokers.fidelity.market_data import fetch_last_trade, fetch_montage
from ftdesk.brokers.fidelity.market_data_mapping import best_mid
from ftdesk.brokers.fidelity.market_data_parsing import parse_body
from ftdesk.brokers.fidelity.session import FidelitySession
from ftdesk.brokers.fidelity.upstream_answer import UpstreamResponse, raise_for_status
from ftdesk.brokers.fidelity.values import new_york_date, option_contract
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError, Conflict, NotFound, SessionExpired, ValidationFailed
from ftdesk.domain.research import (
    AnalyticsRequest,
    AnalyticsResult,
    AutosuggestResult,
    DividendEvent,
    EarningsEvent,
    NoteDetail,
    NoteDraft,
    NoteUpdate,
    ScanDefinition,
    ScreenerResult,
)

DPDIRECT = f"{DPSERVICE}/ftgw/dpdirect"
EARNINGS_URL = f"{DPDIRECT}/research/earning/v1"
DIVIDENDS_URL = f"{DPDIRECT}/research/dividend/v1"
AUTOSUGGEST_URL = f"{DPDIRECT}/search/autosuggest/v1"
ANALYTICS_URL = f"{DPSERVICE}/ftgw/dp/research/option/positions/analytics/v1"
SAML_URL = f"{DIGITAL}/ftgw/digital/rschwidgets/api/saml"
SAML_LOGIN_URL = "https://fidelity-widgets.financial.com/auth/api/v1/sessions/samllogin?fetchToken=true"
SCAN_URL = "https://fidelity.apps.livevol.com/DataService/ScannerServiceReference.asmx/ExecuteScan"
CALL_VOLUME_SCAN_ID = 2
"""The one LiveVol scan whose id was captured; ``ScanDefinition`` criteria filter its rows."""
NOTE_URL = f"{DPSERVICE}/ftgw/dp/research/tool/notebook/note/{{operation}}/v1"


def normalize_symbols(symbols: Sequence[str]) -> list[str]:
    """Return upper-case symbols without blanks or repeats, in order."""
    seen: list[str] = []
    for symbol in symbols:
        text = symbol.strip().upper()
        if text and text not in seen:
            seen.append(text)
    return seen


def note_url(operation: str) -> str:
    """Return the notebook URL of ``detail``, ``create``, ``update`` or ``delete``."""
    return NOTE_URL.format(operation=operation)


SCREENER_TOKEN_MARGIN = 60.0
"""Seconds before its ``expiresAt`` a LiveVol token is no longer reused (a scan must not start on a dying one)."""


def _fresh_screener_token(http: FidelityHttp, now: float) -> str | None:
    kept = http.screener_token
    if kept is None or now >= kept[1] - SCREENER_TOKEN_MARGIN:
        return None
    return kept[0]


async def _screener_sign_in(http: FidelityHttp, now: float) -> str:
    """Swap a SAML assertion for a LiveVol JWT (the sign-in's first two hops), keep it on the session and return it."""
    assertion = _text_body(await http.call("GET", SAML_URL), "screener sign-in (SAML)")
    if not assertion:
        raise BrokerError("Fidelity returned no SAML assertion for the screener")
    login = await http.call("POST", SAML_LOGIN_URL, form={"SAMLResponse": assertion})
    if login.status in (401, 403):
        # financial.com refusing the assertion says nothing about the Fidelity session itself.
        raise BrokerError(f"The screener sign-in was refused (HTTP {login.status})")
    raise_for_status(login, "screener sign-in")
    answer = v.obj(login.json())
    token = v.text(answer.get("token"))
    if token is None:
        raise BrokerError("The screener sign-in returned no token")
    expires_at = v.number(answer.get("expiresAt"))
    # Without an expiry the token is used for this scan only.
    http.screener_token = (token, expires_at) if expires_at is not None and expires_at > now else None
    return token


async def _scan(http: FidelityHttp, token: str) -> UpstreamResponse:
    return await http.call("POST", SCAN_URL, form={"TOKEN": token, "SCANID": str(CALL_VOLUME_SCAN_ID)}, read=True)


def _text_body(response: UpstreamResponse, what: str) -> str:
    raise_for_status(response, what)
    if "html" in response.content_type:
        raise SessionExpired("Fidelity answered with a web page instead of data: the session has expired")
    return response.text().strip()


class FidelityResearch:
    """The research group: earnings, dividends, symbol search, analytics, the screener and the notebook."""

    def __init__(self, session: FidelitySession, clock: Clock) -> None:
        self._session = session
        self._clock = clock

    async def get_earnings(self, symbols: Sequence[str]) -> list[EarningsEvent]:
        """Return past and scheduled earnings, oldest first per symbol."""
        wanted = normalize_symbols(symbols)
        if not wanted:
            return []
        url = str(URL(EARNINGS_URL).with_query({"fvSymbol": "|".join(wanted)}))
        payload = await self._session.require().json("GET", url, what="earnings request")
        return rm.map_earnings(payload, wanted)

    async def get_dividends(self, symbols: Sequence[str]) -> list[DividendEvent]:
        """Return past and declared dividends, newest first per symbol."""
        wanted = normalize_symbols(symbols)
        if not wanted:
            return []
        url = str(URL(DIVIDENDS_URL).with_query({"fvSymbol": "|".join(wanted)}))
        payload = await self._session.require().json("GET", url, what="dividends request")
        return rm.map_dividends(payload, wanted)

    async def search_symbols(self, query: str) -> AutosuggestResult:
        """Return symbols matching a prefix or description, an exact symbol match first."""
        text = query.strip()
        if not text:
            return AutosuggestResult(suggestions=[])
        url = str(URL(AUTOSUGGEST_URL).with_query({"q": text}))
        payload = await self._session.require().json("GET", url, what="symbol search")
        return rm.map_suggestions(payload, text)

    async def analyze_position(self, request: AnalyticsRequest) -> AnalyticsResult:
        """Return P&L bounds, breakevens and Greeks of a set of legs (a missing price is the montage mid)."""
        http = self._session.require()
        symbol = request.symbol.strip().upper()
        prices: list[float] = []
        for leg in request.legs:
            if leg.price is not None:
                prices.append(leg.price)
                continue
            leg_symbol = leg.symbol.strip().upper().lstrip("-")
            if option_contract(leg_symbol) is None and leg_symbol != symbol:
                raise ValidationFailed.for_field("legs", f"{leg.symbol!r} is neither an option nor {symbol}")
            mid = best_mid(await fetch_montage(http, leg_symbol, self._clock.now()))
            if mid is None:
                raise BrokerError(f"Fidelity has no bid and offer for {leg_symbol}: give the leg a price")
            prices.append(mid)
        body = rm.analytics_body(symbol, request.legs, prices)
        payload = await http.json("POST", ANALYTICS_URL, body=body, read=True, what="position analytics request")
        underlying = await fetch_last_trade(http, symbol, new_york_date(self._clock.now()))
        return rm.map_analytics(payload, symbol, request.legs, prices, underlying)

    async def run_screener(self, scan: ScanDefinition) -> ScreenerResult:
        """Run LiveVol's call-volume scan through the three-hop SAML sign-in, then filter, sort and limit.

        The LiveVol JWT is kept with the login session and reused until its ``expiresAt`` (less a minute),
        so a screen costs one call, not four; a token LiveVol refuses anyway is fetched again once.
        """
        http = self._session.require()
        reused = _fresh_screener_token(http, self._clock.now().timestamp())
        token = reused or await _screener_sign_in(http, self._clock.now().timestamp())
        scan_response = await _scan(http, token)
        if scan_response.status in (401, 403) and reused is not None:
            http.screener_token = None
            scan_response = await _scan(http, await _screener_sign_in(http, self._clock.now().timestamp()))
        if scan_response.status in (401, 403):
            raise BrokerError(f"LiveVol refused the screener token (HTTP {scan_response.status})")
        raise_for_status(scan_response, "screener scan")
        payload = parse_body(scan_response)
        failure = next((v.text(r.get("ResultCode")) for r in v.records_with(payload, "ResultCode")), None)
        if failure and failure.upper() == "FAILURE":
            raise BrokerError("LiveVol could not run the scan (ResultCode FAILURE)")
        return rm.map_screener(payload, scan)

    # --- notebook ---------------------------------------------------------------------------------

    async def get_notes(self) -> list[NoteDetail]:
        """Return research notes, most recently updated first."""
        payload = await self._session.require().json(
            "POST", note_url("detail"), body={}, read=True, what="notebook request"
        )
        notes = rm.map_notes(payload)
        notes.sort(key=lambda note: note.update_date, reverse=True)
        return notes

    async def create_note(self, draft: NoteDraft) -> NoteDetail:
        """Create a research note and return it with its id."""
        body = {
            "symbol": draft.symbol.strip().upper(),
            "title": draft.title.strip(),
            "note": draft.note,
            "channel": "ATN",
        }
        payload = await self._session.require().json("POST", note_url("create"), body=body, what="note creation")
        created = rm.map_notes(payload)
        if not created:
            raise BrokerError(
                "Fidelity created the note but returned no note id", details={"upstream": _brief(payload)}
            )
        return created[0]

    async def update_note(self, note_id: str, update: NoteUpdate) -> NoteDetail:
        """Replace a note's text (and title or symbol when given); ``old_symbol`` guards a symbol change."""
        current = await self._note(note_id)
        old_symbol = update.old_symbol.strip().upper()
        if old_symbol and old_symbol != current.symbol:
            raise Conflict(
                f"Note {note_id} is filed under {current.symbol or 'no symbol'}, not {old_symbol}; "
                "reload the note and try again",
                details={"note_id": note_id, "symbol": current.symbol, "old_symbol": old_symbol},
            )
        body = {
            "noteId": note_id,
            "note": update.note,
            "title": update.title.strip() or current.title,
            "oldSymbol": current.symbol,
            "newSymbol": update.new_symbol.strip().upper() or current.symbol,
            "channel": current.channel,
        }
        payload = await self._session.require().json("POST", note_url("update"), body=body, what="note update")
        updated = [note for note in rm.map_notes(payload) if note.note_id == note_id]
        return updated[0] if updated else await self._note(note_id)

    async def delete_note(self, note_id: str, symbol: str) -> None:
        """Delete a note; the symbol must be the one it is filed under."""
        current = await self._note(note_id)
        given = symbol.strip().upper()
        if given != current.symbol:
            raise Conflict(
                f"Note {note_id} is filed under {current.symbol or 'no symbol'}, not {given or 'no symbol'}; "
                "nothing was deleted",
                details={"note_id": note_id, "symbol": current.symbol},
            )
        body = {"noteId": note_id, "symbol": current.symbol}
        await self._session.require().json("POST", note_url("delete"), body=body, what="note deletion")

    async def _note(self, note_id: str) -> NoteDetail:
        for note in await self.get_notes():
            if note.note_id == note_id:
                return note
        raise NotFound(f"No research note {note_id!r}", details={"note_id": note_id})


def _brief(payload: Any) -> str:
    return str(payload)[:200]
