"""Logging: stderr plus a rotating file in the data dir, with known secrets scrubbed from every line.

The log files are the user's alone (0600 on POSIX, rotated ones too), and a record is one line: text that
came from outside (a request path, a header, a symbol) cannot start a line that looks like another record.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import io
import logging
import logging.handlers
import os
import re
import sys
import threading
import time
import typing
from collections.abc import Iterable
from pathlib import Path

from ftdesk.data_dir import DATA_DIR_MODE, DATA_FILE_MODE

LOG_FILE_NAME = "ftdesk.log"
ACCESS_LOGGER = "ftdesk.access"
_MASK = "***"
_POSIX = os.name == "posix"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_CONTINUATION = "\n    "


def _escaped(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def _one_line(message: str) -> str:
    """Return a message as one record's text: control characters escaped, line breaks indented continuations."""
    return _CONTROL_BUT_NEWLINE.sub(_escaped, message).replace("\n", _CONTINUATION)


def msecs_of(created: float) -> float:
    """Return the milliseconds part of a time as ``LogRecord`` computes its ``msecs`` (Python 3.11 and 3.12)."""
    return int((created - int(created)) * 1000) + 0.0


_FIELD = re.compile(r"%\((\w+)\)")
_LINE_FIELDS = frozenset({"asctime", "levelname", "name", "message"})


