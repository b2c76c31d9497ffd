"""The ``smartflow`` command: demo, call, feasibility, propose, serve, mcp, bench."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

from .state import ScheduleState, StateError
from .tools_adapter import Toolbox

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="smartflow-engine: the scheduling engine behind an LLM study-planning agent.",
)
console = Console()
err_console = Console(stderr=True)

StateFile = Annotated[Path, typer.Argument(help="State JSON (the spec's §3.1 format).")]


def sample_window_path() -> Path:
    """The bundled two-week sample window."""
    return Path(str(resources.files("smartflow_engine") / "data" / "sample_window.json"))


def _load(path: Path) -> ScheduleState:
    try:
        return ScheduleState.from_json(path)
    except StateError as exc:
        err_console.print(f"[red]smartflow: {exc}[/red]")
        raise typer.Exit(2) from None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _show(title: str, reply: str) -> None:
    # Text, not markup: replies contain "[1]高等数学" and the analyzers' "[warning]".
    console.print(Panel(Text(reply), title=Text(title), title_align="left", expand=False))


@app.command()
def call(
    tool: Annotated[str, typer.Argument(help="Tool name, e.g. get_overview, place.")],
    state: Annotated[Path, typer.Option("--state", help="State JSON file.")],
    args: Annotated[str, typer.Option("--args", help="Tool arguments as a JSON object.")] = "{}",
    out: Annotated[Path | None, typer.Option("--out", help="Write the resulting state here.")] = None,
) -> None:
    """Call one tool on a state file and print its reply."""
    loaded = _load(state)
    try:
        parsed: Any = json.loads(args)
    except json.JSONDecodeError as exc:
        err_console.print(f"[red]smartflow: --args is not JSON: {exc}[/red]")
        raise typer.Exit(2) from None
    tb = Toolbox(loaded)
    reply = tb.call(tool, parsed)
    print(reply)
    if out is not None:
        _write(out, loaded.to_json())


@app.command()
def feasibility(
    state: StateFile,
    time_limit: Annotated[float, typer.Option(help="Solver time limit, seconds.")] = 5.0,
    include_suggested: Annotated[bool, typer.Option(help="Also re-plan suggested tasks.")] = False,
) -> None:
    """Exact feasibility and capacity gap of a window (CP-SAT, proven or said to be unproven)."""
    tb = Toolbox(_load(state), max_time_limit_s=max(time_limit, 0.01))
    print(tb.call("check_feasibility", {"time_limit_s": time_limit,
                                        "include_suggested": include_suggested}))


@app.command()
def propose(
    state: StateFile,
    time_limit: Annotated[float, typer.Option(help="Solver time limit, seconds.")] = 2.0,
    seed: Annotated[int, typer.Option(help="Solver seed (same seed, same proposal).")] = 0,
    out: Annotated[Path | None, typer.Option("--out", help="Apply the proposal and write the "
                                             "resulting state here.")] = None,
) -> None:
    """A rough placement of the pending tasks; with --out, applied and saved."""
    tb = Toolbox(_load(state), max_time_limit_s=max(time_limit, 0.01))
    args = {"time_limit_s": time_limit, "seed": seed}
    if out is None:
        print(tb.call("propose_placement", args))
        return
    print(tb.call("apply_proposal", args))
    assert tb.state is not None
    _write(out, tb.state.to_json())


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Bind address (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    max_time_limit: Annotated[float, typer.Option(help="Cap on any solver time limit a client "
                                                  "asks for, seconds.")] = 10.0,
    workers: Annotated[int, typer.Option(help="Server worker processes (>1 needs a shared "
                                         "--session-store).")] = 1,
    session_store: Annotated[str, typer.Option(help="Where sessions live: memory, or "
                                               "redis://host:port/db (shared by workers, "
                                               "survives restarts).")] = "memory",
    session_prefix: Annotated[str, typer.Option(help="Redis key prefix.")] = "smartflow",
    db: Annotated[str | None, typer.Option(help="Database URL: sessions can be opened on its "
                                           "windows and commit to it.")] = None,
    solver_processes: Annotated[int, typer.Option(help="Worker processes for solving tool "
                                                  "calls (0: in the request thread).")] = 1,
) -> None:
    """Run the HTTP API (FastAPI + uvicorn). Tokens: SMARTFLOW_API_TOKENS="tok:user,..."."""
    from .tools_adapter.http_api import serve as serve_http

    try:
        serve_http(host=host, port=port, max_time_limit_s=max_time_limit, workers=workers,
                   session_store=session_store, session_prefix=session_prefix, db_url=db,
                   solver_processes=solver_processes)
    except ValueError as exc:
        err_console.print(f"[red]smartflow serve: {exc}[/red]")
        raise typer.Exit(2) from None


@app.command()
def mcp(
    state: Annotated[Path | None, typer.Option("--state", help="State JSON file.")] = None,
    mode: Annotated[str, typer.Option(help="first_full | local_adjust | global_reopt")] = "first_full",
    save: Annotated[Path | None, typer.Option(help="Write the state here after each change.")] = None,
    enable: Annotated[list[str] | None, typer.Option(help="Offer a tool hidden in this mode "
                                                     "(repeatable), e.g. min_context_switch.")] = None,
    time_limit: Annotated[float, typer.Option(help="Cap on any solver time limit, seconds.")] = 10.0,
    db: Annotated[str | None, typer.Option(help="Database URL: load the window from it (with "
                                           "--user, --from, --to); commit writes back.")] = None,
    user: Annotated[int | None, typer.Option(help="Database user id.")] = None,
    from_: Annotated[str | None, typer.Option("--from", help="First day: WEEK-DAY, e.g. 7-1.")] = None,
    to: Annotated[str | None, typer.Option(help="Last day: WEEK-DAY, e.g. 8-7.")] = None,
) -> None:
    """Run the MCP server over stdio (on a state file, or on a window of the database)."""
    from .tools_adapter.mcp_server import run_stdio

    try:
        database = window = None
        if db is not None:
            window = _db_window(user, from_, to, state)
            from .store import Store

            database = Store.from_url(db)
        run_stdio(state, mode=mode, save_path=save, enabled_tools=tuple(enable or ()),
                  max_time_limit_s=time_limit, database=database, db_user_id=user,
                  window=window)
    except ValueError as exc:
        err_console.print(f"[red]smartflow mcp: {exc}[/red]")
        raise typer.Exit(2) from None


def _week_day(text: str | None, name: str) -> tuple[int, int]:
    week, _, dow = (text or "").partition("-")
    if not (week.isdigit() and dow.isdigit()):
        raise ValueError(f"{name} must be WEEK-DAY (e.g. 7-1), got {text!r}")
    return int(week), int(dow)


def _db_window(user: int | None, start: str | None, end: str | None,
               state: Path | None) -> tuple[tuple[int, int], tuple[int, int]]:
    if state is not None:
        raise ValueError("give either --state or --db, not both")
    if user is None:
        raise ValueError("--db needs --user (the database user id)")
    return _week_day(start, "--from"), _week_day(end, "--to")


@app.command()
def bench(
    quick: Annotated[bool, typer.Option(help="Small sizes and few repeats (a smoke run).")] = False,
    out: Annotated[Path | None, typer.Option(help="Results file (default benchmarks/RESULTS.md; "
                                             "not written with --quick).")] = None,
) -> None:
    """Run every benchmark in benchmarks/ side by side and write the result tables."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / "run.py").exists():
        err_console.print("[red]smartflow bench: run from a source checkout "
                          "(benchmarks/ is not installed with the package)[/red]")
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
    workdir: Annotated[Path, typer.Option(help="Where the demo writes its SQLite file and state.")] = Path(
        "smartflow-demo"),
) -> None:
    """Walk through the engine on the bundled sample window, as an agent would.

    The window is seeded into an embedded SQLite file, a session is opened on it from the
    tables, worked on through the tools, and committed through the Confirm gate (``commit``
    previews the net change per table, the confirm writes it in one transaction). A second
    session opened before the commit then shows the optimistic check (a Chinese ``stale`` reply
    naming what changed) and ``reload``.
    """
    from .store import Store
    from .tools_adapter.session import Session

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
    if done.reply.startswith("提交失败") or session.changes:
        err_console.print("[red]commit refused[/red]")
        raise typer.Exit(1)
    state = session.state
    assert state is not None
    again = store.load_window(DEMO_USER, mapping)
    same = again.to_dict() == state.to_dict()
    console.print(f"committed {count} changes in one transaction; rows now "
                  f"{store.row_counts(DEMO_USER)}; reloaded window equals the session's: {same}",
                  soft_wrap=True)
    _show("另一个会话（提交前打开）· place", rival.call("place", {"task_id": 11, "day": 2,
                                                                "slot_start": 7}))
    token = rival.invoke("commit", {}).confirm_token or ""
    _show("另一个会话提交（数据库已变）· commit → confirm", rival.confirm(token).reply)
    _show("另一个会话刷新 · reload", rival.call("reload", {"discard_changes": True}))
    out = workdir / "state_after_demo.json"
    out.write_text(state.to_json(), encoding="utf-8")
    console.print(f"state written to {out}")


