"""Settings: ``FTSERVICE_*`` environment > ``settings.json`` in the data dir > defaults.

One table (``SETTINGS``) describes every setting: its variable, default, parser, what it accepts and
whether it may live in the settings file. Parsing, precedence, error messages, the README table and the
settings dialog all read that table, so a setting is declared exactly once.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import platformdirs
from cryptography.fernet import Fernet

ENV_PREFIX = "FTSERVICE_"
SETTINGS_FILE_NAME = "settings.json"
APP_NAME = "ftdesk"


class ConfigError(Exception):
    """A setting has a value ftdesk cannot use; the message is one line naming it and what it accepts."""


class Source(StrEnum):
    """Where a setting's value came from."""

    ENV = "env"
    FILE = "file"
    DEFAULT = "default"


class _Invalid(ValueError):
    """Raised by a parser; the message says what the setting accepts."""


# --- parsers: each takes a raw value (str from the environment, any JSON value from the file) ----------


def _parse_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in {"true", "1", "yes", "on"}:
        return True
    if text in {"false", "0", "no", "off"}:
        return False
    raise _Invalid("expected true or false (also accepted: 1/0, yes/no, on/off)")


def _int_parser(low: int, high: int) -> Callable[[Any], int]:
    def parse(raw: Any) -> int:
        try:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            value = int(str(raw).strip()) if not isinstance(raw, int | float) else int(raw)
        except ValueError:
            raise _Invalid(f"expected an integer from {low} to {high}") from None
        if not low <= value <= high:
            raise _Invalid(f"expected an integer from {low} to {high}")
        return value

    return parse


def _float_parser(
    low: float, high: float, *, low_inclusive: bool = True, unit: str = "seconds"
) -> Callable[[Any], float]:
    bound = "at least" if low_inclusive else "greater than"
    accepts = f"expected a number of {unit} {bound} {low:g} and at most {high:g}"

    def parse(raw: Any) -> float:
        try:
            if isinstance(raw, bool):
                raise ValueError
            value = float(str(raw).strip()) if not isinstance(raw, int | float) else float(raw)
        except ValueError:
            raise _Invalid(accepts) from None
        ok_low = value >= low if low_inclusive else value > low
        if not ok_low or value > high or value != value:  # NaN fails every comparison but the last
            raise _Invalid(accepts)
        return value

    return parse


def _choice_parser(*choices: str, upper: bool = False) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        text = str(raw).strip()
        text = text.upper() if upper else text.lower()
        if text not in choices:
            raise _Invalid("expected one of " + ", ".join(choices))
        return text

    return parse


def _parse_optional_text(raw: Any) -> str | None:
    text = str(raw).strip()
    return text or None


def _parse_text(raw: Any) -> str:
    text = str(raw).strip()
    if not text:
        raise _Invalid("expected a non-empty value")
    return text


def _parse_host(raw: Any) -> str:
    text = str(raw).strip()
    if not text or any(c.isspace() for c in text) or "/" in text:
        raise _Invalid("expected an IP address or host name to bind, e.g. 127.0.0.1")
    return text


def _parse_fernet_key(raw: Any) -> str | None:
    text = str(raw).strip()
    if not text:
        return None
    try:
        Fernet(text.encode())
    except (ValueError, TypeError):
        raise _Invalid(
            "expected a Fernet key (32 url-safe base64-encoded bytes); generate one with "
            'python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"'
        ) from None
    return text


def _parse_api_key(raw: Any) -> str | None:
    text = str(raw).strip()
    if not text:
        return None
    if len(text) < 16 or not re.fullmatch(r"[\x21-\x7e]+", text):
        raise _Invalid("expected at least 16 printable characters without spaces")
    return text


def _parse_origins(raw: Any) -> tuple[str, ...]:
    items = list(raw) if isinstance(raw, list | tuple) else str(raw).split(",")
    origins: list[str] = []
    for item in items:
        text = str(item).strip().rstrip("/")
        if not text:
            continue
        parts = urlsplit(text)
        if parts.scheme not in {"http", "https"} or not parts.hostname or parts.path or parts.query:
            raise _Invalid("expected comma-separated origins like http://localhost:3000 (scheme, host, optional port)")
        origins.append(f"{parts.scheme}://{parts.netloc.lower()}")
    return tuple(origins)


