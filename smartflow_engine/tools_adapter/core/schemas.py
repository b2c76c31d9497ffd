"""Tool schemas for LLM APIs, generated from the registry's pydantic argument models.

Three formats:

- ``openai``: ``{"type": "function", "function": {name, description, parameters, strict: true}}``,
  strict-mode compatible: every object has ``additionalProperties: false`` and lists all its
  properties as required; optional fields are nullable (``null`` means "not given"); no ``$ref``,
  ``title`` or ``default`` keywords (the default is stated in the description instead, but for a
  flag's ``false``, which ``null`` already means). A map with
  enumerated keys becomes an object with one nullable property per key; a map with free keys
  cannot be strict, and such a tool is published with ``strict: false``. String limits
  (``maxLength``/``minLength``, outside the keywords OpenAI documents for strict mode) move into
  the description (``（1-64个字符）``); the argument models still enforce them.
- ``anthropic``: ``{name, description, input_schema}``, the input schema as MCP's.
- ``mcp``: ``{name, description, inputSchema, annotations}`` (+ ``outputSchema`` for JSON tools:
  each tool's own reply schema, :data:`.replies.OUTPUT_SCHEMAS`). The annotations: reads are
  read-only and idempotent; ``commit``, ``reload`` and ``upsert_task_class`` are destructive
  (:data:`DESTRUCTIVE`).
  Neither has a strict mode, so an optional argument is simply optional: its schema is ``X``
  itself, not ``anyOf: [X, null]`` (a client that converts arguments by the top-level ``type``, as
  MCP Inspector does, then sends a number for an optional integer; and no token is spent on
  ``null``). ``null`` is still accepted.

Every format reads the argument models through :func:`_compact` (the same schema in fewer
tokens: every definition is sent on every turn; ``benchmarks/results_tokens.md``).

Every description ends with the tool's return type and a minimal real example reply
(:mod:`.replies`).

Because a strict-mode model sends ``null`` for an optional field it leaves out,
:func:`drop_null_optionals` turns such ``null`` values back into omitted keys before validation.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel

from .replies import output_schema, reply_tail
from .spec import Mode, ToolSpec

Format = Literal["openai", "anthropic", "mcp"]
FORMATS: tuple[str, ...] = ("openai", "anthropic", "mcp")

CONFIRM_NOTE = "（需用户确认：确认后才执行。）"


# ---------------------------------------------------------------------------------- public API
def visible_specs(
    specs: Sequence[ToolSpec], mode: Mode | str | None = None, include: Iterable[str] = ()
) -> list[ToolSpec]:
    """The rows offered in ``mode`` (its leading tools first), or in any mode when ``mode`` is
    ``None``, plus ``include`` names. A row offered in no mode is hidden unless included."""
    extra = set(include)
    if mode is None:
        return [s for s in specs if s.modes or s.name in extra]
    from .registry import order_for

    m = Mode(mode)
    rows = {s.name: s for s in specs if m in s.modes or s.name in extra}
    return [rows[n] for n in order_for(m, list(rows))]


def tool_schemas(
    fmt: Format | str = "openai",
    mode: Mode | str | None = None,
    *,
    specs: Sequence[ToolSpec] | None = None,
    include: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Tool definitions in ``fmt`` for the tools offered in ``mode`` (every tool when ``None``).

    Parameters
    ----------
    fmt
        ``openai``, ``anthropic`` or ``mcp``.
    mode
        An execution mode; ``None`` lists every registered tool.
    specs
        The registry table (default: :data:`registry.TOOLS`).
    include
        Names offered in addition to the mode's tools (a hidden tool a session enabled).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown schema format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if specs is None:
        from .registry import TOOLS

        specs = TOOLS
    return [_tool_schema(spec, fmt) for spec in visible_specs(specs, mode, include)]


def tool_description(spec: ToolSpec) -> str:
    """The LLM-facing description: the registry's text, the confirm note when needed, and at the
    end the return type and a minimal real example reply (:func:`.replies.reply_tail`)."""
    return spec.description + (CONFIRM_NOTE if spec.needs_confirm else "") + reply_tail(spec)


def mcp_output_schema(spec: ToolSpec) -> dict[str, Any] | None:
    """MCP's ``outputSchema``: a JSON tool's own reply schema (:data:`.replies.OUTPUT_SCHEMAS`),
    ``None`` for a text tool. It describes a successful reply, the only one that carries
    structured content (a failure is an ``isError`` result with text only)."""
    return output_schema(spec) if spec.output == "json" else None


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema, self-contained: ``$ref`` inlined, ``title`` dropped, objects closed."""
    return copy.deepcopy(_plain(model))


