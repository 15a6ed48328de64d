"""The Fidelity Trader+ upstream adapter (built in the Fidelity issue)."""
