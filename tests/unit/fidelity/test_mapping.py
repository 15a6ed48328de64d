"""Upstream payloads (the captured samples) mapped to domain records."""

from __future__ import annotations

from datetime import date

import pytest

from ftdesk.brokers.fidelity import accounts as discovery
from ftdesk.brokers.fidelity import history, lending, portfolio, values
from ftdesk.domain.accounts import Account, AccountType, OptionType, SecurityType, Term
from tests.fakes import fidelity_payloads as p

TODAY = date(2026, 11, 20)


def accounts() -> dict[str, Account]:
    return {a.acct_num: a for a in discovery.map_accounts(p.ACCOUNTS)}


def test_account_discovery() -> None:
    found = accounts()
    assert list(found) == list(p.ACCOUNT_NUMBERS)
    margin, workplace, individual = found[p.MARGIN], found[p.WORKPLACE], found[p.INDIVIDUAL]
    assert (margin.acct_type, margin.margin_ind, margin.option_level, margin.name) == (
        AccountType.INDIVIDUAL,
        True,
        "5",
        "Trading",
    )
    assert margin.description == "Margin Brokerage" and margin.raw is not None
    assert individual.option_level == "4" and individual.is_default  # "4" upstream, kept a string
    assert workplace.acct_type is AccountType.WORKPLACE and workplace.retirement_ind and not workplace.tradable
    assert workplace.option_level == "0"


def test_account_types() -> None:
    roth = discovery.map_account({"acctNum": "1", "acctType": "IRA", "acctSubType": "Roth"})
    joint = discovery.map_account(
        {"acctNum": "2", "acctType": "Brokerage", "acctLegalAttrDetail": {"legalConstructCode": "JOINT_WROS"}}
    )
    assert roth.acct_type is AccountType.ROTH_IRA and roth.retirement_ind
    assert joint.acct_type is AccountType.JOINT and not joint.retirement_ind


def test_positions_of_one_account() -> None:
    mapped = portfolio.map_positions(p.positions([p.MARGIN, p.INDIVIDUAL]), p.INDIVIDUAL)
    assert [pos.symbol for pos in mapped] == ["LGVN"]
    lgvn = mapped[0]
    assert lgvn.acct_num == p.INDIVIDUAL and lgvn.cost_basis == 7.12 and lgvn.total_gain_loss == 0.32
    assert portfolio.map_positions(p.positions([p.WORKPLACE]), p.WORKPLACE) == []


@pytest.mark.parametrize(
    ("kind", "sub", "symbol", "expected"),
    [
        ("Core", "Fidelity Mutual Fund", "SPAXX", SecurityType.CORE),
        ("Equity", "Common Stock", "AAPL", SecurityType.EQUITY),
        ("Equity", "Exchange Traded Fund", "SPY", SecurityType.ETF),
        ("Mutual Fund", None, "FXAIX", SecurityType.MUTUAL_FUND),
        (None, None, "QS270115C7", SecurityType.OPTION),
        ("Bond", None, "912828XX", SecurityType.OTHER),
    ],
)
def test_security_types(kind: str | None, sub: str | None, symbol: str, expected: SecurityType) -> None:
    assert portfolio.security_type(kind, sub, symbol) is expected


def test_option_symbols() -> None:
    contract = values.option_contract("-SPXW260330P6330")
    assert contract is not None and (contract.underlying, contract.option_type, contract.strike) == (
        "SPXW",
        OptionType.PUT,
        6330.0,
    )
    assert contract.expiration == date(2026, 3, 30)
    assert values.option_contract("QS270115C7.5") is not None and values.option_contract("AAPL") is None


def test_margin_and_cash_balances() -> None:
    margin = portfolio.map_balance(p.balances([p.MARGIN]), p.MARGIN)
    assert margin.as_of.startswith("2026-03-30T23:13:07")
    assert (margin.long_market_value, margin.margin_equity, margin.maintenance_requirement) == (
        149174.04,
        148856.43,
        148774.90,
    )
    assert margin.available_to_withdraw == 3064.58 and margin.cash_committed_to_open_orders == 0.0
    cash = portfolio.map_balance(p.balances([p.CASH_MGMT]), p.CASH_MGMT)
    assert (cash.net_worth, cash.margin_equity, cash.margin_debt, cash.available_to_withdraw) == (
        9525.27,
        None,
        0.0,
        4600.25,
    )


