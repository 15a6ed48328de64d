"""One upstream per feed, fanned out to many consumers (the quote hub and the account-event hub)."""
