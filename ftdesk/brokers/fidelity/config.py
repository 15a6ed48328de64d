"""Settings of the Fidelity adapter, mapped from the service settings by the composition root."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FidelityConfig:
    """What the Fidelity adapter needs to know."""

    upstream: str | None = None
    """``FTSERVICE_FIDELITY_UPSTREAM``: route every request to this base URL (tests, proxies); None = real hosts."""
    request_timeout: float = 30.0
    """Seconds one upstream HTTP call may take, connection included (the SDK's default)."""
    rate_per_second: float = 5.0
    """Sustained upstream calls per second (token bucket). The desktop app polls a few endpoints every
    few seconds; 5/s leaves room for a script walking every account while staying far from a burst that
    could look like abuse."""
    burst: int = 20
    """Calls allowed back to back before the rate applies (a login is 9 calls; a portfolio page ~10)."""
    app_version: str = "4.5.1.4"
    """The Trader+ version the User-Agent names (``ATPNext/<v> FTPlusDesktop/<v>``); keep it current."""
    accounts_ttl: float = 60.0
    """Seconds the account list is reused to validate account numbers and build request bodies."""
