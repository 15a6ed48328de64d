"""The /docs page in a real browser: headless Chromium renders it with DNS switched off (offline)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (.ci/run installs it)")


async def render_dom(url: str, profile: Path) -> str:
    proc = await asyncio.create_subprocess_exec(
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        # Any name but loopback fails to resolve: the page must need nothing from the internet.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--virtual-time-budget=10000",
        "--dump-dom",
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return out.decode(errors="replace")


async def test_docs_page_renders_every_operation_offline(start_service, tmp_path: Path) -> None:
    service = await start_service()
    dom = await render_dom(service.url("/docs"), tmp_path / "profile")
    assert "ftdesk local trading API" in dom
    assert "OAS 3.1" in dom
    assert "/api/v1/health" in dom
    assert "Authorize" in dom  # the bearer security scheme is offered
