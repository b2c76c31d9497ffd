"""Tests of the generated tool schemas: valid JSON Schema 2020-12, OpenAI strict-mode rules, and
agreement between the schemas and the argument models."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import pytest
from conftest_adapters import example_args, load_window, note_tool, specs_with
from jsonschema import Draft202012Validator
from pydantic import Field

from smartflow_engine import Toolbox
from smartflow_engine.tools_adapter import registry
from smartflow_engine.tools_adapter.args import Args
from smartflow_engine.tools_adapter.schemas import (
    CONFIRM_NOTE,
    FORMATS,
    drop_null_optionals,
    input_schema,
    strict_schema,
    tool_schemas,
)
from smartflow_engine.tools_adapter.session import Session
from smartflow_engine.tools_adapter.spec import Mode, ToolSpec

MODES: list[Mode | None] = [None, *Mode]
TOOL_IDS = registry.tool_names()
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
STRICT_FORBIDDEN = {"$ref", "$defs", "default", "title", "allOf", "oneOf", "not",
                    "patternProperties", "if", "then", "else"}


def _name(entry: dict[str, Any], fmt: str) -> str:
    name: str = entry["function"]["name"] if fmt == "openai" else entry["name"]
    return name


def _params(entry: dict[str, Any], fmt: str) -> dict[str, Any]:
    key = {"openai": None, "anthropic": "input_schema", "mcp": "inputSchema"}[fmt]
    params: dict[str, Any] = entry["function"]["parameters"] if key is None else entry[key]
    return params


def _objects(node: Any, path: str = "$") -> list[tuple[str, dict[str, Any]]]:
    """Every object-typed schema node under ``node``."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if node.get("type") == "object" or (isinstance(node.get("type"), list)
                                            and "object" in node["type"]):
            found.append((path, node))
        for key, value in node.items():
            if key == "properties":
                for prop, sub in value.items():
                    found.extend(_objects(sub, f"{path}.{prop}"))
            elif isinstance(value, dict | list):
                found.extend(_objects(value, f"{path}/{key}"))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found.extend(_objects(value, f"{path}[{i}]"))
    return found


