"""The P1-C prompt rules, shipped as Markdown with the package (``tools_adapter/sessions/prompts/*.md``).

``common.md`` holds the rules of every mode; ``<mode>.md`` the rules of one execution mode. The
MCP server sends :func:`prompt_rules` as its instructions; the HTTP API serves it to backends.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from ..core.spec import Mode

COMMON = "common"


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


def all_prompt_rules() -> dict[str, str]:
    """``{mode: rules}`` for every execution mode."""
    return {m.value: prompt_rules(m) for m in Mode}