def _parse_backoff(raw: Any) -> tuple[float, ...]:
    items = list(raw) if isinstance(raw, list | tuple) else str(raw).split(",")
    try:
        delays = tuple(float(str(item).strip()) for item in items if str(item).strip())
    except ValueError:
        raise _Invalid("expected comma-separated positive numbers of seconds, e.g. 0.5,1,2,3,4.5,10,30") from None
    if not delays or any(not 0 < d <= 3600 for d in delays):
        raise _Invalid(
            "expected comma-separated positive numbers of seconds (each at most 3600), e.g. 0.5,1,2,3,4.5,10,30"
        )
    return delays


def _parse_stream_url(raw: Any) -> str | None:
    text = str(raw).strip()
    if not text:
        return None
    if "{0}" not in text or not text.startswith(("ws://", "wss://")):
        raise _Invalid("expected a ws:// or wss:// URL template containing {0} (the encoded auth header)")
    return text


def _parse_optional_seed(raw: Any) -> int | None:
    text = str(raw).strip()
    if not text:
        return None
    return _int_parser(0, 2**63 - 1)(text)


def _parse_totp_secret(raw: Any) -> str | None:
    text = str(raw).strip().replace(" ", "").upper()
    if not text:
        return None
    if not re.fullmatch(r"[A-Z2-7]{16,}=*", text):
        raise _Invalid("expected a base32 TOTP secret of at least 16 characters (A-Z, 2-7)")
    return text


def _parse_https_url(raw: Any) -> str | None:
    text = str(raw).strip()
    if not text:
        return None
    parts = urlsplit(text)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise _Invalid("expected an absolute http(s) URL")
    return text


def _parse_upstream_base(raw: Any) -> str | None:
    text = str(raw).strip().rstrip("/")
    if not text:
        return None
    parts = urlsplit(text)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise _Invalid("expected a base URL such as http://127.0.0.1:9000")
    return text


@dataclass(frozen=True)
class SettingSpec:
    """One setting: how it is named, parsed, defaulted and documented."""

    name: str
    default: Any
    parse: Callable[[Any], Any]
    doc: str
    accepts: str
    secret: bool = False
    file_allowed: bool = True
    restart_required: bool = True

    @property
    def env(self) -> str:
        """Return the environment variable name."""
        return ENV_PREFIX + self.name.upper()


