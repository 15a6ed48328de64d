"""Settings of the paper brokerage, mapped from the service settings by the composition root."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class PaperConfig:
    """What the simulated brokerage needs to know."""

    db_path: Path
    seed: int | None = None
    """Fixed seed: the market and ids are reproducible. None: seeded from the clock at world creation."""
    required_password: str | None = None
    """When set, login needs exactly this password; otherwise any non-empty password works."""
    totp_secret: str | None = None
    """When set, login needs a valid TOTP code (or the secret itself), like a 2FA account."""
    session_lifetime: float = 0.0
    """Seconds a session lives without keep-alive; 0 means it never expires."""
    tick_interval: float = 1.0
    """Seconds between simulated market ticks for subscribed symbols and working orders."""
    on_damaged: Callable[[str], None] | None = field(default=None, compare=False)
    """Told, in one line, when a damaged world was moved aside and a fresh one started (for the tray)."""
