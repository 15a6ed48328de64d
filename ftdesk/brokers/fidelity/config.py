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
    read_rate: float = 0.0
    """``FTSERVICE_FIDELITY_READ_RATE``: a fixed ceiling on upstream reads per second; 0 = none. Without one,
    reads go out as fast as callers ask until Fidelity pushes back (429, or 503 with Retry-After), and the
    adaptive budget of ``politeness`` takes over."""
    read_concurrency: int = 16
    """``FTSERVICE_FIDELITY_READ_CONCURRENCY``: distinct upstream reads in flight at once (identical ones share
    one call). About what a desktop app keeps open to one host; it bounds a flood of different reads
    without ever slowing one script's loop."""
    read_share: float = 1.0
    """``FTSERVICE_FIDELITY_READ_SHARE``: the longest an account answer (positions, balances, option summary,
    lots, history, order status) also serves identical reads after it arrives, while ftdesk can prove it is
    still current: the account-event stream (BEPS) is live and no account event (a fill, an order status, a
    cancel, any event) and no write (an order, a cancel, any call that changes something) came since it was
    fetched. Any event or write drops every kept answer at once; such answers carry ``Age``. Without a live
    stream (BEPS down, even while the alerts fallback polls: a fill could take its 15 s to show) only
    identical reads in flight share one call. How quickly the upstream answers does not matter: a script's
    tight loop over positions asks Fidelity about once a window, not once a call. The window stays short
    (1 s, about the desktop app's refresh) because even a live stream lags the upstream a little. 0 = never
    reuse an answer that has arrived. Reference data has its own freshness windows (``reference_cache``)
    whatever this says."""
    read_budget: float = 15.0
    """``FTSERVICE_FIDELITY_READ_BUDGET``: seconds one read may spend waiting for the budget and retrying
    before the caller gets 502 ``BROKER_ERROR`` (reason ``UPSTREAM_BUSY``), so a script is never left hanging."""
    read_retries: int = 3
    """``FTSERVICE_FIDELITY_READ_RETRIES``: retries of a read answered 429, 502, 503, 504 or cut off
    (jittered exponential backoff from 0.25 s, at least the Retry-After asked for). Writes: never."""
    order_rate: float = 5.0
    """``FTSERVICE_FIDELITY_ORDER_RATE``: order-entry and other writes per second after a burst of twice that.
    A trader's script sending a bracket or a batch of cancels goes out at once; a runaway loop is spaced.
    Writes are never refused for it, never wait behind reads and are never retried."""
    login_per_minute: int = 5
    """``FTSERVICE_FIDELITY_LOGINS_PER_MINUTE``: logins a minute (each is about nine calls). Brokers lock an
    account after repeated failed logins (Fidelity's threshold is not known): a re-login loop must never do it."""
    app_version: str = "4.5.1.4"
    """The Trader+ version the User-Agent names (``ATPNext/<v> FTPlusDesktop/<v>``); keep it current."""
    accounts_ttl: float = 60.0
    """Seconds the account list is reused to validate account numbers and build request bodies."""
    cancel_lookup_timeout: float = 5.0
    """Seconds a cancel waits for the order's status (to echo the order's own action code) before it is sent
    with the code it was given, mapped as well as it can be: a slow status read must not hold a cancel up."""