SETTINGS: tuple[SettingSpec, ...] = (
    # --- the thirteen variables of the spec ---------------------------------------------------------
    SettingSpec("host", "127.0.0.1", _parse_host, "Bind address.", "an IP address or host name"),
    SettingSpec("port", 8787, _int_parser(0, 65535), "Port (0 picks a free one and prints it).", "0-65535"),
    SettingSpec("api_key_required", True, _parse_bool, "Require `Authorization: Bearer <API_KEY>`.", "true/false"),
    SettingSpec(
        "encryption_key",
        None,
        _parse_fernet_key,
        "Fernet key that encrypts stored credentials (default: a key kept in the OS keychain).",
        "a Fernet key",
        secret=True,
        file_allowed=False,
    ),
    SettingSpec(
        "live_trading",
        False,
        _parse_bool,
        "Allow real order placement (off = dry-run).",
        "true/false",
        restart_required=False,
    ),
    SettingSpec(
        "auto_reauth",
        True,
        _parse_bool,
        "Log in again with stored credentials when the session expires.",
        "true/false",
        restart_required=False,
    ),
    SettingSpec(
        "session_keepalive_interval", 300.0, _float_parser(5, 86400), "Keep-alive interval, seconds.", "5-86400"
    ),
    SettingSpec(
        "log_level",
        "INFO",
        _choice_parser("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", upper=True),
        "Logging level.",
        "DEBUG, INFO, WARNING, ERROR, CRITICAL",
    ),
    SettingSpec(
        "beps_token",
        None,
        _parse_optional_text,
        "JWT for the BEPS account-event stream (overrides the token fetched at login; not renewed).",
        "a token",
        secret=True,
        file_allowed=False,
    ),
    SettingSpec(
        "beps_host", None, _parse_optional_text, "Host of the managed GraphQL service for BEPS.", "a host name"
    ),
    SettingSpec(
        "beps_stream_url",
        None,
        _parse_stream_url,
        "BEPS WebSocket URL template; `{0}` = encoded auth header.",
        "a ws(s):// URL containing {0}",
    ),
    SettingSpec("beps_mid", None, _parse_optional_text, "Member identifier for the BEPS subscription.", "text"),
    SettingSpec("beps_app_id", "ATN", _parse_text, "BEPS consumer app id.", "text"),
    SettingSpec(
        "beps_token_url",
        None,
        _parse_https_url,
        "URL of the BEPS token endpoint (default: dpservice's /ftgw/dp/security/token/authz/generate/1.0, "
        "whose /ftgw/dp start is inferred).",
        "an http(s) URL",
    ),
    SettingSpec(
        "beps_fallback_interval",
        15.0,
        _float_parser(0.05, 3600),
        "Seconds between polls of Fidelity's alert history while BEPS is down (fills still reach /streaming/events).",
        "0.05-3600",
    ),
    # --- ftdesk's own ------------------------------------------------------------------------------
    SettingSpec(
        "login_at_startup", False, _parse_bool, "Log in with the stored credentials when ftdesk starts.", "true/false"
    ),
    SettingSpec(
        "preview_ttl",
        300.0,
        _float_parser(5, 3600),
        "Seconds a preview's conf_num stays usable for a place.",
        "5-3600",
        restart_required=False,
    ),
    SettingSpec("broker", "paper", _choice_parser("paper", "fidelity"), "Brokerage behind the API.", "paper, fidelity"),
    SettingSpec(
        "api_key",
        None,
        _parse_api_key,
        "Fixed API key (default: generated once, kept in the OS keychain).",
        "16+ printable characters",
        secret=True,
        file_allowed=False,
    ),
    SettingSpec(
        "allowed_origins",
        (),
        _parse_origins,
        "Browser origins allowed to call the API besides the service's own.",
        "comma-separated origins, e.g. http://localhost:3000",
    ),
    SettingSpec(
        "unsubscribe_delay",
        10.0,
        _float_parser(0, 3600),
        "Seconds before an unused symbol is unsubscribed upstream.",
        "0-3600",
    ),
    SettingSpec(
        "stream_backoff",
        (0.5, 1.0, 2.0, 3.0, 4.5, 10.0, 30.0),
        _parse_backoff,
        "Reconnect delays of the upstream streams, seconds; the last one repeats.",
        "comma-separated positive numbers",
    ),
    SettingSpec(
        "max_body_bytes",
        1_048_576,
        _int_parser(1024, 64 * 1_048_576),
        "Largest request body accepted, bytes.",
        "1024-67108864",
    ),
    SettingSpec(
        "paper_seed",
        None,
        _parse_optional_seed,
        "Seed of the paper market (same seed, same prices); default: random per world.",
        "an integer",
    ),
    SettingSpec(
        "paper_password",
        None,
        _parse_optional_text,
        "Paper login password; default: any non-empty password.",
        "text",
        secret=True,
    ),
    SettingSpec(
        "paper_totp_secret",
        None,
        _parse_totp_secret,
        "Makes the paper account a 2FA account with this base32 TOTP secret.",
        "a base32 secret",
        secret=True,
    ),
    SettingSpec(
        "paper_session_lifetime",
        0.0,
        _float_parser(0, 7 * 86400),
        "Seconds a paper session lives without keep-alive (0 = never expires).",
        "0-604800",
    ),
    SettingSpec("paper_tick_interval", 1.0, _float_parser(0.01, 60), "Seconds between paper market ticks.", "0.01-60"),
    SettingSpec(
        "fidelity_upstream",
        None,
        _parse_upstream_base,
        "Route every Fidelity request to this base URL (tests and proxies); unset = the real hosts.",
        "a base URL",
    ),
    SettingSpec(
        "fidelity_read_rate",
        0.0,
        _float_parser(0, 10_000, unit="calls per second"),
        "Fixed ceiling on Fidelity reads per second; 0 = none: reads go at the caller's pace until Fidelity "
        "pushes back (429, or 503 with Retry-After), then slow down and recover by themselves.",
        "0-10000",
    ),
    SettingSpec(
        "fidelity_read_concurrency",
        16,
        _int_parser(1, 256),
        "Distinct Fidelity reads in flight at once (identical reads share one call).",
        "1-256",
    ),
    SettingSpec(
        "fidelity_read_share",
        1.0,
        _float_parser(0, 10),
        "Seconds a Fidelity answer also answers identical reads after it arrives (while reads take 25 ms or more); "
        "0 = only reads in flight share. Any write (an order, a cancel) ends it.",
        "0-10",
    ),
    SettingSpec(
        "fidelity_read_budget",
        15.0,
        _float_parser(1, 300),
        "Seconds a Fidelity read may spend waiting and retrying before it answers 502 `UPSTREAM_BUSY`.",
        "1-300",
    ),
    SettingSpec(
        "fidelity_read_retries",
        3,
        _int_parser(0, 10),
        "Retries of a Fidelity read answered 429, 502, 503, 504 or cut off (never of a write).",
        "0-10",
    ),
    SettingSpec(
        "fidelity_order_rate",
        5.0,
        _float_parser(0.1, 100),
        "Fidelity order entries and other writes per second after a burst of twice that; spaced, never refused.",
        "0.1-100",
    ),
    SettingSpec(
        "fidelity_logins_per_minute",
        5,
        _int_parser(1, 60),
        "Fidelity logins a minute; one more is refused at once with the wait (protects the account from lockout).",
        "1-60",
    ),
)
SETTINGS_BY_NAME: dict[str, SettingSpec] = {spec.name: spec for spec in SETTINGS}

