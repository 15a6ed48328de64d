"""How the fake Fidelity upstream reads and echoes order action codes, in either reading of single-leg BC/SC.

The evidence cannot say what single-leg ``BC``/``SC`` mean: captured answers describe ``BC`` as "Buy Call"
(and a multi-leg answer echoed request legs ``BO``/``SO`` as ``BC``/``SC``; order status showed a
bought-to-open put as ``BP`` "Buy Put"), while the decompiled enum reads ``BC`` as "Buy to Close",
``SC`` "Sell to Close", ``BO``/``SO`` "Buy/Sell to Open" and ``BP``/``SP`` "Buy/Sell Put". The fake runs in
one world or the other (``CAPTURED`` by default), so tests can show the adapter is safe in both.

Equity codes follow the decompiled enum in both worlds: ``SH`` sell short, ``BH`` buy to cover,
``SA`` sell all, ``SS`` *specific shares* (not a short sale). An option code on an equity order, or an equity
code on an option order, is refused, as a broker would refuse an action that does not fit the security.
"""

from __future__ import annotations

import re

CAPTURED = "buy_call"
"""``BC`` is "Buy Call": the captured answers."""
DECOMPILED = "buy_to_close"
"""``BC`` is "Buy To Close": the decompiled enum."""
WORLDS = (CAPTURED, DECOMPILED)

EQUITY_WORDS = {
    "B": "Buy",
    "S": "Sell",
    "SH": "Sell Short",
    "BH": "Buy To Cover",
    "SA": "Sell All",
    "SS": "Specific Shares",
}
_DECOMPILED_OPTION_WORDS = {
    "BO": "Buy To Open",
    "SO": "Sell To Open",
    "BC": "Buy To Close",
    "SC": "Sell To Close",
    "BP": "Buy Put",
    "SP": "Sell Put",
}
_CAPTURED_OPTION_WORDS = {"BC": "Buy Call", "SC": "Sell Call", "BP": "Buy Put", "SP": "Sell Put"}
_OPTION = re.compile(r"^-?[A-Z]{1,6}\d{6}([CP])[\d.]+$")


def is_put(symbol: str) -> bool:
    """Return whether a compact option symbol names a put."""
    match = _OPTION.match(symbol.upper())
    return match is not None and match.group(1) == "P"


def equity_echo(code: str) -> tuple[str, str] | None:
    """Return the code and words an equity answer echoes, or None for a code no equity order can carry."""
    words = EQUITY_WORDS.get(code)
    return (code, words) if words else None


def option_echo(world: str, code: str, symbol: str) -> tuple[str, str] | None:
    """Return the code and words a single-leg option answer echoes in ``world``, or None for a refused code."""
    if world == DECOMPILED:
        words = _DECOMPILED_OPTION_WORDS.get(code)
        return (code, words) if words else None
    if code in ("BO", "SO"):
        # Captured answers name side and contract only: an opening buy of a call comes back as BC "Buy Call".
        code = code[0] + ("P" if is_put(symbol) else "C")
    words = _CAPTURED_OPTION_WORDS.get(code)
    return (code, words) if words else None


def leg_echo(world: str, code: str, symbol: str) -> str | None:
    """Return the code a multi-leg answer echoes for a leg (the captured answers carry no words per leg)."""
    if code not in ("BO", "SO", "BC", "SC"):
        return None
    if world == CAPTURED:
        return code[0] + ("P" if is_put(symbol) else "C")  # request BO/SO came back as BC/SC
    return code


def status_words(world: str, code: str, symbol: str, option: bool) -> str:
    """Return the ``actionCodeDesc`` order status shows for a booked order."""
    if option:
        echoed = option_echo(world, code, symbol)
        return echoed[1] if echoed else code
    return EQUITY_WORDS.get(code, code)
