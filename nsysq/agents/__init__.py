"""nsysq for coding agents: the MCP server (``nsysq mcp``), its tools generated from the CLI's own
commands. The top layer: it reads the command definitions of :mod:`nsysq.cli`."""
