"""smartflow-engine: the scheduling engine an LLM study-planning agent works through."""

from .state import ScheduleState
from .tools_adapter import Toolbox

__all__ = ["ScheduleState", "Toolbox"]
__version__ = "0.1.0"
