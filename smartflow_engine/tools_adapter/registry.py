"""The tool registry: one table of :class:`ToolSpec` rows, the only source of tool metadata.

Names, read/write kind, visibility per mode, confirm and schemas all come from this table.
"""

from __future__ import annotations

from .analysis_tools import ANALYSIS_TOOLS
from .read_tools import READ_TOOLS
from .solver_tools import SOLVER_TOOLS
from .spec import Mode, ToolSpec
from .store_tools import STORE_TOOLS
from .write_tools import WRITE_TOOLS

TOOLS: tuple[ToolSpec, ...] = (
    *READ_TOOLS, *ANALYSIS_TOOLS, *WRITE_TOOLS, *SOLVER_TOOLS, *STORE_TOOLS
)
REGISTRY: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}
assert len(REGISTRY) == len(TOOLS), "duplicate tool name in the registry"


def get_spec(name: str) -> ToolSpec | None:
    return REGISTRY.get(name)


def tool_names(mode: Mode | str | None = None) -> list[str]:
    """All registered tool names, or those offered in ``mode``, in registry order."""
    if mode is None:
        return [spec.name for spec in TOOLS]
    m = Mode(mode)
    return [spec.name for spec in TOOLS if m in spec.modes]


def is_write_tool(name: str) -> bool:
    spec = REGISTRY.get(name)
    return bool(spec and spec.is_write)
