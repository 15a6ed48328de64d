"""FTSERVICE_FIDELITY_UPSTREAM: every upstream URL maps onto {base}/{original host}{path and query}."""

from __future__ import annotations

import pytest

from ftdesk.brokers.fidelity.routing import UpstreamRouter


def test_without_a_base_urls_are_left_alone() -> None:
    router = UpstreamRouter(None)
    assert not router.routed
    assert (
        str(router.url("wss://mdds-i-tc.fidelity.com/?productid=atn")) == "wss://mdds-i-tc.fidelity.com/?productid=atn"
    )


@pytest.mark.parametrize(
    ("original", "routed"),
    [
        (
            "https://dpservice.fidelity.com/ftgw/dp/position/v2?acct=Z1&x=%2F",
            "http://127.0.0.1:9000/dpservice.fidelity.com/ftgw/dp/position/v2?acct=Z1&x=%2F",
        ),
        ("wss://mdds-i-tc.fidelity.com/?productid=atn", "ws://127.0.0.1:9000/mdds-i-tc.fidelity.com/?productid=atn"),
        (
            "https://ecaap.fidelity.com/user/session/login",
            "http://127.0.0.1:9000/ecaap.fidelity.com/user/session/login",
        ),
    ],
)
def test_a_base_url_receives_the_host_as_the_first_path_segment(original: str, routed: str) -> None:
    assert str(UpstreamRouter("http://127.0.0.1:9000/").url(original)) == routed


def test_an_https_base_keeps_websockets_secure_and_its_own_path() -> None:
    router = UpstreamRouter("https://proxy.example:8443/fid")
    assert str(router.url("wss://mdds-i.fidelity.com/?productid=atn")) == (
        "wss://proxy.example:8443/fid/mdds-i.fidelity.com/?productid=atn"
    )


def test_a_relative_url_is_refused() -> None:
    with pytest.raises(ValueError, match="absolute"):
        UpstreamRouter("http://127.0.0.1:9000").url("/ftgw/dp/position")


def test_upstream_tls_trusts_the_shipped_certifi_bundle_and_verifies_hosts() -> None:
    import ssl

    import certifi

    context = UpstreamRouter(None).tls_context()
    shipped = certifi.contents().count("-----BEGIN CERTIFICATE-----")
    assert shipped > 50
    assert len(context.get_ca_certs()) == shipped
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
