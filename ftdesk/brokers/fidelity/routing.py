"""Where an upstream request really goes: the real host, or a local base URL for tests and proxies.

With ``FTSERVICE_FIDELITY_UPSTREAM=http://127.0.0.1:9000`` a request for
``https://dpservice.fidelity.com/ftgw/dp/x?y=1`` goes to ``http://127.0.0.1:9000/dpservice.fidelity.com/ftgw/dp/x?y=1``
and ``wss://mdds-i-tc.fidelity.com/?productid=atn`` to ``ws://127.0.0.1:9000/mdds-i-tc.fidelity.com/?productid=atn``:
one fake server can play every host, and the original host stays visible in the path.

TLS to the upstream trusts certifi's CA bundle, which the app ships: a frozen app then verifies Fidelity's
certificates the same way on every machine, whatever CA files the operating system has (or lacks).
"""

from __future__ import annotations

import ssl
from types import MappingProxyType

import aiohttp
import certifi
from yarl import URL

_SECURE = MappingProxyType({"https": "http", "wss": "ws"})
_PLAIN = MappingProxyType({"http": "https", "ws": "wss"})


class UpstreamRouter:
    """Rewrite upstream URLs onto a base URL, or leave them alone when no base is set."""

    def __init__(self, base: str | None) -> None:
        self._base = URL(base.rstrip("/")) if base else None
        self._tls: ssl.SSLContext | None = None

    @property
    def routed(self) -> bool:
        """Say whether requests go to a base URL instead of the real hosts."""
        return self._base is not None

    def url(self, original: str) -> URL:
        """Return the URL to call for ``original`` (an absolute http(s) or ws(s) URL)."""
        target = URL(original, encoded=True)
        if self._base is None:
            return target
        if not target.is_absolute() or target.scheme not in (*_SECURE, *_PLAIN):
            raise ValueError(f"Not an absolute http(s)/ws(s) URL: {original!r}")
        base_is_secure = self._base.scheme in ("https", "wss")
        websocket = target.scheme in ("ws", "wss")
        scheme = ("wss" if base_is_secure else "ws") if websocket else self._base.scheme
        path = f"{self._base.raw_path.rstrip('/')}/{target.raw_host}{target.raw_path}"
        query = f"?{target.raw_query_string}" if target.raw_query_string else ""
        # Built as text and marked encoded so the query reaches the upstream byte for byte.
        return URL(f"{scheme}://{self._base.raw_authority}{path}{query}", encoded=True)

    def tls_context(self) -> ssl.SSLContext:
        """Return the TLS context of upstream connections: certificates verified against certifi's bundle."""
        if self._tls is None:  # loading the bundle takes ~30 ms: once per router
            self._tls = ssl.create_default_context(cafile=certifi.where())
        return self._tls

    def connector(self) -> aiohttp.TCPConnector:
        """Return a new connector for one client session, using ``tls_context()``."""
        return aiohttp.TCPConnector(ssl=self.tls_context())
