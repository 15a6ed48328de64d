"""The HTTP core every Fidelity module calls through (docs/fidelity-protocol.md: hosts, session, errors).

One ``FidelityHttp`` is one login session: one aiohttp ``ClientSession`` with one cookie jar (the cookies
*are* the session). It sends the login or the data header profile with a fresh ``fsreqid``
per request, routes every URL through ``UpstreamRouter``, follows redirects itself (so a redirect stays
on the routed host) and turns what comes back into domain outcomes (the mapping lives in ``upstream_answer``):

* 401, 403, a redirect towards a login page, or HTML where JSON was expected -> ``SessionExpired``
  (the real expired-session answer was never captured, so all the likely forms count);
* any other non-2xx status, a timeout, a transport failure, or a body with ``respTypeCode "E"``
  -> ``BrokerError`` carrying the upstream's own message.

Politeness (``politeness``): reads, writes and logins have budgets of their own; reads cost nothing until the
upstream pushes back. Identical concurrent reads (GETs, and the POSTs that only read) share one upstream call,
unless a write or an account event came between them. An account read's answer
(``answer_reuse.ACCOUNT_READS``) also answers identical reads for up to ``FidelityConfig.read_share`` seconds
after it arrives, but only while ftdesk can prove it is still current: the account-event stream is live and no
event and no write came since it was fetched (any event or write drops every kept answer at once), however quick
the upstream is: a proven-current answer is as good as a new one, and asking again only loads Fidelity.
Reference data comes from ``reference_cache`` while fresh. A read
answered 429, 502, 503 or 504, or cut off, is retried (tenacity, sleeping on the injected clock) with jittered backoff
and at least the ``Retry-After`` asked for, within ``FidelityConfig.read_budget`` seconds; then the caller
gets ``BrokerError`` with ``details.reason`` ``UPSTREAM_BUSY``. A write (place, cancel, any call that
changes something) is never retried: an order must never go out twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sys
import uuid
from collections.abc import Callable, Coroutine, Hashable, Mapping
from enum import Enum
from typing import Any, TypeVar
from urllib.parse import urlencode

import aiohttp
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_random, wait_random_exponential
from yarl import URL

from ftdesk.brokers.fidelity.answer_reuse import EventWatch, account_read
from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.brokers.fidelity.politeness import Politeness, parse_retry_after
from ftdesk.brokers.fidelity.reference_cache import ReferenceCache, freshness
from ftdesk.brokers.fidelity.routing import UpstreamRouter
from ftdesk.brokers.fidelity.upstream_answer import UpstreamResponse, raise_for_business_error, raise_for_status
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError, SessionExpired
from ftdesk.domain.freshness import report as report_served

_Mapped = TypeVar("_Mapped")

log = logging.getLogger(__name__)

DIGITAL = "https://digital.fidelity.com"
ECAAP = "https://ecaap.fidelity.com"
DPSERVICE = "https://dpservice.fidelity.com"
DPSERVICE_XQ1 = "https://dpservicexq1.fidelity.com"
FASTQUOTE = "https://fastquote.fidelity.com"

DATA_APP_ID = "AP149323"
_MAX_REDIRECTS = 5
_LOGIN_PATH = re.compile(r"/(login|signin|prgw/digital/login)", re.IGNORECASE)
RETRIED_STATUSES = frozenset({429, 502, 503, 504})
"""Statuses a read is retried on: the upstream (or a proxy before it) is overloaded or briefly away."""
_BACKOFF = wait_random_exponential(multiplier=0.25, max=4.0)  # full jitter: 0-0.25 s, 0-0.5 s, ... 0-4 s
_RETRY_AFTER_JITTER = wait_random(0, 0.25)  # spreads callers told the same Retry-After


class Profile(Enum):
    """The two header sets the app sends: login (ECAAP) and data (everything else)."""

    LOGIN = "login"
    DATA = "data"


def new_request_id() -> str:
    """Return a fresh ``fsreqid``: ``REQ`` and 32 lowercase hex digits."""
    return f"REQ{uuid.uuid4().hex}"


def profile_headers(profile: Profile, app_version: str) -> dict[str, str]:
    """Return the fixed headers of a profile (without the per-request ``fsreqid``)."""
    user_agent = f"ATPNext/{app_version} FTPlusDesktop/{app_version}"
    if profile is Profile.LOGIN:
        return {
            "AppId": "RETAIL-CC-LOGIN-SDK",
            "AppName": "PILoginExperience",
            "Content-Type": "application/json",
            "Accept": "*/*",
            "Origin": DIGITAL,
            "Referer": f"{DIGITAL}/",
            "Accept-Token-Type": "ET",
            "Accept-Token-Location": "HEADER",
            "Token-Location": "HEADER",
            "Cache-Control": "no-cache, no-store, must-revalidate",
            "User-Agent": user_agent,
        }
    return {
        "AppId": DATA_APP_ID,
        "AppName": "Active Trader Desktop for Windows",
        "User-Agent": user_agent,
        "Content-Type": "application/json; charset=utf-8",
        "Accept": "application/json",
    }


class Retryable(Exception):
    """A read attempt that failed in a way worth another try (an overloaded status, or a cut connection)."""

    def __init__(self, description: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(description)
        self.description = description
        self.status = status
        self.retry_after = retry_after


def _retry_wait(state: RetryCallState) -> float:
    """Return the pause before the next attempt: full-jitter backoff, or the Retry-After asked for plus jitter."""
    failure = state.outcome.exception() if state.outcome is not None else None
    retry_after = failure.retry_after if isinstance(failure, Retryable) else None
    return _BACKOFF(state) if retry_after is None else retry_after + _RETRY_AFTER_JITTER(state)


class FidelityHttp:
    """One login session's HTTP client (see the module docstring)."""

    def __init__(
        self,
        config: FidelityConfig,
        router: UpstreamRouter,
        clock: Clock,
        policy: Politeness,
        watch: EventWatch | None = None,
    ) -> None:
        self._config = config
        self._router = router
        self._policy = policy
        self._clock = clock
        # aiohttp's default jar ignores cookies set by hosts that are IP addresses: routed to a local fake
        # (http://127.0.0.1:...), every login step after the first would lose its session cookies.
        jar = aiohttp.CookieJar(unsafe=router.routed)
        self._session = aiohttp.ClientSession(
            connector=router.connector(), cookie_jar=jar, timeout=aiohttp.ClientTimeout(total=config.request_timeout)
        )
        # Reads in flight, by request and by the writes and account events seen when they left: a read asked
        # after a write or an event does not share a call that may have been answered before it.
        self._inflight: dict[tuple[tuple[str, str, str, Profile], int, int], asyncio.Task[UpstreamResponse]] = {}
        self._cache: ReferenceCache[UpstreamResponse] = ReferenceCache()
        # Account answers just received, reused for identical reads for read_share seconds while the watch
        # proves them current (answer_reuse): its epoch moves on every account event and stream change.
        self._recent: ReferenceCache[UpstreamResponse] = ReferenceCache()
        self._watch = watch or EventWatch()  # without a watch, never live: only reads in flight share
        self._recent_epoch = self._watch.epoch
        self._writes = 0  # moves when a write starts and when it ends: a read that overlapped one is not kept
        self._writing = 0  # writes in flight
        self.upstream_calls = 0
        self.screener_token: tuple[str, float] | None = None
        """The LiveVol JWT of this session and when it expires (unix seconds), reused until then."""

    @property
    def closed(self) -> bool:
        """Say whether the session has been closed."""
        return self._session.closed

    def cookies(self) -> dict[str, str]:
        """Return the session cookies by name (for the WebSocket upstreams, which send them by hand)."""
        return {morsel.key: morsel.value for morsel in self._session.cookie_jar}

    async def close(self) -> None:
        """Cancel shared reads in flight and close the session; idempotent."""
        tasks = list(self._inflight.values())
        self._inflight.clear()
        self._cache.clear()
        self._recent.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        await self._session.close()

    # --- calls ----------------------------------------------------------------------------------

    async def call(
        self,
        method: str,
        url: str,
        *,
        profile: Profile = Profile.DATA,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        read: bool | None = None,
        request_id: bool = True,
        form: Mapping[str, str] | None = None,
        text: str | None = None,
    ) -> UpstreamResponse:
        """Send one request and return the response whatever its status; raise for transport failures.

        ``read`` marks a call that changes nothing upstream (default: GETs): identical concurrent ones
        share a single upstream call, and one answered 429/502/503/504 or cut off is retried within the
        read budget (then ``BrokerError``). ``form`` sends an urlencoded form instead of a JSON ``body``
        (LiveVol's sign-in and scan); ``text`` sends a body as it is, with the caller's Content-Type (the SOAP
        XML of the alert services).
        """
        payload = None if body is None else json.dumps(body, separators=(",", ":"), sort_keys=True)
        extra = dict(headers or {})
        if form is not None:
            payload = urlencode(form)
            extra["Content-Type"] = "application/x-www-form-urlencoded"
        if text is not None:
            payload = text
        ttl = freshness(method, url)
        if read is None:
            read = method == "GET"
        if not read and ttl is None:
            return await self._write(method, url, profile, payload, extra, request_id)
        key = (method, url, (payload or "") + json.dumps(sorted(extra.items())), profile)
        if ttl is not None:
            kept = self._cache
        else:
            kept = self._recent
            watch = self._watch
            if watch.epoch != self._recent_epoch or not watch.live:  # an event, or the stream changed
                self._recent.clear()
                self._recent_epoch = watch.epoch
        entry = kept.get(key, self._clock.monotonic())
        if entry is not None:
            report_served(self._clock.monotonic() - entry.stored_at, entry.ttl)
            return entry.value
        flight = (key, self._writes, self._watch.events)
        task = self._inflight.get(flight)
        if task is None:
            task = _start(self._read(key, payload, extra, ttl, request_id), f"fidelity {method} {url}")
            self._inflight[flight] = task
            task.add_done_callback(lambda done: self._forget(flight, done))
        # Shielded: one caller giving up must not cancel the call the others wait for.
        response = await asyncio.shield(task)
        stored = kept.peek(key)
        if stored is not None and stored.value is response:  # fresh, but kept: say for how long it may be reused
            report_served(self._clock.monotonic() - stored.stored_at, stored.ttl, fresh=True)
        return response

    async def json(
        self,
        method: str,
        url: str,
        *,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        read: bool | None = None,
        what: str = "request",
    ) -> Any:
        """Send a data-profile request and return its JSON; map expiry, HTTP and business errors to domain ones."""
        response = await self.call(method, url, body=body, headers=headers, read=read)
        raise_for_status(response, what)
        payload = response.json()
        if b"respTypeCode" in response.body:  # walking every record of a large answer costs more than this look
            raise_for_business_error(payload, what)
        return payload

    async def mapped_json(
        self,
        method: str,
        url: str,
        *,
        body: Any = None,
        read: bool | None = None,
        what: str = "request",
        key: Hashable,
        build: Callable[[Any], _Mapped],
    ) -> _Mapped:
        """Return ``build`` of the JSON as ``json`` does, built once per upstream answer for every caller sharing it.

        Callers sharing one call (in flight, or an answer reused) used to parse, map and serialise it one after
        another; ``key`` names what ``build`` makes (the same key, the same result), so the first caller builds
        it and the others get the same object. What it builds is read and never changed by its callers.
        """
        response = await self.call(method, url, body=body, read=read)
        if key in response.mapped:
            built: _Mapped = response.mapped[key]
            return built
        raise_for_status(response, what)
        payload = response.json()
        if b"respTypeCode" in response.body:
            raise_for_business_error(payload, what)
        built = build(payload)
        response.mapped[key] = built
        return built

    def _forget(
        self, flight: tuple[tuple[str, str, str, Profile], int, int], task: asyncio.Task[UpstreamResponse]
    ) -> None:
        if self._inflight.get(flight) is task:
            del self._inflight[flight]
        if not task.cancelled():
            task.exception()  # mark retrieved: every waiter may have given up

    async def _write(
        self, method: str, url: str, profile: Profile, payload: str | None, extra: dict[str, str], request_id: bool
    ) -> UpstreamResponse:
        """Send a call that may change something: once, never retried; a pushback still slows the reads."""
        if profile is Profile.DATA:  # login steps are counted per login (LoginBudget), not per call
            await self._policy.writes.acquire()
        self._recent.clear()  # what a read answered before this write may no longer be true
        self._writes += 1
        self._writing += 1
        try:
            response = await self._send(method, url, profile, payload, extra, request_id)
        except TimeoutError:
            raise self._timeout(url) from None
        except aiohttp.ClientError as exc:
            raise _unreachable(url, exc) from None
        finally:
            self._writing -= 1
            self._writes += 1
            self._recent.clear()  # nor what a read fetched while it was on its way
        self._note_pushback(response)
        return response

    async def _read(
        self,
        key: tuple[str, str, str, Profile],
        payload: str | None,
        extra: dict[str, str],
        ttl: float | None,
        request_id: bool,
    ) -> UpstreamResponse:
        """Send a read within the read budget, retrying what is worth retrying (see the module docstring)."""
        method, url, _, profile = key
        started = self._clock.monotonic()
        deadline = started + self._config.read_budget
        what = f"{method} {url.partition('?')[0]}"
        attempts = 0
        writes = self._writes
        epoch = self._watch.epoch

        async def once() -> UpstreamResponse:
            return await self._read_once(method, url, profile, payload, extra, request_id)

        async def attempt() -> UpstreamResponse:
            nonlocal attempts
            attempts += 1
            return await self._policy.reads.run(once, deadline, what)

        def stop(state: RetryCallState) -> bool:
            upcoming = state.upcoming_sleep or 0.0
            return state.attempt_number > self._config.read_retries or (self._clock.monotonic() + upcoming > deadline)

        try:
            response = await attempt()  # the common case pays nothing for the retry machinery
        except Retryable as first:
            pending: Retryable | None = first

            async def again() -> UpstreamResponse:
                nonlocal pending
                if pending is not None:  # tenacity's attempt 1 is the one that just failed
                    failure, pending = pending, None
                    raise failure
                return await attempt()

            retrying = AsyncRetrying(
                sleep=self._clock.sleep,
                stop=stop,
                wait=_retry_wait,
                retry=retry_if_exception_type(Retryable),
                reraise=True,
            )
            try:
                response = await retrying(again)
            except Retryable as failure:
                raise _gave_up(failure, url, attempts, self._clock.monotonic() - started) from None
        if response.ok:
            now = self._clock.monotonic()
            if ttl is not None:
                self._cache.put(key, response, now, ttl)
            elif self._reusable(url, writes, epoch):
                # Callers in a convoy (each waits for one read, then asks for the next) would otherwise wait
                # a full upstream latency for every answer; with it, a loop over N reads waits once per window.
                self._recent.put(key, response, now, self._config.read_share)
        return response

    def _reusable(self, url: str, writes: int, epoch: int) -> bool:
        """Say whether an account answer fetched since ``writes``/``epoch`` may serve later reads (docstring)."""
        watch = self._watch
        return (
            self._config.read_share > 0
            and watch.live
            and watch.epoch == epoch  # no event, and the stream stayed up, while it was fetched
            and writes == self._writes
            and not self._writing
            and account_read(url)
        )

    async def _read_once(
        self, method: str, url: str, profile: Profile, payload: str | None, extra: dict[str, str], request_id: bool
    ) -> UpstreamResponse:
        try:
            response = await self._send(method, url, profile, payload, extra, request_id)
        except TimeoutError:
            raise self._timeout(url) from None  # already waited request_timeout: another try would double it
        except aiohttp.ClientConnectionError as exc:
            raise Retryable(f"the connection failed ({type(exc).__name__})") from None
        except aiohttp.ClientError as exc:
            raise _unreachable(url, exc) from None
        retry_after = self._note_pushback(response)
        if response.status in RETRIED_STATUSES:
            raise Retryable(f"HTTP {response.status}", status=response.status, retry_after=retry_after)
        return response

    def _note_pushback(self, response: UpstreamResponse) -> float | None:
        """Slow the reads on a 429 (or a 503 with Retry-After); return the Retry-After asked for, if any."""
        retry_after = parse_retry_after(response.retry_after, self._clock.now())
        if response.status == 429 or (response.status == 503 and retry_after is not None):
            log.warning(
                "Fidelity pushed back (HTTP %s, Retry-After %s): slowing reads", response.status, response.retry_after
            )
            self._policy.reads.pushback(retry_after)
        return retry_after

    def _timeout(self, url: str) -> BrokerError:
        return BrokerError(f"Fidelity did not answer within {self._config.request_timeout:g} s ({URL(url).host})")

    async def _send(
        self, method: str, url: str, profile: Profile, payload: str | None, extra: dict[str, str], request_id: bool
    ) -> UpstreamResponse:
        """Send one request, following redirects on the routed host; raise aiohttp's errors as they come."""
        headers = profile_headers(profile, self._config.app_version)
        headers.update(extra)
        current = URL(url)
        for _ in range(_MAX_REDIRECTS + 1):
            if request_id:
                headers["fsreqid"] = new_request_id()
            self.upstream_calls += 1
            log.debug("Fidelity %s %s%s", method, current.host, current.path)  # never bodies: they hold secrets
            async with self._session.request(
                method,
                self._router.url(str(current)),
                data=payload,
                headers=headers,
                allow_redirects=False,
            ) as response:
                body = await response.read()
                location = response.headers.get("Location")
                status = response.status
                content_type = response.headers.get("Content-Type", "").lower()
                retry_after = response.headers.get("Retry-After")
            if status in (301, 302, 303, 307, 308) and location:
                target = self._unroute(current.join(URL(location)))
                if profile is Profile.DATA and _LOGIN_PATH.search(target.path):
                    raise SessionExpired("Fidelity redirected to its login page: the session has expired")
                current = target
                if status == 303 or (status in (301, 302) and method == "POST"):
                    method, payload = "GET", None
                continue
            return UpstreamResponse(status, content_type, body, str(current), retry_after)
        raise BrokerError(f"Fidelity redirected more than {_MAX_REDIRECTS} times ({current.host})")

    def _unroute(self, target: URL) -> URL:
        """Turn a redirect target on the routed base back into the original host's URL."""
        if not self._router.routed or not target.is_absolute():
            return target
        base = self._router.url("https://routing.probe/")
        if (target.host, target.port) != (base.host, base.port):
            return target
        host, _, rest = target.raw_path.lstrip("/").partition("/")
        query = f"?{target.raw_query_string}" if target.raw_query_string else ""
        return URL(f"https://{host}/{rest}{query}", encoded=True)