DATA_DIR_ENV = ENV_PREFIX + "DATA_DIR"


@dataclass(frozen=True)
class Settings:
    """Every setting's effective value, plus where it came from."""

    data_dir: Path
    host: str
    port: int
    api_key_required: bool
    encryption_key: str | None
    live_trading: bool
    auto_reauth: bool
    session_keepalive_interval: float
    log_level: str
    beps_token: str | None
    beps_host: str | None
    beps_stream_url: str | None
    beps_mid: str | None
    beps_app_id: str
    beps_token_url: str | None
    beps_fallback_interval: float
    login_at_startup: bool
    preview_ttl: float
    broker: str
    api_key: str | None
    allowed_origins: tuple[str, ...]
    unsubscribe_delay: float
    stream_backoff: tuple[float, ...]
    max_body_bytes: int
    paper_seed: int | None
    paper_password: str | None
    paper_totp_secret: str | None
    paper_session_lifetime: float
    paper_tick_interval: float
    fidelity_upstream: str | None
    fidelity_read_rate: float
    fidelity_read_concurrency: int
    fidelity_read_share: float
    fidelity_read_budget: float
    fidelity_read_retries: int
    fidelity_order_rate: float
    fidelity_logins_per_minute: int
    sources: Mapping[str, Source] = field(default_factory=dict, compare=False)

    @property
    def settings_file(self) -> Path:
        """Return the path of the settings file."""
        return self.data_dir / SETTINGS_FILE_NAME

    @property
    def base_url(self) -> str:
        """Return the URL scripts use to reach the service."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def locked_by_env(self, name: str) -> bool:
        """Say whether an environment variable fixes this setting."""
        return self.sources.get(name) is Source.ENV

    def __repr__(self) -> str:
        shown = []
        for spec in SETTINGS:
            value = getattr(self, spec.name)
            shown.append(f"{spec.name}={'***' if spec.secret and value else value!r}")
        return f"Settings(data_dir={str(self.data_dir)!r}, {', '.join(shown)})"


def default_data_dir() -> Path:
    """Return the platform's per-user data directory for ftdesk."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


DATA_DIR_MODE = 0o700
"""The data dir and its folders, on POSIX: the user alone may list or enter them."""
DATA_FILE_MODE = 0o600
"""Every file in the data dir, on POSIX: the user alone may read it (orders, credentials, logs, settings)."""


def secure_data_dir(data_dir: Path) -> list[str]:
    """Create the data dir 0700 and take group and other access off everything in it; return what changed.

    Files get 0600 and folders 0700 (POSIX only: elsewhere the per-user profile folder keeps other users
    out). Installs made before this existed had the umask's 0644/0755. The names returned are relative to
    the data dir ("." for the dir itself). Symbolic links are not followed out of the data dir.
    """
    if os.name != "posix":
        data_dir.mkdir(parents=True, exist_ok=True)
        return []
    data_dir.mkdir(mode=DATA_DIR_MODE, parents=True, exist_ok=True)
    tightened: list[str] = []

    def tighten(path: Path, wanted: int) -> None:
        try:
            status = path.lstat()
            if stat.S_ISLNK(status.st_mode) or not status.st_mode & 0o077:
                return
            os.chmod(path, wanted)
        except OSError:  # gone meanwhile, or not ours: nothing this process could do about it
            return
        tightened.append(path.relative_to(data_dir).as_posix())

    tighten(data_dir, DATA_DIR_MODE)
    for root, folders, files in os.walk(data_dir):
        for name in folders:
            tighten(Path(root, name), DATA_DIR_MODE)
        for name in files:
            tighten(Path(root, name), DATA_FILE_MODE)
    return tightened


