"""The MCP server: mnemonet's memory as tools for Claude Code, Cursor and other MCP clients."""

from mnemonet.mcp.server import build_mcp_server, serve_stdio

__all__ = ["build_mcp_server", "serve_stdio"]
