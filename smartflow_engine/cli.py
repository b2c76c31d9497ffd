"""The ``smartflow`` command: demo, call, feasibility, propose, show, serve, mcp, batch, bench,
seed, gen."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

from .files import write_atomic
from .state import ScheduleState, StateError
from .tools_adapter import Toolbox
from .tools_adapter.core.toolbox import ToolReply

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="smartflow-engine: the scheduling engine behind an LLM study-planning agent.",
)
console = Console()
err_console = Console(stderr=True)


def _version_callback(value: bool) -> None:
    if value:
        from importlib.metadata import version

        console.print(f"smartflow-engine {version('smartflow-engine')}")
        raise typer.Exit


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            callback=_version_callback,
            is_eager=True,
            help="Print the installed version and exit.",
        ),
    ] = False,
) -> None:
    """smartflow-engine: the scheduling engine behind an LLM study-planning agent."""
    from .settings import SettingsError, current

    try:  # a bad SMARTFLOW_* value is one line here, not a traceback deep in a command
        current()
    except SettingsError as exc:
        err_console.print(f"[red]smartflow: {exc}[/red]")
        raise typer.Exit(2) from None


StateFile = Annotated[Path, typer.Argument(help="State JSON (the spec's §3.1 format).")]
# A window of the database (smartflow call, smartflow mcp): whose, and from which day to which.
DbUser = Annotated[int | None, typer.Option(help="Database user id.")]
FirstDay = Annotated[str | None, typer.Option("--from", help="First day: WEEK-DAY, e.g. 7-1.")]
LastDay = Annotated[str | None, typer.Option(help="Last day: WEEK-DAY, e.g. 8-7.")]


def sample_window_path() -> Path:
    """The bundled two-week sample window."""
    return Path(str(resources.files("smartflow_engine") / "data" / "sample_window.json"))


# What each optional part needs (pyproject's extras): a command checks its extras before any work
# and names the one to install in one line, instead of failing with a traceback (or, for batch,
# after every window has been computed).
EXTRAS: dict[str, tuple[str, ...]] = {
    "server": ("fastapi", "uvicorn"),
    "mcp": ("mcp",),
    "db": ("sqlalchemy",),
    "plot": ("matplotlib",),
    "batch": ("pandas",),
    "parquet": ("pandas", "pyarrow"),  # the batch extra's Parquet writer
    "redis": ("redis",),
    "ray": ("ray",),
}
# A database URL's driver module → the extra that installs it.
DRIVER_EXTRAS = {"psycopg": "postgres", "psycopg2": "postgres", "pymysql": "mariadb"}


def _install_hint(extra: str) -> str:
    name = "batch" if extra == "parquet" else extra
    return f"pip install 'smartflow-engine[{name}]'"


def require(command: str, *extras: str) -> None:
    """Exit with code 2 and one line naming the extra to install when a module ``command``
    needs is missing (e.g. ``smartflow serve`` on a core install)."""
    for extra in extras:
        for module in EXTRAS[extra]:
            try:
                importlib.import_module(module)
            except ImportError:
                err_console.print(
                    Text(
                        f"smartflow {command}: {module} is not installed; {_install_hint(extra)}",
                        style="red",
                    ),
                    soft_wrap=True,
                )
                raise typer.Exit(2) from None


def open_store(command: str, url: str) -> Any:
    """The database of ``--db URL``, its tables created; a URL that cannot be opened (not a URL,
    an unknown dialect, a missing driver, a server that refuses) is one line and exit code 2."""
    require(command, "db")
    from sqlalchemy.engine import make_url

    from .store import Store

    def fail(why: str) -> typer.Exit:
        err_console.print(Text(f"smartflow {command}: --db {why}", style="red"), soft_wrap=True)
        return typer.Exit(2)

    try:
        shown = make_url(url).render_as_string(hide_password=True)
    except Exception:  # sqlalchemy's ArgumentError: not a URL at all
        raise fail(f"is not a database URL: {url!r}") from None
    try:
        # a refused connection or a bad password is said now, not at the first session
        return Store.from_url(url, defer=False)
    except ModuleNotFoundError as exc:  # the URL's driver
        extra = DRIVER_EXTRAS.get((exc.name or "").split(".")[0])
        hint = f"; {_install_hint(extra)}" if extra else ""
        raise fail(f"{shown}: the driver {exc.name} is not installed{hint}") from None
    except Exception as exc:  # an unknown dialect, a refused connection, a bad password, ...
        lines = str(exc).strip().splitlines()
        raise fail(f"{shown}: {type(exc).__name__}: {lines[0] if lines else ''}") from None


def _load(path: Path) -> ScheduleState:
    """The window of a state file; a file that cannot be read, is not JSON or not a window is
    one line naming the file, and exit code 2."""
    from .tools_adapter.core.semester import dated

    try:
        state = dated(ScheduleState.from_json(path))
        assert state is not None
        return state
    except StateError as exc:
        why = str(exc) if str(path) in str(exc) else f"{path}: {exc}"
        err_console.print(Text(f"smartflow: {why}", style="red"), soft_wrap=True)
        raise typer.Exit(2) from None


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path``; a path that cannot be written is one line and exit code 2."""
    try:
        write_atomic(path, text)  # a kill mid-write leaves the old file (issue 44 item 9)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        err_console.print(
            Text(f"smartflow: cannot write {path}: {reason}", style="red"), soft_wrap=True
        )
        raise typer.Exit(2) from None


def _print_reply(result: ToolReply) -> None:
    """Print a tool's reply; a refusal (or an argument error) ends with exit code 1."""
    print(result.text)
    if result.is_error:
        raise typer.Exit(1)


