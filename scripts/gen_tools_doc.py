"""Write docs/tools.md and the descriptions' example replies from the tool registry: every tool,
its arguments, kind, modes and one real reply.

Usage: ``python scripts/gen_tools_doc.py [--check] [--out docs/tools.md]``. It writes docs/tools.md
and ``smartflow_engine/data/tool_examples.json`` (the minimal real replies every tool description
ends with, :mod:`smartflow_engine.tools_adapter.core.replies`); the second file is written first, since
docs/tools.md quotes the descriptions. With ``--check`` it writes nothing and exits 1 when either
file differs from what the code generates now (``tests/test_docs.py`` and
``tests/tools_adapter/test_reply_examples.py`` run the same comparisons).

Every tool in ``registry.TOOLS`` gets a section, whoever added it: its metadata and argument table
come from the registry row and the published (MCP) input schema, and its reply is what
``Toolbox.call`` answers on the bundled sample window, seeded into an in-memory SQLite store as
``smartflow demo`` does. The example arguments come from :data:`EXAMPLES`; a tool without an entry
is called with ``{}`` and its section says so (add an entry to show a successful call). A tool
whose real reply needs a window the sample is not (``resolve_negotiation`` answers only after an
infeasible health check) runs on a tiny built-in window instead (:data:`WINDOWS`).
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
    "query_target_tasks": (  # "the weekend's tasks" of a student's request, one placed there
        [("place", {"task_id": 18, "day": 6, "slot_start": 1})],
        {"week": 7, "day_scope": "weekend", "status": "suggested"},
    ),
    "query_available_slots": (
        [],
        {"week": 8, "day_scope": "workday", "duration": 2, "exclude_sections": [1, 2, 11, 12]},
    ),
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
    "resolve_negotiation": ([("analyze_health", {})], {"choice": "accept_risk"}),
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
                "tolerance_preference": "normal",
            },
            "items": [{"content": "背单词", "duration": 2}, {"content": "真题阅读", "duration": 3}],
            "source": "chat",
        },
    ),
}

# One day of 12 periods, all held by a locked course, and a pending task of 2: proven infeasible.
TINY_INFEASIBLE: dict[str, Any] = {
    "window": {"total_days": 1, "slots_per_day": 12},
    "tasks": [
        {
            "state_id": 1,
            "source": "event",
            "name": "全天实验课",
            "category": "课程",
            "status": "existing",
            "locked": True,
            "slots": [{"day": 1, "slot_start": 1, "slot_end": 12}],
        },
        {
            "state_id": 2,
            "source": "task_item",
            "name": "复习线代",
            "category": "复习",
            "status": "pending",
            "duration": 2,
        },
    ],
}

# tool name -> the window its example runs on, instead of the sample window
WINDOWS: dict[str, dict[str, Any]] = {"resolve_negotiation": TINY_INFEASIBLE}


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


def _docs_calibration() -> Any:
    """The default calibration with the proposal's search given a tenth of its work: the
    examples' searches then end on their deterministic budget far inside the wall clock, so a
    loaded machine gives the same replies (no 「搜索被时限截断」), and the docs check is not a
    timing test."""
    from dataclasses import replace

    from smartflow_engine.solver.budget import DEFAULT_CALIBRATION

    return replace(DEFAULT_CALIBRATION, one_search_share=0.1)


def _fresh_toolbox(window: dict[str, Any] | None = None) -> Any:
    """The sample window seeded into an in-memory SQLite store and loaded back (as the demo), or
    ``window`` (a §3.1 JSON object) without a store."""
    from smartflow_engine import ScheduleState, Toolbox
    from smartflow_engine.cli import sample_window_path
    from smartflow_engine.store import Store
    from smartflow_engine.tools_adapter.core import registry

    # every tool is shown, the hidden one included; replies as inside a session (the loop's
    # rounds, evidence lines and round log)
    every = [spec.name for spec in registry.TOOLS]
    if window is not None:
        state = ScheduleState.model_validate(window)
        return Toolbox(
            state,
            self_check=True,
            loop=True,
            enabled_tools=every,
            calibration=_docs_calibration(),
        )
    sample = ScheduleState.from_json(sample_window_path())
    store = Store.from_url("sqlite://")
    store.seed_from_state(USER, sample)
    state = store.load_window(USER, sample.window.day_mapping)
    return Toolbox(
        state,
        store=store,
        user_id=USER,
        self_check=True,
        loop=True,
        enabled_tools=every,
        calibration=_docs_calibration(),
    )


def real_reply(name: str) -> str:
    """What the engine answers to the example call of ``name`` (after its setup calls), on a
    fresh window. A confirm tool's reply as the user sees it after confirming."""
    setup, args = EXAMPLES.get(name, ([], {}))
    tb = _fresh_toolbox(WINDOWS.get(name))
    for tool, targs in setup:
        tb.call(tool, targs)
    reply: str = tb.call(name, args, confirm=True)
    return reply


