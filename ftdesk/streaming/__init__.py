"""One upstream per feed, fanned out to many consumers (built in the streaming issue)."""
