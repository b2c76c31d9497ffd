"""Tests of the settings model (smartflow_engine/settings.py, issue 30 item 6): flag over
environment over default, every SMARTFLOW_* variable of the code in the model, the docs table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from smartflow_engine import cli
from smartflow_engine.settings import (
    Settings,
    SettingsError,
    current,
    load_settings,
    markdown_table,
)

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "smartflow_engine"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No SMARTFLOW_* variable of the model set (the suite's own are put back afterwards)."""
    for name in Settings.env_names().values():
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    "field,env_value,flag_value,default",
    [
        ("port", "8081", 8082, 8000),
        ("max_time_limit_s", "3.5", 7.0, 10.0),
        ("solver_processes", "0", 2, 1),
        ("session_store", "redis://127.0.0.1:6379/5", "memory", "memory"),
        ("access_log", "1", False, False),  # a flag that turns off what the variable turns on
        ("db_url", "sqlite:///env.db", "sqlite:///flag.db", None),
    ],
)
def test_flag_over_environment_over_default(
    clean_env: pytest.MonkeyPatch, field: str, env_value: str, flag_value: Any, default: Any
) -> None:
    """Tests that a field takes its default, then the variable's value, then the flag's."""
    assert getattr(load_settings(), field) == default
    clean_env.setenv(Settings.env_name(field), env_value)
    from_env = getattr(load_settings(), field)
    assert from_env == type(flag_value)(env_value) if field != "access_log" else from_env is True
    assert getattr(load_settings(**{field: flag_value}), field) == flag_value
    assert getattr(load_settings(**{field: None}), field) == from_env  # None: flag not given


