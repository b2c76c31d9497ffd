"""Tests that the README's examples and the quickstart notebook run as written, that docs/tools.md
is what the code generates, and that every documentation link stays inside the repository."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import httpx
import nbformat
import pytest
from mcp import Client, StdioServerParameters
from nbclient import NotebookClient

from smartflow_engine.cli import sample_window_path
from tests.helpers.docs import gen_tools_doc

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
FIRST_SCREEN_LINES = 50


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def _blocks(lang: str, text: str | None = None) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text or _readme(), flags=re.S)


# ---------------------------------------------------------------------------------- README
def test_readme_python_blocks_run():
    """Tests that every ```python block of the README executes without error."""
    blocks = _blocks("python")
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})


def test_readme_first_screen_has_commands_picture_and_three_ways_in():
    """Tests that the README's first screen says what it is and holds the two commands, a
    picture that exists in the repository, and the Python, MCP and HTTP examples (each at most
    five lines of code)."""
    head = "\n".join(_readme().splitlines()[:FIRST_SCREEN_LINES])
    assert "make demo" in head and "make test" in head
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", head)
    assert pictures and all((ROOT / p).is_file() for p in pictures)
    for way, lang in (("**Python**", "python"), ("**MCP**", "json"), ("**HTTP**", "sh")):
        assert way in head
        blocks = _blocks(lang, head[head.index(way) :])
        assert blocks, way
        code = [ln for ln in blocks[0].splitlines() if ln.strip()]
        assert len(code) <= 5, (way, code)


def test_readme_mcp_configuration_starts_a_working_server(tmp_path: Path):
    """Tests that the README's MCP client configuration, run as written (window.json being the
    sample window), is a stdio MCP server answering the tools and saving the state."""
    config = json.loads(_blocks("json")[0])
    server = config["mcpServers"]["smartflow"]
    assert server["command"] == "smartflow"
    window = tmp_path / "window.json"
    window.write_text(sample_window_path().read_text(encoding="utf-8"), encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "smartflow_engine.cli", *server["args"]],
        cwd=str(tmp_path),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )

    async def go() -> tuple[str, str]:
        async with Client(params, read_timeout_seconds=60) as client:
            overview = await client.call_tool("get_overview", {})
            placed = await client.call_tool("place", {"task_id": 11, "day": 6, "slot_start": 1})
            return overview.content[0].text, placed.content[0].text

    overview, placed = anyio.run(go)
    assert overview.startswith("规划窗口共14天")
    assert placed.startswith("已将 [11]复习线代 放到第6天第1-3节。")
    saved = json.loads(window.read_text(encoding="utf-8"))
    assert next(t for t in saved["tasks"] if t["state_id"] == 11)["status"] == "suggested"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_readme_http_example_works_against_a_real_server(tmp_path: Path):
    """Tests the README's HTTP example: `smartflow serve` started with the README's token
    variable, then the README's curl request (its URL, headers and body, with window.json being
    the sample window) answered over a real socket."""
    block = _blocks("sh", _readme()[_readme().index("**HTTP**") :])[0]
    serve_line, curl_text = block.split("\n", 1)
    env_assign, serve_cmd = serve_line.split(" ", 1)
    name, value = env_assign.split("=", 1)
    serve_args = shlex.split(serve_cmd.rstrip("& "))
    assert serve_args[:2] == ["smartflow", "serve"]
    port = _free_port()
    serve_args = [a if a != "8000" else str(port) for a in serve_args]
    tokens = shlex.split(curl_text.replace("\\\n", " "))
    assert tokens[0] == "curl"
    window = sample_window_path().read_text(encoding="utf-8")
    url = next(t for t in tokens if t.startswith("http://")).replace(":8000", f":{port}")
    headers = dict(tokens[i + 1].split(": ", 1) for i, t in enumerate(tokens) if t == "-H")
    body = tokens[tokens.index("-d") + 1].replace("$(cat window.json)", window)
    proc = subprocess.Popen(
        [sys.executable, "-m", "smartflow_engine.cli", *serve_args[1:]],
        env={**os.environ, name: shlex.split(value)[0], "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):  # up to a minute for the server to come up
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        reply = httpx.post(url, headers=headers, content=body.encode(), timeout=60)
        docs_page = httpx.get(f"{base}/docs", timeout=10)  # "OpenAPI at /docs"
    finally:
        proc.terminate()
        proc.wait(10)
    assert reply.status_code == 200, reply.text
    out: dict[str, Any] = reply.json()
    assert out["status"] == "ok" and out["reply"].startswith("规划窗口共14天")
    assert docs_page.status_code == 200 and "swagger" in docs_page.text.lower()


# ---------------------------------------------------------------------------------- links
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']""")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", flags=re.M)
OUTSIDE_PATH = re.compile(r"(?<![\w.])\.\./[\w./-]+")


def _doc_files() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("**/*.md"))]


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {
        _anchor(h) for h in re.findall(r"^#+\s+(.*)$", path.read_text(encoding="utf-8"), flags=re.M)
    }


def link_problems(path: Path, root: Path = ROOT) -> list[str]:
    """Every link in ``path`` that leaves the repository or points to nothing."""
    text = path.read_text(encoding="utf-8")
    body = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks are not links
    problems = []
    targets = LINK.findall(body) + HTML_LINK.findall(body) + REFERENCE.findall(body)
    for target in targets:
        parsed = urlparse(target)
        if parsed.scheme or parsed.netloc or target.startswith("//"):
            problems.append(f"{path.name}: {target} points outside the repository")
            continue
        file_part = unquote(parsed.path)
        dest = (path.parent / file_part).resolve() if file_part else path.resolve()
        if not dest.is_relative_to(root.resolve()):
            problems.append(f"{path.name}: {target} leaves the repository")
        elif not dest.exists():
            problems.append(f"{path.name}: {target} does not exist")
        elif parsed.fragment and dest.suffix == ".md" and parsed.fragment not in _anchors(dest):
            problems.append(f"{path.name}: {target} names a heading that does not exist")
    for ref in OUTSIDE_PATH.findall(text):
        if ref in targets:
            continue  # reported as a link above
        if not (path.parent / ref).resolve().is_relative_to(root.resolve()):
            problems.append(f"{path.name}: {ref} is a path outside the repository")
    return problems


def test_every_doc_link_stays_inside_the_repository():
    """Tests that no link (Markdown, reference or HTML) or path in README.md or docs/ points
    outside the repository or to a file or heading that does not exist."""
    assert (ROOT / "docs" / "architecture.md").is_file()
    problems = [p for path in _doc_files() for p in link_problems(path)]
    assert problems == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see [design](../shared/DESIGN.md)", "leaves the repository"),
        ("see [site](https://example.org/x)", "points outside the repository"),
        ('<img src="http://example.org/a.png">', "points outside the repository"),
        ("[gone](docs/missing.md)", "does not exist"),
        ("[ref]: https://example.org", "points outside the repository"),
        ("as in `../shared/spec/tool-layer-design.md` §4", "outside the repository"),
        ("[tools](docs/tools.md#no-such-heading)", "heading that does not exist"),
    ],
)
def test_link_check_catches_bad_links(tmp_path: Path, text: str, expected: str):
    """Tests that the link check itself fails on each kind of bad link."""
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "tools.md").write_text("# Tools\n\n## place\n", encoding="utf-8")
    readme = repo / "README.md"
    readme.write_text(f"# x\n\n{text}\n\n[ok](docs/tools.md#place)\n", encoding="utf-8")
    problems = link_problems(readme, repo)
    assert len(problems) == 1 and expected in problems[0]


# ---------------------------------------------------------------------------------- tools.md
def test_tools_doc_is_what_the_code_generates():
    """Tests that docs/tools.md equals what scripts/gen_tools_doc.py generates from the registry
    and the engine's real replies now (regenerate it after changing a tool)."""
    generated = gen_tools_doc().generate()
    committed = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    assert generated == committed, "docs/tools.md is out of date: run scripts/gen_tools_doc.py"


def test_tools_doc_covers_every_registered_tool_with_its_metadata():
    """Tests that docs/tools.md has a section per registered tool with its kind, modes and
    arguments, and a reply for each."""
    from smartflow_engine.tools_adapter.core.registry import TOOLS

    text = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    by_name = {s.split("\n", 1)[0].strip(): s for s in sections}
    assert list(by_name) == [spec.name for spec in TOOLS]
    for spec in TOOLS:
        section = by_name[spec.name]
        kind = "confirm" if spec.needs_confirm else spec.kind
        assert f"Kind: **{kind}**" in section
        published = spec.args_model.model_json_schema()["properties"]  # not SkipJsonSchema ones
        for arg in spec.args_model.model_fields:
            if arg in published:
                assert f"| `{arg}` |" in section, (spec.name, arg)
        assert "```text" in section or "```json" in section


def test_generator_picks_up_a_tool_added_to_the_registry(monkeypatch: pytest.MonkeyPatch):
    """Tests that a tool added to the registry gets its own section (metadata, arguments and a
    real reply) without any change to the generator."""
    from dataclasses import replace

    from smartflow_engine.tools_adapter.core import registry

    base = registry.REGISTRY["get_task_info"]
    extra = replace(base, name="lookup_task_copy", description="按 id 查看任务（测试用）。")
    monkeypatch.setattr(registry, "TOOLS", (*registry.TOOLS, extra))
    monkeypatch.setattr(registry, "REGISTRY", {**registry.REGISTRY, extra.name: extra})
    module = gen_tools_doc()
    monkeypatch.setitem(module.EXAMPLES, "lookup_task_copy", ([], {"task_id": 6}))
    text = module.generate()
    section = text.split("## lookup_task_copy", 1)[1]
    assert "按 id 查看任务（测试用）。" in section and "| `task_id` |" in section
    assert "[6]思政（水课）" in section
    assert "[`lookup_task_copy`](#lookup_task_copy) | read | text |" in text


# ---------------------------------------------------------------------------------- notebook
def _images(nb: Any) -> int:
    return sum(
        "image/png" in out.get("data", {})
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )


def test_quickstart_notebook_is_committed_with_its_pictures():
    """Tests that the committed notebook carries its outputs, pictures included, so it reads on
    a code-hosting page without being run."""
    nb = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    assert all(cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")
    assert _images(nb) >= 2


@pytest.mark.slow
def test_quickstart_notebook_executes():
    """Tests that notebooks/quickstart.ipynb runs top to bottom in a fresh kernel and draws the
    window before and after the proposal."""
    nb = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    outputs = "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )
    assert "规划窗口共14天" in outputs
    assert _images(nb) >= 2


@pytest.mark.slow
def test_cohort_notebook_executes():
    """Tests that notebooks/cohort.ipynb runs a batch on its small cohort (one broken window) and
    draws its four charts."""
    nb = nbformat.read(ROOT / "notebooks" / "cohort.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    outputs = [
        out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
    ]
    text = "".join(out.get("text", "") for out in outputs)
    assert "windows: 19, errors: 1" in text
    assert "infeasible" in text and "closing rate overall:" in text
    assert sum("image/png" in out.get("data", {}) for out in outputs) == 4
