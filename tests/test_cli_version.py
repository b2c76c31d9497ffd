"""Tests of the `smartflow` command's global options: `--version` and `-h` (issue 30 item 6)."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from smartflow_engine.cli import app

runner = CliRunner()


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_installed_version(flag: str):
    """Tests that `smartflow --version` prints the installed distribution's version and exits 0
    without running a command."""
    res = runner.invoke(app, [flag])
    assert res.exit_code == 0
    assert res.stdout.strip() == f"smartflow-engine {version('smartflow-engine')}"


@pytest.mark.parametrize(
    "argv",
    [
        ["-h"],  # the root command
        ["call", "-h"],  # a sub-command takes the short form too
    ],
)
def test_short_help_is_help(argv: list[str]):
    """Tests that `-h` prints the same usage as `--help`."""
    short = runner.invoke(app, argv)
    long = runner.invoke(app, [*argv[:-1], "--help"])
    assert short.exit_code == 0 and "Usage" in short.stdout
    assert short.stdout == long.stdout
