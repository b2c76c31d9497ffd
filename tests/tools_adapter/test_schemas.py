"""Tests of the generated tool schemas: valid JSON Schema 2020-12, OpenAI strict-mode rules, and
agreement between the schemas and the argument models."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import Field

from smartflow_engine import ScheduleState, Toolbox
from smartflow_engine.cli import sample_window_path
from smartflow_engine.tools_adapter.core import registry
from smartflow_engine.tools_adapter.core.args import Args
from smartflow_engine.tools_adapter.core.schemas import (
    CONFIRM_NOTE,
    FORMATS,
    TEXT_GUARD,
    drop_null_optionals,
    input_schema,
    strict_schema,
    tool_schemas,
)
from smartflow_engine.tools_adapter.core.spec import Mode, ToolSpec
from smartflow_engine.tools_adapter.sessions.session import Session
from tests.helpers.adapters import example_args, note_tool, specs_with
from tests.helpers.windows import load_window

MODES: list[Mode | None] = [None, *Mode]
TOOL_IDS = registry.tool_names()
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
STRICT_FORBIDDEN = {
    "$ref",
    "$defs",
    "default",
    "title",
    "allOf",
    "oneOf",
    "not",
    "patternProperties",
    "if",
    "then",
    "else",
}


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
        if node.get("type") == "object" or (
            isinstance(node.get("type"), list) and "object" in node["type"]
        ):
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
    offered = (
        registry.tool_names(mode)
        if mode is not None
        else [s.name for s in registry.TOOLS if s.modes]
    )  # a hidden tool is listed nowhere
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
        published = model.model_json_schema()["properties"]  # not the SkipJsonSchema ones
        for field_name, field in model.model_fields.items():
            if not field.is_required() and field_name in published:
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
            return {
                k: _as_strict_call(value.get(k), sub) for k, sub in option["properties"].items()
            }
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
    assert not Draft202012Validator(input_schema(registry.REGISTRY["move"].args_model)).is_valid(
        args
    )
    reply = Toolbox(load_window()).call("move", args)
    assert reply.startswith("移动失败：参数错误，"), reply


def test_strict_nulls_mean_omitted():
    """Tests that a strict-mode call sending null for every optional field gives the same reply
    as leaving the fields out, also inside batch items."""
    session = Session(load_window())
    nulls = session.call("list_tasks", {"category": None, "status": None})
    assert nulls == Toolbox(load_window()).call("list_tasks", {})
    moved = Session(load_window()).call(
        "batch_move",
        {"moves": [{"task_id": 6, "new_day": 5, "new_slot_start": 3, "from_day": None}]},
    )
    direct = Toolbox(load_window(), loop=True).call(
        "batch_move", {"moves": [{"task_id": 6, "new_day": 5, "new_slot_start": 3}]}
    )
    assert moved == direct and moved.startswith("批量移动完成")


def test_null_for_a_required_field_is_still_refused():
    """Tests that null only stands for "omitted" on optional fields: a required null is refused."""
    reply = Session(load_window()).call("get_task_info", {"task_id": None})
    assert reply.startswith("查询失败：参数错误，参数 task_id 应为整数")


def test_confirm_tools_say_so_in_their_description():
    """Tests that a needs_confirm tool's description tells the model about the confirm step."""
    spec = note_tool([])
    for fmt in FORMATS:
        entry = tool_schemas(fmt, Mode.FIRST_FULL, specs=specs_with(spec))[-1]
        text = entry["function"]["description"] if fmt == "openai" else entry["description"]
        assert CONFIRM_NOTE in text


def test_include_offers_a_hidden_tool():
    """Tests that include= adds a tool hidden in the mode, and nothing else."""
    hidden = note_tool([], modes=frozenset())
    specs = specs_with(hidden)
    base = [e["name"] for e in tool_schemas("anthropic", Mode.LOCAL_ADJUST, specs=specs)]
    more = [
        e["name"]
        for e in tool_schemas("anthropic", Mode.LOCAL_ADJUST, specs=specs, include=[hidden.name])
    ]
    assert hidden.name not in base and more == [*base, hidden.name]


@pytest.mark.parametrize("fmt", ["gemini", "", "OPENAI"])
def test_unknown_format_is_refused(fmt):
    """Tests that an unknown schema format is a ValueError naming the choices."""
    with pytest.raises(ValueError, match="openai"):
        tool_schemas(fmt)


