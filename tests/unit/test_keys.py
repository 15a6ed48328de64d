"""The API key: generated once, kept in the keychain or a 0600 file, overridable, compared in constant time."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from ftdesk.domain.errors import Conflict
from ftdesk.service.keys import API_KEY_ENTRY, KEYCHAIN_SERVICE, ApiKeyStore, KeySource, SecretVault, keys_match
from tests.fakes.keyring import InMemoryKeyring


def test_first_start_generates_a_key_in_the_keychain_and_reuses_it(tmp_path: Path) -> None:
    backend = InMemoryKeyring()
    store = ApiKeyStore(SecretVault(backend), tmp_path, override=None)
    key, source = store.load_or_create()
    assert source is KeySource.KEYCHAIN and len(key) >= 40
    assert backend.entries[(KEYCHAIN_SERVICE, API_KEY_ENTRY)] == key
    assert not (tmp_path / "api-key").exists()
    again, _ = ApiKeyStore(SecretVault(backend), tmp_path, override=None).load_or_create()
    assert again == key
    assert list(backend.entries) == [(KEYCHAIN_SERVICE, API_KEY_ENTRY)], "the probe entry must not linger"


def test_without_a_keychain_the_key_lives_in_a_0600_file(tmp_path: Path) -> None:
    for vault in (SecretVault(None), SecretVault(InMemoryKeyring(broken=True))):
        data_dir = tmp_path / str(id(vault))
        key, source = ApiKeyStore(vault, data_dir, override=None).load_or_create()
        path = data_dir / "api-key"
        assert source is KeySource.FILE
        assert path.read_text().strip() == key
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert ApiKeyStore(vault, data_dir, override=None).load_or_create() == (key, KeySource.FILE)


def test_environment_override_wins_and_cannot_be_regenerated(tmp_path: Path) -> None:
    backend = InMemoryKeyring()
    store = ApiKeyStore(SecretVault(backend), tmp_path, override="fixed-key-from-the-environment")
    assert store.load_or_create() == ("fixed-key-from-the-environment", KeySource.ENVIRONMENT)
    assert backend.entries == {}
    with pytest.raises(Conflict, match="FTSERVICE_API_KEY"):
        store.regenerate()


def test_regenerate_replaces_the_stored_key(tmp_path: Path) -> None:
    store = ApiKeyStore(SecretVault(InMemoryKeyring()), tmp_path, override=None)
    first, _ = store.load_or_create()
    second, _ = store.regenerate()
    assert first != second
    assert store.load_or_create()[0] == second


def test_keys_match_is_exact() -> None:
    assert keys_match("abc", "abc")
    assert not keys_match("abc", "abd") and not keys_match("abc", "abcd") and not keys_match("", "abc")


def test_the_keychain_fallback_is_said_once_when_the_key_file_is_made_not_on_every_launch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ftdesk.service.keys")
    ApiKeyStore(SecretVault(InMemoryKeyring(broken=True)), tmp_path, override=None).load_or_create()
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len(said) == 1 and said[0].startswith("No usable OS keychain (")
    assert f"the API key is kept in {tmp_path / 'api-key'}" in said[0]
    caplog.clear()
    for _launch in range(2):  # later launches, and a launch that only hands over (load), stay quiet
        ApiKeyStore(SecretVault(InMemoryKeyring(broken=True)), tmp_path, override=None).load_or_create()
        ApiKeyStore(SecretVault(InMemoryKeyring(broken=True)), tmp_path, override=None).load()
    assert [r for r in caplog.records if r.levelno >= logging.INFO] == []


def test_loading_writes_nothing_where_no_key_was_made(tmp_path: Path) -> None:
    assert ApiKeyStore(SecretVault(None), tmp_path / "fresh", override=None).load() is None
    assert not (tmp_path / "fresh").exists()
