"""Servers the source tests talk to: MCP server scripts and a threaded local HTTP server."""
