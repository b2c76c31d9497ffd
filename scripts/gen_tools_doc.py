"""Write docs/tools.md from the tool registry: every tool, its arguments, kind, modes and one
real reply.

Usage: ``python scripts/gen_tools_doc.py [--check] [--out docs/tools.md]``. With ``--check`` it
writes nothing and exits 1 when the file differs from what the code generates now
(``tests/test_docs.py`` runs the same comparison).

Every tool in ``registry.TOOLS`` gets a section, whoever added it: its metadata and argument table
come from the registry row and the published (MCP) input schema, and its reply is what
``Toolbox.call`` answers on the bundled sample window, seeded into an in-memory SQLite store as
``smartflow demo`` does. The example arguments come from :data:`EXAMPLES`; a tool without an entry
is called with ``{}`` and its section says so (add an entry to show a successful call).
Replies carry no wall-clock figures, so the file is the same on every machine; solver examples
use small scopes that are proven within a fraction of their time limit.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "tools.md"
MAX_REPLY_LINES = 40
USER = 1

Call = tuple[str, dict[str, Any]]

# Placements made before the solver examples, so that they work on a few tasks (proven fast).
_SOLVER_SETUP: list[Call] = [
    ("place", {"task_id": 11, "day": 6, "slot_start": 1}),
    ("place", {"task_id": 12, "day": 6, "slot_start": 5}),
    ("place", {"task_id": 13, "day": 7, "slot_start": 1}),
    ("place", {"task_id": 14, "day": 7, "slot_start": 5}),
    ("place", {"task_id": 16, "day": 13, "slot_start": 1}),
    ("place", {"task_id": 17, "day": 13, "slot_start": 7}),
    ("place", {"task_id": 18, "day": 14, "slot_start": 1}),
    ("place", {"task_id": 19, "day": 14, "slot_start": 5}),
    ("place", {"task_id": 20, "day": 4, "slot_start": 3}),
]

# tool name -> (calls made first, on the same window; the example's arguments)
EXAMPLES: dict[str, tuple[list[Call], dict[str, Any]]] = {
    "get_overview": ([], {}),
    "query_range": ([], {"day": 3}),
    "find_free": ([], {"duration": 3, "day": 6}),
    "list_tasks": ([], {"status": "pending"}),
    "get_task_info": ([], {"task_id": 6}),
    "analyze_health": ([], {}),
    "analyze_load": ([], {"scope": "day_range", "day_from": 1, "day_to": 3}),
    "analyze_subjects": ([], {"category": "复习"}),
    "analyze_context": ([], {"day_from": 1, "day_to": 3}),
    "analyze_tolerance": ([], {}),
    "place": ([], {"task_id": 15, "day": 3, "slot_start": 3}),
    "move": (
        [("place", {"task_id": 11, "day": 6, "slot_start": 1})],
        {"task_id": 11, "new_day": 7, "new_slot_start": 1},
    ),
    "swap": ([("place", {"task_id": 12, "day": 6, "slot_start": 5})], {"task_a": 9, "task_b": 12}),
    "batch_move": (
        [],
        {
            "moves": [
                {"task_id": 9, "new_day": 6, "new_slot_start": 1},
                {"task_id": 10, "new_day": 6, "new_slot_start": 3},
            ]
        },
    ),
    "unplace": ([], {"task_id": 9}),
    "check_feasibility": ([], {"time_limit_s": 5}),
    "propose_placement": (_SOLVER_SETUP, {"time_limit_s": 5, "seed": 0}),
    "apply_proposal": (_SOLVER_SETUP, {"time_limit_s": 5, "seed": 0}),
    "spread_even": (
        [
            ("place", {"task_id": 12, "day": 6, "slot_start": 1}),
            ("place", {"task_id": 14, "day": 6, "slot_start": 3}),
            ("place", {"task_id": 18, "day": 6, "slot_start": 5}),
        ],
        {"category": "作业", "time_limit_s": 5},
    ),
    "min_context_switch": (
        [
            ("place", {"task_id": 11, "day": 6, "slot_start": 1}),
            ("place", {"task_id": 12, "day": 6, "slot_start": 4}),
            ("place", {"task_id": 17, "day": 6, "slot_start": 6}),
            ("place", {"task_id": 14, "day": 6, "slot_start": 8}),
        ],
        {"day_from": 6, "day_to": 6, "time_limit_s": 5},
    ),
    "query_target_tasks": ([], {"target_filter": {"status": ["pending"]}, "limit": 2}),
    "query_available_slots": ([], {"task_id": 9, "limit": 3}),
    "get_round_log": (
        [("analyze_health", {}), ("move", {"task_id": 9, "new_day": 6, "new_slot_start": 1})],
        {},
    ),
    "restore_best": (
        [("analyze_health", {}), ("move", {"task_id": 9, "new_day": 6, "new_slot_start": 1})],
        {},
    ),
    "commit": ([("place", {"task_id": 11, "day": 6, "slot_start": 1})], {}),
    "reload": ([("place", {"task_id": 11, "day": 6, "slot_start": 1})], {"discard_changes": True}),
    "resolve_negotiation": ([], {"choice": "accept_risk"}),
    "upsert_task_class": (
        [],
        {
            "task_class": {
                "name": "考研英语",
                "start": {"week": 7, "day_of_week": 3},
                "end": {"week": 9, "day_of_week": 7},
                "total_slots": 12,
                "strategy": "steady",
                "excluded_slots": [11, 12],
            },
            "items": [{"content": "背单词", "duration": 2}, {"content": "真题阅读", "duration": 3}],
            "source": "chat",
        },
    ),
}


def _type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """A short type for one argument's JSON schema."""
    if "$ref" in prop:
        prop = defs.get(prop["$ref"].rsplit("/", 1)[-1], {})
    if "anyOf" in prop:
        kinds = [_type(p, defs) for p in prop["anyOf"] if p.get("type") != "null"]
        return " or ".join(kinds)
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in prop["enum"])
    kind = prop.get("type", "any")
    if kind == "array":
        inner = _type(prop.get("items", {}), defs)
        size = ""
        if "minItems" in prop or "maxItems" in prop:
            size = f", {prop.get('minItems', 0)}–{prop.get('maxItems', '…')} items"
        return f"list of {inner}{size}"
    if kind == "object":
        keys = list(prop.get("properties", {}))
        if keys:
            return "object (" + ", ".join(keys) + ")"
        extra = prop.get("additionalProperties")
        return f"object of {_type(extra, defs)}" if isinstance(extra, dict) else "object"
    if kind in ("integer", "number"):
        lo = prop.get("minimum", prop.get("exclusiveMinimum"))
        hi = prop.get("maximum", prop.get("exclusiveMaximum"))
        if lo is not None or hi is not None:
            left = "(" if "exclusiveMinimum" in prop else "["
            right = ")" if "exclusiveMaximum" in prop else "]"
            return f"{kind} {left}{'' if lo is None else lo}, {'' if hi is None else hi}{right}"
    return str(kind)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _arguments(schema: dict[str, Any]) -> list[str]:
    props: dict[str, Any] = schema.get("properties", {})
    if not props:
        return ["No arguments."]
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    rows = ["| argument | type | required | default | description |", "|---|---|---|---|---|"]
    for name, prop in props.items():
        default = (
            ""
            if name in required or "default" not in prop
            else f"`{json.dumps(prop['default'], ensure_ascii=False)}`"
        )
        desc = prop.get("description") or next(
            (p.get("description") for p in prop.get("anyOf", []) if p.get("description")), ""
        )
        rows.append(
            f"| `{name}` | {_cell(_type(prop, defs))} | "
            f"{'yes' if name in required else 'no'} | {_cell(default)} | {_cell(desc)} |"
        )
    return rows


