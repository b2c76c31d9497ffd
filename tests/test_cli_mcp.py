"""Tests of ``smartflow mcp`` as an MCP client starts it (issue 45 item 7): a configuration that
cannot open its window names the missing file to the client instead of a bare "Connection
closed", and ``--print-config`` prints a configuration that works as pasted."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from smartflow_engine.cli import app, sample_window_path

ROOT = Path(__file__).resolve().parents[1]
SMARTFLOW = str(Path(sys.executable).with_name("smartflow"))


def _client(command: str, args: list[str], cwd: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=command, args=args, cwd=str(cwd), env={**os.environ, "PYTHONPATH": str(ROOT)}
    )


def test_a_missing_state_file_is_named_to_the_client(tmp_path: Path):
    """Tests that a client starting ``smartflow mcp --state window.json`` in a directory without
    that file (the README's relative path pasted as is) connects, and reads in the server's
    instructions and in any tool's error the absolute path that was looked for and how to fix
    it."""
    params = _client(SMARTFLOW, ["mcp", "--state", "window.json"], tmp_path)

    async def go() -> Any:
        async with Client(params, read_timeout_seconds=60) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("get_overview", {})
            return client.instructions, names, result

    instructions, names, result = anyio.run(go)
    missing = str(tmp_path / "window.json")
    assert missing in (instructions or "") and "get_overview" in names
    assert result.is_error and missing in result.content[0].text
    assert "absolute path" in result.content[0].text


def test_a_missing_state_file_in_a_terminal_is_one_line_and_exit_2(tmp_path: Path):
    """Tests that the same mistake with no client (CliRunner's stdin is not served) is one line
    naming the path, exit code 2, nothing served."""
    result = CliRunner().invoke(
        app, ["mcp", "--state", str(tmp_path / "nope.json"), "--print-config"]
    )
    assert result.exit_code == 2
    assert f"--state {tmp_path / 'nope.json'}: no such file" in result.output


def test_print_config_runs_as_pasted_from_another_directory(tmp_path: Path):
    """Tests that ``--print-config`` prints a client configuration with the absolute command and
    window path, and that the configuration, run by a client from an unrelated directory,
    answers the tools and saves the window where it said."""
    window = tmp_path / "window.json"
    window.write_text(sample_window_path().read_text(encoding="utf-8"), encoding="utf-8")
    out = CliRunner().invoke(
        app, ["mcp", "--state", str(window), "--save", str(window), "--print-config"]
    )
    assert out.exit_code == 0, out.output
    server = json.loads(out.stdout)["mcpServers"]["smartflow"]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).is_file()
    assert str(window.resolve()) in server["args"]
    elsewhere = tmp_path / "client"
    elsewhere.mkdir()

    async def go() -> str:
        async with Client(
            _client(server["command"], server["args"], elsewhere), read_timeout_seconds=60
        ) as client:
            placed = await client.call_tool("place", {"task_id": 11, "day": 6, "slot_start": 1})
            return str(placed.content[0].text)

    assert anyio.run(go).startswith("已将 [11]复习线代")
    saved = json.loads(window.read_text(encoding="utf-8"))
    assert next(t for t in saved["tasks"] if t["state_id"] == 11)["status"] == "suggested"
