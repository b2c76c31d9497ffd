"""Helpers for the adapter tests: generic example arguments, comparable replies, test-only tools.

Not a conftest: imported explicitly by the adapter test modules.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field

from smartflow_engine import ScheduleState
from smartflow_engine.tools_adapter.core import registry
from smartflow_engine.tools_adapter.core.args import Args
from smartflow_engine.tools_adapter.core.schemas import input_schema
from smartflow_engine.tools_adapter.core.spec import ALL_MODES, Mode, ToolContext, ToolSpec

DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLE_WINDOW = "spec_tools_window"
SOLVER_TIME_LIMIT = 1.0  # seconds, for any optional time-limit argument

# Keys whose values depend on the wall clock, not on the call (solver run times).
TIMING_KEYS = ("runtime", "runtime_s", "wall_time", "elapsed_s")


def load_window(name: str = EXAMPLE_WINDOW) -> ScheduleState:
    return ScheduleState.from_json(DATA / f"{name}.json")


def window_dict(name: str = EXAMPLE_WINDOW) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    return data


# ---------------------------------------------------------------------------------- arguments
def example_args(spec: ToolSpec, state: ScheduleState | None) -> dict[str, Any]:
    """Schema-valid arguments for any tool: required fields only (plus short solver time limits),
    with ids, days and periods taken from ``state`` so the call does real work."""
    return _value(input_schema(spec.args_model), "", state, top=True)


def _value(
    schema: dict[str, Any], name: str, state: ScheduleState | None, top: bool = False
) -> Any:
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        return _value(
            {**options[0], **{k: v for k, v in schema.items() if k != "anyOf"}}, name, state
        )
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        required = set(schema.get("required", []))
        out = {}
        for key, sub in schema.get("properties", {}).items():
            if key in required or "time_limit" in key:
                out[key] = _value(sub, key, state)
        return out
    if kind == "array":
        count = max(1, schema.get("minItems", 1))
        return [_value(schema.get("items", {}), name, state) for _ in range(count)]
    if kind == "integer":
        return _clamp(_integer_for(name, state), schema)
    if kind == "number":
        value = SOLVER_TIME_LIMIT if "time" in name else 1.0
        return _clamp(value, schema)
    if kind == "boolean":
        return False
    if kind == "string":
        return "学习"[: schema.get("maxLength", 2)] or "x"
    return None


def _integer_for(name: str, state: ScheduleState | None) -> int:
    if state is None:
        return 1
    placed = [t for t in state.placed_tasks() if not t.locked and len(t.slots) == 1]
    if "task" in name or name == "id":
        return placed[0].state_id if placed else 1
    if "day" in name:
        return min(3, state.num_days)
    if "slot" in name:
        return 5
    if "duration" in name:
        return 2
    if "seed" in name:
        return 0
    return 1


def _clamp(value: Any, schema: dict[str, Any]) -> Any:
    if "minimum" in schema:
        value = max(value, schema["minimum"])
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        value = schema["exclusiveMinimum"] + (1 if isinstance(value, int) else 0.5)
    if "maximum" in schema:
        value = min(value, schema["maximum"])
    return value


# ---------------------------------------------------------------------------------- replies
def comparable(reply: str) -> Any:
    """A reply with wall-clock fields removed (JSON replies), for cross-adapter equality."""
    try:
        data = json.loads(reply)
    except ValueError:
        return reply
    return _strip_timing(data)


def _strip_timing(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_timing(v) for k, v in node.items() if k not in TIMING_KEYS}
    if isinstance(node, list):
        return [_strip_timing(v) for v in node]
    return node


# ---------------------------------------------------------------------------------- test tools
class NoteArgs(Args):
    text: str = Field(min_length=1, max_length=40, description="要记录的内容")


def note_tool(
    journal: list[str],
    *,
    confirm: bool = True,
    output: str = "text",
    modes: frozenset[Mode] = ALL_MODES,
    name: str = "record_note",
) -> ToolSpec:
    """A write tool that appends to ``journal`` (a stand-in for a database write such as
    ``upsert_task_class``): works without a state, needs confirm by default."""

    def handler(_ctx: ToolContext, args: NoteArgs) -> str:
        journal.append(args.text)
        if output == "json":
            return json.dumps(
                {
                    "tool": name,
                    "success": True,
                    "recorded": args.text,
                    "error": "",
                    "error_code": "",
                },
                ensure_ascii=False,
            )
        return f"已记录：{args.text}"

    return ToolSpec(
        name,
        "write",
        NoteArgs,
        handler,
        "记录一条备注（测试用写工具）。",
        output="json" if output == "json" else "text",
        needs_state=False,
        needs_confirm=confirm,
        modes=modes,
    )


def specs_with(*extra: ToolSpec) -> list[ToolSpec]:
    """The registry table plus test-only rows."""
    return [*registry.TOOLS, *extra]


def only_in(spec: ToolSpec, *modes: Mode) -> ToolSpec:
    return replace(spec, modes=frozenset(modes))
