"""Tests that the README's MCP client configuration works from another directory, the way the
README says to paste it (the `which smartflow` command and the window's absolute path)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from smartflow_engine.cli import sample_window_path

ROOT = Path(__file__).resolve().parents[1]


def _config() -> dict:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```json\n(.*?)```", text, re.S)
    assert block is not None
    server: dict = json.loads(block.group(1))["mcpServers"]["smartflow"]
    return server


def test_readme_says_how_to_paste_the_configuration_elsewhere():
    """Tests that the README tells a client started elsewhere to use `which smartflow` and an
    absolute window path."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "which smartflow" in text and "absolute path" in text


def test_the_configuration_with_absolute_paths_runs_from_another_directory(tmp_path: Path):
    """Tests the configuration as the README says to paste it: `command` is what `which
    smartflow` prints and the window's path is absolute; the client starts the server from an
    unrelated directory and the tools answer and save the state there."""
    server = _config()
    found = shutil.which("smartflow") or str(Path(sys.executable).with_name("smartflow"))
    assert Path(found).is_file(), "the smartflow command is not installed"
    window = tmp_path / "data" / "window.json"
    window.parent.mkdir()
    window.write_text(sample_window_path().read_text(encoding="utf-8"), encoding="utf-8")
    args = [str(window) if a == "window.json" else a for a in server["args"]]
    elsewhere = tmp_path / "client"
    elsewhere.mkdir()
    params = StdioServerParameters(
        command=found,
        args=args,
        cwd=str(elsewhere),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )

    async def go() -> str:
        async with Client(params, read_timeout_seconds=60) as client:
            placed = await client.call_tool("place", {"task_id": 11, "day": 6, "slot_start": 1})
            return str(placed.content[0].text)

    assert anyio.run(go).startswith("已将 [11]复习线代")
    saved = json.loads(window.read_text(encoding="utf-8"))
    assert next(t for t in saved["tasks"] if t["state_id"] == 11)["status"] == "suggested"
    assert list(elsewhere.iterdir()) == []
