"""Logging: stderr plus a rotating file in the data dir, with known secrets scrubbed from every line."""

from __future__ import annotations

import logging
import logging.handlers
import sys
from collections.abc import Iterable
from pathlib import Path

LOG_FILE_NAME = "ftdesk.log"
_MASK = "***"


def log_dir(data_dir: Path) -> Path:
    """Return the folder of the log files inside a data dir."""
    return data_dir / "logs"


class SecretRedactor(logging.Filter):
    """Replaces every known secret value in a log record with ***, as a last line of defence."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        for secret in secrets:
            self.add(secret)

    def add(self, secret: str | None) -> None:
        """Start scrubbing a secret (values shorter than 6 characters are too common to scrub)."""
        if secret and len(secret) >= 6:
            self._secrets.add(secret)

    def discard(self, secret: str | None) -> None:
        """Stop scrubbing a secret that is no longer in use."""
        if secret:
            self._secrets.discard(secret)

    def scrub(self, text: str) -> str:
        """Return text with every known secret masked."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, _MASK)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        """Mask secrets in the formatted message and any exception text."""
        if not self._secrets:
            return True
        message = record.getMessage()
        scrubbed = self.scrub(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and record.exc_info[1] is not None:
            formatted = logging.Formatter().formatException(record.exc_info)
            record.exc_text = self.scrub(formatted)
        return True


def configure_logging(level: str, log_dir: Path | None, redactor: SecretRedactor) -> Path | None:
    """Send logs to stderr and (when a dir is given) to a rotating file; return the file's path."""
    root = logging.getLogger()
    root.setLevel(level)
    for handler in list(root.handlers):
        if getattr(handler, "_ftdesk", False):
            root.removeHandler(handler)
            handler.close()
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = []
    if sys.stderr is not None:  # a windowed frozen app (Windows, macOS) has no stderr: the file is the log
        handlers.append(logging.StreamHandler())
    log_file: Path | None = None
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        log_file = log_dir / LOG_FILE_NAME
        handlers.append(
            logging.handlers.RotatingFileHandler(log_file, maxBytes=5 * 1024 * 1024, backupCount=5, encoding="utf-8")
        )
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(redactor)
        handler._ftdesk = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    # aiohttp logs each request at INFO through our AccessLogger; keep its own chatter at WARNING.
    logging.getLogger("aiohttp").setLevel(max(logging.WARNING, root.level))
    return log_file
