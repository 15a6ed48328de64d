"""A fake Fidelity HTTP upstream on a real loopback socket: every host behind FTSERVICE_FIDELITY_UPSTREAM.

Requests arrive as ``/{host}/{path}`` (``ftdesk.brokers.fidelity.routing``); with ``mdds=FakeMdds()`` the
MDDS WebSocket host is served too, for the session's cookies, and with ``appsync=FakeAppSync()`` the BEPS
host. The fake plays the login handshake (with or without a second factor:
``totp_secret``), the security context, extend session and logout; the endpoint groups answer from their
own modules (``fidelity_<group>.py``) and the account/portfolio endpoints from ``fidelity_payloads``. Data
routes need the session cookie ``ATC`` of a live session and answer 401 otherwise.

Tests drive it with ``expire()`` (every session dies; ``expiry_style`` picks how the death shows: 401,
403, a redirect to the login page, or an HTML page), ``hold(path)``/``release(path)`` (park requests to
prove concurrency), ``failures`` (answer a path once with a given status and body), ``push_back(path,
status, retry_after=..., times=...)`` (answer 429/503 with ``Retry-After``, or cut the connection with
status 0, the next few times) and ``latency`` (seconds every answer takes, for the benchmark); they
observe it through ``hits`` (upstream calls per path) and ``requests``. Fidelity was never seen limiting
rates, so the pushback answers are the generic ones: a short text body, the status and
``Retry-After`` in seconds.

Its dates (history, lots, accruals, option expirations, earnings, holidays, trigger and order times, the
second factor's time step) come from ``clock``: by default an ``AnchoredClock`` that starts on a fixed
Monday, so the answers are the same whatever day the suite runs. A broker under test shares it
(``FidelityBroker(config, fake.clock)``), so both sides agree on "today".
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pyotp
from aiohttp import web

from ftdesk.domain.clock import Clock
from tests.fakes import fidelity_payloads as p
from tests.fakes.appsync_server import FakeAppSync
from tests.fakes.clock import AnchoredClock
from tests.fakes.fidelity_alert_history import FakeAlertHistory
from tests.fakes.fidelity_market_data import FakeMarketData
from tests.fakes.fidelity_orders import FakeOrders
from tests.fakes.fidelity_research import FakeResearch
from tests.fakes.fidelity_routes import GroupRoutes
from tests.fakes.fidelity_user_data import FakeUserData
from tests.fakes.mdds_server import FakeMdds

DIG = "digital.fidelity.com"
ECAAP = "ecaap.fidelity.com"
DP = "dpservice.fidelity.com"
DPXQ1 = "dpservicexq1.fidelity.com"
MDDS = "mdds-i-tc.fidelity.com"
BEPS = "spservice.fidelity.com"
SESSION_COOKIES = ("ATC", "FC", "RC", "SC")
BEPS_TOKEN_PATH = "/ftgw/dp/security/token/authz/generate/1.0"
NEW_YORK = ZoneInfo("America/New_York")


@dataclass
class RecordedRequest:
    """One request the fake received."""

    method: str
    host: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeFidelity:
    """The fake upstream (see the module docstring)."""

    def __init__(
        self,
        *,
        username: str = "trader",
        password: str = "correct-horse",
        totp_secret: str | None = None,
        mdds: FakeMdds | None = None,
        appsync: FakeAppSync | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.clock: Clock = clock or AnchoredClock()
        self.username = username
        self.mdds = mdds
        self.appsync = appsync
        self.password = password
        self.totp_secret = totp_secret
        self.expiry_style = "401"
        self.security_context_status = 200
        self.beps_token_lifetime = 900.0  # seconds each BEPS token lives (on the AppSync fake's clock)
        self.beps_token_style = "jwt"
        self.hits: Counter[str] = Counter()
        self.requests: list[RecordedRequest] = []
        self.sessions: set[str] = set()  # live ATC values
        self.logins = 0
        self._password_ok: set[str] = set()  # ET tokens whose password step passed
        self._factor_ok: set[str] = set()  # ET tokens whose TOTP step passed
        self.failures: dict[str, tuple[int, Any]] = {}  # path -> (status, JSON body) answered once
        self.pushbacks: dict[str, list[tuple[int, float | None]]] = {}  # path -> (status, Retry-After) to answer
        self.latency = 0.0
        self.added_positions: dict[str, list[dict[str, Any]]] = {}  # acct -> positionDetails a fill added
        self._holds: dict[str, asyncio.Event] = {}
        self._runner: web.AppRunner | None = None
        self._port = 0
        # One object per endpoint group, each with its own state and routes (tests/fakes/fidelity_*.py).
        self.orders = FakeOrders(self)
        self.market_data = FakeMarketData(self)
        self.research = FakeResearch(self)
        self.user_data = FakeUserData(self)
        self.alert_history = FakeAlertHistory(self)
        self.group_routes: GroupRoutes = {}
        for group in (self.orders, self.market_data, self.research, self.user_data, self.alert_history):
            self.group_routes.update(group.routes())

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on a free loopback port."""
        app = web.Application()
        app.router.add_route("*", "/{host}/{path:.*}", self._dispatch)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        """Stop listening."""
        for event in self._holds.values():
            event.set()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        """Return the base URL for FTSERVICE_FIDELITY_UPSTREAM."""
        return f"http://127.0.0.1:{self._port}"

    # --- what tests do --------------------------------------------------------------------------

    def now(self) -> datetime:
        """Return the fake's current UTC time."""
        return self.clock.now()

    def today(self) -> date:
        """Return the fake's New York business day."""
        return self.clock.now().astimezone(NEW_YORK).date()

    def expire(self) -> None:
        """End every session: data routes and extend-session now refuse the old cookies."""
        self.sessions.clear()

    def hold(self, path: str) -> None:
        """Park requests to ``path`` until ``release(path)``."""
        self._holds[path] = asyncio.Event()

    def release(self, path: str) -> None:
        """Let parked requests to ``path`` go on."""
        self._holds.pop(path).set()

    def push_back(self, path: str, status: int, *, retry_after: float | None = None, times: int = 1) -> None:
        """Answer the next ``times`` requests to ``path`` with ``status`` (0: cut the connection instead)."""
        self.pushbacks.setdefault(path, []).extend([(status, retry_after)] * times)

    def hits_for(self, suffix: str) -> int:
        """Return how many requests reached a path ending with ``suffix``."""
        return sum(count for path, count in self.hits.items() if path.endswith(suffix))

    def current_atc(self) -> str | None:
        """Return the ATC cookie of the newest live session."""
        return next(reversed(list(self.sessions)), None) if self.sessions else None

    # --- dispatch -------------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        host = request.match_info["host"]
        path = "/" + request.match_info["path"]
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self.hits[path] += 1
        self.requests.append(RecordedRequest(request.method, host, path, dict(request.headers), body))
        hold = self._holds.get(path)
        if hold is not None:
            await hold.wait()
        if self.latency:
            await asyncio.sleep(self.latency)  # network time: real whatever the clock, and only in benchmarks
        queued = self.pushbacks.get(path)
        if queued:
            status, retry_after = queued.pop(0)
            if not queued:
                del self.pushbacks[path]
            return self._push_back(request, status, retry_after)
        if host == MDDS and self.mdds is not None:
            # The MDDS fake plays the socket; it accepts whichever session cookie is live here.
            atc = request.cookies.get("ATC", "")
            self.mdds.cookie = ("ATC", atc if atc in self.sessions else "no live session")
            return await self.mdds._handle(request)
        if host == BEPS and self.appsync is not None:
            return await self.appsync._handle(request)  # BEPS authenticates with its token, not the cookies
        if path in self.failures:
            status, payload = self.failures.pop(path)
            return web.json_response(payload, status=status)
        if host == ECAAP or path.startswith("/prgw/digital/login"):
            return self._login_step(request, path, body)
        if path == "/ftgw/digital/pico/api/v1/context/security":
            if self.security_context_status != 200:
                return web.json_response({"errors": ["unavailable"]}, status=self.security_context_status)
            return web.json_response(p.SECURITY_CONTEXT)
        if not self._authenticated(request):
            return self._expired()
        if path == "/ftgw/digital/portfolio/extendsession":
            return web.Response(status=200)
        if host == DP and path == BEPS_TOKEN_PATH and request.method == "GET":
            return self._beps_token()
        group_route = self.group_routes.get((host, path))
        if group_route is not None:
            return await group_route(self, request, body)
        if host in (DP, DPXQ1):
            return self._data(path, body or {})
        return web.json_response({"message": f"no such path {path}"}, status=404)

    def _push_back(self, request: web.Request, status: int, retry_after: float | None) -> web.StreamResponse:
        if status == 0:
            assert request.transport is not None
            request.transport.abort()  # a connection reset, as a proxy dropping it would
            return web.Response(status=500)
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        reason = "Too Many Requests" if status == 429 else "Service Unavailable"
        return web.Response(status=status, text=reason, headers=headers)

    def _authenticated(self, request: web.Request) -> bool:
        atc = request.cookies.get("ATC")
        return atc is not None and atc in self.sessions

    def _expired(self) -> web.StreamResponse:
        if self.expiry_style == "redirect":
            location = f"/{DIG}/prgw/digital/login/atp?exp=expired"
            return web.Response(status=302, headers={"Location": location})
        if self.expiry_style == "html":
            return web.Response(text="<!DOCTYPE html><html><body>Log in</body></html>", content_type="text/html")
        status = 403 if self.expiry_style == "403" else 401
        return web.json_response({"message": "Session expired"}, status=status)

    def _beps_token(self) -> web.StreamResponse:
        # The answer's shape was never captured: a bare JWT (the later SDK calls it a "BEPS JWT
        # auth token") by default; beps_token_style "json" wraps it as {"token": ...}, "unknown" in a shape
        # ftdesk must refuse to guess at.
        if self.appsync is None:
            return web.json_response({"message": "no BEPS here"}, status=503)
        token = self.appsync.issue_token(self.beps_token_lifetime, p.MEMBER_ID)
        if self.beps_token_style == "json":
            return web.json_response({"token": token})
        if self.beps_token_style == "unknown":
            return web.json_response({"authz": {"grant": token.split(".")[1]}, "status": "OK"})
        return web.Response(text=token, content_type="text/plain")

    # --- login ----------------------------------------------------------------------------------

    def _login_step(self, request: web.Request, path: str, body: Any) -> web.StreamResponse:
        method = request.method
        et = request.cookies.get("ET")
        if path.startswith("/prgw/digital/login"):
            response = web.Response(text="<html><body>login</body></html>", content_type="text/html")
            response.set_cookie("SESSION_SCTX", secrets.token_hex(8), path="/")
            return response
        if path == "/user/session/login" and method == "DELETE":
            atc = request.cookies.get("ATC")
            self.sessions.discard(atc or "")
            return web.Response(status=204)
        if path == "/user/identity/remember/username":
            return web.json_response(p.ecaap(1200, "User Identified"))
        if path == "/user/identity/remember/username/1":
            response = web.json_response(p.ecaap(1200, "User Identified"))
            response.set_cookie("ET", secrets.token_hex(12), path="/")
            return response
        if path == "/user/factor/password/authentication":
            if et is None:
                return web.json_response(p.ecaap(1400, "Missing login token"))
            if (
                not isinstance(body, dict)
                or body.get("username") != self.username
                or body.get("password") != self.password
            ):
                return web.json_response(p.ecaap(1400, "Authentication Failed"))
            self._password_ok.add(et)
            return web.json_response(p.ecaap(1200, "User Authenticated"))
        if path == "/user/factor/totp/authentication":
            code = str((body or {}).get("securityCode", ""))
            if (
                et in self._password_ok
                and self.totp_secret
                and pyotp.TOTP(self.totp_secret).verify(code, for_time=self.now(), valid_window=1)
            ):
                self._factor_ok.add(et)
                return web.json_response(p.ecaap(1200, "User Authenticated"))
            return web.json_response(p.ecaap(1400, "Invalid security code"))
        if path == "/user/session/login" and method == "POST":
            if et not in self._password_ok:
                return web.json_response(p.ecaap(1400, "Authentication Failed"))
            if self.totp_secret and et not in self._factor_ok:
                return web.json_response(p.ecaap(1201, "Second factor required"))
            response = web.json_response(p.ecaap(1200, "Session Created"))
            atc = secrets.token_hex(16)
            self.sessions.add(atc)
            self.logins += 1
            response.set_cookie("ATC", atc, path="/")
            for name in SESSION_COOKIES[1:]:
                response.set_cookie(name, secrets.token_hex(8), path="/")
            return response
        return web.json_response(p.ecaap(1400, "Unknown login step"), status=404)

    # --- data (4.x) -----------------------------------------------------------------------------

    def add_position(self, acct_num: str, detail: dict[str, Any]) -> None:
        """Hold one more position in an account from now on (what a fill of a new symbol leaves)."""
        self.added_positions.setdefault(acct_num, []).append(detail)

    def _positions(self, acct_nums: list[str]) -> dict[str, Any]:
        answer = p.positions(acct_nums)
        for entry in answer["position"]["acctDetails"]["acctDetail"]:
            added = self.added_positions.get(entry["acctNum"], [])
            if added:
                held = entry.get("positionDetails", {}).get("positionDetail", [])
                entry["positionDetails"] = {"positionDetail": [*held, *added]}
                entry["accountPositionCount"] = len(held) + len(added)
        return answer

    def _data(self, path: str, body: dict[str, Any]) -> web.StreamResponse:
        today = self.today()
        parameter = (body.get("request") or {}).get("parameter") or {}
        parameters = (body.get("request") or {}).get("parameters") or {}
        answers = {
            "/ftgw/dp/customer-am-acctnxt/v2/accounts": lambda: p.ACCOUNTS,
            "/ftgw/dp/position/v2": lambda: self._positions(_acct_nums(parameter)),
            "/ftgw/dp/balance/detail/v2": lambda: p.balances(_acct_nums(parameter)),
            "/ftgw/dp/retail-am-optionsummary/v1/accounts/positions/option-summary/get": lambda: p.option_summary(
                _acct_nums(parameter)[0]
            ),
            "/ftgw/dp/accountmanagement/transaction/history/v2": lambda: self._history(body, today),
            "/ftgw/dp/customer-am-position/v1/accounts/closedposition": lambda: p.closed_positions(
                parameters["acctDetails"][0]["acctNum"]
            ),
            "/ftgw/dp/customer-am-position/v1/accounts/closedposition/closedlots": lambda: p.closed_lots(
                parameters["acctDetails"][0]["acctNum"], parameters["securityDetail"]["symbol"], today
            ),
            "/ftgw/dp/retail-am-loanedsecurities/v1/accounts/positions/rates": lambda: p.loaned_securities(
                parameters["acctDetails"][0]["acctNum"]
            ),
            "/ftgw/dp/orderentry/taxlot/v1": lambda: p.tax_lots(
                body["acctNum"], body["securityDetail"]["symbol"], today
            ),
            "/ftgw/dp/position/open/lots/v1": lambda: p.open_lots(
                body["acctNum"], body["securityDetail"]["symbol"], today
            ),
            "/ftgw/dp/customer-am-feature/v2/accounts/features/get": lambda: p.account_features(body["acctNums"]),
            "/ftgw/dp/retail-am-hardtoborrow/v1/accounts/positions/rates/borrow": lambda: p.hard_to_borrow(
                [d["symbol"] for d in parameters["securityDetails"]]
            ),
            "/ftgw/dp/retail-am-shortinsight/v1/accounts/positions/insights": lambda: p.short_insights(body["symbols"]),
            "/ftgw/dp/retail-am-shortinsight/api/v1/timeseries": lambda: p.short_series(
                body["symbol"],
                body["metric"],
                date.fromisoformat(body["startDate"]),
                date.fromisoformat(body["endDate"]),
            ),
            "/ftgw/dp/retail-am-accountaccruals/v2/accounts/accruals": lambda: p.accruals(body["acctNums"][0], today),
            "/ftgw/dp/retail-am-accountaccruals/v1/accounts/cash/accruals": lambda: p.cash_accruals(
                body["acctNums"][0], today
            ),
        }
        answer = answers.get(path)
        if answer is None:
            return web.json_response({"message": f"no such path {path}"}, status=404)
        try:
            return web.json_response(answer())
        except (KeyError, IndexError, TypeError) as exc:
            return web.json_response({"message": f"bad request body: {exc!r}"}, status=400)

    def _history(self, body: dict[str, Any], today: date) -> dict[str, Any]:
        acct_num = body["acctDetails"][0]["acctNum"]
        criteria = body["searchCriteriaDetail"]
        low, high = int(criteria["txnFromDate"]), int(criteria["txnToDate"])
        rows = [t for t in p.transactions(acct_num, today) if low <= t["dateDetail"]["tradedDate"] <= high]
        return {"asOfDate": p.unix(today), "acctDetails": [{"acctNum": acct_num, "transactionDetails": rows}]}


def _acct_nums(parameter: dict[str, Any]) -> list[str]:
    return [d["acctNum"] for d in parameter["acctDetails"]["acctDetail"]]
