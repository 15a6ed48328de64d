"""GET /api/v1/health: is the service up (no API key needed, so a launcher can probe it)."""

from __future__ import annotations

import functools

from pydantic import Field

from ftdesk.service.context import CONTEXT, ServiceContext
from ftdesk.service.web.envelope import JsonText, PlainJsonModel
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


_UPTIME = '"uptime_seconds":'


@functools.lru_cache(maxsize=16)
def health_json_around_uptime(
    version: str,
    broker: str,
    paper_market: str | None,
    mode: str,
    live_trading: bool,
    halted: bool,
    api_key_required: bool,
    problems: tuple[str, ...],
) -> tuple[str, str]:
    """Return the Health JSON before and after the uptime's value, made by pydantic once per state.

    A memo of a pure function (the same arguments, the same text), not state: a probe's answer changes only
    in its uptime between two changes of state, so only the uptime is written per request. Every string
    field comes before the uptime, escaped, so the first ``"uptime_seconds":`` is the key itself.
    """
    text = Health(
        status="ok",
        service="ftdesk",
        version=version,
        broker=broker,
        paper_market=paper_market,
        mode=mode,
        live_trading=live_trading,
        halted=halted,
        api_key_required=api_key_required,
        uptime_seconds=0.0,
        problems=list(problems),
    ).model_dump_json()
    before, _, after = text.partition(_UPTIME + "0.0")
    return before + _UPTIME, after


def health_json(ctx: ServiceContext) -> JsonText:
    """Return the Health answer's JSON: byte for byte ``Health(...).model_dump_json()`` of the service's state."""
    broker = ctx.broker.name
    settings = ctx.settings
    before, after = health_json_around_uptime(
        ctx.version,
        broker,
        settings.paper_market if broker == "paper" else None,
        settings.trading_mode,
        ctx.live.enabled,
        ctx.safety.halted,
        settings.api_key_required,
        tuple(ctx.safety.problems),
    )
    # repr of a float rounded to the millisecond is pydantic's JSON of it: plain decimal, shortest round trip
    # (an exponent only below 1e-4 or from 1e16 s on, which a rounded uptime never is).
    return JsonText(before + repr(round(ctx.clock.monotonic() - ctx.started_monotonic, 3)) + after)


@routes.get("/health", summary="Service health", response=Health, api_key=False)
async def get_health(call: Call[None, None]) -> JsonText:
    """Say that the service is up, which broker it fronts, whether live trading is on and whether trading is halted.

    Needs no API key.
    """
    return health_json(call.app[CONTEXT])