def _show(title: str, reply: str) -> None:
    # Text, not markup: replies contain "[1]高等数学" and the analyzers' "[warning]".
    console.print(Panel(Text(reply), title=Text(title), title_align="left", expand=False))


@app.command()
def call(
    tool: Annotated[str, typer.Argument(help="Tool name, e.g. get_overview, place.")],
    state: Annotated[Path | None, typer.Option("--state", help="State JSON file.")] = None,
    args: Annotated[str, typer.Option("--args", help="Tool arguments as a JSON object.")] = "{}",
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the resulting state here.")
    ] = None,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            help="The user confirmed: run a tool that needs confirmation (e.g. upsert_task_class).",
        ),
    ] = False,
    db: Annotated[
        str | None,
        typer.Option(
            help="Database URL: load the window from it (with --user, --from, --to) instead "
            "of --state; upsert_task_class, commit and reload act on it."
        ),
    ] = None,
    user: DbUser = None,
    from_: FirstDay = None,
    to: LastDay = None,
    commit: Annotated[
        bool,
        typer.Option(
            "--commit",
            help="With --db: write the tool's changes to the database in one transaction "
            "(the user confirms with --yes).",
        ),
    ] = False,
) -> None:
    """Call one tool on a state file (or a window of the database) and print its reply.

    Exit code 0 when the tool did what was asked; 1 when it refused or did not run (unknown tool,
    bad arguments, a refusal in the spec's words, a confirm-required tool without --yes, a
    refused commit); 2 for an unreadable state file or database, --args that is not JSON or an
    --out that cannot be written.
    """
    try:
        parsed: Any = json.loads(args)
    except json.JSONDecodeError as exc:
        err_console.print(f"[red]smartflow: --args is not JSON: {exc}[/red]")
        raise typer.Exit(2) from None
    except RecursionError:
        err_console.print("[red]smartflow: --args is not JSON: nested too deeply[/red]")
        raise typer.Exit(2) from None
    tb = _call_toolbox(state, db, user, from_, to, commit)
    # The solving tools show the solver's status line above a second (their default limits are
    # 2 s or more).
    limit = parsed.get("time_limit_s", 2.0) if isinstance(parsed, dict) else 0.0
    solving = (
        tool in _STATUS_TOOLS and isinstance(limit, int | float) and not isinstance(limit, bool)
    )
    with solver_status(float(limit) if solving else 0.0):
        reply = tb.invoke(tool, parsed, confirm=yes)
    _print_reply(reply)
    if commit and tb.changes:
        _print_reply(tb.invoke("commit", {}, confirm=yes))
    if out is not None and tb.state is not None:
        _write(out, tb.state.to_json())


def _call_toolbox(
    state: Path | None,
    db: str | None,
    user: int | None,
    start: str | None,
    end: str | None,
    commit: bool,
) -> Toolbox:
    """``smartflow call``'s toolbox: on the state file, or on the database's window (its store
    set, so the database tools act on it)."""

    def fail(message: str) -> typer.Exit:
        err_console.print(Text(f"smartflow call: {message}", style="red"), soft_wrap=True)
        return typer.Exit(2)

    if db is None:
        if state is None:
            raise fail("give --state FILE or --db URL (with --user, --from, --to)")
        if commit or user is not None or start or end:
            raise fail("--user, --from, --to and --commit need --db")
        return Toolbox(_load(state))
    try:
        window = _db_window(user, start, end, state)
    except ValueError as exc:
        raise fail(str(exc)) from None
    store = open_store("call", db)
    from .store import StoreError, window_days

    assert user is not None
    try:
        loaded = store.load_window(user, window_days(*window))
    except (StoreError, ValueError) as exc:
        raise fail(str(exc)) from None
    return Toolbox(loaded, store=store, user_id=user)


_STATUS_TOOLS = frozenset({"propose_placement", "apply_proposal"})


@app.command()
def feasibility(
    state: StateFile,
    time_limit: Annotated[float, typer.Option(help="Solver time limit, seconds.")] = 5.0,
    include_suggested: Annotated[bool, typer.Option(help="Also re-plan suggested tasks.")] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the report as one JSON object (FeasibilityReport's figures)."
        ),
    ] = False,
) -> None:
    """Exact feasibility and capacity gap of a window (CP-SAT, proven or said to be unproven).

    Exit code 0: proven feasible; 3: proven infeasible; 4: unknown (the limit ran out before a
    proof); 1: the check refused; 2: an unreadable window file.
    """
    loaded = _load(state)
    if as_json:
        from dataclasses import asdict

        from .solver import check_feasibility

        report = check_feasibility(
            loaded, time_limit_s=time_limit, include_suggested=include_suggested
        )
        data = {k: v for k, v in asdict(report).items() if k != "witness"}
        print(json.dumps(data, ensure_ascii=False))
        verdict = report.is_feasible
    else:
        tb = Toolbox(loaded, max_time_limit_s=max(time_limit, 0.01))
        reply = tb.invoke(
            "check_feasibility",
            {"time_limit_s": time_limit, "include_suggested": include_suggested},
        )
        _print_reply(reply)
        # the reply's first words are the verdict (tool-layer layout: 可行性：可行/不可行/未知)
        verdict = {"可行性：可行": True, "可行性：不可": False}.get(reply.text[:6])
    if verdict is not True:
        raise typer.Exit(FEASIBILITY_EXIT[verdict])


FEASIBILITY_EXIT = {False: 3, None: 4}


