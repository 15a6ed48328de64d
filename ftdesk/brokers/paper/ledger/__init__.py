"""The paper ledger: accounts, cash, positions, lots and income, in SQLite."""
