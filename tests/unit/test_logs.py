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