def _progress_text(p: Any) -> str:
    best = "–" if p.best is None else f"{p.best:.2f}"
    bound = "–" if p.bound is None else f"{p.bound:.2f}"
    return f"solver: {p.stage} · best {best} · bound {bound} · {p.elapsed_s:.1f} s"


@contextmanager
def solver_status(time_limit: float) -> Iterator[None]:
    """A status line on stderr (stage, best objective, proven bound) while a solver call with a
    limit above a second runs: a live line on a terminal, one plain line per stage otherwise.
    The solver only reports data (:mod:`smartflow_engine.solver.progress`)."""
    if time_limit <= 1.0:
        yield
        return
    from .solver.progress import progress_listener

    if err_console.is_terminal:
        with (
            err_console.status("solver: starting") as status,
            progress_listener(lambda p: status.update(_progress_text(p))),
        ):
            yield
    else:
        with progress_listener(lambda p: err_console.print(Text(_progress_text(p)))):
            yield


@app.command()
def propose(
    state: StateFile,
    time_limit: Annotated[float, typer.Option(help="Solver time limit, seconds.")] = 2.0,
    seed: Annotated[int, typer.Option(help="Solver seed (same seed, same proposal).")] = 0,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Apply the proposal and write the resulting state here."),
    ] = None,
) -> None:
    """A rough placement of the pending tasks; with --out, applied and saved."""
    tb = Toolbox(_load(state), max_time_limit_s=max(time_limit, 0.01))
    args = {"time_limit_s": time_limit, "seed": seed}
    if out is None:
        with solver_status(time_limit):
            reply = tb.invoke("propose_placement", args)
        _print_reply(reply)
        return
    with solver_status(time_limit):
        reply = tb.invoke("apply_proposal", args)
    _print_reply(reply)
    assert tb.state is not None
    _write(out, tb.state.to_json())


@app.command()
def show(
    state: StateFile,
    out: Annotated[Path, typer.Option("--out", help="Picture file (.png, .svg, .pdf).")] = Path(
        "schedule.png"
    ),
    title: Annotated[str | None, typer.Option(help="Title above the grid.")] = None,
    level: Annotated[
        str,
        typer.Option(
            help="Threshold level for the flagged days and the load "
            "lines: strict | normal | relaxed."
        ),
    ] = "normal",
) -> None:
    """Draw the window as a days x periods grid with the day loads (needs the `plot` extra)."""
    if level not in ("strict", "normal", "relaxed"):
        err_console.print(
            f"[red]smartflow show: unknown --level {level!r} (strict | normal | relaxed)[/red]"
        )
        raise typer.Exit(2)
    require("show", "plot")
    loaded = _load(state)
    written = _picture(loaded, out, title=title or state.name, level=level)
    if written is None:
        raise typer.Exit(2)
    console.print(f"picture written to {written}")


def _picture(state: ScheduleState, out: Path, **kwargs: Any) -> Path | None:
    try:
        from .plot import save_window
    except ImportError:
        err_console.print(
            "[red]smartflow: drawing needs matplotlib: pip install 'smartflow-engine[plot]'[/red]"
        )
        return None
    try:
        return save_window(state, out, **kwargs)
    except (OSError, ValueError) as exc:
        err_console.print(f"[red]smartflow: cannot write {out}: {exc}[/red]")
        return None


@app.command("warm-up")
def warm_up() -> None:
    """Kept for one release as a no-op (issue 26): the solver has no compiled kernels any more,
    so an install or image-build step that still calls it keeps working."""
    console.print("nothing to compile: the solver has no compiled kernels any more")


