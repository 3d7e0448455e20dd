"""Storage tiers: SQL cold store, Redis and in-process hot windows, the conversation archive."""
