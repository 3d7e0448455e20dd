"""MCP servers the tool tests start (built with the official SDK)."""
