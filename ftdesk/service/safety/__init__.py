"""The safety net: the kill switch, the live switch's audit, the risk limits and what they read."""