def test_option_summary_spread() -> None:
    summary = portfolio.map_options_summary(p.option_summary(p.MARGIN), p.MARGIN)
    assert (summary.total_market_value, summary.total_cost_basis, summary.total_gain_loss) == (395.0, 600.0, -205.0)
    [unh] = summary.underlyings
    assert (unh.underlying, unh.underlying_price, unh.strategy) == ("UNH", 281.20, "VERTICAL")
    long_leg, short_leg = unh.legs
    assert (long_leg.quantity, short_leg.quantity) == (1.0, -1.0)
    assert long_leg.expiration == "2026-06-18" and long_leg.days_to_expiration == 80 and not long_leg.in_the_money
    assert long_leg.cost_basis == 600.0 and long_leg.strike == 350.0
    empty = portfolio.map_options_summary(p.option_summary(p.INDIVIDUAL), p.INDIVIDUAL)
    assert empty.underlyings == [] and empty.total_market_value == 0.0


def test_transactions() -> None:
    payload = {"acctDetails": [{"acctNum": p.MARGIN, "transactionDetails": p.transactions(p.MARGIN, TODAY)}]}
    rows = history.map_transactions(payload, p.MARGIN)
    assert [t.txn_type for t in rows] == ["OPTION_SELL", "DEPOSIT", "BUY"]  # newest first
    sale, deposit, buy = rows
    assert sale.date == "2026-11-17" and sale.settle_date == "2026-11-18" and sale.symbol == "SPXW260330C6420"
    assert (sale.amount, sale.commission, sale.fees, sale.quantity) == (11.38, 0.60, 0.02, -1.0)
    assert deposit.amount == 2500.0 and deposit.price is None and deposit.symbol is None
    assert buy.quantity == 10 and buy.price == 150.0
    assert len({t.txn_id for t in rows}) == 3
    assert history.map_transactions(payload, p.MARGIN)[0].txn_id == sale.txn_id  # ids are stable across reads


def test_closed_positions_split_short_and_long_term() -> None:
    [spy] = history.map_closed_positions(p.closed_positions(p.MARGIN), p.MARGIN)
    assert (spy.symbol, spy.quantity, spy.proceeds, spy.cost_basis, spy.gain_loss) == (
        "SPY",
        10.831,
        7045.12,
        7000.0,
        45.12,
    )
    assert (spy.long_term_gain_loss, spy.short_term_gain_loss) == (0.0, 45.12)  # long term was "--"
    assert spy.gain_loss_pct == pytest.approx(0.6446, abs=1e-4)


def test_loaned_securities_from_strings() -> None:
    [loan] = lending.map_loaned_securities(p.loaned_securities(p.INDIVIDUAL), p.INDIVIDUAL)
    assert (loan.symbol, loan.quantity, loan.rate, loan.market_value, loan.income_mtd) == ("LGVN", 5, 3.735, 21.0, 0.03)


def test_tax_lots() -> None:
    rows = p.tax_lots(p.MARGIN, "AAPL", TODAY)["specificShrTaxLotDetail"]["specificShrTaxLotDetails"]
    lots = [portfolio.map_lot(raw, "AAPL") for raw in rows]
    assert [(lot.quantity, lot.term) for lot in lots] == [(6.0, Term.LONG), (4.0, Term.SHORT)]
    first = lots[0]
    assert (first.cost_basis, first.cost_per_share, first.gain_loss, first.market_value) == (
        840.0,
        140.0,
        255.0,
        1095.0,
    )
    assert first.lot_id == "114703552201" and first.symbol == "AAPL" and first.acquired_date == "2025-07-08"


def test_account_features_fall_back_on_discovery() -> None:
    found = accounts()
    margin = discovery.map_account_feature(p.account_features([p.MARGIN]), found[p.MARGIN])
    assert margin.margin_ind and margin.short_sell_ind and margin.option_level == "5" and margin.raw is not None
    unknown_shape = discovery.map_account_feature({"something": "else"}, found[p.INDIVIDUAL])
    assert (unknown_shape.option_level, unknown_shape.options_ind, unknown_shape.margin_ind) == ("4", True, False)
    assert unknown_shape.raw is None
