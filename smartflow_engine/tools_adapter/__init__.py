"""The LLM-facing surface: tool registry, Chinese replies, sessions, MCP and HTTP adapters."""

from .pipeline import CallResult
from .session import Session
from .spec import Mode, ToolContext, ToolSpec
from .toolbox import Toolbox

__all__ = ["CallResult", "Mode", "Session", "ToolContext", "ToolSpec", "Toolbox"]
