"""What the streaming endpoints share: frame models, quote frames, per-app state and tracked responses."""