def test_serve_command_resolves_flag_over_environment_over_default(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """Tests the order through `smartflow serve` itself: what reaches the server is the flag
    where one is given, else the variable, else the default."""
    seen: dict[str, Any] = {}
    from smartflow_engine.tools_adapter import api

    clean_env.setattr(api, "serve", lambda **kw: seen.update(kw))
    clean_env.setenv("SMARTFLOW_PORT", "8123")
    clean_env.setenv("SMARTFLOW_MAX_TIME_LIMIT_S", "4")
    clean_env.setenv("SMARTFLOW_ACCESS_LOG", "true")
    out = CliRunner().invoke(cli.app, ["serve", "--port", "9001", "--no-access-log"])
    assert out.exit_code == 0, out.output
    assert seen["port"] == 9001  # flag over variable
    assert seen["access_log"] is False  # flag over variable
    assert seen["max_time_limit_s"] == 4.0  # variable over default
    assert seen["host"] == "127.0.0.1" and seen["solver_processes"] == 1  # defaults


@pytest.mark.parametrize(
    "args,env,named",
    [
        (["serve", "--port", "70000"], {}, "--port=70000"),  # a flag out of range
        (["serve"], {"SMARTFLOW_PORT": "eighty"}, "SMARTFLOW_PORT='eighty'"),  # not a number
        (["serve"], {"SMARTFLOW_SOLVER_PROCESSES": "-1"}, "SMARTFLOW_SOLVER_PROCESSES"),
        (
            ["feasibility", "x.json"],
            {"SMARTFLOW_MAX_TIME_LIMIT_S": "soon"},
            "SMARTFLOW_MAX_TIME_LIMIT_S='soon'",
        ),
        (["demo"], {"SMARTFLOW_SELF_CHECK": "perhaps"}, "SMARTFLOW_SELF_CHECK='perhaps'"),
    ],
)
def test_a_refused_value_is_one_line_naming_it(
    clean_env: pytest.MonkeyPatch, args: list[str], env: dict[str, str], named: str
) -> None:
    """Tests that a bad flag or variable stops the command with exit code 2 and one line that
    names it, never a traceback."""
    for key, value in env.items():
        clean_env.setenv(key, value)
    out = CliRunner().invoke(cli.app, args)
    assert out.exit_code == 2, out.output
    assert named in out.output.replace("\n", "")
    assert "Traceback" not in out.output and not isinstance(out.exception, SettingsError)


def test_the_old_serve_settings_variable_is_read_below_the_new_ones(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """Tests that SMARTFLOW_SERVE_SETTINGS="k=v,..." still sets its two keys for one release,
    below their own variables and the flags."""
    clean_env.setenv("SMARTFLOW_SERVE_SETTINGS", "max_time_limit_s=3,solver_processes=0")
    assert (current().max_time_limit_s, current().solver_processes) == (3.0, 0)
    clean_env.setenv("SMARTFLOW_SOLVER_PROCESSES", "2")
    assert (current().max_time_limit_s, current().solver_processes) == (3.0, 2)
    assert load_settings(max_time_limit_s=5.0).max_time_limit_s == 5.0


def test_current_sees_a_changed_environment(clean_env: pytest.MonkeyPatch) -> None:
    """Tests that the cached reader follows the environment (tests and workers change it)."""
    assert current().self_check is False
    clean_env.setenv("SMARTFLOW_SELF_CHECK", "1")
    assert current().self_check is True
    clean_env.setenv("SMARTFLOW_SELF_CHECK", "")  # empty: unset
    assert current().self_check is False


def test_to_env_round_trips(clean_env: pytest.MonkeyPatch) -> None:
    """Tests that the variables a serve parent exports read back as the same settings in a
    worker."""
    given = load_settings(port=9, access_log=True, db_url="sqlite:///x.db", solver_processes=0)
    for key, value in given.to_env().items():
        clean_env.setenv(key, value)
    assert current() == given


def _code_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_smartflow_variable_the_code_names_is_in_the_model() -> None:
    """Tests (by grep) that every SMARTFLOW_* name in the package's code is a field of the
    model, and that no module but settings.py reads one from os.environ directly."""
    known = set(Settings.env_names().values())
    named: dict[str, set[str]] = {}
    direct_reads = []
    read = re.compile(r"os\.(?:environ\.get|getenv)\(([^)]*)\)|os\.environ\[([^\]]+)\](?!\s*=)")
    for path in _code_files():
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(ROOT))
        for name in re.findall(r"SMARTFLOW_[A-Z0-9_]*[A-Z0-9]", text):
            named.setdefault(name, set()).add(rel)
        if path.name != "settings.py":
            for m in read.finditer(text):
                arg = m.group(1) or m.group(2)
                if "SMARTFLOW" in arg or re.search(r"\b[A-Z_]+_ENV\b|ENV_MODE", arg):
                    direct_reads.append(f"{rel}: {m.group(0)}")
    assert named, "the grep found nothing: the pattern is broken"
    assert {n: sorted(f) for n, f in named.items() if n not in known} == {}
    assert direct_reads == []


def test_the_docs_table_is_the_models() -> None:
    """Tests that docs/settings.md holds the table generated from the model, and that it lists
    every field's variable."""
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert markdown_table() in text, "regenerate: python -m smartflow_engine.settings"
    for name in Settings.env_names().values():
        assert f"| `{name}` |" in text


def test_serve_help_names_the_variable_of_every_option() -> None:
    """Tests that `smartflow serve -h` names the SMARTFLOW_* variable behind each option."""
    out = CliRunner().invoke(
        cli.app, ["serve", "-h"], env={"COLUMNS": "300", "TERMINAL_WIDTH": "300"}
    )
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    for field in (
        "host",
        "port",
        "workers",
        "max_time_limit_s",
        "solver_processes",
        "session_store",
        "session_prefix",
        "db_url",
        "access_log",
    ):
        assert Settings.env_name(field) in text, field


def test_workers_read_the_flags_over_the_inherited_variables(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """Tests that what `serve` hands its workers (through the environment) is the resolved
    value: `--no-access-log` and `--max-time-limit 3` win over the SMARTFLOW_ACCESS_LOG=1 and
    SMARTFLOW_MAX_TIME_LIMIT_S=9 the workers inherit, and a worker's app is built with them."""
    import uvicorn

    from smartflow_engine.tools_adapter.api import app as app_module

    clean_env.setattr(uvicorn, "run", lambda *a, **kw: None)
    # serve() writes these into os.environ for its workers: set them here first, so that the
    # fixture's undo takes every one of them out again after the test
    for name in Settings.env_names().values():
        clean_env.setenv(name, "")
    clean_env.setenv("SMARTFLOW_ACCESS_LOG", "1")
    clean_env.setenv("SMARTFLOW_MAX_TIME_LIMIT_S", "9")
    clean_env.setenv("SMARTFLOW_API_TOKENS", "t:u")
    app_module.serve(access_log=False, max_time_limit_s=3.0, solver_processes=0)
    seen = current()
    assert (seen.access_log, seen.max_time_limit_s, seen.solver_processes) == (False, 3.0, 0)
    worker_app = app_module.app_from_env()
    assert worker_app.state.ctx.max_time_limit_s == 3.0
    assert worker_app.state.ctx.tokens == {"t": "u"}


def test_section_clock_gives_a_blocks_start_and_end(clean_env: pytest.MonkeyPatch) -> None:
    """Tests that the section clock maps sections a..b to a's start and b's end, and that a
    malformed clock or a section beyond it is refused naming the variable."""
    from datetime import time

    s = load_settings()
    assert s.section_times(1, 2) == (time(8, 0), time(9, 40))
    assert s.section_times(11, 12) == (time(20, 50), time(22, 30))
    clean_env.setenv("SMARTFLOW_SECTION_CLOCK", "09:00-09:50,10:00-10:50")
    s = load_settings()
    assert s.section_times(2, 2) == (time(10, 0), time(10, 50))
    with pytest.raises(ValueError, match="section 3"):
        s.section_times(1, 3)
    clean_env.setenv("SMARTFLOW_SECTION_CLOCK", "09:00-08:50")
    with pytest.raises(SettingsError, match="SMARTFLOW_SECTION_CLOCK"):
        load_settings()
