"""Paper trading on Fidelity's market: the paper ledger and engine, priced on Fidelity's live quotes."""