def _start(read: Coroutine[Any, Any, UpstreamResponse], name: str) -> asyncio.Task[UpstreamResponse]:
    """Start a shared read as a task that runs at once up to its first wait (Python 3.12+), not a loop turn later."""
    loop = asyncio.get_running_loop()
    if sys.version_info >= (3, 12):
        return asyncio.Task(read, loop=loop, name=name, eager_start=True)
    return loop.create_task(read, name=name)


# --- error mapping ------------------------------------------------------------------------------


def _unreachable(url: str, exc: BaseException) -> BrokerError:
    return BrokerError(f"Cannot reach Fidelity ({URL(url).host}): {type(exc).__name__}")


def _gave_up(failure: Retryable, url: str, attempts: int, elapsed: float) -> BrokerError:
    """Return the error of a read whose retries ran out: 502 BROKER_ERROR, reason ``UPSTREAM_BUSY``."""
    tries = f"{attempts} attempt{'s' if attempts != 1 else ''} in {elapsed:.1f} s"
    details: dict[str, Any] = {"reason": "UPSTREAM_BUSY", "attempts": attempts}
    if failure.status is not None:
        details["upstream_status"] = failure.status
    wait = failure.retry_after if failure.retry_after is not None else 1.0
    details["retry_after"] = round(max(wait, 0.1), 1)
    return BrokerError(
        f"Fidelity is busy or unreachable ({URL(url).host}: {failure.description}) after {tries}: "
        f"try again in {details['retry_after']:g} s",
        details=details,
    )
