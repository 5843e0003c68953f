"""A small MCP server with a tool, a resource, a resource template and a
prompt (the SDK's own ``MCPServer``), for what the proxy passes through."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")


@server.tool()
def add_note(text: str) -> str:
    """Keep a note."""
    return f"kept: {text}"


@server.resource("note://welcome")
def welcome() -> str:
    """The first note."""
    return "Welcome to the notes."


@server.resource("note://{name}")
def note(name: str) -> str:
    """A note by name."""
    return f"The note called {name}."


@server.prompt()
def summarize(topic: str) -> str:
    """Ask for a summary."""
    return f"Summarize the notes about {topic}."


if __name__ == "__main__":
    server.run()
