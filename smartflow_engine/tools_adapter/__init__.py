"""The LLM-facing surface: tool registry, Chinese replies, sessions, MCP and HTTP adapters."""

from .core.pipeline import CallResult
from .core.spec import Mode, ToolContext, ToolSpec
from .core.toolbox import Toolbox
from .sessions.session import Session

__all__ = ["CallResult", "Mode", "Session", "ToolContext", "ToolSpec", "Toolbox"]
