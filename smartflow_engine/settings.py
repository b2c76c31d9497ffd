"""Every ``SMARTFLOW_*`` environment variable the engine reads, in one model (issue 30 item 6).

:class:`Settings` is a pydantic-settings model: each field is read from the environment variable
``SMARTFLOW_<FIELD>`` (upper case), else takes its default. ``smartflow serve`` passes its flags
as init values, which pydantic-settings ranks above the environment: **flag > environment >
default**. The resolved values reach the server's workers (fresh processes uvicorn starts from an
import string) as these same variables (:meth:`Settings.to_env`), so there is one way in.

docs/settings.md holds the table of the variables, generated from this model
(``python -m smartflow_engine.settings``; a test compares the two).

This module imports nothing of ours and is imported lazily by its readers (pydantic-settings adds
~25 ms to an import), so ``import smartflow_engine`` stays fast.
"""

from __future__ import annotations

import os
import sys
from datetime import date, time
from functools import lru_cache
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "SMARTFLOW_"
# The one release that still reads the old hand-parsed hand-off of `smartflow serve` to its
# workers: "max_time_limit_s=..,solver_processes=..". Its keys are fields now (see
# Settings._old_serve_settings); a key named by its own variable or by a flag wins.
OLD_SERVE_SETTINGS = "serve_settings"


# Twelve sections of 45 minutes, a common Chinese university day (SmartFlow-Agent's 1-12).
DEFAULT_SECTION_CLOCK = (
    "08:00-08:45,08:55-09:40,10:10-10:55,11:05-11:50,14:00-14:45,14:55-15:40,"
    "16:10-16:55,17:05-17:50,19:00-19:45,19:55-20:40,20:50-21:35,21:45-22:30"
)


def parse_section_clock(text: str) -> list[tuple[time, time]]:
    """``"08:00-08:45,08:55-09:40,..."`` as ``[(start, end), ...]`` (section 1 first).

    Raises
    ------
    ValueError
        An entry that is not ``HH:MM-HH:MM`` with start < end, or sections out of order.
    """
    out: list[tuple[time, time]] = []
    for n, part in enumerate(text.split(","), start=1):
        start, sep, end = part.strip().partition("-")
        try:
            if not sep:
                raise ValueError
            a, b = time.fromisoformat(start.strip()), time.fromisoformat(end.strip())
        except ValueError:
            raise ValueError(f"section {n}: {part.strip()!r} is not HH:MM-HH:MM") from None
        if a >= b:
            raise ValueError(f"section {n}: {part.strip()!r} ends before it starts")
        if out and a < out[-1][1]:
            raise ValueError(f"section {n} starts before section {n - 1} ends")
        out.append((a, b))
    return out


class SettingsError(ValueError):
    """A ``SMARTFLOW_*`` variable (or a flag) holds a value its field refuses: one line naming
    the variable, the value and what it must be."""


