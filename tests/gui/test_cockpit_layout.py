"""The cockpit laid out for trading, on a real paper service: accounts as group rows, columns as wide as their
content, the positions taking the height, empty panes one line, thousands separators, the journal in words."""

from __future__ import annotations

from PySide6.QtGui import QFont

from ftdesk.domain.accounts import Position
from ftdesk.gui.cockpit_rows import GROUP_SPAN, ORDER_COLUMNS, POSITION_COLUMNS
from tests.fakes.waiting import wait_until
from tests.gui.test_cockpit import column, place, resting_buy, trading_desktop

FIGURES = ("Qty", "Last", "Market value", "Day P&L", "Total P&L")


async def test_accounts_are_group_rows_heading_their_positions(make_desktop) -> None:
    desktop, _acct = await trading_desktop(make_desktop)
    cockpit = desktop.app.window.cockpit
    table = cockpit.positions
    accounts = await desktop.runtime.broker.accounts.get_accounts()
    await wait_until(lambda: all(a.acct_num in " ".join(column(table, "Symbol", POSITION_COLUMNS)) for a in accounts))
    assert "Account" not in POSITION_COLUMNS
    groups = [row for row in range(table.rowCount()) if table.columnSpan(row, 0) == GROUP_SPAN]
    assert [table.item(row, 0).text() for row in groups] == [f"{a.name} {a.acct_num}" for a in accounts]
    for row in range(table.rowCount()):
        text = table.item(row, 0).text()
        bold = QFont(table.item(row, 0).font()).bold()
        if row in groups:
            assert bold and table.item(row, POSITION_COLUMNS.index("Market value")).text()
        else:  # a position: its symbol, never the account number again
            assert not bold and not any(a.acct_num in text for a in accounts)
    held = {a.acct_num: await desktop.runtime.broker.accounts.get_positions(a.acct_num) for a in accounts}
    bounds = [*groups, table.rowCount()]
    for account, start, end in zip(accounts, bounds, bounds[1:], strict=False):
        shown = [table.item(row, 0).text() for row in range(start + 1, end)]
        assert sorted(shown) == sorted(p.symbol for p in held[account.acct_num])


async def test_figures_get_their_width_and_money_has_thousands_separators(make_desktop) -> None:
    desktop, _acct = await trading_desktop(make_desktop)
    table = desktop.app.window.cockpit.positions
    desktop.app.window.resize(1000, 900)
    await wait_until(lambda: table.rowCount() > 4)
    header = table.horizontalHeader()
    for name in ("Symbol", *FIGURES):
        index = POSITION_COLUMNS.index(name)
        assert header.sectionSize(index) >= table.sizeHintForColumn(index), f"{name} is cut"
    symbol = header.sectionSize(POSITION_COLUMNS.index("Symbol"))
    assert symbol < 0.25 * table.viewport().width(), "the Symbol column no longer takes the spare width"
    description = header.sectionSize(POSITION_COLUMNS.index("Description"))
    assert description > max(header.sectionSize(POSITION_COLUMNS.index(name)) for name in FIGURES)
    values = column(table, "Market value", POSITION_COLUMNS)
    big = [v for v in values if abs(float(v.replace(",", ""))) >= 1000]
    assert big and all("," in v for v in big)


async def test_positions_take_the_height_and_an_empty_pane_is_one_line(make_desktop) -> None:
    desktop, acct = await trading_desktop(make_desktop)
    window = desktop.app.window
    cockpit = window.cockpit
    window.resize(1000, 900)
    await wait_until(lambda: cockpit.positions.rowCount() > 4)
    line = cockpit.fontMetrics().height()
    assert cockpit.orders.isHidden() and cockpit.no_orders_label.text() == "No open orders"
    assert cockpit.orders_box.height() < 5 * line, "an empty Open orders pane takes one line"
    assert cockpit.positions.height() > 3 * cockpit.orders_box.height()
    assert cockpit.no_fills_label.isVisibleTo(window) and cockpit.fills.isHidden()
    # The tabs (fills, journal, notifications) are as tall as the page shown: an empty fills page is a line.
    assert window.tabs.height() < window.tabs.tabBar().height() + 5 * line
    assert cockpit.positions.height() > 2 * window.tabs.height()

    conf = await resting_buy(desktop, acct)
    await wait_until(lambda: column(cockpit.orders, "Order", ORDER_COLUMNS) == [conf])
    assert not cockpit.orders.isHidden() and cockpit.no_orders_label.isHidden()
    rows = cockpit.orders.rowHeight(0)
    assert cockpit.orders.height() < cockpit.orders.horizontalHeader().height() + 3 * rows, "one row, no blank"


async def test_the_journal_tab_says_in_words_what_was_done_including_the_halt(make_desktop) -> None:
    desktop, acct = await trading_desktop(make_desktop)
    window = desktop.app.window
    conf = await resting_buy(desktop, acct)
    window.halt_button.click()
    await wait_until(lambda: window.halt_banner.isVisible())
    journal = window.journal

    def rows() -> list[list[str]]:
        return [[journal.item(r, c).text() for c in range(journal.columnCount())] for r in range(journal.rowCount())]

    def halted_row() -> list[str] | None:
        return next((row for row in rows() if row[1] == "Trading halted" and conf in row[-1]), None)

    def read_again_until_halted() -> bool:  # the halt row is finished after its cancels: read until it is there
        window.reload_journal()
        return halted_row() is not None

    await wait_until(read_again_until_halted)
    actions = [row[1] for row in rows()]
    assert {"Preview stock order", "Place stock order", "Cancel by the halt", "Trading halted"} <= set(actions)
    assert not any("_" in action or action.islower() for action in actions), actions
    halt = halted_row()
    assert halt is not None and halt[-1].startswith("Trading halted by tray") and f"canceled 1: {conf}" in halt[-1]
    placed = next(row for row in rows() if row[1] == "Place stock order")
    assert placed[4] == "Buy" and placed[7] == "Done" and f"order {conf}" in placed[-1]
    header = journal.horizontalHeader()
    assert header.sectionResizeMode(journal.columnCount() - 1).name == "Stretch"  # the details fill the width


async def test_on_paper_the_cockpits_day_pnl_rule_agrees_with_the_ledgers(make_desktop) -> None:
    # The cockpit computes the day P&L itself (one rule for both brokers); on paper the ledger follows it too.
    desktop, acct = await trading_desktop(make_desktop)
    await place(desktop, {"acctNum": acct, "symbol": "NVDA", "orderActionCode": "B", "qty": 7, "priceTypeCode": "M"})
    feed = desktop.app.feed

    def nvda() -> Position | None:
        return next((p for p in feed.snapshot.positions.get(acct, ()) if p.symbol == "NVDA"), None)

    await wait_until(lambda: feed.snapshot.fills and nvda() is not None and nvda().quantity >= 7)  # type: ignore[union-attr]
    held = nvda()
    assert held is not None
    assert abs(feed.snapshot.day_gain(held) - held.todays_gain_loss) <= 0.01 * 7