@app.command()
def serve(
    host: Annotated[
        str | None, typer.Option(help="Bind address (env SMARTFLOW_HOST; default 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="TCP port (env SMARTFLOW_PORT; default 8000).")
    ] = None,
    max_time_limit: Annotated[
        float | None,
        typer.Option(
            help="Cap on any solver time limit a client asks for, seconds "
            "(env SMARTFLOW_MAX_TIME_LIMIT_S; default 10)."
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="Server worker processes (>1 needs a shared --session-store) "
            "(env SMARTFLOW_WORKERS; default 1)."
        ),
    ] = None,
    session_store: Annotated[
        str | None,
        typer.Option(
            help="Where sessions live: memory, or redis://host:port/db (shared by workers, "
            "survives restarts) (env SMARTFLOW_SESSION_STORE; default memory)."
        ),
    ] = None,
    session_prefix: Annotated[
        str | None,
        typer.Option(help="Redis key prefix (env SMARTFLOW_SESSION_PREFIX; default smartflow)."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            help="Database URL: sessions can be opened on its windows and commit to it "
            "(env SMARTFLOW_DB_URL)."
        ),
    ] = None,
    solver_processes: Annotated[
        int | None,
        typer.Option(
            help="Worker processes for solving tool calls (0: in the request thread) "
            "(env SMARTFLOW_SOLVER_PROCESSES; default 1)."
        ),
    ] = None,
    access_log: Annotated[
        bool | None,
        typer.Option(
            "--access-log/--no-access-log",
            help="One JSON line per request on stderr (env SMARTFLOW_ACCESS_LOG; default off).",
        ),
    ] = None,
    day_labels: Annotated[
        str | None,
        typer.Option(
            help="How text replies name a day: index (第6天) or weekday (第6天(星期六)); a "
            "session's own setting wins (env SMARTFLOW_DAY_LABELS; default index)."
        ),
    ] = None,
) -> None:
    """Run the HTTP API (FastAPI + uvicorn). Tokens: SMARTFLOW_API_TOKENS="tok:user,...".

    Every option also reads its SMARTFLOW_* variable (docs/settings.md): a flag wins over the
    variable, the variable over the default.
    """
    from .settings import SettingsError, load_settings

    try:
        cfg = load_settings(
            host=host,
            port=port,
            max_time_limit_s=max_time_limit,
            workers=workers,
            session_store=session_store,
            session_prefix=session_prefix,
            db_url=db,
            solver_processes=solver_processes,
            access_log=access_log,
            day_labels=day_labels,
        )
    except SettingsError as exc:
        err_console.print(f"[red]smartflow serve: {exc}[/red]")
        raise typer.Exit(2) from None
    require("serve", "server")
    if cfg.session_store.startswith("redis"):
        require("serve", "redis")
    if cfg.db_url is not None:  # each worker opens it again; a bad URL is one line here
        open_store("serve", cfg.db_url).dispose()
    from .tools_adapter.api import serve as serve_http

    try:
        serve_http(
            host=cfg.host,
            port=cfg.port,
            max_time_limit_s=cfg.max_time_limit_s,
            workers=cfg.workers,
            session_store=cfg.session_store,
            session_prefix=cfg.session_prefix,
            db_url=cfg.db_url,
            solver_processes=cfg.solver_processes,
            access_log=cfg.access_log,
            day_labels=cfg.day_labels,
        )
    except ValueError as exc:
        err_console.print(f"[red]smartflow serve: {exc}[/red]")
        raise typer.Exit(2) from None


@app.command()
def mcp(
    state: Annotated[Path | None, typer.Option("--state", help="State JSON file.")] = None,
    mode: Annotated[
        str, typer.Option(help="first_full | local_adjust | global_reopt")
    ] = "first_full",
    save: Annotated[
        Path | None, typer.Option(help="Write the state here after each change.")
    ] = None,
    enable: Annotated[
        list[str] | None,
        typer.Option(
            help="Offer a tool hidden in this mode (repeatable), e.g. min_context_switch."
        ),
    ] = None,
    time_limit: Annotated[
        float, typer.Option(help="Cap on any solver time limit, seconds.")
    ] = 10.0,
    db: Annotated[
        str | None,
        typer.Option(
            help="Database URL: load the window from it (with "
            "--user, --from, --to); commit writes back."
        ),
    ] = None,
    user: DbUser = None,
    from_: FirstDay = None,
    to: LastDay = None,
    auto_confirm: Annotated[
        bool,
        typer.Option(
            "--auto-confirm",
            help="The host asks the user before every tool call: run commit and "
            "upsert_task_class when called (default: ask the user through an MCP "
            "elicitation request; a client without elicitation is refused).",
        ),
    ] = False,
    print_config: Annotated[
        bool,
        typer.Option(
            "--print-config",
            help="Print an MCP client configuration running these options (absolute command "
            "and paths, ready to paste) and exit.",
        ),
    ] = False,
    day_labels: Annotated[
        str | None,
        typer.Option(
            help="How text replies name a day: index (第6天) or weekday (第6天(星期六)) "
            "(env SMARTFLOW_DAY_LABELS; default index)."
        ),
    ] = None,
) -> None:
    """Run the MCP server over stdio (on a state file, or on a window of the database).

    Database writes (commit, upsert_task_class) run only after the user accepts the server's
    elicitation request showing the change summary; no tool lets the model confirm.

    A server that cannot open its session (a missing state file, a bad --db window) says why on
    stderr and exits 2; started by an MCP client (stdin not a terminal) it first answers the
    client, so the reason shows there instead of a bare "Connection closed".
    """
    require("mcp", "mcp")
    from .tools_adapter.mcp.server import run_stdio, run_unavailable_stdio

    if state is not None and not state.is_file():
        reason = (
            f"--state {state}: no such file ({state.resolve()}; an MCP client starts the server "
            "in its own directory: give an absolute path, or use smartflow mcp --print-config)"
        )
        _mcp_unavailable(reason, mode, None if print_config else run_unavailable_stdio)
    if print_config:
        args = ["mcp", "--mode", mode, "--time-limit", f"{time_limit:g}"]
        args += ["--state", str(state.resolve())] if state is not None else []
        args += ["--save", str(save.resolve())] if save is not None else []
        for name in enable or ():
            args += ["--enable", name]
        if db is not None:
            args += ["--db", db, *(["--user", str(user)] if user is not None else [])]
            args += [*(["--from", from_] if from_ else []), *(["--to", to] if to else [])]
        args += ["--auto-confirm"] if auto_confirm else []
        args += ["--day-labels", day_labels] if day_labels is not None else []
        config = {"mcpServers": {"smartflow": {"command": _smartflow_command(), "args": args}}}
        print(json.dumps(config, ensure_ascii=False, indent=2))
        return
    try:
        database = window = None
        if db is not None:
            window = _db_window(user, from_, to, state)
            database = open_store("mcp", db)
        run_stdio(
            state,
            mode=mode,
            save_path=save,
            enabled_tools=tuple(enable or ()),
            max_time_limit_s=time_limit,
            database=database,
            db_user_id=user,
            window=window,
            auto_confirm=auto_confirm,
            day_labels=day_labels,
        )
    except ValueError as exc:
        _mcp_unavailable(str(exc), mode, run_unavailable_stdio)


def _mcp_unavailable(reason: str, mode: str, serve: Any) -> None:
    """Say why the MCP server cannot open its session and exit 2; when an MCP client started it
    (stdin is not a terminal), first tell the client through MCP (see ``smartflow mcp``)."""
    err_console.print(Text(f"smartflow mcp: {reason}", style="red"), soft_wrap=True)
    if serve is not None and not sys.stdin.isatty():
        serve(f"smartflow mcp 未能打开日程：{reason}", mode if mode in _MODES else "first_full")
    raise typer.Exit(2)


_MODES = ("first_full", "local_adjust", "global_reopt")


def _smartflow_command() -> str:
    """The absolute path of this installation's ``smartflow`` (an MCP client does not read the
    shell's PATH)."""
    beside = Path(sys.executable).with_name("smartflow")
    if beside.exists():
        return str(beside)
    found = shutil.which("smartflow")
    return str(Path(found).resolve()) if found else "smartflow"


@app.command()
def seed(
    db: Annotated[str, typer.Argument(help="Database URL, e.g. sqlite:///smartflow.db.")],
    files: Annotated[
        list[Path], typer.Argument(help="Window JSON files (the spec's §3.1), one user each.")
    ],
    first_user: Annotated[
        int, typer.Option(help="User id of the first file; the next files get the next ids.")
    ] = 1,
    keep_ids: Annotated[
        bool,
        typer.Option(help="Keep the files' source/category ids (default: numbered afresh)."),
    ] = False,
) -> None:
    """Create the tables and load users from window JSON files (all in one transaction)."""
    run_seed(db, files, first_user=first_user, keep_ids=keep_ids)


def run_seed(db: str, files: list[Path], *, first_user: int = 1, keep_ids: bool = False) -> None:
    """``smartflow seed``: every file is checked, and no user may hold rows yet, before anything
    is written; then all users go in in one transaction (a failure writes nothing)."""

    def refuse(message: str) -> typer.Exit:
        err_console.print(Text(f"smartflow seed: {message}", style="red"), soft_wrap=True)
        return typer.Exit(2)

    if first_user < 1:
        raise refuse("--first-user must be 1 or more")
    states = [(first_user + i, path, _load(path)) for i, path in enumerate(files)]
    for _user, path, state in states:
        if not state.window.day_mapping:
            raise refuse(f"{path}: the window has no day_mapping (days need their week and day)")
    from .store import Store, StoreError
    from .store.seed import seed_from_state

    try:
        store = Store.from_url(db)
    except Exception as exc:  # a bad URL or an unreachable server: one line, no traceback
        raise refuse(f"cannot open {db}: {str(exc).splitlines()[0]}") from None
    try:
        taken = [user for user, _, _ in states if any(store.row_counts(user).values())]
        if taken:
            raise refuse(f"user(s) {', '.join(map(str, taken))} already have rows; nothing written")
        try:
            with store.session(write=True) as session:
                for user, path, state in states:
                    try:
                        seed_from_state(session, user, state, keep_ids=keep_ids)
                    except StoreError as exc:
                        raise StoreError(f"{path}: {exc}") from None
        except StoreError as exc:
            raise refuse(f"{exc}; nothing written") from None
        for user, path, _ in states:
            counts = store.row_counts(user)
            console.print(f"user {user} ← {path}: {counts}", soft_wrap=True)
    finally:
        store.dispose()


@app.command()
def gen(
    out: Annotated[Path, typer.Argument(help="Directory to write the windows to.")],
    count: Annotated[int, typer.Option("--count", "-n", help="Number of windows.")] = 10,
    days: Annotated[int, typer.Option(help="Days per window (1 to 1000).")] = 30,
    variant: Annotated[str, typer.Option(help="plain | tight | fragmented | mixed.")] = "plain",
    seed_: Annotated[int, typer.Option("--seed", help="Seed of the first window.")] = 0,
    task_classes: Annotated[
        bool, typer.Option(help="Add a task class per study category (windows, banned periods).")
    ] = False,
) -> None:
    """Write N synthetic windows (seeded, reproducible) to a directory, for trying `batch`."""
    run_gen(out, count=count, days=days, variant=variant, seed=seed_, task_classes=task_classes)


def run_gen(
    out: Path, *, count: int, days: int, variant: str, seed: int, task_classes: bool
) -> list[Path]:
    """``smartflow gen``: window ``i`` is ``synthetic_window(seed + i, days, variant=...)``
    (``mixed`` cycles plain, tight, fragmented), written as ``window_0001.json``, ..."""
    from .state.synthetic import VARIANTS, synthetic_window

    problems = []
    if not 1 <= count <= 100_000:
        problems.append("--count must be 1 to 100000")
    if not 1 <= days <= 1000:
        problems.append("--days must be 1 to 1000")
    if variant not in (*VARIANTS, "mixed"):
        problems.append(f"unknown --variant {variant!r} ({' | '.join((*VARIANTS, 'mixed'))})")
    if problems:
        err_console.print(Text(f"smartflow gen: {'; '.join(problems)}", style="red"))
        raise typer.Exit(2)
    written = []
    for i in range(count):
        kind = VARIANTS[i % len(VARIANTS)] if variant == "mixed" else variant
        state = synthetic_window(seed + i, days, variant=kind, with_task_classes=task_classes)  # type: ignore[arg-type]
        path = out / f"window_{i + 1:04d}.json"
        _write(path, state.to_json())
        written.append(path)
    console.print(f"{count} windows of {days} days ({variant}) written to {out}")
    return written


def _week_day(text: str | None, name: str) -> tuple[int, int]:
    week, _, dow = (text or "").partition("-")
    if not (week.isdigit() and dow.isdigit()):
        raise ValueError(f"{name} must be WEEK-DAY (e.g. 7-1), got {text!r}")
    return int(week), int(dow)


def _db_window(
    user: int | None, start: str | None, end: str | None, state: Path | None
) -> tuple[tuple[int, int], tuple[int, int]]:
    if state is not None:
        raise ValueError("give either --state or --db, not both")
    if user is None:
        raise ValueError("--db needs --user (the database user id)")
    return _week_day(start, "--from"), _week_day(end, "--to")


@app.command()
def batch(
    source: Annotated[
        str | None,
        typer.Argument(
            help="A directory or glob of state JSON files, or a .jsonl file of states "
            "(omit it with --db)."
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Results table: .parquet or .csv.")] = Path(
        "results.parquet"
    ),
    engine: Annotated[
        str, typer.Option(help="local (process pool) | ray | loop (this process).")
    ] = "local",
    workers: Annotated[
        int | None,
        typer.Option(help="Processes, or CPUs of a local Ray (default: the machine's cores)."),
    ] = None,
    address: Annotated[
        str | None, typer.Option(help="Ray: an existing cluster's address (default: a local Ray).")
    ] = None,
    time_limit: Annotated[
        float, typer.Option(help="Each solver call's time limit, seconds.")
    ] = 2.0,
    seed: Annotated[
        int, typer.Option(help="Proposal seed (same seed, same table but rows the clock cut).")
    ] = 0,
    jobs: Annotated[
        str, typer.Option(help="Comma-separated: feasibility, proposal, health.")
    ] = "feasibility,proposal,health",
    commit: Annotated[
        bool,
        typer.Option(
            help="Write each feasible proposal back to --db as "
            "suggested (one transaction per user)."
        ),
    ] = False,
    db: Annotated[
        str | None, typer.Option(help="Database URL: the cohort is its users with pending work.")
    ] = None,
    users: Annotated[
        str | None,
        typer.Option(help="With --db: user ids A-B (default: every user with pending work)."),
    ] = None,
    weeks: Annotated[
        str | None,
        typer.Option(help="With --db: the window, weeks A-B (default: each user's task classes)."),
    ] = None,
    chunk_size: Annotated[
        int | None, typer.Option(help="Windows per task (default: about eight chunks per worker).")
    ] = None,
    work_limit: Annotated[
        float | None,
        typer.Option(
            help="Proposals stop on this deterministic "
            "work budget, seconds (default: what a "
            "--time-limit call gets)."
        ),
    ] = None,
    negotiation: Annotated[
        bool,
        typer.Option(
            help="Compute the negotiation figures of "
            "infeasible windows (--no-negotiation: the "
            "check alone)."
        ),
    ] = True,
    frozen_days: Annotated[
        int,
        typer.Option(
            min=0,
            help="Freeze days 1..N of every window: nothing placed there moves, nothing new "
            "lands there (0: none).",
        ),
    ] = 0,
) -> None:
    """A cohort of windows at once: feasibility, proposals and health as one table."""
    # The writer first: a missing pyarrow must not surface after every window was computed.
    require("batch", "parquet" if out.suffix.lower() == ".parquet" else "batch")
    if engine == "ray":
        require("batch", "ray")
    if db is not None:
        require("batch", "db")
    try:
        from .batch import SourceError, from_db, parse_range, run_batch, write_table
        from .batch.sinks import sink_kind
    except ImportError as exc:
        err_console.print(
            f"[red]smartflow batch needs pandas and pyarrow: pip install "
            f"'smartflow-engine[batch]' ({exc})[/red]"
        )
        raise typer.Exit(2) from None
    from .batch.engines import EngineError

    def fail(message: str) -> typer.Exit:
        err_console.print(Text(f"smartflow batch: {message}", style="red"), soft_wrap=True)
        return typer.Exit(2)

    if source is None and db is None:
        raise fail("give SOURCE (a directory, glob or .jsonl file of windows) or --db URL")
    if source is not None and db is not None:
        raise fail("give either SOURCE (files) or --db URL, not both")
    if db is None and (users or weeks or commit):
        raise fail("--users, --weeks and --commit need --db")
    try:
        sink_kind(out)
        if db is not None:
            first, last = parse_range(users, "--users") if users else (0, -1)
            ids = range(first, last + 1) if users else None
            span = parse_range(weeks, "--weeks") if weeks else None
            src: Any = from_db(db, ids, span)
        else:
            src = source
        with batch_progress() as progress:
            df = run_batch(
                src,
                jobs=jobs.split(","),
                time_limit_s=time_limit,
                seed=seed,
                engine=engine,
                workers=workers,
                commit=commit,
                address=address,
                chunk_size=chunk_size,
                progress=progress,
                work_limit_s=work_limit,
                negotiation=negotiation,
                frozen_days=frozen_days,
            )
    except (SourceError, EngineError, ValueError) as exc:
        raise fail(str(exc)) from None
    except Exception as exc:  # the database cannot be reached, ...
        lines = str(exc).strip().splitlines()
        raise fail(f"{type(exc).__name__}: {lines[0] if lines else ''}") from None
    try:
        write_table(df, out)
    except OSError as exc:
        raise fail(f"cannot write {out}: {exc.strerror or type(exc).__name__}") from None
    console.print(_batch_summary(df))
    console.print(f"results written to {out}")


@contextmanager
def batch_progress() -> Iterator[Callable[[int, int, int], None]]:
    """``run_batch``'s progress callback: a live bar on a terminal; otherwise (a log, a pipe, a
    CI job) one plain line on stderr at each tenth of the cohort and at its end."""
    t0 = time.perf_counter()

    def rate(done: int) -> str:
        return f"{done / max(time.perf_counter() - t0, 1e-9):.1f}"

    if not console.is_terminal:
        said = [-1]

        def plain(done: int, failures: int, total: int) -> None:
            step = 10 * done // total if total else 0
            if step > said[0]:
                said[0] = step
                err_console.print(
                    Text(
                        f"batch: {done}/{total} windows, failures {failures}, "
                        f"{rate(done)} windows/s"
                    ),
                    soft_wrap=True,
                )

        yield plain
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[bold]batch"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("failures {task.fields[failures]}"),
        TextColumn("{task.fields[rate]} windows/s"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
    ) as bar:
        task = bar.add_task("windows", total=None, failures=0, rate="-")

        def live(done: int, failures: int, total: int) -> None:
            bar.update(task, completed=done, total=total, failures=failures, rate=rate(done))

        yield live


def _batch_summary(df: Any) -> Any:
    """The closing table: verdicts, errors, total capacity gap, runtimes (and commits)."""
    from rich.table import Table

    run = df.attrs.get("batch", {})
    ok = df["error"].isna()
    table = Table(
        title=f"batch: {len(df)} windows, {run.get('engine')} engine, {run.get('workers')} workers"
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    if "feasibility" in run.get("jobs", []):
        table.add_row("feasible", str(int((df["is_feasible"] == True).sum())))  # noqa: E712
        table.add_row("infeasible (proven)", str(int((df["is_feasible"] == False).sum())))  # noqa: E712
        table.add_row("unproven", str(int((ok & df["is_feasible"].isna()).sum())))
        table.add_row("total capacity gap (periods)", str(int(df["capacity_gap"].sum())))
    table.add_row("errors", str(int((~ok).sum())))
    # rows whose figures hang on the machine's load (issue 45 item 2)
    table.add_row("cut by the wall clock (clock_cut)", str(run.get("clock_cut", 0)))
    median = df.loc[ok, "total_s"].median() if ok.any() else None
    table.add_row("median runtime per window", "-" if median is None else f"{median:.3f} s")
    wall = run.get("wall_s")
    if wall:
        table.add_row("wall time", f"{wall:.1f} s ({len(df) / wall:.1f} windows/s)")
    if "commit_status" in df.columns:
        for status, count in df["commit_status"].value_counts().items():
            table.add_row(f"commit: {status}", str(int(count)))
    return table


@app.command()
def bench(
    quick: Annotated[bool, typer.Option(help="Small sizes and few repeats (a smoke run).")] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Results file (default benchmarks/RESULTS.md; not written with --quick)."
        ),
    ] = None,
) -> None:
    """Run every benchmark in benchmarks/ side by side and write the result tables."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / "run.py").exists():
        err_console.print(
            "[red]smartflow bench: run from a source checkout "
            "(benchmarks/ is not installed with the package)[/red]"
        )
        raise typer.Exit(2)
    sys.path.insert(0, str(root))
    from benchmarks.run import run_all

    text = run_all(quick=quick, console=console)
    target = out or (None if quick else root / "benchmarks" / "RESULTS.md")
    if target is not None:
        _write(target, text)
        console.print(f"results written to {target}")
    else:
        console.print(text)


@app.command()
def demo(
    workdir: Annotated[
        Path, typer.Option(help="Where the demo writes its SQLite file and state.")
    ] = Path("smartflow-demo"),
) -> None:
    """Walk through the engine on the bundled sample window, as an agent would.

    The window is seeded into an embedded SQLite file, a session is opened on it from the
    tables, worked on through the tools, and committed through the Confirm gate (``commit``
    previews the net change per table, the confirm writes it in one transaction). A second
    session opened before the commit then shows the optimistic check (a Chinese ``stale`` reply
    naming what changed) and ``reload``.
    """
    require("demo", "db")
    from .store import Store
    from .tools_adapter.sessions.session import Session

    sample = _load(sample_window_path())
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "smartflow.db"
    db.unlink(missing_ok=True)
    store = Store.from_url(f"sqlite:///{db}")
    store.seed_from_state(DEMO_USER, sample)
    mapping = sample.window.day_mapping
    session = Session(store.load_window(DEMO_USER, mapping), store=store, db_user_id=DEMO_USER)
    rival = Session(store.load_window(DEMO_USER, mapping), store=store, db_user_id=DEMO_USER)
    console.print(Rule(f"smartflow demo — sample window loaded from {db}"))
    console.print(f"rows: {store.row_counts(DEMO_USER)}", soft_wrap=True)
    loaded = session.state
    assert loaded is not None
    before = _picture(loaded, workdir / "schedule_before.png", title="sample window, loaded")
    for name, args, title in DEMO_STEPS:
        reply = session.call(name, args)
        if name.startswith("analyze_"):
            reply = _health_digest(reply)
        _show(f"{title} · {name} {json.dumps(args, ensure_ascii=False) if args else ''}", reply)
    count = len(session.changes)
    held = session.invoke("commit", {})
    _show("提交预览（Confirm 节点）· commit", held.reply)
    done = session.confirm(held.confirm_token or "")
    _show("用户确认 · confirm", done.reply)
    if done.is_error or session.changes:
        err_console.print("[red]commit refused[/red]")
        raise typer.Exit(1)
    state = session.state
    assert state is not None
    from .store.load import as_stored

    again = store.load_window(DEMO_USER, mapping)
    same = as_stored(again) == as_stored(state)
    console.print(
        f"committed {count} changes in one transaction; rows now "
        f"{store.row_counts(DEMO_USER)}; reloaded window equals the session's: {same}",
        soft_wrap=True,
    )
    _show(
        "另一个会话（提交前打开）· place",
        rival.call("place", {"task_id": 11, "day": 2, "slot_start": 7}),
    )
    token = rival.invoke("commit", {}).confirm_token or ""
    _show("另一个会话提交（数据库已变）· commit → confirm", rival.confirm(token).reply)
    _show("另一个会话刷新 · reload", rival.call("reload", {"discard_changes": True}))
    out = workdir / "state_after_demo.json"
    write_atomic(out, state.to_json())
    console.print(f"state written to {out}")
    after = _picture(
        state, workdir / "schedule_after.png", title="sample window, after the proposal"
    )
    if before is not None and after is not None:
        console.print(f"pictures: {before} (before), {after} (after the proposal)", soft_wrap=True)


DEMO_USER = 1
DEMO_STEPS: list[tuple[str, dict[str, Any], str]] = [
    ("get_overview", {}, "总览"),
    ("list_tasks", {"status": "pending"}, "待安排任务"),
    ("find_free", {"duration": 3, "day": 6}, "找 3 个连续空闲时段"),
    ("place", {"task_id": 11, "day": 6, "slot_start": 1}, "放置（成功）"),
    ("place", {"task_id": 12, "day": 1, "slot_start": 1}, "放置（冲突，状态不变）"),
    ("place", {"task_id": 15, "day": 3, "slot_start": 3}, "放置到水课（嵌入）"),
    ("move", {"task_id": 1, "new_day": 6, "new_slot_start": 5}, "移动固定课程（拒绝）"),
    (
        "batch_move",
        {
            "moves": [
                {"task_id": 11, "new_day": 7, "new_slot_start": 1},
                {"task_id": 9, "new_day": 6, "new_slot_start": 1},
            ]
        },
        "批量移动（同时生效）",
    ),
    ("check_feasibility", {}, "可行性（CP-SAT，精确）"),
    ("analyze_health", {}, "整体体检"),
    ("apply_proposal", {}, "粗排：应用 CP-SAT 方案"),
    ("analyze_health", {}, "粗排后体检"),
    ("list_tasks", {"status": "suggested"}, "已预排任务"),
]


def _health_digest(reply: str) -> str:
    """The health envelope's headline figures (the full JSON is what an LLM receives)."""
    try:
        env = json.loads(reply)
    except json.JSONDecodeError:
        return reply
    if not env.get("success"):
        return f"error_code={env.get('error_code')}: {env.get('error')}"
    lines = []
    feas = env.get("feasibility")
    if feas:
        lines.append(f"feasibility: {json.dumps(feas, ensure_ascii=False)}")
    for issue in env.get("issues", [])[:6]:
        trig = issue.get("trigger", {})
        lines.append(
            f"[{issue.get('severity')}] {issue.get('issue_id')}: {trig.get('metric')} "
            f"{trig.get('actual')} {trig.get('operator')} {trig.get('threshold')}"
        )
    for action in env.get("next_actions", []):
        lines.append(f"next: {action.get('intent_code')} {action.get('candidate_scope', {})}")
    return "\n".join(lines) or "no issues"


@app.command("eval")
def eval_kit(
    policy: Annotated[str, typer.Option(help="scripted (the tools-only agent) or openai.")] = (
        "scripted"
    ),
    k: Annotated[int, typer.Option("--k", help="Trials per task (pass^1 .. pass^k).")] = 1,
    out: Annotated[
        Path, typer.Option(help="Writes OUT.parquet (one row per trial) and OUT.md.")
    ] = Path("eval_results"),
    tasks: Annotated[str | None, typer.Option(help="Comma-separated task ids (a subset).")] = None,
    kinds: Annotated[
        str | None, typer.Option(help="Comma-separated kinds: closable,unclosable,infeasible.")
    ] = None,
    tasks_file: Annotated[
        Path | None, typer.Option(help="Another task set (default: the shipped one).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="openai: the model name.")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="openai: an OpenAI-compatible endpoint, e.g. .../v1.")
    ] = None,
    api_key_env: Annotated[
        str, typer.Option(help="openai: the environment variable holding the API key.")
    ] = "OPENAI_API_KEY",
    temperature: Annotated[float | None, typer.Option(help="openai: sampling temperature.")] = None,
    notes: Annotated[
        Path | None,
        typer.Option(help="A markdown file whose text ends OUT.md (the baseline's notes)."),
    ] = None,
    baseline: Annotated[
        bool,
        typer.Option(
            "--baseline",
            help="A reproducible table (make eval): no seconds column, and exit 1 when the "
            "wall clock cut a solver call (its row hangs on the machine's load).",
        ),
    ] = False,
) -> None:
    """Run the public task set through real sessions for a policy; write the pass^k table.

    Exit code 0; 1 when a trial stopped on a policy error, or with --baseline when the wall
    clock cut a solver call (the table is written); 2 for bad options or an endpoint that fails
    the set-up check (nothing is run or written).
    """
    from .evalkit.command import run_command

    def split(text: str | None) -> list[str] | None:
        return [x.strip() for x in text.split(",") if x.strip()] if text else None

    code = run_command(
        policy=policy,
        k=k,
        out=out,
        task_ids=split(tasks),
        kinds=split(kinds),
        tasks_file=tasks_file,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        temperature=temperature,
        notes=notes,
        baseline=baseline,
        console=console,
    )
    if code:
        raise typer.Exit(code)


from .cli_db import register as _register_db  # noqa: E402 (issue 41: db init, rough-build)

_register_db(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
