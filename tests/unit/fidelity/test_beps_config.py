"""BEPS configuration: which FTSERVICE_BEPS_* variables are missing, and the stream URL with its auth header."""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Callable
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from ftdesk.brokers.fidelity.beps import BepsConfig
from ftdesk.brokers.fidelity.beps_feed import BepsAccountEventFeed
from ftdesk.brokers.fidelity.routing import UpstreamRouter
from ftdesk.config import Settings
from ftdesk.domain.errors import StreamingUnavailable
from tests.fakes.clock import ManualClock

# A token whose base64 form holds "+", "/" and "=", which a URL query must not carry raw.
TOKEN = "eyJhbGciOiJSUzI1NiJ9.e30.sig??>>~~"
HOST = "abcdefghij.appsync-api.us-east-1.amazonaws.com"
TEMPLATE = "wss://spservice.fidelity.com/graphql/realtime?header={0}&payload=e30="
FULL = {"token": TOKEN, "host": HOST, "stream_url": TEMPLATE, "mid": "MID123"}
REQUIRED = {
    "token": "FTSERVICE_BEPS_TOKEN",
    "host": "FTSERVICE_BEPS_HOST",
    "stream_url": "FTSERVICE_BEPS_STREAM_URL",
    "mid": "FTSERVICE_BEPS_MID",
}
MISSING_SETS = [
    frozenset(combination) for size in range(1, 5) for combination in itertools.combinations(REQUIRED, size)
]


def feed(config: BepsConfig) -> BepsAccountEventFeed:
    return BepsAccountEventFeed(config, router=UpstreamRouter(None), clock=ManualClock())


def test_a_complete_configuration_can_run() -> None:
    assert feed(BepsConfig(**FULL)).unavailable_reason() is None


@pytest.mark.parametrize("missing", MISSING_SETS, ids=lambda names: "+".join(sorted(names)))
def test_the_reason_names_exactly_the_missing_variables(missing: frozenset[str]) -> None:
    config = BepsConfig(**{name: value for name, value in FULL.items() if name not in missing})

    reason = feed(config).unavailable_reason()

    assert reason is not None
    named = {variable for variable in REQUIRED.values() if variable in reason}
    assert named == {REQUIRED[name] for name in missing}
    assert TOKEN not in reason


def test_an_empty_app_id_is_named_too() -> None:
    reason = feed(BepsConfig(**FULL, app_id="")).unavailable_reason()
    assert reason == "Account events need FTSERVICE_BEPS_APP_ID (not set)"


def test_the_reason_reads_as_a_sentence() -> None:
    config = BepsConfig(token=TOKEN, stream_url=TEMPLATE)
    assert feed(config).unavailable_reason() == (
        "Account events need FTSERVICE_BEPS_HOST and FTSERVICE_BEPS_MID (not set)"
    )


def test_the_configuration_comes_from_the_ftservice_settings(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(
        FTSERVICE_BEPS_TOKEN=TOKEN,
        FTSERVICE_BEPS_HOST=HOST,
        FTSERVICE_BEPS_STREAM_URL=TEMPLATE,
        FTSERVICE_BEPS_MID="MID123",
    )
    config = BepsConfig.from_settings(settings)

    assert config == BepsConfig(**FULL, app_id="ATN")  # the app id defaults to ATN
    assert feed(config).unavailable_reason() is None
    assert feed(BepsConfig.from_settings(make_settings())).unavailable_reason() == (
        "Account events need FTSERVICE_BEPS_TOKEN, FTSERVICE_BEPS_HOST, FTSERVICE_BEPS_STREAM_URL and "
        "FTSERVICE_BEPS_MID (not set)"
    )


async def test_connect_without_configuration_is_streaming_unavailable_with_the_reason() -> None:
    unconfigured = feed(BepsConfig(token=TOKEN, host=HOST, stream_url=TEMPLATE))
    with pytest.raises(StreamingUnavailable, match="FTSERVICE_BEPS_MID"):
        await unconfigured.connect()


def test_the_url_carries_the_encoded_auth_header_in_place_of_the_placeholder() -> None:
    url = BepsConfig(**FULL).url()

    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == ("wss", "spservice.fidelity.com", "/graphql/realtime")
    raw_header = parts.query.split("&")[0].removeprefix("header=")
    assert set("+/=") <= set(unquote(raw_header))  # this token's base64 needs all three escaped...
    assert not set(raw_header) & set("+/={}")  # ...and they are, so the query survives any URL parser
    assert parse_qs(parts.query)["payload"] == ["e30="]
    decoded = json.loads(base64.b64decode(unquote(raw_header), validate=True))
    assert decoded == {"Authorization": TOKEN, "host": HOST}
    assert TOKEN not in url


def test_the_auth_header_is_the_compact_json_of_the_reference() -> None:
    encoded = BepsConfig(**FULL).encoded_authorization()
    assert base64.b64decode(encoded).decode() == f'{{"Authorization":"{TOKEN}","host":"{HOST}"}}'


def test_routing_keeps_the_encoded_header_byte_for_byte() -> None:
    url = BepsConfig(**FULL).url()
    routed = str(UpstreamRouter("http://127.0.0.1:9000").url(url))
    assert routed == "ws://127.0.0.1:9000/spservice.fidelity.com/graphql/realtime?" + urlsplit(url).query


def test_the_token_is_not_in_the_configs_repr() -> None:
    config = BepsConfig(**FULL)
    assert TOKEN not in repr(config)
    assert config.encoded_authorization() not in repr(config)
