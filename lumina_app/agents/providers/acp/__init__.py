"""The ``acp`` provider: coding agents driven over the Agent Client Protocol, one
persistent agent process per conversation (config, client, process, pool, provider)."""
