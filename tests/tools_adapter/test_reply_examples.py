"""Tests of what each tool description says about its reply (issue 27 item 3, P1-C
"返回类型+最小示例"): every description, in every schema format and on MCP, ends with the return type
and a minimal real example; the examples are what the tools answer now; the tool list stays within
its token budget; MCP's ``outputSchema`` is each JSON tool's own and validates its real replies."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp import Client

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.tools_adapter.core import registry, replies
from smartflow_engine.tools_adapter.core.replies import (
    OUTPUT_SCHEMAS,
    TOKEN_BUDGET,
    comparable,
    load_examples,
    minimal_example,
    prune,
    reply_tail,
    same_example,
    shape,
)
from smartflow_engine.tools_adapter.core.schemas import FORMATS, tool_description, tool_schemas
from smartflow_engine.tools_adapter.core.spec import Mode
from smartflow_engine.tools_adapter.core.tokens import (
    ENCODINGS,
    count_tokens,
    model_facing,
    tool_list_tokens,
)
from smartflow_engine.tools_adapter.mcp.server import build_server
from smartflow_engine.tools_adapter.sessions.session import Session
from tests.helpers.adapters import note_tool, specs_with
from tests.helpers.docs import gen_tools_doc
from tests.helpers.windows import load_window

ROOT = Path(__file__).resolve().parents[2]
EVERY = registry.tool_names()
JSON_TOOLS = [s.name for s in registry.TOOLS if s.output == "json"]
EXAMPLE_HEAD = "\n示例：\n"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return gen_tools_doc()


@pytest.fixture(scope="module")
def real(gen: ModuleType) -> dict[str, str]:
    """Every tool's reply to its documented example call, run now."""
    out: dict[str, str] = gen.real_replies()
    return out


def _descriptions(fmt: str) -> dict[str, str]:
    entries = tool_schemas(fmt, include=EVERY)
    if fmt == "openai":
        return {e["function"]["name"]: e["function"]["description"] for e in entries}
    return {e["name"]: e["description"] for e in entries}


def _example_in(description: str) -> str:
    assert EXAMPLE_HEAD in description, description
    return description.split(EXAMPLE_HEAD, 1)[1]


# ---------------------------------------------------------------------------------- descriptions
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_description_ends_with_return_type_and_example(fmt):
    """Tests that every registered tool's description, in each format, ends with its return type
    line and its example (the checked-in one, non-empty)."""
    described = _descriptions(fmt)
    assert set(described) == set(EVERY)
    examples = load_examples()
    for spec in registry.TOOLS:
        text = described[spec.name]
        assert examples.get(spec.name), f"{spec.name} has no example"
        assert text.endswith(reply_tail(spec))
        assert text.endswith(EXAMPLE_HEAD + examples[spec.name])
        kind = "JSON {" if spec.output == "json" else "中文文本"
        assert f"返回：{kind}" in text or f"执行后）：{kind}" in text


def test_examples_file_names_exactly_the_registered_tools():
    """Tests that the checked-in examples cover every tool and no removed one."""
    assert set(load_examples()) == set(EVERY)


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_description_example_has_a_real_replys_shape(fmt, real):
    """Tests that the example each description ends with is the tool's reply of now, cut down by
    the stated rule: a JSON example has the real reply's shape (every key, each list's first
    item) and its values; a text example is the real reply's first lines."""
    described = _descriptions(fmt)
    for spec in registry.TOOLS:
        example = _example_in(described[spec.name])
        reply = real[spec.name]
        if spec.output == "json":
            data = json.loads(reply)
            assert data.get("success") is True, f"{spec.name}: the example call failed: {reply}"
            shown = json.loads(example)
            assert shape(shown) == shape(prune(data)), spec.name
            assert comparable(shown) == comparable(prune(data)), spec.name
        else:
            assert example == minimal_example(reply, "text"), spec.name
            first = example.splitlines()[0].removesuffix("…")
            assert reply.startswith(first), spec.name


def test_examples_file_matches_a_fresh_run(gen, real):
    """Tests that the checked-in examples are what the generator writes now (but for wall-clock
    figures): the examples cannot drift from the code."""
    assert gen.examples_text(real) == replies.EXAMPLES_PATH.read_text(encoding="utf-8")


