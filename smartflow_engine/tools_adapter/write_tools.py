from __future__ import annotations

from .spec import ToolSpec

WRITE_TOOLS: tuple[ToolSpec, ...] = ()
