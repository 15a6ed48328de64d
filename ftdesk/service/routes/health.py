"""GET /api/v1/health: is the service up (no API key needed, so a launcher can probe it)."""

from __future__ import annotations

from pydantic import Field

from ftdesk.service.context import CONTEXT
from ftdesk.service.web.envelope import PlainJsonModel
from ftdesk.service.web.routing import Call, RouteTable

routes = RouteTable(tag="health")


class Health(PlainJsonModel):  # uptime is rounded to the millisecond: plain decimal, never an exponent
    """Liveness and identity of this ftdesk instance."""

    status: str = Field(description="Always 'ok' when the service answers.")
    service: str = Field(description="Always 'ftdesk'; lets a second launch recognise a running instance.")
    version: str
    broker: str = Field(description="paper or fidelity.")
    paper_market: str | None = Field(
        description="With broker paper, the market it trades on: simulated, or fidelity (Fidelity's live quotes; no"
        " order can reach Fidelity). Null with broker fidelity."
    )
    mode: str = Field(
        description="The brokerage and market in words: 'paper on the simulated market', \"paper on Fidelity's"
        " market\" or 'Fidelity'."
    )
    live_trading: bool = Field(description="False in dry-run mode: place operations are refused.")
    halted: bool = Field(
        description="True while trading is halted (the kill switch, POST /api/v1/safety/halt): previews and places "
        "are refused until POST /api/v1/safety/resume. GET /api/v1/safety says since when, by whom and why."
    )
    api_key_required: bool
    uptime_seconds: float = Field(description="Seconds since the service started, to the millisecond.")
    problems: list[str] = Field(
        description="What the trader must know about the data dir, one line each: a damaged file moved aside, a "
        "full disk (STORAGE_FULL, with the data dir and its free space), a halt that could not be saved, a "
        "safety file gone missing after a halt. Empty when all is well."
    )


@routes.get("/health", summary="Service health", response=Health, api_key=False)
async def get_health(call: Call[None, None]) -> Health:
    """Say that the service is up, which broker it fronts, whether live trading is on and whether trading is halted.

    Needs no API key.
    """
    ctx = call.app[CONTEXT]
    return Health(
        status="ok",
        service="ftdesk",
        version=ctx.version,
        broker=ctx.broker.name,
        paper_market=ctx.settings.paper_market if ctx.broker.name == "paper" else None,
        mode=ctx.settings.trading_mode,
        live_trading=ctx.live.enabled,
        halted=ctx.safety.halted,
        api_key_required=ctx.settings.api_key_required,
        uptime_seconds=round(ctx.clock.monotonic() - ctx.started_monotonic, 3),
        problems=list(ctx.safety.problems),
    )
