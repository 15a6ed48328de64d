"""The simulated market the paper brokerage trades on, a function of symbol and time."""
