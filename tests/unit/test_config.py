"""Settings: the spec's defaults, precedence env > file > defaults, and one-line errors."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from ftdesk.config import (
    SETTINGS,
    ConfigError,
    Source,
    load_settings,
    save_settings_file,
    settings_table_markdown,
    validate_setting,
)

SPEC_VARIABLES = {
    "FTSERVICE_HOST": "127.0.0.1",
    "FTSERVICE_PORT": 8787,
    "FTSERVICE_API_KEY_REQUIRED": True,
    "FTSERVICE_ENCRYPTION_KEY": None,
    "FTSERVICE_LIVE_TRADING": False,
    "FTSERVICE_AUTO_REAUTH": True,
    "FTSERVICE_SESSION_KEEPALIVE_INTERVAL": 300,
    "FTSERVICE_LOG_LEVEL": "INFO",
    "FTSERVICE_BEPS_TOKEN": None,
    "FTSERVICE_BEPS_HOST": None,
    "FTSERVICE_BEPS_STREAM_URL": None,
    "FTSERVICE_BEPS_MID": None,
    "FTSERVICE_BEPS_APP_ID": "ATN",
}


def env_for(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"FTSERVICE_DATA_DIR": str(tmp_path), **values}


def test_defaults_match_the_spec_and_the_issue(tmp_path: Path) -> None:
    settings = load_settings(env_for(tmp_path))
    by_env = {spec.env: getattr(settings, spec.name) for spec in SETTINGS}
    for variable, default in SPEC_VARIABLES.items():
        assert by_env[variable] == default, variable
    assert settings.broker == "paper"
    assert settings.api_key is None
    assert settings.allowed_origins == ()
    assert settings.unsubscribe_delay == 10
    assert settings.stream_backoff == (0.5, 1, 2, 3, 4.5, 10, 30)
    assert settings.data_dir == tmp_path
    assert all(source is Source.DEFAULT for source in settings.sources.values())


def test_default_data_dir_is_the_platform_user_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    settings = load_settings({})
    assert settings.data_dir == tmp_path / "xdg" / "ftdesk"


def test_environment_beats_file_beats_default(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(json.dumps({"port": 9100, "log_level": "debug", "live_trading": True}))
    settings = load_settings(env_for(tmp_path, FTSERVICE_PORT="9200"))
    assert settings.port == 9200 and settings.sources["port"] is Source.ENV
    assert settings.log_level == "DEBUG" and settings.sources["log_level"] is Source.FILE
    assert settings.live_trading is True
    assert settings.host == "127.0.0.1" and settings.sources["host"] is Source.DEFAULT
    assert settings.locked_by_env("port") and not settings.locked_by_env("log_level")


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("FTSERVICE_PORT", "abc", "FTSERVICE_PORT='abc' is not valid: expected an integer from 0 to 65535"),
        ("FTSERVICE_PORT", "70000", "expected an integer from 0 to 65535"),
        ("FTSERVICE_LIVE_TRADING", "maybe", "FTSERVICE_LIVE_TRADING='maybe' is not valid: expected true or false"),
        ("FTSERVICE_BROKER", "schwab", "FTSERVICE_BROKER='schwab' is not valid: expected one of paper, fidelity"),
        ("FTSERVICE_LOG_LEVEL", "LOUD", "expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
        ("FTSERVICE_SESSION_KEEPALIVE_INTERVAL", "-3", "FTSERVICE_SESSION_KEEPALIVE_INTERVAL='-3' is not valid"),
        (
            "FTSERVICE_STREAM_BACKOFF",
            "1,two",
            "FTSERVICE_STREAM_BACKOFF='1,two' is not valid: expected comma-separated",
        ),
        ("FTSERVICE_STREAM_BACKOFF", "0,1", "expected comma-separated positive numbers"),
        ("FTSERVICE_ALLOWED_ORIGINS", "localhost:3000", "expected comma-separated origins"),
        ("FTSERVICE_BEPS_STREAM_URL", "wss://x/graphql", "containing {0}"),
    ],
)
def test_a_bad_value_stops_startup_with_one_line_naming_the_variable(
    tmp_path: Path, variable: str, value: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env_for(tmp_path, **{variable: value}))
    message = str(info.value)
    assert expected in message
    assert variable in message
    assert "\n" not in message


def test_a_bad_value_carries_the_setting_and_the_reason_as_fields(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env_for(tmp_path, FTSERVICE_PORT="70000"))
    assert (info.value.setting, info.value.reason) == ("port", "expected an integer from 0 to 65535")
    assert info.value.value_shown == "FTSERVICE_PORT='70000'"
    with pytest.raises(ConfigError) as info:
        validate_setting("beps_stream_url", "wss://x/graphql")
    assert info.value.setting == "beps_stream_url"
    assert info.value.reason.startswith("expected a ws:// or wss:// URL template containing {0}")


def test_invalid_fernet_key_is_named_without_echoing_the_secret(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env_for(tmp_path, FTSERVICE_ENCRYPTION_KEY="not-a-real-key-but-secret"))
    message = str(info.value)
    assert message.startswith("FTSERVICE_ENCRYPTION_KEY is not valid: expected a Fernet key")
    assert "not-a-real-key-but-secret" not in message


def test_valid_fernet_key_is_accepted(tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    assert load_settings(env_for(tmp_path, FTSERVICE_ENCRYPTION_KEY=key)).encryption_key == key


def test_lists_parse_from_commas(tmp_path: Path) -> None:
    settings = load_settings(
        env_for(
            tmp_path,
            FTSERVICE_ALLOWED_ORIGINS="http://localhost:3000, https://Example.com/",
            FTSERVICE_STREAM_BACKOFF="1,2.5",
        )
    )
    assert settings.allowed_origins == ("http://localhost:3000", "https://example.com")
    assert settings.stream_backoff == (1.0, 2.5)


def test_bad_settings_file_names_the_file_and_the_key(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text('{"port": "abc"}')
    with pytest.raises(ConfigError, match=r"'port' in .*settings.json='abc' is not valid: expected an integer"):
        load_settings(env_for(tmp_path))
    (tmp_path / "settings.json").write_text('{"prot": 1}')
    with pytest.raises(ConfigError, match=r"unknown setting 'prot'"):
        load_settings(env_for(tmp_path))
    (tmp_path / "settings.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"not valid JSON \(line 1"):
        load_settings(env_for(tmp_path))


def test_secrets_cannot_live_in_the_settings_file(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(json.dumps({"api_key": "x" * 20}))
    with pytest.raises(ConfigError, match="is a secret and cannot be kept in the settings file; set FTSERVICE_API_KEY"):
        load_settings(env_for(tmp_path))


def test_save_settings_file_round_trips_and_validates(tmp_path: Path) -> None:
    save_settings_file(tmp_path, {"port": 9300, "allowed_origins": ("http://localhost:3000",)})
    save_settings_file(tmp_path, {"log_level": "WARNING"})
    settings = load_settings(env_for(tmp_path))
    assert (settings.port, settings.log_level, settings.allowed_origins) == (
        9300,
        "WARNING",
        ("http://localhost:3000",),
    )
    with pytest.raises(ConfigError):
        save_settings_file(tmp_path, {"port": "abc"})
    with pytest.raises(ConfigError):
        save_settings_file(tmp_path, {"encryption_key": Fernet.generate_key().decode()})
    save_settings_file(tmp_path, {"port": None})
    assert load_settings(env_for(tmp_path)).port == 8787


def test_repr_never_shows_secrets(tmp_path: Path) -> None:
    settings = load_settings(env_for(tmp_path, FTSERVICE_API_KEY="k" * 24, FTSERVICE_BEPS_TOKEN="jwt-secret-value"))
    text = repr(settings)
    assert "k" * 24 not in text and "jwt-secret-value" not in text
    assert "api_key='***'" in text and "beps_token='***'" in text


def test_readme_table_lists_every_variable() -> None:
    table = settings_table_markdown()
    for spec in SETTINGS:
        assert f"`{spec.env}`" in table
    assert "`FTSERVICE_DATA_DIR`" in table
    assert len(SPEC_VARIABLES) == 13


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_secure_data_dir_creates_it_private_and_tightens_what_an_older_install_left(tmp_path: Path) -> None:
    from ftdesk.data_dir import secure_data_dir, tightened_message

    data_dir = tmp_path / "new" / "ftdesk"
    assert secure_data_dir(data_dir) == []
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700

    (data_dir / "logs").mkdir(mode=0o755)
    (data_dir / "logs" / "ftdesk.log.1").write_text("old")
    (data_dir / "journal.sqlite3").write_text("")
    (data_dir / "api-key").write_text("k")
    (data_dir / "api-key").chmod(0o600)  # already private: left alone, not reported
    outside = tmp_path / "shared.txt"
    outside.write_text("not ours to change")
    outside.chmod(0o644)
    (data_dir / "link").symlink_to(outside)
    for path in (data_dir, data_dir / "logs", data_dir / "logs" / "ftdesk.log.1", data_dir / "journal.sqlite3"):
        path.chmod(0o755 if path.is_dir() else 0o644)

    tightened = secure_data_dir(data_dir)
    assert sorted(tightened) == [".", "journal.sqlite3", "logs", "logs/ftdesk.log.1"]
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((data_dir / "logs").stat().st_mode) == 0o700
    assert stat.S_IMODE((data_dir / "logs" / "ftdesk.log.1").stat().st_mode) == 0o600
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644, "a link out of the data dir is not followed"
    assert secure_data_dir(data_dir) == [], "a second start has nothing left to do"
    message = tightened_message(data_dir, tightened, shown=2)
    assert "made 4 entries readable by this user only" in message and "and 2 more" in message
