"""pydantic-ai's MCP toolset with `recourse mcp proxy` in front of the MCP server.

The toolset starts the server as any MCP client does, from a command line, with `recourse mcp proxy
--` before it: here the reference tools over MCP, whose weather tool is down (503) on its first call
and answers the second. The proxy resends it; the model reads the weather and never the failure.
The model is scripted (pydantic-ai's FunctionModel: no network): put yours in its place, say
`Agent("openai:gpt-5", toolsets=[tools])` with `pydantic-ai-slim[openai]`, and your server's command
line after `--`, say `npx -y @modelcontextprotocol/server-filesystem /data`. Uses the `recourse` that
`pip install 'recourse-cli[pydantic-ai]'` installed, by its full path.
"""

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

from recourse_client.spawn import recourse_bin

RECOURSE = recourse_bin()  # the full path, e.g. /usr/local/bin/recourse
server = [RECOURSE, "tools", "serve", "--mcp", "--seed", "2", "--fault", "weather:unavailable:0.5"]
tools = MCPToolset(StdioTransport(command=RECOURSE, args=["mcp", "proxy", "--", *server]))

SCRIPT = [
    [ToolCallPart("weather_current", {"location": "London, England, GB"})],
    [TextPart("It is mild in London.")],
]


def model(messages, info):
    return ModelResponse(parts=SCRIPT[len(messages) // 2])


result = Agent(FunctionModel(model), toolsets=[tools]).run_sync("What is the weather in London?")
for message in result.all_messages():
    for part in message.parts:
        if isinstance(part, ToolReturnPart):
            print(f"{part.tool_name}: {part.outcome}, {part.content['location']}")
print(f"model: {result.output}")
