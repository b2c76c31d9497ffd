"""The MCP surface: the server (stdio) and its streamable-HTTP mount."""
