"""The paper brokerage: a complete simulated broker, the embedded default."""