def real_replies() -> dict[str, str]:
    """Every registered tool's real reply, by name."""
    from smartflow_engine.tools_adapter.core.registry import TOOLS

    return {spec.name: real_reply(spec.name) for spec in TOOLS}


def examples(replies: dict[str, str]) -> dict[str, str]:
    """The minimal example every description ends with, cut from the real replies."""
    from smartflow_engine.tools_adapter.core.registry import REGISTRY
    from smartflow_engine.tools_adapter.core.replies import minimal_example

    return {name: minimal_example(r, REGISTRY[name].output) for name, r in replies.items()}


def examples_text(replies: dict[str, str]) -> str:
    """The examples file for ``replies``. Where a committed example differs from the fresh one
    only in wall-clock figures, the committed one is kept (no churn)."""
    from smartflow_engine.tools_adapter.core.registry import REGISTRY
    from smartflow_engine.tools_adapter.core.replies import dump_examples, same_example

    fresh = examples(replies)
    committed = _committed_examples()
    for name, text in fresh.items():
        old = committed.get(name)
        if old is not None and same_example(old, text, REGISTRY[name].output):
            fresh[name] = old
    return dump_examples(fresh)


def _committed_examples() -> dict[str, str]:
    from smartflow_engine.tools_adapter.core.replies import EXAMPLES_PATH

    if not EXAMPLES_PATH.exists():
        return {}
    data: dict[str, str] = json.loads(EXAMPLES_PATH.read_text(encoding="utf-8"))
    return data


def _shown(name: str, output: str, reply: str) -> tuple[str, dict[str, Any], bool, str]:
    setup, args = EXAMPLES.get(name, ([], {}))
    if output == "json":
        with contextlib.suppress(json.JSONDecodeError):
            reply = json.dumps(json.loads(reply), ensure_ascii=False, indent=2)
    lines = reply.splitlines()
    if len(lines) > MAX_REPLY_LINES:
        lines = [*lines[:MAX_REPLY_LINES], f"… ({len(lines) - MAX_REPLY_LINES} more lines)"]
    setup_text = "; ".join(f"`{t} {json.dumps(a, ensure_ascii=False)}`" for t, a in setup)
    return "\n".join(lines), args, name in EXAMPLES, setup_text


def generate(replies: dict[str, str] | None = None) -> str:
    """The text of docs/tools.md for the registry as it is now (``replies``: the real replies,
    when already computed)."""
    from smartflow_engine.tools_adapter.core.registry import TOOLS
    from smartflow_engine.tools_adapter.core.replies import reply_tail
    from smartflow_engine.tools_adapter.core.schemas import CONFIRM_NOTE, tool_schemas
    from smartflow_engine.tools_adapter.core.spec import Mode

    if replies is None:
        replies = real_replies()
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
        "tasks), seeded into an in-memory SQLite store and loaded back, a fresh copy per tool "
        "(`resolve_negotiation`: a one-day window with no free period, which is infeasible). "
        "Every tool description ends with the tool's return type and this reply cut down "
        "(`smartflow_engine/tools_adapter/core/replies.py` states how); `outputSchema` on MCP is "
        "each JSON tool's own. Text replies are Chinese, in the layouts of the SmartFlow tool-layer design; JSON "
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
        reply, args, has_example, setup = _shown(spec.name, spec.output, replies[spec.name])
        needs = "yes" if spec.needs_state else "no"
        out += [
            "",
            f"## {spec.name}",
            "",
            f"Kind: **{kind(spec)}** · reply: {spec.output} · modes: {modes(spec)} · needs a "
            f"loaded window: {needs}",
            "",
            f"> {spec.description}{CONFIRM_NOTE if spec.needs_confirm else ''}",
            "",
            "The description ends with its return type and a minimal real example (what the "
            "model reads; cut from the reply below):",
            "",
            "```text",
            reply_tail(spec).strip("\n"),
            "```",
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
    from smartflow_engine.tools_adapter.core.replies import EXAMPLES_PATH, load_examples

    replies = real_replies()
    examples_now = examples_text(replies)
    if opts.check:
        stale = []
        if _read(EXAMPLES_PATH) != examples_now:
            stale.append(EXAMPLES_PATH)
        if _read(opts.out) != generate(replies):
            stale.append(opts.out)
        for path in stale:
            print(f"{path} is out of date: run python scripts/gen_tools_doc.py", file=sys.stderr)
        return 1 if stale else 0
    EXAMPLES_PATH.write_text(examples_now, encoding="utf-8")
    load_examples.cache_clear()  # the descriptions docs/tools.md quotes end with the new examples
    print(f"wrote {EXAMPLES_PATH}")
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(generate(replies), encoding="utf-8")
    print(f"wrote {opts.out}")
    return 0


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


if __name__ == "__main__":
    raise SystemExit(main())
