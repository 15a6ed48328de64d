"""Which ``action_code`` a cancel (or cancel preview) of an order accepts.

The upstream cancel names the order by its conf_num and repeats the order's own action code; the service checks
the code the caller sends against the order and refuses a mismatch before anything is canceled. An order
accepts its own public action code and the side it trades, ``B`` (buy) or ``S`` (sell), which is what the cancel
body asks for:

* equity: ``B`` and ``BC`` (buy to cover) are buys, ``S`` and ``SS`` (sell short) sells; a buy to cover accepts
  ``BC`` or ``B``, never ``S``;
* single-leg option: ``BC``/``BP`` buys, ``SC``/``SP`` sells, e.g. a buy put accepts ``BP`` or ``B``;
* multi-leg option: any of its legs' codes (``BO``, ``SO``, ``BC``, ``SC``) or the side of any of its legs, so
  a vertical spread (one buy leg and one sell leg) accepts ``B`` and ``S``, a long straddle only ``B``.

When the broker's record of the order does not say enough (a multi-leg order listed without its legs, or an
action code outside the action table) the code is not checked: a cancel is never blocked by what the service
cannot read.
"""

from __future__ import annotations

from collections.abc import Iterable

from ftdesk.domain.errors import ValidationFailed

MULTI_LEG = "MULTI_LEG"


def side_of(code: str) -> str:
    """Return ``B`` for a buying action code (``B``, ``BC``, ``BP``, ``BO``, ``buy``), else ``S``."""
    return "B" if code.strip().upper().startswith("B") else "S"


def accepted_codes(security_type: str, action: str, leg_actions: Iterable[str] = ()) -> tuple[str, ...] | None:
    """Return the action codes a cancel of this order accepts, or None when they cannot be told."""
    if security_type.upper() == MULTI_LEG:
        codes = [code.strip().upper() for code in leg_actions]
        if not codes:
            return None
    else:
        codes = [action.strip().upper()]
    accepted = {side_of(code) for code in codes}
    accepted.update(code for code in codes if code not in ("BUY", "SELL"))
    return tuple(sorted(accepted))


def check_cancel_code(
    conf_num: str, action_code: str, security_type: str, action: str, leg_actions: Iterable[str] = ()
) -> None:
    """Raise ``ValidationFailed`` (naming ``action_code``) when the code does not match the order being canceled."""
    accepted = accepted_codes(security_type, action, leg_actions)
    given = action_code.strip().upper()
    if accepted is None or given in accepted:
        return
    kind = "multi-leg order" if security_type.upper() == MULTI_LEG else f"{action.strip().upper()} order"
    expected = " or ".join(accepted)
    raise ValidationFailed.for_field(
        "action_code",
        f"action_code {given} does not match order {conf_num} (a {kind}): send {expected}; nothing was canceled",
        allowed=accepted,
    )
