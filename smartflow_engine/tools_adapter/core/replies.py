"""What each tool answers (P1-C "返回类型+最小示例", issue 27 item 3).

Every tool description ends with its return type and a minimal real example reply
(:func:`reply_tail`, appended by ``schemas.tool_description`` in all three schema formats and on
MCP):

- **return type**: ``返回：中文文本。`` for a text tool; for a JSON tool the outline of its own output
  schema (:data:`OUTPUT_SCHEMAS`, top level and the ``metrics`` keys), which MCP also publishes as
  the tool's ``outputSchema``;
- **example**: a real reply, cut down by :func:`minimal_example`. ``scripts/gen_tools_doc.py``
  runs every tool on the bundled sample window (the calls of its ``EXAMPLES`` table, as for
  docs/tools.md) and writes the cut replies to ``smartflow_engine/data/tool_examples.json``, which
  this module reads; ``tests/tools_adapter/test_reply_examples.py`` runs the tools again and fails
  when the file differs, so the examples never drift from the code.

Cutting a reply down (the rule the descriptions state in one word, 节选):

- text: the lines up to the :data:`TEXT_LINES`-th non-blank one, each at most :data:`TEXT_LINE_CHARS` characters; a cut
  line or a dropped tail ends in ``…``;
- JSON: every key of the reply and of each list item's object is kept (the envelope, each issue,
  each action), a list keeps its first item, ``metric_schema`` keeps its first entry's meaning, an object
  two levels down (a dimension's figures in ``metrics``) keeps its first :data:`JSON_DEEP_KEYS`
  keys and then ``"…": n`` (n keys left out; the return-type line names the top two levels), a
  string longer than :data:`JSON_STR_CHARS` characters ends in ``…``; a wall-clock figure
  (:data:`VOLATILE_KEYS`) is left out: it differs on every run, and a model would read it as a
  figure the example promises.

The tool list must stay short enough for a model's context: it is sent on every turn.
:mod:`.tokens` counts it with OpenAI's tokenizers; :data:`TOKEN_BUDGET` is the budget of one
mode's list in any format (``benchmarks/results_tokens.md`` has the table, a test holds it).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from .spec import ToolSpec

EXAMPLES_PATH = Path(__file__).resolve().parents[2] / "data" / "tool_examples.json"

TEXT_LINES = 2
TEXT_LINE_CHARS = 50
JSON_STR_CHARS = 40
JSON_DEEP_KEYS = 2
ELLIPSIS = "…"

# Tokens (o200k_base and cl100k_base) of the largest mode's tool list (first_full), in each
# schema format as a model reads it, serialised as compact JSON: at most this many (issue 45:
# 15-16k before, every turn; tests/tools_adapter/test_reply_examples.py).
TOKEN_BUDGET = 12_000

# Keys whose value is a wall-clock figure: the example shows the generation run's value, and the
# comparison with a fresh run ignores it.
VOLATILE_KEYS = frozenset({"runtime", "runtime_s", "wall_time", "elapsed_s"})


# ---------------------------------------------------------------------------------- examples
def minimal_example(reply: str, output: str) -> str:
    """A real reply cut down for a description (see the module docstring)."""
    if output == "json":
        try:
            data = json.loads(reply)
        except ValueError:
            return _cut_text(reply)
        return json.dumps(prune(data), ensure_ascii=False, separators=(",", ":"))
    return _cut_text(reply)


def _cut_text(reply: str) -> str:
    lines = reply.splitlines()
    kept: list[str] = []
    filled = 0
    for line in lines:
        if filled == TEXT_LINES:
            break
        kept.append(
            line if len(line) <= TEXT_LINE_CHARS else line[: TEXT_LINE_CHARS - 1] + ELLIPSIS
        )
        filled += bool(line.strip())
    if len(kept) < len(lines):
        kept.append(ELLIPSIS)
    return "\n".join(kept)


def prune(value: Any, key: str = "", depth: int = 0) -> Any:
    """A JSON value cut by the example's rule (see the module docstring): lists to their first
    item, ``metric_schema`` to its first entry's meaning, objects two levels down to their first
    :data:`JSON_DEEP_KEYS` keys, long strings cut, wall-clock figures (:data:`VOLATILE_KEYS`)
    left out. A list's item stays at its list's depth."""
    if isinstance(value, dict):
        items = [(k, v) for k, v in value.items() if k not in VOLATILE_KEYS]
        if key == "metric_schema":  # the first metric's meaning, as a sample of the map
            return {
                k: {"meaning": prune(v.get("meaning"))} if isinstance(v, dict) else prune(v)
                for k, v in items[:1]
            }
        deep = depth >= 2 and len(items) > JSON_DEEP_KEYS + 1  # "…": 1 would save nothing
        out = {k: prune(v, k, depth + 1) for k, v in (items[:JSON_DEEP_KEYS] if deep else items)}
        if deep:
            out[ELLIPSIS] = len(items) - JSON_DEEP_KEYS
        return out
    if isinstance(value, list):
        return [prune(value[0], key, depth)] if value else []
    if isinstance(value, str) and len(value) > JSON_STR_CHARS:
        return value[: JSON_STR_CHARS - 1] + ELLIPSIS
    return value


def shape(value: Any) -> Any:
    """The JSON type tree of ``value``: objects by key, a list by its items' shapes."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null"


