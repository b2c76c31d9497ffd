"""The LLM-facing surface: tool registry, Chinese replies, sessions, MCP and HTTP adapters."""

from .spec import Mode, ToolContext, ToolSpec
from .toolbox import Toolbox

__all__ = ["Mode", "ToolContext", "ToolSpec", "Toolbox"]