def _fresh_toolbox() -> Any:
    """The sample window seeded into an in-memory SQLite store and loaded back (as the demo)."""
    from smartflow_engine import ScheduleState, Toolbox
    from smartflow_engine.cli import sample_window_path
    from smartflow_engine.store import Store

    sample = ScheduleState.from_json(sample_window_path())
    store = Store.from_url("sqlite://")
    store.seed_from_state(USER, sample)
    state = store.load_window(USER, sample.window.day_mapping)
    # every tool is shown, the hidden one included; replies as inside a session (the loop's
    # rounds, evidence lines and round log)
    from smartflow_engine.tools_adapter import registry

    return Toolbox(
        state,
        store=store,
        user_id=USER,
        self_check=True,
        loop=True,
        enabled_tools=[spec.name for spec in registry.TOOLS],
    )


def _reply(name: str, output: str) -> tuple[str, dict[str, Any], bool, str]:
    setup, args = EXAMPLES.get(name, ([], {}))
    tb = _fresh_toolbox()
    for tool, targs in setup:
        tb.call(tool, targs)
    # A confirm tool's reply as the user sees it after confirming (the preview is the same call).
    reply = tb.call(name, args, confirm=True)
    if output == "json":
        with contextlib.suppress(json.JSONDecodeError):
            reply = json.dumps(json.loads(reply), ensure_ascii=False, indent=2)
    lines = reply.splitlines()
    if len(lines) > MAX_REPLY_LINES:
        lines = [*lines[:MAX_REPLY_LINES], f"… ({len(lines) - MAX_REPLY_LINES} more lines)"]
    setup_text = "; ".join(f"`{t} {json.dumps(a, ensure_ascii=False)}`" for t, a in setup)
    return "\n".join(lines), args, name in EXAMPLES, setup_text


