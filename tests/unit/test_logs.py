"""Secrets never reach a log line, even when code logs them by mistake."""

from __future__ import annotations

import logging

from ftdesk.logs import SecretRedactor


def test_redactor_masks_known_secrets_in_messages_args_and_tracebacks() -> None:
    redactor = SecretRedactor(["super-secret-key", None, "abc"])
    logger = logging.getLogger("test.redactor")
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    handler.addFilter(redactor)
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("key is %s", "super-secret-key")
        try:
            raise ValueError("failed with super-secret-key")
        except ValueError:
            logger.exception("boom")
        logger.warning("abc is too short to be treated as a secret")
    finally:
        logger.removeHandler(handler)
    assert records[0].getMessage() == "key is ***"
    assert "super-secret-key" not in (records[1].exc_text or "") and "***" in (records[1].exc_text or "")
    assert records[2].getMessage().startswith("abc")


def test_a_windowed_app_without_stderr_logs_to_its_file_only(tmp_path, monkeypatch) -> None:
    import sys

    from ftdesk.logs import configure_logging

    monkeypatch.setattr(sys, "stderr", None)  # what a windowed PyInstaller app gets on Windows and macOS
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        log_file = configure_logging("INFO", tmp_path, SecretRedactor())
        logging.getLogger("ftdesk.test").warning("written with no console")
        ours = [handler for handler in root.handlers if getattr(handler, "_ftdesk", False)]
        assert [type(handler).__name__ for handler in ours] == ["PrivateRotatingFileHandler"]
        for handler in ours:
            handler.flush()
        assert log_file is not None and "written with no console" in log_file.read_text()
    finally:
        for handler in list(root.handlers):
            if handler not in before:
                root.removeHandler(handler)
                handler.close()
        for handler in before:
            if handler not in root.handlers:
                root.addHandler(handler)