def log_safe(value: object, limit: int = 300) -> str:
    """Return client-supplied text fit for a log line: control characters escaped (``\\n``), at most ``limit``."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text)} characters)"
    # Nothing to escape in printable text (every character _CONTROL matches is unprintable): the usual case,
    # an access line's method and path, skips the regex.
    if text.isprintable():
        return text
    return _CONTROL.sub(_escaped, text)


def mask_username(username: str | None) -> str | None:
    """Show enough of a username to recognise it, not enough to reuse it."""
    if not username:
        return None
    if len(username) <= 4:
        return username[0] + "***"
    return f"{username[:2]}***{username[-2:]}"


def logged_username(username: str | None) -> str:
    """Return a username as a log line shows it: masked, control characters escaped (one line, whatever it holds)."""
    return log_safe(mask_username(username) or "-")


class OneRecordPerLineFormatter(logging.Formatter):
    """Indents the continuation lines of a multi-line message and escapes other control characters.

    Every record's first line starts with its timestamp, so text logged from elsewhere (an upstream error
    message, a value someone forgot to pass through ``log_safe``) can never pose as a record of its own.
    """

    _second: tuple[int, str] | None = None

    def __init__(self, *args: typing.Any, **kwargs: typing.Any) -> None:
        super().__init__(*args, **kwargs)
        # A %-style format of a record's time, level, logger and message only (ours) can be filled in without a
        # record: ``line`` does that for the access log's writer, which is most of what a busy service logs.
        fields = set(_FIELD.findall(self._fmt or ""))
        self._line_format = self._fmt or ""
        self._line_has_time = "asctime" in fields
        self._fills = type(self._style) is logging.PercentStyle and fields <= _LINE_FIELDS and self.datefmt is None

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        """Return the record's local time, to the millisecond; the part to the second is made once a second."""
        if datefmt is not None or self.default_msec_format is None:
            return super().formatTime(record, datefmt)
        return self._time_of(record.created, record.msecs)

    def _time_of(self, created: float, msecs: float) -> str:
        second = int(created)
        cached = self._second
        if cached is None or cached[0] != second:
            cached = (second, time.strftime(self.default_time_format, self.converter(second)))
            self._second = cached  # a tuple replaced whole: the access log's writer thread formats too
        return self.default_msec_format % (cached[1], msecs)  # type: ignore[operator]  # None: see formatTime

    @property
    def fills_lines(self) -> bool:
        """Say whether ``line`` can make this formatter's lines (its format names only time, level, logger, message)."""
        return self._fills and not (self._line_has_time and self.default_msec_format is None)

    def line(self, created: float, levelname: str, name: str, message: str) -> str:
        """Return what ``format`` makes of a record with these fields and no exception (only where ``fills_lines``).

        ``created`` is a record's ``created`` (``time.time()`` when it happened); ``message`` its ``getMessage()``.
        """
        if not message.isprintable():
            message = _one_line(message)
        asctime = self._time_of(created, msecs_of(created)) if self._line_has_time else ""
        return self._line_format % {"asctime": asctime, "levelname": levelname, "name": name, "message": message}

    def formatMessage(self, record: logging.LogRecord) -> str:
        """Return the record's line with its message made safe."""
        if not record.message.isprintable():  # printable: no control character, no line break (most lines)
            record.message = _one_line(record.message)
        return super().formatMessage(record)


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log file only its owner can read: created 0600, tightened when older, kept so on rotation.

    Rotation renames the file (its mode goes with it) and opens a new one here, so every backup stays 0600.
    """

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, DATA_FILE_MODE)
        try:
            if _POSIX:
                os.fchmod(fd, DATA_FILE_MODE)  # a file made by an older version, or under a looser umask
            return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)
        except BaseException:
            os.close(fd)
            raise

    def shouldRollover(self, record: logging.LogRecord) -> bool:
        """Return whether the record would take the file past its size, checking the size first.

        The base class first asks whether the path is a regular file (two ``stat`` calls on every record);
        that only matters when the size says to rotate, so it is asked then.
        """
        if self.stream is None:
            self.stream = self._open()
        if self.maxBytes <= 0:
            return False
        self.stream.seek(0, 2)  # as the base class does, for Windows
        if self.stream.tell() + len(self.format(record)) + 1 < self.maxBytes:
            return False
        return bool(super().shouldRollover(record))

    def write_lines(self, lines: list[str]) -> None:
        """Write ready-made lines (the access log's writer) in as few writes as the file's size allows.

        Each file ends where ``emit`` would have ended it: before the line that would take it to its size.
        The caller holds the handler's lock and calls ``handleError`` on a failure, as ``emit`` would.
        """
        if self.stream is None:
            self.stream = self._open()
        if self.maxBytes <= 0:
            self.stream.write("".join(lines))
            self.flush()
            return
        self.stream.seek(0, 2)  # as shouldRollover does, for Windows
        position = self.stream.tell()
        start = 0
        for index, line in enumerate(lines):
            # As shouldRollover: never rotate an empty file, nor anything but a regular file.
            if position and position + len(line) >= self.maxBytes and Path(self.baseFilename).is_file():
                if index > start:
                    self.stream.write("".join(lines[start:index]))
                self.doRollover()
                assert self.stream is not None  # doRollover opened the new file
                start, position = index, 0
            position += len(line)
        self.stream.write("".join(lines[start:]))
        self.flush()

    def handleError(self, record: logging.LogRecord) -> None:
        """Say once, in one line on stderr, that the log file cannot be written (a full disk), not per record.

        The records still reach stderr through its own handler; each record tries the file again (a new
        stream), so the file takes them again once the disk has room.
        """
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            super().handleError(record)
            return
        if not getattr(self, "_failing", False):
            self._failing = True
            sys.stderr.write(
                f"ftdesk: the log file {self.baseFilename} cannot be written ({exc.strerror}); "
                "the log goes to stderr only until it can\n"
            )
        if self.stream is not None:  # what was buffered is lost either way: drop it, so the next record can try
            with contextlib.suppress(OSError):
                self.stream.close()
            self.stream = None


def log_dir(data_dir: Path) -> Path:
    """Return the folder of the log files inside a data dir."""
    return data_dir / "logs"


class SecretRedactor(logging.Filter):
    """Replaces every known secret value in a log record with ***, as a last line of defence."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        super().__init__()
        # Replaced, never changed in place: the access log's writer thread reads it while the loop adds to it.
        self._secrets: frozenset[str] = frozenset()
        for secret in secrets:
            self.add(secret)

    def add(self, secret: str | None) -> None:
        """Start scrubbing a secret (values shorter than 6 characters are too common to scrub)."""
        if secret and len(secret) >= 6:
            self._secrets = self._secrets | {secret}

    def discard(self, secret: str | None) -> None:
        """Stop scrubbing a secret that is no longer in use."""
        if secret:
            self._secrets = self._secrets - {secret}

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


_SIMPLE_ARGS = (str, int, float)


_Line = tuple[float, int, str, tuple[object, ...]]
"""An access line not yet made a record: when it happened (``time.time()``), level, format and arguments."""


class _RecordQueue(collections.deque[logging.LogRecord | _Line]):
    """What ``AccessQueueHandler`` puts records on: a deque (appending is thread-safe) that wakes no thread."""

    def put_nowait(self, record: logging.LogRecord) -> None:
        """Queue one record for the writer's next round."""
        self.append(record)


class AccessQueueHandler(logging.handlers.QueueHandler):
    """Hands access-log records to a writer thread, so no request waits for a terminal or a disk.

    At INFO every request writes a line to stderr and to the log file; done on the event loop, that was a
    third of what a quick request cost. The record goes on the queue as it is, unformatted: its arguments
    (method, path, status, milliseconds, request id) are immutable, so formatting it on the writer thread
    gives the same line. Anything else (an exception, a mutable argument) is formatted here, as
    ``QueueHandler`` does. Queuing wakes nobody: the writer takes what has queued every ``WRITE_EVERY``
    seconds (waking a thread per record cost the loop a lock hand-over per request), and everything left
    when it stops, at exit or when logging is configured again, so no line is lost.
    """

    WRITE_EVERY = 0.05

    def __init__(self, handlers: list[logging.Handler]) -> None:
        self._records = _RecordQueue()
        self._made: dict[tuple[int, str], logging.LogRecord] = {}  # per level and format: see ``_record``
        super().__init__(self._records)  # type: ignore[arg-type]  # QueueHandler only calls put_nowait
        self._handlers = list(handlers)
        self._stopping = threading.Event()
        self._writer = threading.Thread(target=self._write_until_stopped, name="ftdesk-access-log", daemon=True)
        self._writer.start()
        atexit.register(self.stop)  # runs before logging's own flush at exit

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        """Return the record to queue: itself when formatting it later yields the same text."""
        args = record.args
        if (
            record.exc_info is None
            and record.stack_info is None
            and (args is None or (type(args) is tuple and all(type(arg) in _SIMPLE_ARGS for arg in args)))
        ):
            return record
        prepared: logging.LogRecord = super().prepare(record)
        return prepared

    def put_line(self, level: int, msg: str, args: tuple[object, ...]) -> bool:
        """Queue a line whose record the writer makes (False once stopped: log it the usual way).

        The cheapest way onto the log for the event loop: no record is made there. The record the writer makes
        has the time captured here, so its line is the one ``Logger.log`` would have written.
        """
        if self._stopping.is_set():
            return False
        self._records.append((time.time(), level, msg, args))
        return True

    def _write_until_stopped(self) -> None:
        while not self._stopping.wait(self.WRITE_EVERY):
            self._write_queued()
        self._write_queued()

    def _write_queued(self) -> None:
        records = self._records
        while records:
            batch: list[logging.LogRecord | _Line] = []
            while records and len(batch) < self.BATCH:
                batch.append(records.popleft())
            # Handlers with the same formatter, filters and level write the same lines: made once for them all.
            texts: dict[tuple[object, ...], list[str]] = {}
            for handler in self._handlers:
                if type(handler) is logging.StreamHandler or isinstance(handler, PrivateRotatingFileHandler):
                    self._write_batch(handler, batch, texts)
                    continue
                for item in batch:
                    record = item if isinstance(item, logging.LogRecord) else self._record(*item)
                    if record.levelno >= handler.level:
                        handler.handle(record)

    BATCH = 1000
    """Most lines written at once: a round's lines go out in one write (and one flush) per handler."""

    def _write_batch(
        self,
        handler: logging.StreamHandler[typing.Any],
        batch: list[logging.LogRecord | _Line],
        texts: dict[tuple[object, ...], list[str]],
    ) -> None:
        """Write a batch's lines to a stream or a file in one go: the lines ``handle`` would write one by one.

        Per record, ``handle`` filtered, formatted (twice more to check a file's size) and flushed: a system
        call or two per line, on a thread that shares the interpreter with the event loop.
        """
        key = (handler.formatter, tuple(handler.filters), handler.level, handler.terminator)
        lines = texts.get(key)
        if lines is None:
            lines = texts[key] = self._lines(handler, batch)
        if not lines:
            return
        with handler.lock or contextlib.nullcontext():
            try:
                if isinstance(handler, PrivateRotatingFileHandler):
                    handler.write_lines(lines)
                else:
                    handler.stream.write("".join(lines))
                    handler.flush()
            except RecursionError:
                raise
            except Exception:
                last = batch[-1]
                handler.handleError(last if isinstance(last, logging.LogRecord) else self._record(*last))

    def _lines(self, handler: logging.StreamHandler[typing.Any], batch: list[logging.LogRecord | _Line]) -> list[str]:
        """Return the lines a handler writes of a batch, each with its terminator (what its filters let through)."""
        formatter, terminator, level = handler.formatter, handler.terminator, handler.level
        # An access line with our formatter and only the secret redactor as a filter is made without a record:
        # the same text (a record's message, scrubbed, filled into the format) at a fifth of the cost.
        filler: OneRecordPerLineFormatter | None = None
        redactors = [kept for kept in handler.filters if isinstance(kept, SecretRedactor)]
        if isinstance(formatter, OneRecordPerLineFormatter) and formatter.fills_lines:
            filler = formatter if len(redactors) == len(handler.filters) else None
        lines: list[str] = []
        for item in batch:
            if not isinstance(item, logging.LogRecord):
                created, levelno, msg, args = item
                if levelno < level:
                    continue
                if filler is not None:
                    message = msg % args if args else msg
                    for redactor in redactors:
                        message = redactor.scrub(message)
                    lines.append(
                        filler.line(created, logging.getLevelName(levelno), ACCESS_LOGGER, message) + terminator
                    )
                    continue
                item = self._record(*item)
            if item.levelno >= level and handler.filter(item):
                lines.append(handler.format(item) + terminator)
        return lines

    def _record(self, created: float, level: int, msg: str, args: tuple[object, ...]) -> logging.LogRecord:
        # The first line of a level and format is made by the logger; later ones copy its attributes (the same
        # logger, level, writer thread and process) and set their own arguments and time: a record's __init__
        # asks for the process, thread and task, a good part of what a line cost the interpreter.
        made = self._made.get((level, msg))
        if made is None:
            made = logging.getLogger(ACCESS_LOGGER).makeRecord(ACCESS_LOGGER, level, "", 0, msg, (), None)
            self._made[(level, msg)] = made
        record = logging.LogRecord.__new__(logging.LogRecord)
        record.__dict__.update(made.__dict__)
        record.args = args
        # As LogRecord computes them, from the moment the line was queued.
        record.relativeCreated = made.relativeCreated + (created - made.created) * 1000
        record.created = created
        record.msecs = msecs_of(created)
        return record

    def stop(self) -> None:
        """Write every queued record, then stop the writer thread (idempotent)."""
        atexit.unregister(self.stop)
        self._stopping.set()
        if self._writer.is_alive() and self._writer is not threading.current_thread():
            self._writer.join()
        self._write_queued()  # anything queued while it stopped

    def close(self) -> None:
        """Flush and stop the writer, then close."""
        self.stop()
        super().close()


OUR_HANDLER = "ftdesk"
"""The name of the handlers ``configure_logging`` installs: a second call replaces them, and only them."""


def configure_logging(level: str, log_dir: Path | None, redactor: SecretRedactor) -> Path | None:
    """Send logs to stderr and (when a dir is given) to a rotating file; return the file's path.

    Access-log lines reach the same handlers through a queue and a writer thread (``AccessQueueHandler``).
    """
    root = logging.getLogger()
    root.setLevel(level)
    access = logging.getLogger(ACCESS_LOGGER)
    for logger in (access, root):
        for handler in list(logger.handlers):
            if handler.get_name() == OUR_HANDLER:
                logger.removeHandler(handler)
                handler.close()
    formatter = OneRecordPerLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = []
    if sys.stderr is not None:  # a windowed frozen app (Windows, macOS) has no stderr: the file is the log
        handlers.append(logging.StreamHandler())
    log_file: Path | None = None
    if log_dir is not None:
        log_dir.mkdir(mode=DATA_DIR_MODE, parents=True, exist_ok=True)
        log_file = log_dir / LOG_FILE_NAME
        handlers.append(PrivateRotatingFileHandler(log_file, maxBytes=5 * 1024 * 1024, backupCount=5, encoding="utf-8"))
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(redactor)
        handler.set_name(OUR_HANDLER)
        root.addHandler(handler)
    access_queue = AccessQueueHandler(handlers)
    access_queue.set_name(OUR_HANDLER)
    access.addHandler(access_queue)
    access.propagate = False
    # aiohttp logs each request at INFO through our AccessLogger; keep its own chatter at WARNING.
    logging.getLogger("aiohttp").setLevel(max(logging.WARNING, root.level))
    return log_file