def mcp_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema for MCP clients: as :func:`input_schema`, with every optional
    argument published as its own type instead of ``anyOf: [X, null]``."""
    return copy.deepcopy(_mcp_cached(model))


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in OpenAI strict-mode form (see the module docstring)."""
    return copy.deepcopy(_strict_cached(model))


def drop_null_optionals(model: type[BaseModel], args: Any) -> Any:
    """``args`` without the ``null`` values of optional fields (at every nesting level).

    A strict-mode caller must send every property and uses ``null`` for "not given"; the argument
    models, however, treat an omitted optional field as its default. Required fields keep their
    ``null`` so the validator can reject it.
    """
    if not isinstance(args, dict):
        return args
    out: dict[str, Any] = {}
    for key, value in args.items():
        field = model.model_fields.get(key)
        if field is None:
            out[key] = value
            continue
        if value is None and not field.is_required():
            continue
        sub = _nested_model(field.annotation)
        if sub is not None:
            if isinstance(value, dict):
                value = drop_null_optionals(sub, value)
            elif isinstance(value, list):
                value = [drop_null_optionals(sub, v) for v in value]
        elif isinstance(value, dict) and _is_map(field.annotation):
            # a map with enumerated keys is an object of optional properties in strict mode
            value = {k: v for k, v in value.items() if v is not None}
        out[key] = value
    return out


# ---------------------------------------------------------------------------------- formats
def _tool_schema(spec: ToolSpec, fmt: str) -> dict[str, Any]:
    description = tool_description(spec)
    if fmt == "openai":
        params = strict_schema(spec.args_model)
        return {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": description,
                "parameters": params,
                "strict": _is_closed(params),
            },
        }
    if fmt == "anthropic":
        return {
            "name": spec.name,
            "description": description,
            "input_schema": mcp_input_schema(spec.args_model),
        }
    out: dict[str, Any] = {
        "name": spec.name,
        "description": description,
        "inputSchema": mcp_input_schema(spec.args_model),
        "annotations": mcp_annotations(spec),
    }
    schema = mcp_output_schema(spec)
    if schema is not None:
        out["outputSchema"] = schema
    return out


# Writes no other call undoes (MCP: "may perform destructive updates"): ``commit`` overwrites the
# database's rows, ``reload`` with ``discard_changes`` drops the session's uncommitted changes,
# ``upsert_task_class`` with an id overwrites a stored task class's fields. Every other write
# changes only the session's window, where another write (or restore_best) undoes it.
DESTRUCTIVE: frozenset[str] = frozenset({"commit", "reload", "upsert_task_class"})


def mcp_annotations(spec: ToolSpec) -> dict[str, bool]:
    """MCP behaviour hints: reads are read-only and idempotent; :data:`DESTRUCTIVE` writes are
    destructive; nothing reaches outside the window and its database."""
    read = not spec.is_write
    return {
        "readOnlyHint": read,
        "destructiveHint": spec.name in DESTRUCTIVE,
        "idempotentHint": read,
        "openWorldHint": False,
    }


