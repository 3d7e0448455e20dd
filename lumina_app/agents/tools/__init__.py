"""Tools an agent may call: built-ins (``builtin.py``) and MCP servers (``mcp.py``), per
agent (``catalog.py``), their settings (``config.py``), argument checks (``schema.py``) and
one step's calls run in parallel (``runner.py``). Import the modules, not this package."""
