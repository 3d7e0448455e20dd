"""Lumina's memory as an MCP server at ``/mcp`` (streamable HTTP): search and read the
caller's conversations, keep and correct long-term memories, log exchanges had elsewhere
(docs/MCP.md). The same keys, Host/Origin guard and owner scoping as the REST routes."""

from lumina_app.api.mcp.endpoint import PATH, McpEndpoint, mcp_lifespan

__all__ = ["PATH", "McpEndpoint", "mcp_lifespan"]
