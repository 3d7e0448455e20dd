"""SQL: the cold store (system of record), run records, idempotency keys."""