def generate() -> str:
    """The text of docs/tools.md for the registry as it is now."""
    from smartflow_engine.solver._jit import kernels_ready
    from smartflow_engine.tools_adapter.registry import TOOLS
    from smartflow_engine.tools_adapter.schemas import tool_description, tool_schemas
    from smartflow_engine.tools_adapter.spec import Mode

    kernels_ready("wait")  # the same proposal as every later call: compiled kernels from the start
    every = [spec.name for spec in TOOLS]  # the hidden one too
    schemas = {s["name"]: s["inputSchema"] for s in tool_schemas("mcp", include=every)}
    all_modes = [m.value for m in Mode]

    def kind(spec: Any) -> str:
        return "confirm" if spec.needs_confirm else spec.kind

    def modes(spec: Any) -> str:
        offered = [m for m in all_modes if Mode(m) in spec.modes]
        if not offered:
            return "none by default (offered when a session enables it)"
        return "all" if len(offered) == len(all_modes) else ", ".join(offered)

    out = [
        "# Tools",
        "",
        "<!-- Generated by scripts/gen_tools_doc.py from the tool registry; do not edit by hand. -->",
        "",
        "Every tool is one call, `Toolbox.call(name, args) -> str`, and the same tool over MCP and "
        "HTTP. Arguments are strict (unknown keys, wrong types and out-of-range values are refused "
        "with a reply naming the argument, never an exception). Kinds:",
        "",
        "- **read**: answers from the window, changes nothing;",
        "- **write**: changes the window atomically (all or nothing) and adds to the change log;",
        "- **confirm**: a write a session previews first and runs only after the user confirms "
        "(the `Toolbox` itself runs it directly).",
        "",
        f"Modes: {', '.join(f'`{m}`' for m in all_modes)} (the execution modes of the tool-layer "
        "design); a session offers only its mode's tools.",
        "",
        "Each example reply below is what the engine answered when this file was generated: the "
        "bundled sample window (`smartflow_engine/data/sample_window.json`, 14 days, 12 pending "
        "tasks), seeded into an in-memory SQLite store and loaded back, a fresh copy per tool. "
        "Text replies are Chinese, in the layouts of the SmartFlow tool-layer design; JSON "
        "replies follow the envelope of the P1 analysis plan. `tests/test_docs.py` regenerates "
        "this file and fails when it differs.",
        "",
        "| tool | kind | reply | modes |",
        "|---|---|---|---|",
    ]
    for spec in TOOLS:
        out.append(
            f"| [`{spec.name}`](#{spec.name}) | {kind(spec)} | {spec.output} | {modes(spec)} |"
        )
    for spec in TOOLS:
        reply, args, has_example, setup = _reply(spec.name, spec.output)
        needs = "yes" if spec.needs_state else "no"
        out += [
            "",
            f"## {spec.name}",
            "",
            f"Kind: **{kind(spec)}** · reply: {spec.output} · modes: {modes(spec)} · needs a "
            f"loaded window: {needs}",
            "",
            f"> {tool_description(spec)}",
            "",
            *_arguments(schemas.get(spec.name, {})),
            "",
        ]
        if setup:
            out += [f"After {setup}:", ""]
        call = f"tb.call({spec.name!r}, {args!r})"
        out += ["```python", call, "```", ""]
        if not has_example:
            out += [
                "(No example arguments yet: this is the reply to `{}`; add an entry to "
                "`EXAMPLES` in `scripts/gen_tools_doc.py`.)",
                "",
            ]
        out += ["```json" if spec.output == "json" else "```text", reply, "```"]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    opts = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    text = generate()
    if opts.check:
        current = opts.out.read_text(encoding="utf-8") if opts.out.exists() else ""
        if current != text:
            print(
                f"{opts.out} is out of date: run python scripts/gen_tools_doc.py", file=sys.stderr
            )
            return 1
        return 0
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(text, encoding="utf-8")
    print(f"wrote {opts.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
