"""Setting values: the parsers that turn a raw setting (environment text or a JSON value) into its value.

Each parser takes a raw value (a str from the environment, any JSON value from the settings file) and
returns the parsed value or raises ``InvalidValue`` saying what the setting accepts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit


class InvalidValue(ValueError):
    """Raised by a parser; the message says what the setting accepts."""


def parse_bool(raw: Any) -> bool:
    """Parse true/false (also 1/0, yes/no, on/off)."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in {"true", "1", "yes", "on"}:
        return True
    if text in {"false", "0", "no", "off"}:
        return False
    raise InvalidValue("expected true or false (also accepted: 1/0, yes/no, on/off)")


def int_parser(low: int, high: int) -> Callable[[Any], int]:
    """Return a parser of integers from low to high inclusive."""

    def parse(raw: Any) -> int:
        try:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            value = int(str(raw).strip()) if not isinstance(raw, int | float) else int(raw)
        except ValueError:
            raise InvalidValue(f"expected an integer from {low} to {high}") from None
        if not low <= value <= high:
            raise InvalidValue(f"expected an integer from {low} to {high}")
        return value

    return parse


def float_parser(
    low: float, high: float, *, low_inclusive: bool = True, unit: str = "seconds"
) -> Callable[[Any], float]:
    """Return a parser of numbers from low (inclusive or not) to high inclusive, in the given unit."""
    bound = "at least" if low_inclusive else "greater than"
    accepts = f"expected a number of {unit} {bound} {low:g} and at most {high:g}"

    def parse(raw: Any) -> float:
        try:
            if isinstance(raw, bool):
                raise ValueError
            value = float(str(raw).strip()) if not isinstance(raw, int | float) else float(raw)
        except ValueError:
            raise InvalidValue(accepts) from None
        ok_low = value >= low if low_inclusive else value > low
        if not ok_low or value > high or value != value:  # NaN fails every comparison but the last
            raise InvalidValue(accepts)
        return value

    return parse


def choice_parser(*choices: str, upper: bool = False) -> Callable[[Any], str]:
    """Return a parser of one of the choices (compared in upper or lower case)."""

    def parse(raw: Any) -> str:
        text = str(raw).strip()
        text = text.upper() if upper else text.lower()
        if text not in choices:
            raise InvalidValue("expected one of " + ", ".join(choices))
        return text

    return parse


def parse_optional_text(raw: Any) -> str | None:
    """Parse text; empty means not set."""
    text = str(raw).strip()
    return text or None


def parse_text(raw: Any) -> str:
    """Parse non-empty text."""
    text = str(raw).strip()
    if not text:
        raise InvalidValue("expected a non-empty value")
    return text


def parse_host(raw: Any) -> str:
    """Parse an IP address or host name to bind."""
    text = str(raw).strip()
    if not text or any(c.isspace() for c in text) or "/" in text:
        raise InvalidValue("expected an IP address or host name to bind, e.g. 127.0.0.1")
    return text


def parse_fernet_key(raw: Any) -> str | None:
    """Parse a Fernet key; empty means not set."""
    text = str(raw).strip()
    if not text:
        return None
    from cryptography.fernet import Fernet  # only when a key is set: reading settings skips its ~10 ms import

    try:
        Fernet(text.encode())
    except (ValueError, TypeError):
        raise InvalidValue(
            "expected a Fernet key (32 url-safe base64-encoded bytes); generate one with "
            'python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"'
        ) from None
    return text


def parse_api_key(raw: Any) -> str | None:
    """Parse an API key of 16+ printable characters; empty means not set."""
    text = str(raw).strip()
    if not text:
        return None
    if len(text) < 16 or not re.fullmatch(r"[\x21-\x7e]+", text):
        raise InvalidValue("expected at least 16 printable characters without spaces")
    return text


