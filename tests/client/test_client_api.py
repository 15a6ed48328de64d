"""ftdesk.client through a running paper service: typed answers, typed errors, key discovery, preview_and_place."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from yarl import URL

from ftdesk.app import ServiceRuntime
from ftdesk.client import (
    ApiKeyNotFound,
    AsyncClient,
    AuthenticationError,
    Client,
    FtdeskApiError,
    InvalidRequestError,
    NotFoundError,
    OrderRejectedError,
    ServiceUnreachable,
    SessionStatus,
    TradingDisabledError,
    find_api_key,
)
from ftdesk.client.discovery import find_base_url
from ftdesk.domain.accounts import Account, AccountType, Balance, Position
from ftdesk.domain.market import Quote
from ftdesk.domain.orders import OrderPlacement, OrderPreview, OrderStatus
from ftdesk.domain.session import SessionState
from ftdesk.logs import SecretRedactor
from tests.client.proxy import CuttingProxy
from tests.fakes.clock import ManualClock
from tests.fakes.keyring import InMemoryKeyring


async def individual(api: AsyncClient) -> str:
    accounts = await api.list_accounts()
    return next(a.acct_num for a in accounts if a.acct_type is AccountType.INDIVIDUAL)


async def test_answers_are_the_services_own_models(start_service) -> None:
    service = await start_service()
    async with AsyncClient(service.base_url, service.api_key) as api:
        status = await api.login("trader", "paper-pass")
        assert isinstance(status, SessionStatus) and status.state is SessionState.LOGGED_IN
        accounts = await api.list_accounts()
        assert accounts and all(isinstance(a, Account) for a in accounts)
        acct = await individual(api)
        positions = await api.get_positions(acct)
        assert positions and all(isinstance(p, Position) for p in positions)
        balance = await api.get_balances(acct)
        assert isinstance(balance, Balance) and balance.acct_num == acct
        quotes = await api.get_quotes(["aapl", "NOSUCHSYM"])
        assert [q.symbol for q in quotes.quotes] == ["AAPL"] and isinstance(quotes.quotes[0], Quote)
        assert quotes.unknown == ["NOSUCHSYM"]
        assert (await api.get_health()).broker == "paper"
        assert (await api.get_auth_status()).state is SessionState.LOGGED_IN
        assert service.api_key not in repr(api)


async def test_errors_carry_the_envelopes_code_status_details_and_request_id(start_service) -> None:
    service = await start_service()
    async with AsyncClient(service.base_url, "wrong-key-0123456789abcdef") as intruder:
        with pytest.raises(AuthenticationError) as refused:
            await intruder.list_accounts()
        assert refused.value.code == "API_KEY_INVALID" and refused.value.status == 403
        assert "wrong-key" not in str(refused.value)
    async with AsyncClient(service.base_url, service.api_key) as api:
        with pytest.raises(AuthenticationError) as no_session:
            await api.list_accounts()
        assert no_session.value.code == "AUTH_REQUIRED" and no_session.value.status == 401
        await api.login("trader", "paper-pass")
        with pytest.raises(NotFoundError) as missing:
            await api.get_positions("Z99999999")
        assert missing.value.code == "NOT_FOUND" and missing.value.status == 404 and missing.value.request_id
        acct = await individual(api)
        with pytest.raises(InvalidRequestError) as invalid:
            await api.preview_equity_order(acct, "AAPL", "B", 10, "L")  # a limit order without its price
        assert invalid.value.code == "VALIDATION_ERROR" and invalid.value.status == 422
        assert any(d["field"] == "limitPrice" for d in invalid.value.details)
        with pytest.raises(OrderRejectedError) as rejected:
            await api.preview_equity_order(acct, "ZZZZQ", "B", 1)  # the broker quotes no such symbol
        assert rejected.value.code == "ORDER_REJECTED" and rejected.value.status == 422
        assert rejected.value.details["broker_message"] == "Unknown symbol ZZZZQ"
        assert isinstance(rejected.value, FtdeskApiError)


async def test_preview_and_place_places_nothing_when_declined_and_is_refused_in_dry_run(start_service) -> None:
    service = await start_service(clock=ManualClock())
    shown: list[OrderPreview] = []
    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
        acct = await individual(api)
        before = await api.get_order_status(acct)
        declined = await api.preview_and_place(acct, "AAPL", "B", 1, confirm=lambda p: False, show=shown.append)
        assert declined is None and len(shown) == 1 and shown[0].symbol == "AAPL" and shown[0].qty == 1
        with pytest.raises(TradingDisabledError) as dry_run:
            await api.preview_and_place(acct, "AAPL", "B", 1, confirm=lambda p: True, show=shown.append)
        assert dry_run.value.code == "LIVE_TRADING_DISABLED" and dry_run.value.status == 403
        assert len(shown) == 2 and shown[1].conf_num != shown[0].conf_num
        assert len(await api.get_order_status(acct)) == len(before), "nothing was placed"


async def test_preview_and_place_places_the_previewed_order_when_live(start_service, capsys) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    asked: list[str] = []

    async def confirm(preview: OrderPreview) -> bool:
        asked.append(preview.conf_num)
        return True

    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
        acct = await individual(api)
        placed = await api.preview_and_place(acct, "AAPL", "B", 2, confirm=confirm)
        assert isinstance(placed, OrderPlacement) and placed.conf_num
        assert placed.status in (OrderStatus.OPEN, OrderStatus.FILLED)
        printed = capsys.readouterr().out
        assert f"Preview {asked[0]}" in printed and "AAPL" in printed and "est. cost" in printed
        orders = await api.get_order_status(acct)
        assert any(o.id_detail.conf_num == placed.conf_num and o.order_detail.qty == 2 for o in orders)


async def test_the_sync_client_gives_the_same_models_and_errors(start_service) -> None:
    service = await start_service(clock=ManualClock())

    def script() -> tuple[list[Position], str, OrderPlacement | None]:
        with Client(service.base_url, service.api_key) as api:
            api.login("trader", "paper-pass")
            acct = next(a.acct_num for a in api.list_accounts() if a.acct_type is AccountType.INDIVIDUAL)
            positions = api.get_positions(acct)
            try:
                api.cancel_order("NOSUCHORDER", acct, "B")
            except NotFoundError as exc:
                code = exc.code
            declined = api.preview_and_place(acct, "MSFT", "B", 1, confirm=lambda p: False, show=lambda p: None)
            return positions, code, declined

    # The service runs on this test's loop: the blocking client runs in a worker thread.
    positions, code, declined = await asyncio.to_thread(script)
    assert positions and all(isinstance(p, Position) for p in positions)
    assert code == "NOT_FOUND" and declined is None


@pytest.fixture
def keychain_less() -> InMemoryKeyring:
    return InMemoryKeyring(broken=True)


async def test_the_key_is_found_in_the_data_dirs_file_where_the_service_keeps_it(make_settings, keychain_less) -> None:
    settings = make_settings()  # no FTSERVICE_API_KEY and no keychain: the service keeps its key in a file
    runtime = ServiceRuntime(settings, keyring_backend=keychain_less, redactor=SecretRedactor())
    await runtime.start()
    try:
        key_file = settings.data_dir / "api-key"
        assert key_file.exists() and key_file.stat().st_mode & 0o777 == 0o600
        environ = {"FTSERVICE_DATA_DIR": str(settings.data_dir)}
        found = find_api_key(environ)  # the tests' keyring backend fails, like a machine without a keychain
        async with AsyncClient(runtime.url, found) as api:
            assert (await api.get_auth_status()).state is SessionState.LOGGED_OUT
    finally:
        await runtime.stop()


def test_an_explicit_environment_key_wins_and_none_found_is_a_clear_error(tmp_path: Path) -> None:
    assert find_api_key({"FTSERVICE_API_KEY": " from-env-0123456789 ", "FTSERVICE_DATA_DIR": str(tmp_path)}) == (
        "from-env-0123456789"
    )
    with pytest.raises(ApiKeyNotFound) as none:
        find_api_key({"FTSERVICE_DATA_DIR": str(tmp_path)})
    assert str(tmp_path / "api-key") in str(none.value) and "FTSERVICE_API_KEY" in str(none.value)


def test_the_base_url_follows_the_services_port_setting(tmp_path: Path) -> None:
    environ = {"FTSERVICE_DATA_DIR": str(tmp_path)}
    assert find_base_url(environ) == "http://127.0.0.1:8787"
    assert find_base_url({**environ, "FTSERVICE_PORT": "9001"}) == "http://127.0.0.1:9001"
    (tmp_path / "settings.json").write_text('{"port": 9002}')
    assert find_base_url(environ) == "http://127.0.0.1:9002"


async def test_the_kill_switch_halts_refuses_orders_with_its_code_and_resumes(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
        acct = await individual(api)
        below = round((await api.get_quotes(["AAPL"])).quotes[0].bid * 0.95, 2)  # rests: a buy under the market
        resting = await api.preview_equity_order(acct, "AAPL", "B", 1, "L", limit_price=below)
        working = await api.place_equity_order(acct, "AAPL", "B", 1, "L", conf_num=resting.conf_num, limit_price=below)
        outcome = await api.halt("client test")
        assert outcome.live_was_on and working.conf_num in {order.conf_num for order in outcome.canceled}
        state = await api.get_safety()
        assert state.halt.halted and state.halt.reason == "client test" and state.halt.by == "api"
        with pytest.raises(TradingDisabledError) as halted:
            await api.preview_equity_order(acct, "AAPL", "B", 1)
        assert halted.value.code == "TRADING_HALTED" and halted.value.status == 409
        lifted = await api.resume()
        assert lifted.halted is True and (await api.get_safety()).halt.halted is False
        assert isinstance(await api.preview_equity_order(acct, "AAPL", "B", 1), OrderPreview)


async def test_a_place_whose_answer_never_came_says_so_with_its_idempotency_key(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    port = URL(service.base_url).port
    assert port is not None
    proxy = CuttingProxy(port)
    url = await proxy.start()
    try:
        async with AsyncClient(url, service.api_key) as api:
            await api.login("trader", "paper-pass")
            acct = await individual(api)
            preview = await api.preview_equity_order(acct, "AAPL", "B", 1)
            proxy.refusing = True  # the place never gets an answer
            proxy.cut()
            with pytest.raises(ServiceUnreachable) as lost:
                await api.place_equity_order(acct, "AAPL", "B", 1, conf_num=preview.conf_num, idempotency_key="k-1")
            assert lost.value.idempotency_key == "k-1" and "check before sending it again" in str(lost.value)
            proxy.refusing = False
            placed = await api.place_equity_order(
                acct, "AAPL", "B", 1, conf_num=preview.conf_num, idempotency_key="k-1"
            )
            again = await api.place_equity_order(acct, "AAPL", "B", 1, conf_num=preview.conf_num, idempotency_key="k-1")
            assert again.conf_num == placed.conf_num
            assert len(await api.get_order_status(acct)) == 1, "the same key never places twice"
    finally:
        await proxy.close()


async def test_the_sync_client_says_a_place_whose_answer_never_came_may_be_done(start_service) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    port = URL(service.base_url).port
    assert port is not None
    proxy = CuttingProxy(port)
    url = await proxy.start()
    loop = asyncio.get_running_loop()

    def script() -> tuple[ServiceUnreachable, str, str, int]:
        with Client(url, service.api_key) as api:
            api.login("trader", "paper-pass")
            acct = next(a.acct_num for a in api.list_accounts() if a.acct_type is AccountType.INDIVIDUAL)
            preview = api.preview_equity_order(acct, "AAPL", "B", 1)
            asyncio.run_coroutine_threadsafe(refuse(True), loop).result()  # the place never gets an answer
            with pytest.raises(ServiceUnreachable) as lost:
                api.place_equity_order(acct, "AAPL", "B", 1, conf_num=preview.conf_num, idempotency_key="k-2")
            asyncio.run_coroutine_threadsafe(refuse(False), loop).result()
            placed = api.place_equity_order(acct, "AAPL", "B", 1, conf_num=preview.conf_num, idempotency_key="k-2")
            again = api.place_equity_order(acct, "AAPL", "B", 1, conf_num=preview.conf_num, idempotency_key="k-2")
            return lost.value, placed.conf_num, again.conf_num, len(api.get_order_status(acct))

    async def refuse(refusing: bool) -> None:
        proxy.refusing = refusing

    try:
        lost, placed, again, orders = await asyncio.to_thread(script)
    finally:
        await proxy.close()
    assert lost.idempotency_key == "k-2" and "check before sending it again" in str(lost)
    assert str(lost).startswith(f"POST {url}/api/v1/orders/equity/place: ")
    assert again == placed and orders == 1, "the same key never places twice"


async def test_the_sync_client_gives_up_on_a_service_that_never_answers() -> None:
    # A socket that accepts and never answers: the request ends at the client's timeout, as unreachable.
    accepted = asyncio.Event()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set()
        await reader.read()  # until the client gives up and closes
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    def script() -> ServiceUnreachable:
        with Client(url, "some-key-0123456789abcdef", timeout=0.3) as api, pytest.raises(ServiceUnreachable) as lost:
            api.get_health()
        return lost.value

    try:
        lost = await asyncio.to_thread(script)
    finally:
        server.close()
        await server.wait_closed()
    assert accepted.is_set()
    assert str(lost).startswith(f"GET {url}/api/v1/health: TimeoutError") and "carried out" not in str(lost)
