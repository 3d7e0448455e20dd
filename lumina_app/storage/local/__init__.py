"""In-process equivalents of the Redis tier, for a single process."""
