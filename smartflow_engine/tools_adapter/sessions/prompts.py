"""The P1-C prompt rules, shipped as Markdown with the package (``tools_adapter/sessions/prompts/*.md``).

``common.md`` holds the rules of every mode; ``<mode>.md`` the rules of one execution mode. The
MCP server sends :func:`prompt_rules` as its instructions; the HTTP API serves it to backends.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from ..core.spec import Mode

COMMON = "common"
# The confirm rule of common.md as a host with tokens reads it, and as MCP's (the server asks
# the user itself; no token reaches the model).
_CONFIRM_BY_TOKEN = "调用后只返回预览和确认令牌，不会执行；必须由用户确认后才会真正写入"
_CONFIRM_BY_ASKING = (
    "调用时服务器会请用户确认变更摘要（不会返回令牌，也没有可供你调用的确认工具），"
    "用户同意后才真正写入"
)


@cache
def _read(name: str) -> str:
    path = resources.files(__package__).joinpath("prompts", f"{name}.md")
    return path.read_text(encoding="utf-8").strip()


def prompt_part(name: str) -> str:
    """One shipped rules file by name (``common`` or a mode value)."""
    if name != COMMON:
        name = Mode(name).value
    return _read(name)


def prompt_rules(mode: Mode | str) -> str:
    """The full rules for ``mode``: the common rules followed by the mode's own."""
    return f"{_read(COMMON)}\n\n{_read(Mode(mode).value)}\n"


def mcp_rules(rules: str) -> str:
    """``rules`` as an MCP server states them: a confirm-required call asks the user itself
    (issue 45 item 7: the instructions said such calls return a token)."""
    return rules.replace(_CONFIRM_BY_TOKEN, _CONFIRM_BY_ASKING)


def all_prompt_rules() -> dict[str, str]:
    """``{mode: rules}`` for every execution mode."""
    return {m.value: prompt_rules(m) for m in Mode}