def test_toolbox_schemas_delegate_here(spec_tools_window):
    """Tests that Toolbox.schemas (the public contract) returns these schemas."""
    assert Toolbox(spec_tools_window).schemas(fmt="anthropic") == tool_schemas("anthropic")


class _MapArgs(Args):
    """A test-only model with the two kinds of map an argument model may hold."""

    weights: (
        dict[Literal["load", "late"], Annotated[float, Field(strict=True, ge=0, le=10)]] | None
    ) = None


class _OpenMapArgs(Args):
    tags: dict[str, Annotated[int, Field(ge=0, le=9)]] = Field(default_factory=dict)


def _map_tool(model: type[Args]) -> ToolSpec:
    return ToolSpec(
        "map_tool",
        "read",
        model,
        lambda _ctx, _args: "ok",
        "映射参数（测试用）。",
        needs_state=False,
    )


@pytest.mark.parametrize(
    ("weights", "valid"),
    [
        ({"load": 2.0}, True),  # one known key
        ({"load": 2.0, "late": 0.5}, True),  # every key
        ({}, True),  # no key
        ({"speed": 1.0}, False),  # an unknown key
        ({"load": 11.0}, False),  # a value above its bound
        ({"load": "2"}, False),  # a value of the wrong type
    ],
)
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
    assert tags["anyOf"][0]["additionalProperties"] == {
        "maximum": 9,
        "minimum": 0,
        "type": "integer",
    }


# ---------------------------------------------------------------------------------- per client
def _walk(node: Any, path: str = "$"):
    """Every schema node under ``node`` with its path."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            if key in ("properties", "$defs") and isinstance(value, dict):
                for name, sub in value.items():
                    yield from _walk(sub, f"{path}.{name}")
            elif isinstance(value, dict | list):
                yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")


@pytest.mark.parametrize("name", TOOL_IDS)
def test_mcp_optional_arguments_are_optional_not_nullable(name):
    """Tests that the MCP schema publishes optional arguments as their own type (no null, no
    anyOf with null), leaves them out of `required`, and still accepts what the model accepts."""
    (entry,) = [e for e in tool_schemas("mcp", include=[name]) if e["name"] == name]
    schema = entry["inputSchema"]
    for path, node in _walk(schema):
        assert node.get("type") != "null" and "null" not in (node.get("type") or []), path
        assert node.get("default", 0) is not None, path
        for option in node.get("anyOf", []):
            assert option.get("type") != "null", path
    model = registry.REGISTRY[name].args_model
    required = {n for n, f in model.model_fields.items() if f.is_required()}
    assert set(schema.get("required", [])) == required
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema).validate(example_args(registry.REGISTRY[name], load_window()))


def test_mcp_optional_integer_has_a_top_level_type():
    """Tests that an optional integer (find_free.day) is published to MCP as an integer with its
    bounds, so a client converting by the top-level `type` sends a number; Anthropic gets the
    same schema (no strict mode there either: optional means not required)."""
    mcp = next(e for e in tool_schemas("mcp") if e["name"] == "find_free")["inputSchema"]
    assert mcp["properties"]["day"] == {
        "description": "限定某天；不传则搜索全部天",
        "minimum": 1,
        "type": "integer",
    }
    anthropic = next(e for e in tool_schemas("anthropic") if e["name"] == "find_free")
    assert anthropic["input_schema"] == mcp


@pytest.mark.parametrize("name", TOOL_IDS)
def test_openai_strict_schemas_carry_no_string_limits(name):
    """Tests that OpenAI strict schemas hold no maxLength/minLength (outside the keywords OpenAI
    documents for strict mode): each limit is stated in the description instead, and the OpenAI
    SDK's own strict-schema helper leaves the schema unchanged (it is already strict)."""
    import copy

    from openai.lib._pydantic import _ensure_strict_json_schema

    (entry,) = [e for e in tool_schemas("openai", include=[name]) if e["function"]["name"] == name]
    params = entry["function"]["parameters"]
    for path, node in _walk(params):
        assert "maxLength" not in node and "minLength" not in node, path
    plain = input_schema(registry.REGISTRY[name].args_model)
    limits = [
        n
        for _, n in _walk(plain)
        if ("maxLength" in n or "minLength" in n) and n.get("maxLength", 0) < TEXT_GUARD
    ]  # (a guard, e.g. an action id's 128 characters, is enforced, not stated)
    text = str(params)
    for node in limits:
        assert f"{node['maxLength']}个字符" in text if "maxLength" in node else "个字符" in text
    if entry["function"]["strict"]:
        assert _ensure_strict_json_schema(copy.deepcopy(params), path=(), root=params) == params


