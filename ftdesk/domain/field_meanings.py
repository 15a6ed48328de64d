"""What the numbers of the records mean: currency, per share or contract, percent.

A field name means the same thing in every record that has it (a test walks the schema for one JSON type per
name), so its unit is written once here and ``Record`` puts it in the schema of every field of that name that
has no description of its own. Names whose meaning changes with the record (``price``: dollars, or percent on
a percent alert) are left out and described where they are declared.
"""

from __future__ import annotations

from types import MappingProxyType

from pydantic.config import JsonDict

_DOLLARS = "US dollars."
_PER_SHARE = "US dollars per share; for an option, per share of the contract (1.25 is $125 for a 100-share contract)."
_PERCENT = "Percent: 1.5 means 1.5 %."
_UNITS = "Shares for a stock (a fraction where the broker allows it), contracts for an option."
# The Fidelity borrow and short-insight answers were never captured (docs/fidelity-gaps.md): their numbers are
# passed on as they come, so the unit is the paper broker's and only assumed to be Fidelity's too.
_AS_FIDELITY_SENDS = " On Fidelity, the upstream's number as sent (that answer's shape is not yet confirmed)."

FIELD_MEANINGS: MappingProxyType[str, str] = MappingProxyType(
    {
        # prices, per share (or per share of an option contract)
        "last_price": _PER_SHARE,
        "prev_close_price": _PER_SHARE,
        "prev_close": _PER_SHARE,
        "bid": _PER_SHARE,
        "ask": _PER_SHARE,
        "last": _PER_SHARE,
        "open": _PER_SHARE,
        "high": _PER_SHARE,
        "low": _PER_SHARE,
        "close": _PER_SHARE,
        "limit_price": _PER_SHARE,
        "stop_price": _PER_SHARE,
        "avg_exec_price": _PER_SHARE,
        "avg_cost_per_share": _PER_SHARE,
        "cost_per_share": _PER_SHARE,
        "last_price_chg": "Change of the last price since the previous close; " + _PER_SHARE,
        "underlying_price": "Price of the underlying stock, US dollars per share.",
        "strike": "Strike price, US dollars per share of the underlying.",
        "triggered_price": "The price that fired the alert, US dollars per share.",
        "eps_estimate": "Earnings per share, US dollars.",
        "breakevens": "Prices of the underlying at which the position neither gains nor loses, US dollars per share.",
        # amounts of money
        "market_value": _DOLLARS,
        "cost_basis": "What the holding cost in all, US dollars.",
        "total_market_value": _DOLLARS,
        "total_cost_basis": _DOLLARS,
        "long_market_value": _DOLLARS,
        "short_market_value": _DOLLARS,
        "option_market_value": _DOLLARS,
        "gain_loss": _DOLLARS,
        "total_gain_loss": _DOLLARS,
        "todays_gain_loss": (
            "Today's gain or loss of the shares held, US dollars: from the fill price for shares bought today,"
            " from the previous close for shares held overnight (paper); Fidelity's own figure as it sends it."
        ),
        "short_term_gain_loss": _DOLLARS,
        "long_term_gain_loss": _DOLLARS,
        "wash_sale_disallowed": "Loss disallowed by the wash-sale rule, US dollars.",
        "settled_cash": _DOLLARS,
        "maintenance_requirement": _DOLLARS,
        "non_margin_buying_power": _DOLLARS,
        "available_to_withdraw": _DOLLARS,
        "cash_committed_to_open_orders": _DOLLARS,
        "short_proceeds_held": _DOLLARS,
        "proceeds": _DOLLARS,
        "est_proceeds": "Estimated proceeds, US dollars.",
        "commission": _DOLLARS,
        "est_commission": "Estimated commission, US dollars.",
        "est_fees": "Estimated fees, US dollars.",
        "accrual_amount": _DOLLARS,
        "cash_accrual_amount": _DOLLARS,
        "income_mtd": "Income this month to date, US dollars.",
        "pnl_now": "Profit or loss at today's prices, US dollars.",
        "pnl_at_expiry": "Profit or loss at expiration, US dollars.",
        # percentages
        "gain_loss_pct": _PERCENT,
        "total_gain_loss_pct": _PERCENT,
        "todays_gain_loss_pct": _PERCENT,
        "last_price_chg_pct": _PERCENT,
        "change_pct": _PERCENT,
        "margin_equity_pct": _PERCENT,
        "yield_pct": _PERCENT,
        "surprise_pct": _PERCENT,
        # quantities
        "quantity": _UNITS,
        "qty": _UNITS,
        "orig_qty": _UNITS,
        "exec_qty": _UNITS,
        "remaining_qty": _UNITS,
        "qty_exec": _UNITS,
        "qty_remaining": _UNITS,
        "available_qty": _UNITS,
        "volume": "Shares (for an option, contracts) traded.",
        # option greeks
        "delta": "Change of the option's price per $1 move of the underlying.",
        "gamma": "Change of delta per $1 move of the underlying.",
        "vega": "Change of the option's price per 1 point of implied volatility.",
        "rho": "Change of the option's price per 1 point of interest rate.",
        "theta": "Change of the option's price per calendar day.",
        "change": "Change of the last price since the previous close; " + _PER_SHARE,
        "previous_close": _PER_SHARE,
        "fees": _DOLLARS,
        "days_to_expiration": "Calendar days until expiration.",
        "open_interest": "Contracts open.",
        "multiplier": "Shares per contract (100 for a standard option).",
        "uptime_seconds": "Seconds.",
        # borrowing and short interest
        "borrow_rate": "Annual fee to borrow the shares for a short sale, percent: 0.47 means 0.47 % a year."
        + _AS_FIDELITY_SENDS,
        "lending_supply": "Shares available to borrow." + _AS_FIDELITY_SENDS,
        "short_interest": "Shares sold short and not yet covered, as of the settlement date." + _AS_FIDELITY_SENDS,
        "short_pct_of_float": "Short interest as a share of the float (shares free to trade), percent: 2.5 means"
        " 2.5 %." + _AS_FIDELITY_SENDS,
        "days_to_cover": "Short interest divided by the average daily volume: how many days of trading it would"
        " take to buy back every short share." + _AS_FIDELITY_SENDS,
        "short_interest_ratio": "Short interest divided by the average daily volume, in days (the paper broker"
        " gives the same figure as days_to_cover)." + _AS_FIDELITY_SENDS,
        "bid_size": "Shares (contracts for an option) wanted at the bid, as the feed reports them.",
        "ask_size": "Shares (contracts for an option) offered at the ask, as the feed reports them.",
        "last_size": "Shares (contracts for an option) of the last trade.",
    }
)
"""Field name -> what its number means, for fields declared without a description."""


def describe_units(schema: JsonDict) -> None:
    """Give each property named in ``FIELD_MEANINGS`` that has no description its meaning (a model's schema hook)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for name, prop in properties.items():
        if isinstance(prop, dict) and "description" not in prop and name in FIELD_MEANINGS:
            prop["description"] = FIELD_MEANINGS[name]