def _keywords(node: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    out |= _keywords(sub)
            else:
                out.add(key)
                out |= _keywords(value)
    elif isinstance(node, list):
        for value in node:
            out |= _keywords(value)
    return out


def _allows_null(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_allows_null(s) for s in node.get("anyOf", []))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mode", MODES)
def test_schemas_are_valid_json_schema_2020_12(fmt, mode):
    """Tests that every format's parameter schemas are valid 2020-12 JSON Schemas for every mode,
    list exactly the tools offered in that mode, and carry valid function names."""
    entries = tool_schemas(fmt, mode)
    offered = registry.tool_names(mode) if mode is not None else [
        s.name for s in registry.TOOLS if s.modes]  # a hidden tool is listed nowhere
    assert [_name(e, fmt) for e in entries] == offered
    for entry in entries:
        assert NAME_RE.match(_name(entry, fmt))
        params = _params(entry, fmt)
        Draft202012Validator.check_schema(params)
        assert params["type"] == "object"


@pytest.mark.parametrize("mode", MODES)
def test_openai_schemas_follow_strict_mode_rules(mode):
    """Tests the strict-mode rules at every level: additionalProperties false, every property
    required, optional fields nullable, and no unsupported keywords."""
    for entry in tool_schemas("openai", mode):
        fn = entry["function"]
        assert entry["type"] == "function" and fn["strict"] is True
        assert not (_keywords(fn["parameters"]) & STRICT_FORBIDDEN), fn["name"]
        for path, node in _objects(fn["parameters"]):
            assert node.get("additionalProperties") is False, (fn["name"], path)
            assert sorted(node.get("required", [])) == sorted(node.get("properties", {})), path
        model = registry.REGISTRY[fn["name"]].args_model
        for field_name, field in model.model_fields.items():
            if not field.is_required():
                assert _allows_null(fn["parameters"]["properties"][field_name]), field_name


@pytest.mark.parametrize("fmt", ["anthropic", "mcp"])
def test_plain_schemas_close_every_object(fmt):
    """Tests that the anthropic and MCP schemas also forbid unknown keys at every level and keep
    no unresolved references."""
    for entry in tool_schemas(fmt):
        params = _params(entry, fmt)
        assert "$ref" not in _keywords(params) and "$defs" not in _keywords(params)
        for path, node in _objects(params):
            assert node.get("additionalProperties") is False, (entry["name"], path)


def test_mcp_annotations_follow_the_kind():
    """Tests that MCP read-only hints follow the registry's read/write kind."""
    for entry in tool_schemas("mcp"):
        spec = registry.REGISTRY[entry["name"]]
        assert entry["annotations"]["readOnlyHint"] is (not spec.is_write)
        assert ("outputSchema" in entry) is (spec.output == "json")


@pytest.mark.parametrize("name", TOOL_IDS)
def test_example_args_fit_every_schema(name):
    """Tests that arguments the model accepts also satisfy the published schemas, the strict one
    with omitted optionals sent as null the way a strict-mode model sends them."""
    spec = registry.REGISTRY[name]
    args = example_args(spec, load_window())
    spec.args_model.model_validate(args)
    Draft202012Validator(input_schema(spec.args_model)).validate(args)
    strict = strict_schema(spec.args_model)
    filled = _as_strict_call(args, strict)
    Draft202012Validator(strict).validate(filled)
    assert spec.args_model.model_validate(drop_null_optionals(spec.args_model, filled))


def _as_strict_call(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` as a strict-mode model sends it: every property present, omitted ones null."""
    options = [schema, *schema.get("anyOf", [])]
    for option in options:
        if isinstance(value, dict) and "properties" in option:
            return {k: _as_strict_call(value.get(k), sub) for k, sub in option["properties"].items()}
        if isinstance(value, list) and "items" in option:
            return [_as_strict_call(v, option["items"]) for v in value]
    return value


INVALID_MOVES = [
    {"task_id": 0, "new_day": 1, "new_slot_start": 1},  # id below 1
    {"task_id": "6", "new_day": 1, "new_slot_start": 1},  # id as a string
    {"task_id": 6, "new_day": 1},  # missing new_slot_start
    {"task_id": 6, "new_day": 1, "new_slot_start": 99},  # period above the static bound
    {"task_id": 6, "new_day": 1, "new_slot_start": 1, "speed": 2},  # unknown key
    {"task_id": 6, "new_day": 0, "new_slot_start": 1},  # day 0
    {"task_id": 2**40, "new_day": 1, "new_slot_start": 1},  # id beyond 32 bits
]


@pytest.mark.parametrize("args", INVALID_MOVES)
def test_schema_and_model_reject_the_same_moves(args):
    """Tests that what the schema rejects, the Toolbox refuses with an argument error."""
    assert not Draft202012Validator(input_schema(registry.REGISTRY["move"].args_model)).is_valid(args)
    reply = Toolbox(load_window()).call("move", args)
    assert reply.startswith("参数错误："), reply


def test_strict_nulls_mean_omitted():
    """Tests that a strict-mode call sending null for every optional field gives the same reply
    as leaving the fields out, also inside batch items."""
    session = Session(load_window())
    nulls = session.call("list_tasks", {"category": None, "status": None})
    assert nulls == Toolbox(load_window()).call("list_tasks", {})
    moved = Session(load_window()).call(
        "batch_move", {"moves": [{"task_id": 6, "new_day": 5, "new_slot_start": 3, "from_day": None}]})
    direct = Toolbox(load_window(), loop=True).call(
        "batch_move", {"moves": [{"task_id": 6, "new_day": 5, "new_slot_start": 3}]})
    assert moved == direct and moved.startswith("批量移动完成")


def test_null_for_a_required_field_is_still_refused():
    """Tests that null only stands for "omitted" on optional fields: a required null is refused."""
    reply = Session(load_window()).call("get_task_info", {"task_id": None})
    assert reply.startswith("参数错误：参数 task_id 应为整数")


def test_confirm_tools_say_so_in_their_description():
    """Tests that a needs_confirm tool's description tells the model about the confirm step."""
    spec = note_tool([])
    for fmt in FORMATS:
        entry = tool_schemas(fmt, Mode.FIRST_FULL, specs=specs_with(spec))[-1]
        text = entry["function"]["description"] if fmt == "openai" else entry["description"]
        assert text.endswith(CONFIRM_NOTE)


def test_include_offers_a_hidden_tool():
    """Tests that include= adds a tool hidden in the mode, and nothing else."""
    hidden = note_tool([], modes=frozenset())
    specs = specs_with(hidden)
    base = [e["name"] for e in tool_schemas("anthropic", Mode.LOCAL_ADJUST, specs=specs)]
    more = [e["name"] for e in tool_schemas("anthropic", Mode.LOCAL_ADJUST, specs=specs,
                                            include=[hidden.name])]
    assert hidden.name not in base and more == [*base, hidden.name]


@pytest.mark.parametrize("fmt", ["gemini", "", "OPENAI"])
def test_unknown_format_is_refused(fmt):
    """Tests that an unknown schema format is a ValueError naming the choices."""
    with pytest.raises(ValueError, match="openai"):
        tool_schemas(fmt)


def test_toolbox_schemas_delegate_here():
    """Tests that Toolbox.schemas (the public contract) returns these schemas."""
    assert Toolbox().schemas(fmt="anthropic") == tool_schemas("anthropic")


class _MapArgs(Args):
    """A test-only model with the two kinds of map an argument model may hold."""

    weights: dict[Literal["load", "late"], Annotated[float, Field(strict=True, ge=0, le=10)]] | None = None


class _OpenMapArgs(Args):
    tags: dict[str, Annotated[int, Field(ge=0, le=9)]] = Field(default_factory=dict)


def _map_tool(model: type[Args]) -> ToolSpec:
    return ToolSpec("map_tool", "read", model, lambda _ctx, _args: "ok", "映射参数（测试用）。",
                    needs_state=False)


@pytest.mark.parametrize(("weights", "valid"), [
    ({"load": 2.0}, True),  # one known key
    ({"load": 2.0, "late": 0.5}, True),  # every key
    ({}, True),  # no key
    ({"speed": 1.0}, False),  # an unknown key
    ({"load": 11.0}, False),  # a value above its bound
    ({"load": "2"}, False),  # a value of the wrong type
])
def test_enumerated_key_maps_agree_with_the_model(weights, valid):
    """Tests that a dict with Literal keys is published as an object of those keys (strict: one
    nullable property each) and that schema and model accept and reject the same maps."""
    assert Draft202012Validator(input_schema(_MapArgs)).is_valid({"weights": weights}) is valid
    strict = strict_schema(_MapArgs)
    sent = {"weights": {k: weights.get(k) for k in ("load", "late")}} if valid else None
    if sent is not None:
        Draft202012Validator(strict).validate(sent)
        parsed = _MapArgs.model_validate(drop_null_optionals(_MapArgs, sent))
        assert parsed.weights == weights
    try:
        _MapArgs.model_validate({"weights": weights})
        accepted = True
    except ValueError:
        accepted = False
    assert accepted is valid


def test_strict_is_claimed_only_when_it_holds():
    """Tests that a tool whose arguments hold a free-keyed map is published with strict: false,
    and one with an enumerated-key map with strict: true."""
    closed = tool_schemas("openai", specs=[_map_tool(_MapArgs)])[0]["function"]
    open_ = tool_schemas("openai", specs=[_map_tool(_OpenMapArgs)])[0]["function"]
    assert closed["strict"] is True and open_["strict"] is False
    tags = open_["parameters"]["properties"]["tags"]
    assert _allows_null(tags)  # optional, so nullable like every other optional field
    assert tags["anyOf"][0]["additionalProperties"] == {"maximum": 9, "minimum": 0,
                                                        "type": "integer"}