def test_examples_comparison_sees_a_changed_value():
    """Tests that a changed value or key is a difference, a changed run time is not."""
    a = '{"x":1,"runtime_s":0.1}'
    assert same_example(a, '{"x":1,"runtime_s":0.3}', "json")
    assert not same_example(a, '{"x":2,"runtime_s":0.1}', "json")
    assert not same_example(a, '{"y":1,"runtime_s":0.1}', "json")
    assert not same_example("已将", "已把", "text")


def test_cutting_rules():
    """Tests the example rule: lists keep their first item, metric_schema its first entry, long
    strings and long text end in …, short text is kept whole."""
    data = {
        "metric_schema": {"a": {"meaning": "x"}, "b": {"meaning": "y"}},
        "rows": [{"id": 1}, {"id": 2}],
        "note": "长" * 60,
        "tags": [],
    }
    cut = prune(data)
    assert cut["metric_schema"] == {"a": {"meaning": "x"}}
    assert cut["rows"] == [{"id": 1}] and cut["tags"] == []
    assert cut["note"].endswith("…") and len(cut["note"]) == replies.JSON_STR_CHARS
    text = "\n".join(f"第{i}行" for i in range(1, 9))
    assert minimal_example(text, "text") == "第1行\n第2行\n…"
    assert minimal_example("第1行\n\n第2行", "text") == "第1行\n\n第2行"
    assert minimal_example("长" * 80, "text") == "长" * (replies.TEXT_LINE_CHARS - 1) + "…"


def test_examples_leave_out_wall_clock_figures_at_any_depth():
    """Tests that a JSON example drops every wall-clock figure (VOLATILE_KEYS: it differs on
    each run, and a model would take it for a figure the tool promises), at the top, inside an
    object and inside a list's item, and keeps every other key."""
    data = {
        "runtime_s": 0.5,
        "feasibility": {"is_feasible": True, "runtime_s": 0.01, "slack_slots": 3},
        "runs": [{"elapsed_s": 1.0, "wall_time": 2.0, "runtime": 3.0, "id": 7}],
    }
    cut = prune(data)
    assert cut == {"feasibility": {"is_feasible": True, "slack_slots": 3}, "runs": [{"id": 7}]}
    shown = json.dumps(cut)
    assert not any(key in shown for key in replies.VOLATILE_KEYS)


def test_deep_objects_keep_their_first_keys_and_say_how_many_were_left_out():
    """Tests the JSON example rule beyond two levels: a dimension's figures in ``metrics`` keep
    their first JSON_DEEP_KEYS keys and ``"…": n``; an object one key longer stays whole (the
    marker would save nothing); a list item's own keys are all kept (an issue, an action);
    ``metric_schema`` keeps its first entry's meaning."""
    k = replies.JSON_DEEP_KEYS
    wide = {f"k{i}": i for i in range(k + 3)}
    data = {
        "metric_schema": {"a": {"meaning": "x", "unit": "u"}, "b": {"meaning": "y"}},
        "metrics": {"load": wide, "small": {f"k{i}": i for i in range(k + 1)}},
        "issues": [wide, wide],
    }
    cut = prune(data)
    assert cut["metric_schema"] == {"a": {"meaning": "x"}}
    assert cut["metrics"]["load"] == {**{f"k{i}": i for i in range(k)}, "…": 3}
    assert cut["metrics"]["small"] == data["metrics"]["small"]
    assert cut["issues"] == [wide]


def test_a_tool_without_example_still_states_its_return_type():
    """Tests that a caller's own tool (not in the examples table) gets the return-type line and
    no example, and the confirm note stays before it."""
    spec = note_tool([], output="json")
    text = tool_description(spec)
    assert EXAMPLE_HEAD not in text
    assert text.endswith("\n" + replies.return_type(spec))
    assert "返回（用户确认执行后）：JSON {tool, success" in text


# ---------------------------------------------------------------------------------- budget
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mode", list(Mode))
def test_each_modes_tool_list_fits_the_token_budget(mode, fmt, encoding):
    """Tests that one mode's whole tool list, as a model reads it (MCP: name, description and
    inputSchema), examples included, counts at most TOKEN_BUDGET tokens with OpenAI's own
    tokenizers (counting is deterministic: the same text, the same count)."""
    tokens = tool_list_tokens(fmt, mode, encoding)
    assert tokens <= TOKEN_BUDGET, f"{mode} {fmt} {encoding}: {tokens} tokens > {TOKEN_BUDGET}"