def tightened_message(data_dir: Path, tightened: list[str], *, shown: int = 8) -> str:
    """Return the one log line saying which data-dir entries ``secure_data_dir`` made private."""
    names = ", ".join(tightened[:shown]) + (f" and {len(tightened) - shown} more" if len(tightened) > shown else "")
    return (
        f"Data dir {data_dir}: made {len(tightened)} entries readable by this user only "
        f"(files 0600, folders 0700): {names}"
    )


def _describe(spec: SettingSpec, raw: Any, origin: str) -> str:
    shown = "" if spec.secret else f"={str(raw)!r}"
    return f"{origin}{shown} is not valid"


def _read_settings_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise ConfigError(f'{path}: expected a JSON object of settings, e.g. {{"port": 8787}}')
    return data


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build the effective settings; raise ``ConfigError`` with one line naming a bad value."""
    env = os.environ if environ is None else environ
    data_dir_raw = env.get(DATA_DIR_ENV, "").strip()
    data_dir = Path(data_dir_raw).expanduser() if data_dir_raw else default_data_dir()
    file_values = _read_settings_file(data_dir / SETTINGS_FILE_NAME)

    unknown = sorted(set(file_values) - set(SETTINGS_BY_NAME))
    if unknown:
        known = ", ".join(spec.name for spec in SETTINGS if spec.file_allowed)
        raise ConfigError(f"{data_dir / SETTINGS_FILE_NAME}: unknown setting {unknown[0]!r}; known settings: {known}")

    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for spec in SETTINGS:
        if spec.env in env:
            raw, origin, source = env[spec.env], spec.env, Source.ENV
        elif spec.name in file_values:
            if not spec.file_allowed:
                raise ConfigError(
                    f"{data_dir / SETTINGS_FILE_NAME}: {spec.name!r} is a secret and cannot be kept in the "
                    "settings file; "
                    f"set {spec.env} in the environment instead"
                )
            raw, origin, source = (
                file_values[spec.name],
                f"{spec.name!r} in {data_dir / SETTINGS_FILE_NAME}",
                Source.FILE,
            )
        else:
            values[spec.name] = spec.default
            sources[spec.name] = Source.DEFAULT
            continue
        try:
            values[spec.name] = spec.parse(raw)
        except _Invalid as exc:
            raise ConfigError(f"{_describe(spec, raw, origin)}: {exc}") from None
        sources[spec.name] = source
    return Settings(data_dir=data_dir, sources=sources, **values)


def validate_setting(name: str, raw: Any) -> Any:
    """Parse one setting's value; raise ``ConfigError`` naming it and what it accepts."""
    spec = SETTINGS_BY_NAME[name]
    try:
        return spec.parse(raw)
    except _Invalid as exc:
        raise ConfigError(f"{_describe(spec, raw, spec.name)}: {exc}") from None


def save_settings_file(data_dir: Path, changes: Mapping[str, Any]) -> None:
    """Merge changes into the settings file atomically (None removes a key)."""
    path = data_dir / SETTINGS_FILE_NAME
    current = _read_settings_file(path)
    for name, value in changes.items():
        spec = SETTINGS_BY_NAME.get(name)
        if spec is None or not spec.file_allowed:
            raise ConfigError(f"{name!r} cannot be kept in the settings file")
        if value is None:
            current.pop(name, None)
        else:
            validate_setting(name, value)
            current[name] = list(value) if isinstance(value, tuple) else value
    data_dir.mkdir(mode=DATA_DIR_MODE, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".settings-", dir=data_dir)  # mkstemp makes it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(current, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def settings_table_markdown() -> str:
    """Render the settings as the Markdown table of the README."""
    rows = ["| Variable | Default | Accepts | Meaning |", "|---|---|---|---|"]
    for spec in SETTINGS:
        default = spec.default
        if default is None:
            shown = "none"
        elif isinstance(default, tuple):
            shown = ",".join(f"{v:g}" for v in default) if default else "none"
        elif isinstance(default, bool):
            shown = str(default).lower()
        elif isinstance(default, float):
            shown = f"{default:g}"
        else:
            shown = str(default)
        rows.append(f"| `{spec.env}` | `{shown}` | {spec.accepts} | {spec.doc} |")
    rows.append(
        f"| `{DATA_DIR_ENV}` | platform user data dir | a directory | "
        "Where settings, logs and the paper world live (environment only). |"
    )
    return "\n".join(rows)