DEMO_USER = 1
DEMO_STEPS: list[tuple[str, dict[str, Any], str]] = [
    ("get_overview", {}, "总览"),
    ("list_tasks", {"status": "pending"}, "待安排任务"),
    ("find_free", {"duration": 3, "day": 6}, "找 3 个连续空闲时段"),
    ("place", {"task_id": 11, "day": 6, "slot_start": 1}, "放置（成功）"),
    ("place", {"task_id": 12, "day": 1, "slot_start": 1}, "放置（冲突，状态不变）"),
    ("place", {"task_id": 15, "day": 3, "slot_start": 3}, "放置到水课（嵌入）"),
    ("move", {"task_id": 1, "new_day": 6, "new_slot_start": 5}, "移动固定课程（拒绝）"),
    ("batch_move", {"moves": [{"task_id": 11, "new_day": 7, "new_slot_start": 1},
                              {"task_id": 9, "new_day": 6, "new_slot_start": 1}]},
     "批量移动（同时生效）"),
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
        lines.append(f"[{issue.get('severity')}] {issue.get('issue_id')}: {trig.get('metric')} "
                     f"{trig.get('actual')} {trig.get('operator')} {trig.get('threshold')}")
    for action in env.get("next_actions", []):
        lines.append(f"next: {action.get('intent_code')} {action.get('candidate_scope', {})}")
    return "\n".join(lines) or "no issues"


def main() -> None:
    app()


if __name__ == "__main__":
    main()