def test_the_count_is_the_tokenizers_and_covers_what_the_model_reads():
    """Tests that the counts are OpenAI's encodings (known counts of fixed text) and that MCP's
    count leaves out only what a client keeps for itself (annotations, outputSchema)."""
    assert count_tokens("hello world", "o200k_base") == 2
    assert count_tokens("hello world", "cl100k_base") == 2
    assert count_tokens("规划窗口", "o200k_base") != count_tokens("规划窗口", "cl100k_base")
    read = json.loads(model_facing("mcp", Mode.FIRST_FULL))
    listed = tool_schemas("mcp", Mode.FIRST_FULL)
    assert read == [{k: e[k] for k in ("name", "description", "inputSchema")} for e in listed]
    assert json.loads(model_facing("anthropic", Mode.FIRST_FULL)) == tool_schemas(
        "anthropic", Mode.FIRST_FULL
    )


# ---------------------------------------------------------------------------------- output schemas
def test_output_schemas_are_each_tools_own():
    """Tests that every JSON tool has its own output schema, valid JSON Schema, naming its own
    tool; upsert_task_class's requires task_class_id, created and validation."""
    assert set(OUTPUT_SCHEMAS) == set(JSON_TOOLS)
    published = {e["name"]: e for e in tool_schemas("mcp", include=EVERY)}
    for name in JSON_TOOLS:
        schema = published[name]["outputSchema"]
        Draft202012Validator.check_schema(schema)
        assert schema == OUTPUT_SCHEMAS[name]
        assert schema["type"] == "object" and schema["properties"]["tool"] == {"const": name}
    upsert = published["upsert_task_class"]["outputSchema"]
    assert {"task_class_id", "created", "validation"} <= set(upsert["required"])
    assert "metrics" not in upsert["properties"]
    bodies = [
        json.dumps(published[n]["outputSchema"]["properties"]["metrics"])
        for n in JSON_TOOLS
        if n != "upsert_task_class"
    ]
    assert len(set(bodies)) == len(bodies)  # no two tools share one metrics schema


def _valid(name: str, reply: str) -> None:
    data = json.loads(reply)
    assert data.get("success") is True, f"{name}: {reply[:300]}"
    errors = [e.message for e in Draft202012Validator(OUTPUT_SCHEMAS[name]).iter_errors(data)]
    assert not errors, f"{name}: {errors[:3]}"


@pytest.mark.parametrize("name", JSON_TOOLS)
def test_each_json_tools_real_reply_validates_against_its_output_schema(name, real):
    """Tests that the documented call's real reply validates against the tool's outputSchema."""
    _valid(name, real[name])


def _infeasible() -> ScheduleState:
    gen = gen_tools_doc()
    return ScheduleState.model_validate(gen.TINY_INFEASIBLE)


def test_more_real_replies_validate_against_their_output_schemas():
    """Tests other successful replies of the JSON tools against their schemas: full detail,
    other scopes, an infeasible window (negotiation), an action's targets and slots, a round log
    before and after several rounds."""
    tb = Toolbox(load_window(), loop=True)
    _valid("get_round_log", tb.call("get_round_log", {}))  # before any round
    health = tb.call("analyze_health", {"detail": "full"})
    _valid("analyze_health", health)
    _valid("analyze_health", tb.call("analyze_health", {"dimensions": ["load"]}))
    for args in ({}, {"scope": "week"}, {"granularity": "time_of_day", "detail": "full"}):
        _valid("analyze_load", tb.call("analyze_load", args))
    _valid("analyze_subjects", tb.call("analyze_subjects", {"include_pending": False}))
    _valid("analyze_subjects", tb.call("analyze_subjects", {"detail": "full"}))
    _valid("analyze_context", tb.call("analyze_context", {"detail": "day_detail"}))
    _valid("analyze_tolerance", tb.call("analyze_tolerance", {"threshold": "strict"}))
    actions = json.loads(health)["next_actions"]
    for action in actions:
        targets = tb.call("query_target_tasks", {"action_id": action["action_id"]})
        _valid("query_target_tasks", targets)
        for task in json.loads(targets)["metrics"]["tasks"][:1]:
            args = {"task_id": task["task_id"], "action_id": action["action_id"]}
            _valid("query_available_slots", tb.call("query_available_slots", args))
    _valid("query_target_tasks", tb.call("query_target_tasks", {}))
    _valid("get_round_log", tb.call("get_round_log", {}))
    sick = Toolbox(_infeasible(), loop=True)
    negotiation = sick.call("analyze_health", {})
    _valid("analyze_health", negotiation)
    assert json.loads(negotiation)["feasibility"]["is_feasible"] is False
    sick.call("resolve_negotiation", {"choice": "accept_risk"})
    _valid("analyze_health", sick.call("analyze_health", {}))
    _valid("get_round_log", sick.call("get_round_log", {}))


