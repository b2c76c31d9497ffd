"""Tokens of the tool definitions a model reads on every turn, per mode and schema format.

Counted with OpenAI's tokenizers, o200k_base and cl100k_base
(:mod:`smartflow_engine.tools_adapter.core.tokens`, the ``tokens`` extra). What a model reads:
the whole entry for OpenAI and Anthropic; on MCP the name, description and inputSchema (the
client keeps the annotations and outputSchema, also listed here as "MCP as listed"). Counting
is deterministic: the same code gives the same table on any machine.

``python -m benchmarks.bench_tokens`` writes ``benchmarks/results_tokens.md``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from smartflow_engine.tools_adapter.core.replies import TOKEN_BUDGET
from smartflow_engine.tools_adapter.core.schemas import FORMATS, tool_schemas
from smartflow_engine.tools_adapter.core.spec import Mode
from smartflow_engine.tools_adapter.core.tokens import ENCODINGS, count_tokens, model_facing

ROOT = Path(__file__).resolve().parent.parent

# Main at 1565beb (before issue 45), measured with the same counting on the same three formats:
# (bytes, o200k_base, cl100k_base) of first_full / local_adjust (global_reopt = first_full).
BEFORE = {
    ("first_full", "openai"): (57050, 15057, 16431),
    ("first_full", "anthropic"): (54395, 14498, 15806),
    ("first_full", "mcp"): (49591, 13161, 14489),
    ("local_adjust", "openai"): (40518, 10631, 11649),
    ("local_adjust", "anthropic"): (38879, 10304, 11290),
    ("local_adjust", "mcp"): (35772, 9437, 10443),
}
BEFORE_MCP_LISTED = {"first_full": (79536, 20251, 21182), "local_adjust": (53455, 13657, 14429)}


def _row(cells: list[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _counts(text: str) -> list[int]:
    return [count_tokens(text, e) for e in ENCODINGS]


def mode_table() -> list[str]:
    """One row per mode and format: tools, bytes and tokens now, and before (main at 1565beb)."""
    head = [
        "mode",
        "format",
        "tools",
        "KB",
        *ENCODINGS,
        "before: KB",
        *(f"before: {e}" for e in ENCODINGS),
    ]
    lines = [_row(head), "|" + "---|" * len(head)]
    for mode in Mode:
        for fmt in (*FORMATS, "mcp (as listed)"):
            listed = fmt == "mcp (as listed)"
            text = (
                json.dumps(tool_schemas("mcp", mode), ensure_ascii=False, separators=(",", ":"))
                if listed
                else model_facing(fmt, mode)
            )
            key = "first_full" if mode is Mode.GLOBAL_REOPT else mode.value
            before = BEFORE_MCP_LISTED[key] if listed else BEFORE[(key, fmt)]
            lines.append(
                _row(
                    [
                        mode.value,
                        fmt,
                        len(tool_schemas("mcp", mode)),
                        f"{len(text.encode()) / 1024:.1f}",
                        *_counts(text),
                        f"{before[0] / 1024:.1f}",
                        *before[1:],
                    ]
                )
            )
    return lines


def tool_table(mode: Mode = Mode.FIRST_FULL, fmt: str = "openai") -> list[str]:
    """Per tool of ``mode`` in ``fmt`` (o200k_base): its description text, the return type and
    example it ends with, and its parameters; largest first."""
    head = ["tool", "total", "description", "return type + example", "parameters"]
    rows = []
    for entry in tool_schemas(fmt, mode):
        fn = entry.get("function", entry)
        text, _, tail = fn["description"].partition("\n返回")
        params = json.dumps(
            fn.get("parameters") or fn.get("input_schema") or fn.get("inputSchema"),
            ensure_ascii=False,
            separators=(",", ":"),
        )
        whole = count_tokens(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
        rows.append(
            [
                fn["name"],
                whole,
                count_tokens(text),
                count_tokens("\n返回" + tail),
                count_tokens(params),
            ]
        )
    rows.sort(key=lambda r: -int(str(r[1])))
    return [_row(head), "|" + "---|" * len(head), *(_row(r) for r in rows)]


def run(quick: bool = False) -> str:
    """The tables as a Markdown section (``quick`` changes nothing: counting is cheap)."""
    return "\n".join(
        [
            "## Tool definitions: tokens per mode and format",
            "",
            f"Budget: {TOKEN_BUDGET:,} tokens for any mode's list in any format, in both encodings "
            "(tests/tools_adapter/test_reply_examples.py).",
            "",
            *mode_table(),
            "",
            "first_full in the OpenAI format, per tool (o200k_base tokens):",
            "",
            *tool_table(),
            "",
        ]
    )


if __name__ == "__main__":
    text = run(quick="--quick" in sys.argv)
    print(text)
    (ROOT / "benchmarks" / "results_tokens.md").write_text(text, encoding="utf-8")
