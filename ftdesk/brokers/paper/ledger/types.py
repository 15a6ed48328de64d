"""Value types shared by the paper ledger, its seeding and the order engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from ftdesk.domain.accounts import AccountType


@dataclass(frozen=True)
class Fill:
    """One execution for the ledger: ``quantity`` is signed (+ bought, - sold) in shares or contracts.

    Shares may be fractional (to 0.0001); contracts are whole. An ``int`` is accepted for whole quantities.
    """

    acct_num: str
    symbol: str
    quantity: Decimal | int
    price: Decimal
    commission_cents: int = 0
    fees_cents: int = 0
    conf_num: str | None = None
    txn_type: str | None = None
    """Overrides the derived transaction type (e.g. OPTION_EXPIRED)."""


@dataclass(frozen=True)
class Commitment:
    """What an account's working orders hold back."""

    usage_cents: int = 0
    """Buying-power capacity (excess equity or settled cash) the orders would use if filled."""
    value_cents: int = 0
    """Estimated cost of the working buy orders."""


CommitmentSource = Callable[[str], Commitment]


@dataclass(frozen=True)
class AccountRules:
    """What an account may do."""

    acct_num: str
    acct_type: AccountType
    margin: bool
    option_level: int
    retirement: bool

    @property
    def short_allowed(self) -> bool:
        """Short selling needs a margin account outside retirement plans."""
        return self.margin and not self.retirement

    @property
    def naked_allowed(self) -> bool:
        """Uncovered option writing needs margin and option level 4."""
        return self.margin and self.option_level >= 4