def parse_origins(raw: Any) -> tuple[str, ...]:
    """Parse browser origins (a list or comma-separated text) into scheme://host[:port] forms."""
    items = list(raw) if isinstance(raw, list | tuple) else str(raw).split(",")
    origins: list[str] = []
    for item in items:
        text = str(item).strip().rstrip("/")
        if not text:
            continue
        parts = urlsplit(text)
        if parts.scheme not in {"http", "https"} or not parts.hostname or parts.path or parts.query:
            raise InvalidValue(
                "expected comma-separated origins like http://localhost:3000 (scheme, host, optional port)"
            )
        origins.append(f"{parts.scheme}://{parts.netloc.lower()}")
    return tuple(origins)


def parse_backoff(raw: Any) -> tuple[float, ...]:
    """Parse reconnect delays (a list or comma-separated seconds)."""
    items = list(raw) if isinstance(raw, list | tuple) else str(raw).split(",")
    try:
        delays = tuple(float(str(item).strip()) for item in items if str(item).strip())
    except ValueError:
        raise InvalidValue("expected comma-separated positive numbers of seconds, e.g. 0.5,1,2,3,4.5,10,30") from None
    if not delays or any(not 0 < d <= 3600 for d in delays):
        raise InvalidValue(
            "expected comma-separated positive numbers of seconds (each at most 3600), e.g. 0.5,1,2,3,4.5,10,30"
        )
    return delays


def parse_stream_url(raw: Any) -> str | None:
    """Parse a ws(s):// URL template containing {0}; empty means not set."""
    text = str(raw).strip()
    if not text:
        return None
    if "{0}" not in text or not text.startswith(("ws://", "wss://")):
        raise InvalidValue("expected a ws:// or wss:// URL template containing {0} (the encoded auth header)")
    return text


def parse_optional_seed(raw: Any) -> int | None:
    """Parse a non-negative 63-bit seed; empty means not set."""
    text = str(raw).strip()
    if not text:
        return None
    return int_parser(0, 2**63 - 1)(text)


def parse_totp_secret(raw: Any) -> str | None:
    """Parse a base32 TOTP secret (spaces dropped, upper-cased); empty means not set."""
    text = str(raw).strip().replace(" ", "").upper()
    if not text:
        return None
    if not re.fullmatch(r"[A-Z2-7]{16,}=*", text):
        raise InvalidValue("expected a base32 TOTP secret of at least 16 characters (A-Z, 2-7)")
    return text


def parse_https_url(raw: Any) -> str | None:
    """Parse an absolute http(s) URL; empty means not set."""
    text = str(raw).strip()
    if not text:
        return None
    parts = urlsplit(text)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise InvalidValue("expected an absolute http(s) URL")
    return text


def parse_upstream_base(raw: Any) -> str | None:
    """Parse a base URL without its trailing slash; empty means not set."""
    text = str(raw).strip().rstrip("/")
    if not text:
        return None
    parts = urlsplit(text)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise InvalidValue("expected a base URL such as http://127.0.0.1:9000")
    return text


def limit_parser(high: float, *, integer: bool = False, unit: str = "") -> Callable[[Any], Any]:
    """Return a parser of a limit: ``off`` (or 0, empty, none) turns it off and reads as 0, else a number up to high."""
    accepts = f"expected {'an integer' if integer else 'a number of ' + unit} above 0 and at most {high:g}, or off"

    def parse(raw: Any) -> float:
        if raw is None or str(raw).strip().lower() in ("", "off", "none", "null"):
            return 0
        try:
            if isinstance(raw, bool):
                raise ValueError
            value = float(str(raw).strip()) if not isinstance(raw, int | float) else float(raw)
        except ValueError:
            raise InvalidValue(accepts) from None
        if not 0 <= value <= high or (integer and not value.is_integer()):  # NaN fails the comparison
            raise InvalidValue(accepts)
        return int(value) if integer else value

    return parse


def parse_symbols(raw: Any) -> tuple[str, ...]:
    """Parse a symbol list (a list or comma-separated text), upper-cased; empty means none."""
    items = list(raw) if isinstance(raw, list | tuple) else str(raw).split(",")
    symbols = [str(item).strip().upper() for item in items if str(item).strip()]
    for symbol in symbols:
        if not re.fullmatch(r"[A-Z0-9./^$-]{1,32}", symbol):
            raise InvalidValue("expected comma-separated symbols, e.g. AAPL,MSFT,SPY")
    return tuple(dict.fromkeys(symbols))
