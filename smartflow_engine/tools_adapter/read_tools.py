from __future__ import annotations

from .spec import ToolSpec

READ_TOOLS: tuple[ToolSpec, ...] = ()
