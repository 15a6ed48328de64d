"""Secrets never reach a log line, even when code logs them by mistake."""

from __future__ import annotations

import logging
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine

from ftdesk.logs import OUR_HANDLER, SecretRedactor


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


def test_a_windowed_app_without_stderr_logs_to_its_file_only(tmp_path, monkeypatch, configured_logging) -> None:
    import sys

    from ftdesk.logs import configure_logging

    monkeypatch.setattr(sys, "stderr", None)  # what a windowed PyInstaller app gets on Windows and macOS
    root = logging.getLogger()
    log_file = configure_logging("INFO", tmp_path, SecretRedactor())
    logging.getLogger("ftdesk.test").warning("written with no console")
    ours = [handler for handler in root.handlers if handler.get_name() == OUR_HANDLER]
    assert [type(handler).__name__ for handler in ours] == ["PrivateRotatingFileHandler"]
    for handler in ours:
        handler.flush()
    assert log_file is not None and "written with no console" in log_file.read_text()


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_the_log_file_and_every_rotated_one_are_readable_by_the_user_alone(tmp_path) -> None:
    from ftdesk.logs import PrivateRotatingFileHandler

    old = tmp_path / "ftdesk.log"
    old.write_text("written by an older version\n")
    old.chmod(0o644)
    handler = PrivateRotatingFileHandler(old, maxBytes=200, backupCount=3, encoding="utf-8")
    logger = logging.getLogger("test.rotation")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for number in range(40):
            logger.warning("line %d of the rotation test, long enough to rotate every few lines", number)
    finally:
        logger.removeHandler(handler)
        handler.close()
    files = sorted(path.name for path in tmp_path.iterdir())
    assert files == ["ftdesk.log", "ftdesk.log.1", "ftdesk.log.2", "ftdesk.log.3"]
    assert {path.name: oct(stat.S_IMODE(path.stat().st_mode)) for path in tmp_path.iterdir()} == dict.fromkeys(
        files, "0o600"
    )


def test_a_record_is_one_line_whatever_text_it_carries() -> None:
    from ftdesk.logs import OneRecordPerLineFormatter, log_safe

    formatter = OneRecordPerLineFormatter("%(levelname)s %(name)s: %(message)s")
    record = logging.LogRecord(
        "ftdesk.x", logging.INFO, __file__, 1, "upstream said %s", ("no\nINFO ftdesk: forged\r\x1b[2J",), None
    )
    text = formatter.format(record)
    assert text.splitlines()[0] == "INFO ftdesk.x: upstream said no"
    assert all(line.startswith("    ") for line in text.splitlines()[1:]), "continuations cannot pass for records"
    assert "\r" not in text and "\x1b" not in text and "\\x1b[2J" in text
    assert log_safe("/a\nb\u2028c" + "x" * 400, limit=10) == "/a\\nb\\u2028cxxxx... (406 characters)"


def test_access_lines_written_in_batches_rotate_where_one_by_one_would(tmp_path: Path) -> None:
    from ftdesk.logs import AccessQueueHandler, OneRecordPerLineFormatter, PrivateRotatingFileHandler

    formatter = OneRecordPerLineFormatter("%(levelname)s %(name)s: %(message)s")
    redactor = SecretRedactor(["secret-path-part"])

    def handler(name: str) -> PrivateRotatingFileHandler:
        made = PrivateRotatingFileHandler(tmp_path / name, maxBytes=1000, backupCount=100, encoding="utf-8")
        made.setFormatter(formatter)
        made.addFilter(redactor)
        return made

    batched, one_by_one = handler("batched.log"), handler("single.log")
    queue = AccessQueueHandler([batched])
    logger = logging.getLogger("ftdesk.access")
    line = "%s %s -> %s in %.1f ms (request %s)"
    for n in range(120):
        args = ("GET", f"/api/v1/x/{n}/secret-path-part", 200, 0.5, f"{n:032x}")
        assert queue.put_line(logging.INFO, line, args)
        one_by_one.handle(logger.makeRecord("ftdesk.access", logging.INFO, "", 0, line, args, None))
    queue.stop()  # writes what is queued: one batch or a few, as the writer's rounds fell
    batched.close()
    one_by_one.close()

    def files(name: str) -> list[str]:
        paths = sorted(tmp_path.glob(f"{name}*"), key=lambda p: -int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
        return [p.read_text(encoding="utf-8") for p in paths]

    assert files("batched.log") == files("single.log"), "the same lines, split into the same files"
    assert len(files("batched.log")) > 5 and all(len(text) < 1000 for text in files("batched.log"))
    assert "secret-path-part" not in "".join(files("batched.log"))


def test_access_lines_made_without_a_record_read_as_the_logger_writes_them(tmp_path: Path) -> None:
    from ftdesk.logs import AccessQueueHandler, OneRecordPerLineFormatter, PrivateRotatingFileHandler

    # The service's own format, with the time: the writer fills it in without a record.
    formatter = OneRecordPerLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    redactor = SecretRedactor(["hunter2-secret"])
    handlers = {}
    for name in ("queued.log", "logged.log"):
        handlers[name] = PrivateRotatingFileHandler(tmp_path / name, encoding="utf-8")
        handlers[name].setFormatter(formatter)
        handlers[name].addFilter(redactor)
    queue = AccessQueueHandler([handlers["queued.log"]])
    logger = logging.getLogger("ftdesk.access")
    line = "%s %s -> %s in %.1f ms (request %s)"
    paths = ["/api/v1/health", "/x/hunter2-secret/y", "/odd\nINFO forged", "/caf\u00e9", "/t\x1b[2J"]
    start = datetime(2028, 2, 29, 23, 59, 59, 998_000, tzinfo=UTC)  # lines on both sides of a second
    records: list[logging.LogRecord] = []
    for n, path in enumerate(paths * 3):
        args = ("GET", path, 200 + n, n / 7, f"{n:032x}")
        # The clock stands still for each line, so the queued line and the logged record share their time.
        with time_machine.travel(start + timedelta(microseconds=370 * n), tick=False):
            assert queue.put_line(logging.INFO, line, args)
            records.append(logger.makeRecord("ftdesk.access", logging.INFO, "", 0, line, args, None))
    queue.stop()
    for record in records:  # formatted where the queued lines were, in the machine's own time zone
        handlers["logged.log"].handle(record)
    for handler in handlers.values():
        handler.close()
    queued = (tmp_path / "queued.log").read_text(encoding="utf-8")
    assert queued == (tmp_path / "logged.log").read_text(encoding="utf-8")
    assert queued.count(" INFO ftdesk.access: GET ") == 15 and "hunter2-secret" not in queued
    assert "\n    INFO forged" in queued and "\\x1b[2J" in queued, "one record per line, as the formatter makes it"