def comparable(value: Any) -> Any:
    """``value`` with the wall-clock figures (:data:`VOLATILE_KEYS`) blanked."""
    if isinstance(value, dict):
        return {k: None if k in VOLATILE_KEYS else comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


@cache
def load_examples() -> dict[str, str]:
    """The generated examples, by tool name (empty when the file is missing)."""
    if not EXAMPLES_PATH.exists():
        return {}
    data: dict[str, str] = json.loads(EXAMPLES_PATH.read_text(encoding="utf-8"))
    return data


def dump_examples(examples: dict[str, str]) -> str:
    """The text of the examples file (stable: sorted keys, one entry per line)."""
    return json.dumps(examples, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


# ---------------------------------------------------------------------------------- descriptions
def return_type(spec: ToolSpec) -> str:
    """The description's return-type line."""
    head = "返回（用户确认执行后）：" if spec.needs_confirm else "返回："
    if spec.output != "json":
        return f"{head}中文文本。"
    outline = _outline(output_schema(spec), depth=2)
    return f"{head}JSON {outline}；失败时 success=false。"


def reply_tail(spec: ToolSpec) -> str:
    """What every description ends with: the return type and, for a registered tool, the
    minimal real example."""
    tail = "\n" + return_type(spec)
    example = load_examples().get(spec.name)
    if example:
        tail += "\n示例：\n" + example
    return tail


def _outline(schema: dict[str, Any], depth: int) -> str:
    """``{a, b{c, d}, e[]}``: an object schema's keys, nested objects to ``depth``."""
    props: dict[str, Any] = schema.get("properties", {})
    parts = []
    for name, sub in props.items():
        sub = sub.get("anyOf", [sub])[0]  # an object or nothing: outline the object
        kind = sub.get("type")
        if kind == "array":
            parts.append(f"{name}[]")
        elif kind == "object" and depth > 1 and sub.get("properties") and name != "metric_schema":
            parts.append(name + _outline(sub, depth - 1))
        else:
            parts.append(name)
    return "{" + ", ".join(parts) + "}"


# ---------------------------------------------------------------------------------- output schemas
def _t(kind: str | list[str]) -> dict[str, Any]:
    return {"type": kind}


INT, NUM, STR, BOOL = _t("integer"), _t("number"), _t("string"), _t("boolean")
OBJ, NULL_INT, NULL_STR = _t("object"), _t(["integer", "null"]), _t(["string", "null"])


def _arr(items: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "array", "items": items} if items else {"type": "array"}


def _obj(props: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    """An object with ``props`` required and ``optional`` allowed; more keys may follow (a reply
    may grow a field without breaking a client)."""
    return {
        "type": "object",
        "properties": {**props, **(optional or {})},
        "required": list(props),
    }


_TRIGGER = _obj({"metric": STR, "operator": STR, "threshold": NUM, "actual": NUM})
_ISSUE = _obj(
    {
        "issue_id": STR,
        "dimension": STR,
        "severity": {"enum": ["critical", "warning", "info"]},
        "rule": STR,
        "day": NULL_INT,
        "category": NULL_STR,
        "trigger": _TRIGGER,
        "conditions": _arr(_TRIGGER),
        "impact_score": NUM,
    },
    {"merged_issue_ids": _arr(STR), "fixable": BOOL},
)
_ACTION = _obj(
    {
        "action_id": STR,
        "priority": INT,
        "intent_code": STR,
        "target_filter": OBJ,
        "slot_filter": OBJ,
        "candidate_scope": OBJ,
        "required_reads": _arr(OBJ),
        "success_criteria": OBJ,
        "candidate_write_tools": _arr(STR),
    },
    {"issue_ids": _arr(STR), "figures": OBJ, "fixable": _t(["boolean", "null"])},
)
_METRIC_DOC = _obj({"meaning": STR, "unit": STR, "direction": STR})
_DAY_LOAD = _obj({"day": INT, "total_used": INT})


def _or_empty(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema``, or an empty object (an analyzer with nothing to measure answers ``{}``)."""
    return {"anyOf": [schema, {"type": "object", "maxProperties": 0}]}


def _envelope(tool: str, metrics: dict[str, Any], **extra: dict[str, Any]) -> dict[str, Any]:
    """The analysis envelope of p1 §4.1/§4.2 around one tool's ``metrics``."""
    return _obj(
        {
            "tool": {"const": tool},
            "success": BOOL,
            "metric_schema": {"type": "object", "additionalProperties": _METRIC_DOC},
            "metrics": metrics,
            "issues": _arr(_ISSUE),
            "next_actions": _arr(_ACTION),
            "error": STR,
            "error_code": STR,
        },
        extra,
    )


_LOAD_SUMMARY = _obj(
    {
        "days": INT,
        "capacity": INT,
        "total_used": INT,
        "course_used": INT,
        "task_used": INT,
        "free_slots": INT,
        "pending_count": INT,
        "pending_slots": INT,
        "utilization_rate": NUM,
        "load_std_dev": NUM,
        "load_range": INT,
    },
    {"mean_daily_load": NUM, "peak": _DAY_LOAD, "valley": _DAY_LOAD},
)
_CONTEXT_OVERALL = _obj(
    {
        "days": INT,
        "active_days": INT,
        "study_slots": INT,
        "total_switches": INT,
        "avg_daily_switches": NUM,
        "max_daily_switches": INT,
        "block_count": INT,
        "heavy_adjacent": INT,
    },
    {"avg_block_length": NUM, "longest_block": _t(["object", "null"])},
)
_TOLERANCE_OVERALL = _obj(
    {
        "days": INT,
        "total_free": INT,
        "usable_slots": INT,
        "fragmented_slots": INT,
        "fragmentation_rate": NUM,
        "days_without_buffer": INT,
        "days_with_buffer": INT,
        "largest_free_block": INT,
    },
    {"min_usable_size": INT, "min_daily_buffer": INT},
)
_FLOOR = _obj({"critical": INT, "warning": INT, "proven": BOOL, "binding": _arr()})
_CLOSE_SIGNAL = _obj(
    {
        "acceptable_to_close": BOOL,
        "critical": INT,
        "warning": INT,
        "reason": {"enum": ["rules_met", "pending_placeable", "best_achievable", "open"]},
        "best_achievable": BOOL,
    },
    {
        "rule": STR,
        "floor": _t(["object", "null"]),
        "round": INT,
        "rounds_without_progress": INT,
        "should_close": BOOL,
        "close_reason": NULL_STR,
    },
)
_FEASIBILITY = _obj(
    {"is_feasible": _t(["boolean", "null"]), "capacity_gap": NULL_INT, "reason_code": STR},
    {
        "proven": BOOL,
        "required_task_slots": INT,
        "feasible_slots": NULL_INT,
        "capacity_gap_bounds": _arr(INT),
    },
)
# a day's week and weekday, on every day a query reply names (when the window has a calendar)
_CALENDAR = {"week": INT, "day_of_week": INT}
_SLOT_BLOCK = _obj({"day": INT, "slot_start": INT, "slot_end": INT}, _CALENDAR)
_DESTINATION = _obj(
    {
        "day": INT,
        "slot_start": INT,
        "slot_end": INT,
        "embed_host": NULL_INT,
        "critical_delta": INT,
        "warning_delta": INT,
        "helps": BOOL,
    },
    {"resolves": _arr(STR), "creates": _arr(STR), "impact_delta": NUM, **_CALENDAR},
)
_PLACE = _obj(
    {
        "day": INT,
        "slot_start": INT,
        "slot_end": INT,
        "slot_type": {"enum": ["empty", "embedded"]},
        "embed_host": NULL_INT,
    },
    _CALENDAR,
)
_DAY_RUNS = _arr(_arr(INT))  # selected days as [first, last] runs
_TASK = _obj(
    {
        "task_id": INT,
        "name": STR,
        "category": STR,
        "kind": {"enum": ["study", "course"]},
        "status": {"enum": ["existing", "suggested", "pending"]},
        "locked": BOOL,
        "duration": INT,
        "blocks": _arr(_SLOT_BLOCK),
        "embed_host": NULL_INT,
    },
    {"class_window": _t(["object", "null"]), "best_destination": _t(["object", "null"])},
)

OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "analyze_health": _envelope(
        "analyze_health",
        _obj(
            {"dimensions": _arr(STR), "issue_counts": OBJ, "close_signal": _CLOSE_SIGNAL},
            {
                "load": _LOAD_SUMMARY,
                "subjects": OBJ,
                "context": _or_empty(_CONTEXT_OVERALL),
                "tolerance": _TOLERANCE_OVERALL,
            },
        ),
        feasibility={"anyOf": [_FEASIBILITY, {"type": "null"}]},
    ),
    "analyze_load": _envelope(
        "analyze_load",
        _obj({"summary": _LOAD_SUMMARY, "days": _arr(OBJ)}, {"weeks": _arr(OBJ)}),
    ),
    "analyze_subjects": _envelope(
        "analyze_subjects",
        _or_empty(
            _obj(
                {
                    "summary": _obj({"subject_count": INT, "task_count": INT, "placed": INT}),
                    "subjects": _arr(_obj({"category": STR, "task_count": INT, "placed": INT})),
                }
            )
        ),
    ),
    "analyze_context": _envelope(
        "analyze_context", _or_empty(_obj({"overall": _CONTEXT_OVERALL, "days": _arr(OBJ)}))
    ),
    "analyze_tolerance": _envelope(
        "analyze_tolerance", _obj({"overall": _TOLERANCE_OVERALL, "days": _arr(OBJ)})
    ),
    "query_target_tasks": _envelope(
        "query_target_tasks",
        _obj(
            {"action_id": NULL_STR, "count": INT, "tasks": _arr(_TASK)},
            {"batches": _arr(OBJ), "selected_days": _DAY_RUNS},
        ),
    ),
    "query_available_slots": _envelope(
        "query_available_slots",
        _obj(
            {
                "task": {"anyOf": [_TASK, {"type": "null"}]},
                "action_id": NULL_STR,
                "count": INT,
                "complete": BOOL,
                "slots": _arr({"anyOf": [_DESTINATION, _PLACE]}),
            },
            {"duration": INT, "selected_days": _DAY_RUNS},
        ),
    ),
    "get_round_log": _envelope(
        "get_round_log",
        _obj(
            {
                "round": INT,
                "rounds": _arr(_obj({"round": INT, "writes": _arr(OBJ)})),
                "page": _obj(
                    {
                        "offset": INT,
                        "limit": INT,
                        "returned": INT,
                        "rounds_total": INT,
                        "next_offset": NULL_INT,
                    }
                ),
            },
            {
                "best_round": NULL_INT,
                "best_key": _t(["array", "null"]),
                "rounds_without_progress": INT,
                "gate_open": BOOL,
                "risk_accepted": BOOL,
                "close_reason": NULL_STR,
                "set_aside_task_ids": _arr(INT),
                "window_changes": _arr(),
                "earlier_rounds": _t(["object", "null"]),
            },
        ),
    ),
    "upsert_task_class": _obj(
        {
            "tool": {"const": "upsert_task_class"},
            "success": BOOL,
            "task_class_id": NULL_INT,
            "created": BOOL,
            "validation": _obj(
                {
                    "ok": BOOL,
                    "issues": _arr(_obj({"code": STR, "field": STR, "message": STR})),
                }
            ),
            "error": STR,
            "error_code": STR,
        },
        {"source": NULL_STR},  # None when the reply did not come from a stored class
    ),
}

# A JSON tool not in the table (a caller's own tool) is described by the bare envelope.
ENVELOPE_SCHEMA: dict[str, Any] = _obj(
    {"tool": STR, "success": BOOL},
    {
        "metric_schema": OBJ,
        "metrics": OBJ,
        "issues": _arr(),
        "next_actions": _arr(),
        "error": STR,
        "error_code": STR,
    },
)


def output_schema(spec: ToolSpec) -> dict[str, Any]:
    """The JSON schema of a JSON tool's successful reply (MCP's ``outputSchema``)."""
    return copy.deepcopy(OUTPUT_SCHEMAS.get(spec.name, ENVELOPE_SCHEMA))


def same_example(a: str, b: str, output: str) -> bool:
    """Whether two examples are the same but for wall-clock figures."""
    if output != "json":
        return a == b
    try:
        return bool(comparable(json.loads(a)) == comparable(json.loads(b)))
    except ValueError:
        return a == b
