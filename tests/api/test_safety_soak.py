"""Soak, CI-sized: scripts place orders in a loop on paper (live on) while the kill switch is pressed.

Afterwards no order is open, and the journal holds no place accepted that was asked for after the halt began.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from tests.api import safety_rig
from tests.api.safety_rig import Desk
from tests.fakes.waiting import wait_until

clock, make_desk = safety_rig.clock, safety_rig.make_desk  # fixtures

SCRIPTS = 3
PLACES_BEFORE_THE_HALT = 9


async def test_placing_in_a_loop_while_the_halt_is_pressed_leaves_nothing_open(make_desk) -> None:
    desk: Desk = await make_desk(system_clock=True)  # real time: the journal's order of events is the point
    acct = await desk.account()
    accepted = 0
    refusals: list[str] = []

    async def script(n: int) -> None:
        nonlocal accepted
        while True:
            status, answer = await desk.place(await desk.resting_buy(acct, qty=1, factor=0.95 - n / 100))
            if status == 200:
                accepted += 1
                continue
            refusals.append(answer["error"]["code"])
            return  # a script stops at its first refusal, as a careful one would

    scripts = [asyncio.create_task(script(n)) for n in range(SCRIPTS)]
    await wait_until(lambda: accepted >= PLACES_BEFORE_THE_HALT, within=30)
    outcome = await desk.ok("POST", "/safety/halt", json={"reason": "soak"})
    await asyncio.wait_for(asyncio.gather(*scripts), 30)

    assert refusals and set(refusals) <= {"TRADING_HALTED"}, refusals
    assert await desk.open_orders() == []
    halted = datetime.fromisoformat(outcome["halted_since"])
    journal = await desk.journal()
    places = [e for e in journal if e["action"] == "place" and e["outcome"] == "accepted"]
    assert len(places) == accepted >= PLACES_BEFORE_THE_HALT
    late = [e for e in places if datetime.fromisoformat(e["time"]) > halted]
    assert late == [], late
    placed = {e["conf_num"] for e in places}
    canceled = {c["conf_num"] for c in outcome["canceled"]}
    assert placed <= canceled, "every accepted place was open, so the halt canceled each one"
    assert outcome["failures"] == []
