"""A tiny MCP server for the documentation: two note tools over stdio.

An MCP client starts it; for example::

    import sys
    import toolnexus as tn

    server = {"command": [sys.executable, "examples/mcp_notes_server.py"]}
    config = {"mcpServers": {"notes": server}}
    with tn.build(mcp=config) as tk:
        print(tn.execute(tk, "notes_add_note", {"title": "todo", "text": "Ship it."}).output)
"""

try:
    from mcp.server.mcpserver import MCPServer  # mcp 2
except ImportError:  # mcp 1
    from mcp.server.fastmcp import FastMCP as MCPServer

server = MCPServer("notes")
NOTES: dict[str, str] = {}


@server.tool()
def add_note(title: str, text: str) -> str:
    """Save a note under a title."""
    NOTES[title] = text
    return f"Saved note {title!r}."


@server.tool()
def read_note(title: str) -> str:
    """Return the note saved under a title."""
    return NOTES.get(title, f"No note called {title!r}.")


if __name__ == "__main__":
    server.run()