class Settings(BaseSettings):
    """The engine's settings. Field ``name`` is the environment variable ``SMARTFLOW_<NAME>``."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        case_sensitive=False,
        env_ignore_empty=True,  # VAR= (empty) means unset, as the hand-written readers had it
        extra="ignore",
        frozen=True,
        validate_default=True,
    )

    # ---------------------------------------------------------------- engine
    self_check: bool = Field(
        default=False,
        description="Recompute the grid and re-validate the state after every write "
        "(`Toolbox(self_check=None)`); the test suite turns it on.",
    )
    semester_start: date | None = Field(
        default=None,
        description="The date of week 1's Monday (YYYY-MM-DD): a window whose day mapping "
        "gives weeks but no dates is dated from it, so task classes' start_date/end_date hold "
        "(without any date they cannot, and the tools say so).",
    )
    section_clock: str = Field(
        default=DEFAULT_SECTION_CLOCK,
        description="Start and end time of each section (period) 1..n, comma-separated "
        "`HH:MM-HH:MM`: the `start_time`/`end_time` a committed task event gets in "
        "`schedule_events` (a task over sections a..b runs from a's start to b's end).",
    )

    day_labels: Literal["index", "weekday"] = Field(
        default="index",
        description="How text replies name a day: `index` (the spec's `第6天`) or `weekday` "
        "(`第6天(星期六)`, and the teaching week when the window spans several: "
        "`第34天(第17周星期一)`); the default of every Toolbox and Session (a session's own "
        "setting wins; `serve --day-labels`, `mcp --day-labels`).",
    )

    # ---------------------------------------------------------------- smartflow serve
    host: str = Field(default="127.0.0.1", description="`serve --host`: bind address.")
    port: int = Field(default=8000, ge=0, le=65535, description="`serve --port`: TCP port.")
    workers: int = Field(
        default=1,
        ge=1,
        description="`serve --workers`: server worker processes (>1 needs a shared session store).",
    )
    api_tokens: str = Field(
        default="",
        description='Bearer tokens of the HTTP API, `"tok:user,tok2:user2"`; without any, '
        "`smartflow serve` makes one for user `local` and prints it.",
    )
    max_time_limit_s: float = Field(
        default=10.0,
        gt=0,
        description="`serve --max-time-limit`: cap on any solver time limit a client asks "
        "for, seconds.",
    )
    solver_processes: int = Field(
        default=1,
        ge=0,
        description="`serve --solver-processes`: worker processes for solving tool calls "
        "(0: in the request's thread).",
    )
    session_store: str = Field(
        default="memory",
        description="`serve --session-store`: `memory`, or `redis://host:port/db` (shared by "
        "workers, survives restarts).",
    )
    session_prefix: str = Field(
        default="smartflow", description="`serve --session-prefix`: Redis key prefix."
    )
    db_url: str | None = Field(
        default=None,
        description="`serve --db`: database URL; sessions can be opened on its windows and "
        "commit to it.",
    )
    access_log: bool = Field(
        default=False,
        description="`serve --access-log`: one JSON line per request on stderr.",
    )
    view_key: str | None = Field(
        default=None,
        description="Signing key of the session page's links and cookies (default: derived "
        "from the bearer tokens).",
    )
    serve_settings: str | None = Field(
        default=None,
        description="Deprecated (read for one release): the old `k=v,...` hand-off of "
        "`max_time_limit_s` and `solver_processes`; use their own variables.",
    )

    @field_validator("semester_start")
    @classmethod
    def _a_monday(cls, value: date | None) -> date | None:
        if value is not None and value.isoweekday() != 1:
            raise ValueError(f"{value.isoformat()} is not a Monday (week 1's Monday)")
        return value

    @field_validator("section_clock")
    @classmethod
    def _a_clock(cls, value: str) -> str:
        parse_section_clock(value)
        return value

    def section_times(self, section_from: int, section_to: int) -> tuple[time, time]:
        """The start of ``section_from`` and the end of ``section_to`` on the section clock.

        Raises
        ------
        ValueError
            A section the clock does not list.
        """
        clock = parse_section_clock(self.section_clock)
        for s in (section_from, section_to):
            if not 1 <= s <= len(clock):
                raise ValueError(
                    f"section {s} is not on the section clock ({len(clock)} sections, "
                    f"{self.env_name('section_clock')})"
                )
        return clock[section_from - 1][0], clock[section_to - 1][1]

    @model_validator(mode="before")
    @classmethod
    def _old_serve_settings(cls, data: Any) -> Any:
        """Spread ``SMARTFLOW_SERVE_SETTINGS="k=v,..."`` into the fields it names, below any
        value given for them by a flag or by their own variable."""
        if not isinstance(data, dict) or not data.get(OLD_SERVE_SETTINGS):
            return data
        merged = dict(data)
        for part in str(data[OLD_SERVE_SETTINGS]).split(","):
            key, sep, value = part.partition("=")
            key = key.strip()
            if sep and key in ("max_time_limit_s", "solver_processes"):
                merged.setdefault(key, value.strip())
        return merged

    # ---------------------------------------------------------------- helpers
    @classmethod
    def env_name(cls, field: str) -> str:
        """The environment variable of ``field``."""
        return f"{ENV_PREFIX}{field.upper()}"

    @classmethod
    def env_names(cls) -> dict[str, str]:
        """Field → environment variable, in the model's order."""
        return {name: cls.env_name(name) for name in cls.model_fields}

    def to_env(self, *fields: str) -> dict[str, str]:
        """``fields`` (default: all) as environment variables, so a child process started from
        an import string reads back these exact values. ``None`` fields are left out (unset)."""
        out: dict[str, str] = {}
        for name in fields or tuple(type(self).model_fields):
            value = getattr(self, name)
            if value is None:
                continue
            out[self.env_name(name)] = (
                ("1" if value else "0") if isinstance(value, bool) else str(value)
            )
        return out