def test_openai_string_limits_stay_enforced(tools: Toolbox):
    """Tests that a string limit moved into the description is still enforced by the engine."""
    spread = next(e for e in tool_schemas("openai") if e["function"]["name"] == "spread_even")
    assert "1-64个字符" in spread["function"]["parameters"]["properties"]["category"]["description"]
    assert tools.call("spread_even", {"category": "复" * 65}).startswith(
        "均匀分散失败：参数错误，参数 category 最多 64 个字符"
    )
    assert tools.call("spread_even", {"category": ""}).startswith(
        "均匀分散失败：参数错误，参数 category 至少 1 个字符"
    )


# ---------------------------------------------------------------------------------- what a model reads (issue 45)
def _properties(node: Any, path: str = "") -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Every property at any depth: (path, its schema, the object schema that holds it)."""
    found: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            found.append((f"{path}.{name}", sub, node))
            found.extend(_properties(sub, f"{path}.{name}"))
        for key in ("anyOf", "items"):
            value = node.get(key)
            for sub in value if isinstance(value, list) else [value]:
                found.extend(_properties(sub, path))
    return found


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", TOOL_IDS)
def test_every_argument_has_a_description(fmt, name):
    """Tests that every argument, at every depth and in every format, has a description, the
    one exception being the keys of an enumerated map (``weights``), whose own description
    names each key (issue 45: seven arguments had none in the Anthropic/MCP formats)."""
    (entry,) = [e for e in tool_schemas(fmt, include=[name]) if _name(e, fmt) == name]
    fields = registry.REGISTRY[name].args_model.model_fields
    maps = {f".{n}" for n, f in fields.items() if "dict[" in str(f.annotation)}
    described = {p: sub.get("description", "") for p, sub, _ in _properties(_params(entry, fmt))}
    for path, text in described.items():
        owner, _, key = path.rpartition(".")
        if owner in maps:
            assert key in described[owner], (name, fmt, path)
        else:
            assert text, (name, fmt, path)


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_description_states_a_narrower_range_than_the_schema(fmt):
    """Tests that no argument says "1-12" while its schema admits more (issue 45: slot_start
    said 1-12 with maximum 24; a window may have up to 24 periods a day)."""
    for entry in tool_schemas(fmt, include=TOOL_IDS):
        for path, sub, _ in _properties(_params(entry, fmt)):
            nodes = [sub, *(o for o in sub.get("anyOf", []) if isinstance(o, dict))]
            items = [n["items"] for n in nodes if isinstance(n.get("items"), dict)]
            high = max((n.get("maximum", 0) for n in [*nodes, *items]), default=0)
            if high > 12:
                assert "1-12" not in sub.get("description", ""), (_name(entry, fmt), path)


def test_writes_no_call_undoes_are_annotated_destructive():
    """Tests MCP's destructive hint: commit (the database rows), reload (drops uncommitted
    changes) and upsert_task_class (overwrites a stored class) say so; every other write and
    every read does not, and reads are read-only."""
    hints = {e["name"]: e["annotations"] for e in tool_schemas("mcp", include=TOOL_IDS)}
    destructive = {n for n, a in hints.items() if a["destructiveHint"]}
    assert destructive == {"commit", "reload", "upsert_task_class"}
    for name, a in hints.items():
        assert a["readOnlyHint"] is not registry.REGISTRY[name].is_write, name


@pytest.mark.parametrize(("tool", "args"), [("query_range", {"day": 3}), ("list_tasks", {})])
def test_read_descriptions_promise_only_what_the_reply_shows(tool, args):
    """Tests that query_range and list_tasks no longer promise the source tag (来源 课程表/任务类)
    their replies dropped, and that each tag the description does promise (类别, 固定, 可嵌入) is
    in the real reply."""
    description = registry.REGISTRY[tool].description
    reply = Toolbox(ScheduleState.from_json(sample_window_path())).call(tool, args)
    assert "来源" not in description and "来源" not in reply
    for word in ("固定", "可嵌入"):
        assert word in description and word in reply, word