# ---------------------------------------------------------------------------------- transforms
@cache
def _plain(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    out: dict[str, Any] = _close(_clean(_inline(raw, defs, ())))
    return out


@cache
def _compact_cached(model: type[BaseModel]) -> dict[str, Any]:
    """What a model reads (the three LLM formats): :func:`_plain` without the class docstring
    (it is for developers; the tool's description is the model's) and :func:`_compact`."""
    plain = {k: v for k, v in _plain(model).items() if k != "description"}
    out: dict[str, Any] = _compact(plain)
    return out


def _compact(node: Any) -> Any:
    """The same schema in fewer tokens (every tool definition is sent on every turn):

    - an optional scalar or array, ``anyOf: [X, {"type": "null"}]``, becomes X with
      ``type: [x, "null"]`` (and ``null`` among its ``enum``); an option's own description
      gives way to the property's;
    - a static guard is not stated (a day's ``maximum`` of 1000, an id's 2**31-1, an action
      id's 128 characters); the argument model still enforces it;
    - an array's items say nothing the array's own description says (``任务 ID`` under
      ``task_ids: 要移出的任务``).
    """
    if isinstance(node, list):
        return [_compact(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {
        k: (
            {n: _compact(sub) for n, sub in v.items()}
            if k in _SCHEMA_MAPS and isinstance(v, dict)
            else _compact(v)
        )
        for k, v in node.items()
    }
    high, longest = out.get("maximum"), out.get("maxLength")
    if isinstance(high, int | float) and high >= GUARD:
        out.pop("maximum")
    if isinstance(longest, int) and longest >= TEXT_GUARD:
        out.pop("maxLength")
        if out.get("minLength") == 1:
            out.pop("minLength")
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        (inner,) = [o for o in options if o != {"type": "null"}]
        kind = inner.get("type") if isinstance(inner, dict) else None
        if isinstance(kind, str) and kind != "object" and "anyOf" not in inner:
            merged = {
                k: v for k, v in inner.items() if k != "description" or "description" not in out
            }
            merged["type"] = [kind, "null"]
            if "enum" in merged:
                merged["enum"] = [*merged["enum"], None]
            rest = {k: v for k, v in out.items() if k != "anyOf"}
            out = {**merged, **rest}
    items = out.get("items")
    if "description" in out and isinstance(items, dict) and "description" in items:
        out["items"] = {k: v for k, v in items.items() if k != "description"}
    return out


# A static guard at least this large is not published: it bounds nothing a call needs (a time
# limit's 600 s, where the server's own cap decides; a day index's 1000 and an id's 2**31-1, where
# the window's own bounds, read from the tools, decide; a weight's 1000), and the argument model
# still enforces it (its refusal names it).
GUARD = 600
# Likewise a text's length guard of this many characters or more (an action id's 128, a note's
# 500), with its non-empty minimum.
TEXT_GUARD = 128


@cache
def _strict_cached(model: type[BaseModel]) -> dict[str, Any]:
    out: dict[str, Any] = _strictify(_lift_limits(copy.deepcopy(_compact_cached(model))))
    return out


def _lift_limits(node: Any) -> Any:
    """String limits inside an ``anyOf`` option move up to the property (whose description then
    states them)."""
    if isinstance(node, list):
        return [_lift_limits(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _lift_limits(v) for k, v in node.items()}
    for option in out.get("anyOf", []):
        if isinstance(option, dict):
            for key in ("minLength", "maxLength"):
                if key in option:
                    out[key] = option.pop(key)
    return out


@cache
def _mcp_cached(model: type[BaseModel]) -> dict[str, Any]:
    out: dict[str, Any] = _not_nullable(copy.deepcopy(_compact_cached(model)))
    return out


def _not_nullable(node: Any) -> Any:
    """Optional properties as their own type: ``anyOf: [X, null]`` → ``X`` (the property's own
    keys, e.g. its description, win), ``type: [x, "null"]`` → ``x``, a ``null`` default dropped."""
    if isinstance(node, list):
        return [_not_nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {
        k: (
            {n: _not_nullable(sub) for n, sub in v.items()}
            if k in _SCHEMA_MAPS and isinstance(v, dict)
            else _not_nullable(v)
        )
        for k, v in node.items()
    }
    props = out.get("properties")
    if isinstance(props, dict):
        required = set(out.get("required", []))
        out["properties"] = {
            name: sub if name in required else _without_null(sub) for name, sub in props.items()
        }
    return out


def _without_null(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if out.get("default", 0) is None:
        out.pop("default")
    options = out.get("anyOf")
    if isinstance(options, list):
        rest = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
        if len(rest) == 1 and isinstance(rest[0], dict):
            out.pop("anyOf")
            out = {**rest[0], **out}
        elif len(rest) != len(options):
            out["anyOf"] = rest
    kind = out.get("type")
    if isinstance(kind, list) and "null" in kind:
        kept = [k for k in kind if k != "null"]
        out["type"] = kept[0] if len(kept) == 1 else kept
    return out


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(v, defs, seen) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise ValueError(f"recursive argument model {name} cannot be inlined")
        target = _inline(defs[name], defs, (*seen, name))
        siblings = {k: _inline(v, defs, seen) for k, v in node.items() if k != "$ref"}
        return {**target, **siblings}
    return {k: _inline(v, defs, seen) for k, v in node.items()}


_SCHEMA_MAPS = ("properties", "$defs", "patternProperties")


def _clean(node: Any) -> Any:
    """Drop ``title`` keywords (not property names called ``title``)."""
    if isinstance(node, list):
        return [_clean(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _clean(sub) for name, sub in value.items()}
        else:
            out[key] = _clean(value)
    return out


def _close(node: Any) -> Any:
    """Every object schema gets ``additionalProperties: false`` (the models forbid extras).

    A map with enumerated keys (``dict[Literal[...], V]``) becomes an object with one optional
    property per key, which says the same and fits strict mode; a map with free keys stays open.
    """
    if isinstance(node, list):
        return [_close(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (_close_map(v) if k in _SCHEMA_MAPS else _close(v)) for k, v in node.items()}
    values = out.get("additionalProperties")
    if isinstance(values, dict):
        keys = out.get("propertyNames", {}).get("enum")
        if keys is None:
            return out  # a free-keyed map: nothing to close
        out.pop("propertyNames")
        out["properties"] = {**{str(k): values for k in keys}, **out.get("properties", {})}
    if out.get("type") == "object" or "properties" in out:
        out.setdefault("type", "object")
        out.setdefault("properties", {})
        out["additionalProperties"] = False
    return out


def _close_map(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    return {name: _close(sub) for name, sub in value.items()}


def _strictify(node: Any) -> Any:
    if isinstance(node, list):
        return [_strictify(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _strictify(sub) for name, sub in value.items()}
        elif key == "default":
            continue
        else:
            out[key] = _strictify(value)
    said = "默认" in out.get("description", "")
    if "default" in node and node["default"] not in (None, False) and not said:
        # (a flag's default false goes without saying: null, "not given", is false; a string
        # default unquoted, as the enum lists it)
        default = node["default"]
        shown = default if isinstance(default, str) else json.dumps(default, ensure_ascii=False)
        note = f"默认 {shown}"
        out["description"] = f"{out['description']}（{note}）" if out.get("description") else note
    if "maxLength" in out or "minLength" in out:
        # Not a strict-mode keyword: said in words, enforced by the argument model.
        low, high = out.pop("minLength", None), out.pop("maxLength", None)
        if low is not None and high is not None:
            note = f"{low}-{high}个字符"
        elif high is not None:
            note = f"最多{high}个字符"
        else:
            note = f"至少{low}个字符"
        out["description"] = f"{out['description']}（{note}）" if out.get("description") else note
    if out.get("type") == "object" and not isinstance(out.get("additionalProperties"), dict):
        props: dict[str, Any] = out.get("properties", {})
        required = set(out.get("required", []))
        out["properties"] = {
            name: (sub if name in required else _nullable(sub)) for name, sub in props.items()
        }
        out["required"] = list(props)
        out["additionalProperties"] = False
    return out


def _is_closed(node: Any) -> bool:
    """No open map anywhere (``additionalProperties`` other than ``false``): strict mode is only
    claimed when it holds, since OpenAI rejects a strict schema with an open object."""
    if isinstance(node, list):
        return all(_is_closed(v) for v in node)
    if not isinstance(node, dict):
        return True
    kind = node.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    if is_object and node.get("additionalProperties", False) is not False:
        return False
    return all(_is_closed(v) for k, v in node.items() if k != "additionalProperties")


def _allows_null(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(s, dict) and _allows_null(s) for s in node.get("anyOf", []))


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    if _allows_null(node):
        return node
    kind = node.get("type")
    if isinstance(kind, str) and kind != "object" and "anyOf" not in node:
        out = dict(node, type=[kind, "null"])
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    inner = {k: v for k, v in node.items() if k != "description"}
    out = {"anyOf": [inner, {"type": "null"}]}
    if "description" in node:
        out["description"] = node["description"]
    return out


def _is_map(annotation: Any) -> bool:
    """``dict[...]`` or ``dict[...] | None``."""
    origin = get_origin(annotation)
    if origin is dict:
        return True
    return origin is not None and any(_is_map(a) for a in get_args(annotation))


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside ``M``, ``list[M]`` or ``M | None``, if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) is not None:  # list[M], M | None, Annotated[M, ...], ...
        for arg in get_args(annotation):
            found = _nested_model(arg)
            if found is not None:
                return found
    return None