def test_output_schema_rejects_a_reply_of_another_shape(real):
    """Tests that the schemas are not vacuous: a reply missing a required field, or another
    tool's reply, does not validate."""
    upsert = json.loads(real["upsert_task_class"])
    del upsert["created"]
    assert not Draft202012Validator(OUTPUT_SCHEMAS["upsert_task_class"]).is_valid(upsert)
    load = json.loads(real["analyze_load"])
    assert not Draft202012Validator(OUTPUT_SCHEMAS["analyze_context"]).is_valid(load)
    health = json.loads(real["analyze_health"])
    del health["metrics"]["close_signal"]["acceptable_to_close"]
    assert not Draft202012Validator(OUTPUT_SCHEMAS["analyze_health"]).is_valid(health)


def test_mcp_publishes_each_tools_output_schema_and_description():
    """Tests over a real MCP client: every JSON tool's outputSchema is its own and each
    description ends with the example; JSON calls return structured content the client validates
    against that schema."""
    session = Session(load_window(), mode=Mode.FIRST_FULL)

    async def go() -> Any:
        async with Client(build_server(session)) as client:
            tools = (await client.list_tools()).tools
            health = await client.call_tool("analyze_health", {})
            action = health.structured_content["next_actions"][0]["action_id"]
            targets = await client.call_tool("query_target_tasks", {"action_id": action})
            log = await client.call_tool("get_round_log", {})
            return tools, [health, targets, log]

    tools, results = anyio.run(go)
    examples = load_examples()
    for tool in tools:
        assert tool.description.endswith(EXAMPLE_HEAD + examples[tool.name])
        if tool.name in OUTPUT_SCHEMAS:
            assert tool.output_schema == OUTPUT_SCHEMAS[tool.name]
        else:
            assert tool.output_schema is None
    for result in results:
        assert not result.is_error
        assert result.structured_content == json.loads(result.content[0].text)


def test_mcp_keeps_the_generic_envelope_for_a_callers_json_tool():
    """Tests that a JSON tool outside the registry is published with the bare envelope."""
    session = Session(None, specs=specs_with(note_tool([], confirm=False, output="json")))

    async def go() -> Any:
        async with Client(build_server(session)) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = anyio.run(go)
    assert tools["record_note"].output_schema == replies.ENVELOPE_SCHEMA


def test_empty_analyses_validate_against_their_output_schemas():
    """Tests the replies of analyzers with nothing to measure (no study task placed: context and
    subjects answer empty metrics) against the schemas."""
    tb = Toolbox(_infeasible(), loop=True)
    for name in ("analyze_health", "analyze_context", "analyze_subjects", "analyze_load"):
        _valid(name, tb.call(name, {}))
    assert json.loads(tb.call("analyze_context", {}))["metrics"] == {}


def test_the_health_schema_names_every_key_of_a_feasibility_with_only_its_bounds():
    """Tests that analyze_health's outputSchema names every key its ``feasibility`` may carry
    where infeasibility is proven but the gap is not (``capacity_gap_bounds``, issue 42), with
    its type: a snapshot validates against the schema with no key left unnamed, and a bounds
    value of the wrong type does not."""
    from smartflow_engine.solver.feasibility import FeasibilityReport

    report = FeasibilityReport(
        is_feasible=False, proven=False, required_task_slots=20, feasible_slots=None,
        capacity_gap=None, free_capacity_slots=30, slack_slots=10, reason_code="insufficient_capacity",
        runtime_s=0.1, feasible_slots_bounds=(12, 17),
    )  # fmt: skip
    snap = {**report.snapshot(), "proven": False, "required_task_slots": 20}
    assert snap["capacity_gap_bounds"] == [3, 8]
    schema = OUTPUT_SCHEMAS["analyze_health"]["properties"]["feasibility"]["anyOf"][0]
    closed = {**schema, "additionalProperties": False}
    assert not list(Draft202012Validator(closed).iter_errors(snap))
    assert not Draft202012Validator(closed).is_valid({**snap, "capacity_gap_bounds": "3-8"})
