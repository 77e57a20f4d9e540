"""A Streamable HTTP MCP server (Python SDK 2.x) with a structured result, for the tests.

Usage: python3 weather_http_server.py PORT
"""

import sys

from mcp.types import ToolAnnotations
from pydantic import BaseModel
from mcp.server.mcpserver import MCPServer


class Forecast(BaseModel):
    city: str
    temperature: float
    days: list[str]


server = MCPServer("weather")


@server.tool()
def forecast(city: str, days: int = 2) -> Forecast:
    """The forecast for a city."""
    return Forecast(city=city, temperature=21.5, days=["sunny", "rain", "wind"][:days])


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def shout(text: str) -> str:
    """Upper-cases text."""
    return text.upper()


if __name__ == "__main__":
    server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