def load_settings(**flags: Any) -> Settings:
    """The settings: ``flags`` given (not ``None``) over the environment over the defaults.

    Raises
    ------
    SettingsError
        One line per refused value, naming its variable (``SMARTFLOW_PORT``), the value and the
        rule.
    """
    given = {k: v for k, v in flags.items() if v is not None}
    try:
        return Settings(**given)
    except ValidationError as exc:
        raise SettingsError(_explain(exc, given)) from None


def _explain(exc: ValidationError, given: dict[str, Any]) -> str:
    lines = []
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else "?"
        where = f"--{field.replace('_', '-')}" if field in given else Settings.env_name(field)
        lines.append(f"{where}={err.get('input')!r}: {err['msg']}")
    return "; ".join(lines)


@lru_cache(maxsize=8)
def _cached(snapshot: tuple[tuple[str, str], ...]) -> Settings:
    return load_settings()


def current() -> Settings:
    """The settings of the environment as it is now (no flags).

    Cached on the ``SMARTFLOW_*`` variables' values, so a reader on a hot path (every
    ``Toolbox``) pays a dictionary scan, not a model validation, and a change of the environment
    (a test's ``monkeypatch.setenv``) is still seen.
    """
    snapshot = tuple(
        sorted((k.upper(), v) for k, v in os.environ.items() if k.upper().startswith(ENV_PREFIX))
    )
    return _cached(snapshot)


# ---------------------------------------------------------------------------------- the docs
TABLE_START = "<!-- settings table: generated by `python -m smartflow_engine.settings` -->"
TABLE_END = "<!-- end of settings table -->"


def markdown_table() -> str:
    """The docs/settings.md table: variable, type, default, what it does."""
    rows = ["| variable | type | default | what it sets |", "|---|---|---|---|"]
    for name, info in Settings.model_fields.items():
        kind = _type_name(info.annotation).replace("|", "or")
        default = _default_text(info.default)
        text = (info.description or "").replace("|", "\\|")
        rows.append(f"| `{Settings.env_name(name)}` | {kind} | {default} | {text} |")
    return "\n".join(rows)


def _default_text(value: object) -> str:
    if value is None:
        return "(unset)"
    if value == "":
        return "(empty)"
    return f"`{int(value)}`" if isinstance(value, bool) else f"`{value}`"


def _type_name(annotation: Any) -> str:
    text = str(annotation).replace("typing.", "").replace("<class '", "").replace("'>", "")
    return text.replace("Literal[", "one of [").replace("NoneType", "None")


def main(argv: list[str] | None = None) -> int:
    """Print the table, or with ``--check FILE`` exit 1 when FILE's table differs from it."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--check"] and len(args) == 2:
        from pathlib import Path

        text = Path(args[1]).read_text(encoding="utf-8")
        return 0 if markdown_table() in text else 1
    print(markdown_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
