"""The Fidelity adapter through its real HTTP client against the fake upstream on a loopback socket."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable

import pyotp
import pytest
from pydantic import SecretStr

from ftdesk.brokers.base import AccountEventFeed, Broker, QuoteFeed
from ftdesk.brokers.fidelity.broker import FidelityBroker
from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.brokers.fidelity.mdds import MddsQuoteFeed
from ftdesk.brokers.fidelity.routing import UpstreamRouter
from ftdesk.domain import errors as e
from ftdesk.domain.accounts import SecurityType
from ftdesk.domain.clock import SystemClock
from ftdesk.domain.market import Quote
from ftdesk.domain.session import Credentials
from ftdesk.service.web.envelope import ok_response
from tests.fakes import fidelity_payloads as p
from tests.fakes.fidelity_server import FakeFidelity
from tests.fakes.mdds_server import FakeMdds

USER = "trader"
PASSWORD = "correct-horse-battery"
TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DP"
POSITIONS_PATH = "/ftgw/dp/position/v2"


def credentials(password: str = PASSWORD, **extra: object) -> Credentials:
    return Credentials(username=USER, password=SecretStr(password), **extra)  # type: ignore[arg-type]


def code_at(fake: FakeFidelity) -> str:
    """Return the authenticator's code for the fake's current time (the broker shares its clock)."""
    return pyotp.TOTP(TOTP_SECRET).at(fake.now())


@pytest.fixture
async def fake() -> AsyncIterator[FakeFidelity]:
    server = FakeFidelity(username=USER, password=PASSWORD)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def make_broker(fake: FakeFidelity) -> AsyncIterator[Callable[..., FidelityBroker]]:
    made: list[FidelityBroker] = []

    def build(**config: object) -> FidelityBroker:
        settings: dict[str, object] = {"upstream": fake.base_url, "request_timeout": 5.0, "read_share": 0.0}
        settings.update(config)
        broker = FidelityBroker(FidelityConfig(**settings), fake.clock)  # type: ignore[arg-type]
        made.append(broker)
        return broker

    yield build
    for broker in made:
        await broker.close()


@pytest.fixture
async def broker(make_broker: Callable[..., FidelityBroker]) -> AsyncIterator[FidelityBroker]:
    instance = make_broker()
    await instance.start()
    try:
        yield instance
    finally:
        await instance.close()


async def test_the_adapter_satisfies_the_broker_protocols(broker: FidelityBroker) -> None:
    assert isinstance(broker, Broker) and broker.name == "fidelity"
    assert isinstance(broker.quote_feed, QuoteFeed) and isinstance(broker.account_events, AccountEventFeed)
    # BEPS configures itself from the login: nothing is missing, but there is nothing to connect with yet.
    assert broker.account_events.unavailable_reason() is None
    with pytest.raises(e.AuthRequired):
        await broker.account_events.connect()


async def test_login_without_a_second_factor(broker: FidelityBroker, fake: FakeFidelity) -> None:
    session = await broker.session.login(credentials())
    assert session.username == USER
    assert session.member_id == "ee629881ce0a8830"  # the MID of the security context, kept for BEPS
    assert broker.session.security.real_time_quotes
    assert {"ATC", "FC", "RC", "SC"} <= set(broker.cookies())
    assert [a.acct_num for a in await broker.accounts.get_accounts()] == list(p.ACCOUNT_NUMBERS)

    ecaap = [r for r in fake.requests if r.host == "ecaap.fidelity.com"]
    assert [(r.method, r.path) for r in ecaap] == [
        ("DELETE", "/user/session/login"),
        ("GET", "/user/identity/remember/username"),
        ("POST", "/user/identity/remember/username/1"),
        ("POST", "/user/factor/password/authentication"),
        ("PUT", "/user/identity/remember/username"),
        ("POST", "/user/session/login"),
    ]
    request_ids = [r.headers["fsreqid"] for r in ecaap]
    assert all(re.fullmatch(r"REQ[0-9a-f]{32}", rid) for rid in request_ids) and len(set(request_ids)) == len(ecaap)
    assert all(r.headers["AppId"] == "RETAIL-CC-LOGIN-SDK" for r in ecaap)
    data = [r for r in fake.requests if r.host == "dpservice.fidelity.com"]
    assert data and all(r.headers["AppId"] == "AP149323" and r.headers["fsreqid"].startswith("REQ") for r in data)


async def test_wrong_password_fails_with_the_upstream_message(broker: FidelityBroker, fake: FakeFidelity) -> None:
    with pytest.raises(e.LoginFailed, match="Authentication Failed") as caught:
        await broker.session.login(credentials("wrong-password"))
    assert "wrong-password" not in str(caught.value)
    assert broker.cookies() == {}
    with pytest.raises(e.AuthRequired):
        await broker.accounts.get_accounts()


@pytest.mark.parametrize("way", ["code", "secret"])
async def test_login_with_a_second_factor(broker: FidelityBroker, fake: FakeFidelity, way: str) -> None:
    fake.totp_secret = TOTP_SECRET
    extra = {"totp_code": code_at(fake)} if way == "code" else {"totp_secret": SecretStr(TOTP_SECRET)}
    await broker.session.login(credentials(**extra))
    assert fake.hits["/user/factor/totp/authentication"] == 1
    assert fake.hits["/user/session/login"] == 3  # the stale-session DELETE, the 1201 answer, the session
    assert await broker.accounts.get_accounts()


async def test_a_second_factor_account_without_a_code_or_with_a_wrong_one(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    fake.totp_secret = TOTP_SECRET
    with pytest.raises(e.TotpRequired, match="totp_code or totp_secret"):
        await broker.session.login(credentials())
    wrong = str((int(code_at(fake)) + 500_000) % 1_000_000).zfill(6)
    with pytest.raises(e.TotpRequired, match="2FA failed: Invalid security code"):
        await broker.session.login(credentials(totp_code=wrong))
    assert fake.sessions == set()  # no session was created by either attempt


async def test_secrets_never_reach_the_log(
    broker: FidelityBroker, fake: FakeFidelity, caplog: pytest.LogCaptureFixture
) -> None:
    fake.totp_secret = TOTP_SECRET
    caplog.set_level(logging.DEBUG)
    await broker.session.login(credentials(totp_secret=SecretStr(TOTP_SECRET)))
    await broker.accounts.get_positions(p.MARGIN)
    cookie_values = list(broker.cookies().values())
    for secret in [PASSWORD, TOTP_SECRET, *cookie_values]:
        assert secret not in caplog.text


@pytest.mark.parametrize("style", ["401", "403", "redirect", "html"])
async def test_expiry_is_reported_and_a_fresh_login_recovers(
    broker: FidelityBroker, fake: FakeFidelity, style: str
) -> None:
    await broker.session.login(credentials())
    assert await broker.accounts.get_positions(p.MARGIN)
    fake.expiry_style = style
    fake.expire()
    with pytest.raises(e.SessionExpired):
        await broker.accounts.get_positions(p.MARGIN)
    with pytest.raises(e.SessionExpired):
        await broker.session.keep_alive()
    await broker.session.login(credentials())
    assert [pos.symbol for pos in await broker.accounts.get_positions(p.MARGIN)] == ["SPAXX", "AAPL", "UNH260618C350"]
    assert fake.logins == 2


async def test_keep_alive_extends_a_live_session_and_needs_one(broker: FidelityBroker, fake: FakeFidelity) -> None:
    with pytest.raises(e.AuthRequired):
        await broker.session.keep_alive()
    await broker.session.login(credentials())
    await broker.session.keep_alive()
    await broker.session.keep_alive()
    assert fake.hits["/ftgw/digital/portfolio/extendsession"] == 2


async def test_logout_ends_the_upstream_session_and_is_idempotent(broker: FidelityBroker, fake: FakeFidelity) -> None:
    await broker.session.login(credentials())
    assert len(fake.sessions) == 1
    await broker.session.logout()
    assert fake.sessions == set() and broker.cookies() == {}
    await broker.session.logout()
    with pytest.raises(e.AuthRequired):
        await broker.accounts.get_positions(p.MARGIN)


async def test_the_account_list_is_reused_within_its_login_and_listed_afresh_by_the_next(
    broker: FidelityBroker, fake: FakeFidelity
) -> None:
    listing = "/ftgw/dp/customer-am-acctnxt/v2/accounts"
    await broker.session.login(credentials())
    await broker.accounts.get_accounts()
    await broker.accounts.get_positions(p.MARGIN)  # checks the number against the list it already has
    assert fake.hits[listing] == 1
    # Another login may be another user: its accounts are listed again, never taken from the last one's list.
    await broker.session.logout()
    await broker.session.login(credentials())
    assert [a.acct_num for a in await broker.accounts.get_accounts()] == list(p.ACCOUNT_NUMBERS)
    assert fake.hits[listing] == 2


async def test_a_failing_security_context_does_not_fail_the_login(broker: FidelityBroker, fake: FakeFidelity) -> None:
    fake.security_context_status = 500
    session = await broker.session.login(credentials())
    assert session.member_id is None
    assert await broker.accounts.get_accounts()


async def test_identical_concurrent_reads_share_one_upstream_call(broker: FidelityBroker, fake: FakeFidelity) -> None:
    await broker.session.login(credentials())
    await broker.accounts.get_accounts()
    fake.hold(POSITIONS_PATH)
    calls = [asyncio.create_task(broker.accounts.get_positions(p.MARGIN)) for _ in range(5)]
    async with asyncio.timeout(5):
        while fake.hits[POSITIONS_PATH] == 0:  # noqa: ASYNC110 - the fake has no arrival event
            await asyncio.sleep(0.005)
    fake.release(POSITIONS_PATH)
    results = await asyncio.gather(*calls)
    assert fake.hits[POSITIONS_PATH] == 1
    assert all(result == results[0] for result in results) and len(results[0]) == 3
    # Mapped once for all five, and served as the same bytes a plain list of the same positions makes.
    assert all(result is results[0] for result in results)
    assert ok_response(results[0]).body == ok_response(list(results[0])).body
    later = await broker.accounts.get_positions(p.MARGIN)  # a later read is a new call
    assert fake.hits[POSITIONS_PATH] == 2
    assert later == results[0] and later is not results[0]


async def test_a_caller_giving_up_does_not_cancel_the_shared_read(broker: FidelityBroker, fake: FakeFidelity) -> None:
    await broker.session.login(credentials())
    await broker.accounts.get_accounts()
    fake.hold(POSITIONS_PATH)
    impatient = asyncio.create_task(broker.accounts.get_positions(p.MARGIN))
    patient = asyncio.create_task(broker.accounts.get_positions(p.MARGIN))
    async with asyncio.timeout(5):
        while fake.hits[POSITIONS_PATH] == 0:  # noqa: ASYNC110 - the fake has no arrival event
            await asyncio.sleep(0.005)
    impatient.cancel()
    fake.release(POSITIONS_PATH)
    assert len(await patient) == 3
    assert impatient.cancelled()


async def test_positions_and_balances_are_mapped_from_the_upstream_shapes(broker: FidelityBroker) -> None:
    await broker.session.login(credentials())
    positions = {pos.symbol: pos for pos in await broker.accounts.get_positions(p.MARGIN)}
    aapl = positions["AAPL"]
    assert aapl.security_type is SecurityType.EQUITY and aapl.quantity == 10.0 and aapl.market_value == 1825.0
    assert (aapl.last_price, aapl.prev_close_price, aapl.cost_basis) == (182.5, 181.25, 1500.0)
    assert aapl.raw is not None and aapl.raw["cusip"] == "037833100"
    assert positions["SPAXX"].security_type is SecurityType.CORE
    assert positions["SPAXX"].last_price_chg_pct == 0.0  # "--" upstream
    option = positions["UNH260618C350"].option
    assert option is not None and (option.underlying, option.strike, option.expiration.isoformat()) == (
        "UNH",
        350.0,
        "2026-06-18",
    )
    balance = await broker.accounts.get_balances(p.MARGIN)
    assert (balance.net_worth, balance.cash, balance.margin_buying_power) == (149174.04, 3064.58, 11714.40)
    assert balance.margin_debt == pytest.approx(317.61) and balance.option_market_value == 14575.0
    cash = await broker.accounts.get_balances(p.INDIVIDUAL)
    assert cash.margin_buying_power is None and cash.settled_cash == 4600.25
    assert await broker.accounts.get_positions(p.WORKPLACE) == []  # no positionDetails at all upstream


async def test_unknown_accounts_and_upstream_errors(broker: FidelityBroker, fake: FakeFidelity) -> None:
    await broker.session.login(credentials())
    with pytest.raises(e.NotFound):
        await broker.accounts.get_balances("Z00000000")
    fake.failures[POSITIONS_PATH] = (500, {"message": "Backend unavailable, try later"})
    with pytest.raises(e.BrokerError, match=r"HTTP 500.*Backend unavailable") as caught:
        await broker.accounts.get_positions(p.MARGIN)
    assert not isinstance(caught.value, e.SessionExpired)
    error_body = {
        "respTypeCode": "E",
        "sysMsgs": {
            "sysMsg": [{"message": "x", "detail": "Code=R1,Text=Down for maintenance,Source=", "type": "error"}]
        },
    }
    fake.failures[POSITIONS_PATH] = (200, error_body)
    with pytest.raises(e.BrokerError, match="Down for maintenance"):
        await broker.accounts.get_positions(p.MARGIN)


async def test_the_session_cookies_open_mdds(broker: FidelityBroker, fake: FakeFidelity) -> None:
    await broker.session.login(credentials())
    mdds = FakeMdds(cookie=("ATC", broker.cookies()["ATC"]))
    await mdds.start()
    try:
        feed = MddsQuoteFeed(cookies=broker.cookies, router=UpstreamRouter(mdds.base_url), clock=SystemClock())
        quotes = await feed.snapshot(["AAPL"])
        assert [q.symbol for q in quotes] == ["AAPL"] and isinstance(quotes[0], Quote)
        await broker.session.logout()
        with pytest.raises(e.AuthRequired):
            await feed.connect()
    finally:
        await mdds.close()
