"""The access log is written by a thread of its own and loses nothing: every request's line, whole."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path

from ftdesk.logs import ACCESS_LOGGER, AccessQueueHandler, SecretRedactor, configure_logging


async def test_every_request_gets_its_whole_access_line_in_the_file(
    start_service, tmp_path: Path, configured_logging: None
) -> None:
    secret = "a-password-in-a-path-1234"
    log_file = configure_logging("INFO", tmp_path / "logs", SecretRedactor([secret]))
    assert log_file is not None
    svc = await start_service()

    async def get(path: str) -> tuple[int, str]:
        async with svc.http.get(svc.url(path), headers=svc.auth) as response:
            await response.read()
            return response.status, response.headers["X-Request-ID"]

    answers = await asyncio.gather(*(get("/api/v1/health") for _ in range(300)), get(f"/api/v1/nothing/{secret}"))
    (queued,) = logging.getLogger(ACCESS_LOGGER).handlers
    assert isinstance(queued, AccessQueueHandler)
    queued.stop()  # what exit does: write every queued line
    lines = log_file.read_text(encoding="utf-8").splitlines()
    access = [line for line in lines if " INFO ftdesk.access: " in line]
    pattern = re.compile(r"GET (/api/v1/\S+) -> (\d{3}) in \d+\.\d ms \(request ([0-9a-f]{32})\)$")
    logged = {}
    for line in access:
        match = pattern.search(line)
        assert match, line
        logged[match.group(3)] = (match.group(1), int(match.group(2)))
    assert len(access) == len(answers) == 301
    assert {request_id: status for request_id, (_, status) in logged.items()} == {
        request_id: status for status, request_id in answers
    }
    assert logged[answers[-1][1]] == ("/api/v1/nothing/***", 404), "the writer thread still masks secrets"
    assert secret not in log_file.read_text(encoding="utf-8")
