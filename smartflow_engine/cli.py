"""The ``smartflow`` command: demo, call, feasibility, propose, show, serve, mcp, bench."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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
from .tools_adapter.toolbox import ToolReply

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
        err_console.print(Text(f"smartflow: {exc}", style="red"), soft_wrap=True)
        raise typer.Exit(2) from None


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path``; a path that cannot be written is one line and exit code 2."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        err_console.print(Text(f"smartflow: cannot write {path}: {reason}", style="red"),
                          soft_wrap=True)
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
    state: Annotated[Path, typer.Option("--state", help="State JSON file.")],
    args: Annotated[str, typer.Option("--args", help="Tool arguments as a JSON object.")] = "{}",
    out: Annotated[Path | None, typer.Option("--out", help="Write the resulting state here.")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="The user confirmed: run a tool that needs "
                                      "confirmation (e.g. upsert_task_class).")] = False,
) -> None:
    """Call one tool on a state file and print its reply.

    Exit code 0 when the tool did what was asked; 1 when it refused or did not run (unknown tool,
    bad arguments, a refusal in the spec's words, a confirm-required tool without --yes); 2 for
    an unreadable state file, --args that is not JSON or an --out that cannot be written.
    """
    loaded = _load(state)
    try:
        parsed: Any = json.loads(args)
    except json.JSONDecodeError as exc:
        err_console.print(f"[red]smartflow: --args is not JSON: {exc}[/red]")
        raise typer.Exit(2) from None
    except RecursionError:
        err_console.print("[red]smartflow: --args is not JSON: nested too deeply[/red]")
        raise typer.Exit(2) from None
    tb = Toolbox(loaded)
    _print_reply(tb.invoke(tool, parsed, confirm=yes))
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
    _print_reply(tb.invoke("check_feasibility", {"time_limit_s": time_limit,
                                                 "include_suggested": include_suggested}))


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
        with err_console.status("solver: starting") as status, \
                progress_listener(lambda p: status.update(_progress_text(p))):
            yield
    else:
        with progress_listener(lambda p: err_console.print(Text(_progress_text(p)))):
            yield


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
        "schedule.png"),
    title: Annotated[str | None, typer.Option(help="Title above the grid.")] = None,
    level: Annotated[str, typer.Option(help="Threshold level for the flagged days and the load "
                                       "lines: strict | normal | relaxed.")] = "normal",
) -> None:
    """Draw the window as a days x periods grid with the day loads (needs the `plot` extra)."""
    if level not in ("strict", "normal", "relaxed"):
        err_console.print(f"[red]smartflow show: unknown --level {level!r} "
                          "(strict | normal | relaxed)[/red]")
        raise typer.Exit(2)
    loaded = _load(state)
    written = _picture(loaded, out, title=title or state.name, level=level)
    if written is None:
        raise typer.Exit(2)
    console.print(f"picture written to {written}")


def _picture(state: ScheduleState, out: Path, **kwargs: Any) -> Path | None:
    try:
        from .plot import save_window
    except ImportError:
        err_console.print("[red]smartflow: drawing needs matplotlib: "
                          "pip install 'smartflow-engine[plot]'[/red]")
        return None
    try:
        return save_window(state, out, **kwargs)
    except (OSError, ValueError) as exc:
        err_console.print(f"[red]smartflow: cannot write {out}: {exc}[/red]")
        return None


@app.command("warm-up")
def warm_up() -> None:
    """Compile the solver's pricing kernels into numba's cache now (an install or image-build
    step); without it the first proposals of a fresh install run while they compile in the
    background."""
    from .solver._jit import compile_now

    compile_now()
    console.print("solver kernels compiled and cached")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Bind address (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    max_time_limit: Annotated[float, typer.Option(help="Cap on any solver time limit a client "
                                                  "asks for, seconds.")] = 10.0,
) -> None:
    """Run the HTTP API (FastAPI + uvicorn). Tokens: SMARTFLOW_API_TOKENS="tok:user,..."."""
    from .tools_adapter.http_api import serve as serve_http

    serve_http(host=host, port=port, max_time_limit_s=max_time_limit)


@app.command()
def mcp(
    state: Annotated[Path | None, typer.Option("--state", help="State JSON file.")] = None,
    mode: Annotated[str, typer.Option(help="first_full | local_adjust | global_reopt")] = "first_full",
    save: Annotated[Path | None, typer.Option(help="Write the state here after each change.")] = None,
    enable: Annotated[list[str] | None, typer.Option(help="Offer a tool hidden in this mode "
                                                     "(repeatable), e.g. min_context_switch.")] = None,
    time_limit: Annotated[float, typer.Option(help="Cap on any solver time limit, seconds.")] = 10.0,
) -> None:
    """Run the MCP server over stdio."""
    from .tools_adapter.mcp_server import run_stdio

    try:
        run_stdio(state, mode=mode, save_path=save, enabled_tools=tuple(enable or ()),
                  max_time_limit_s=time_limit)
    except ValueError as exc:
        err_console.print(f"[red]smartflow mcp: {exc}[/red]")
        raise typer.Exit(2) from None


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

    The window is seeded into an embedded SQLite file, loaded back from its tables, worked on
    through the tools, and the session's change log is committed in one transaction.
    """
    from .store import Store

    sample = _load(sample_window_path())
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "smartflow.db"
    db.unlink(missing_ok=True)
    store = Store.from_url(f"sqlite:///{db}")
    store.seed_from_state(DEMO_USER, sample)
    state = store.load_window(DEMO_USER, sample.window.day_mapping)
    console.print(Rule(f"smartflow demo — sample window loaded from {db}"))
    console.print(f"rows: {store.row_counts(DEMO_USER)}", soft_wrap=True)
    tb = Toolbox(state, store=store, user_id=DEMO_USER)
    before = _picture(state, workdir / "schedule_before.png", title="sample window, loaded")
    for name, args, title in DEMO_STEPS:
        reply = tb.call(name, args)
        if name.startswith("analyze_"):
            reply = _health_digest(reply)
        _show(f"{title} · {name} {json.dumps(args, ensure_ascii=False) if args else ''}", reply)
    result = store.commit(DEMO_USER, state, tb.changes)
    if not result.ok:
        err_console.print(f"[red]commit refused: {result.error_code}: {result.error}[/red]")
        raise typer.Exit(1)
    again = store.load_window(DEMO_USER, sample.window.day_mapping)
    same = again.to_dict() == state.to_dict()
    console.print(f"committed {len(tb.changes)} changes in one transaction; rows now "
                  f"{store.row_counts(DEMO_USER)}; reloaded window equals the session's: {same}",
                  soft_wrap=True)
    out = workdir / "state_after_demo.json"
    out.write_text(state.to_json(), encoding="utf-8")
    console.print(f"state written to {out}")
    after = _picture(state, workdir / "schedule_after.png",
                     title="sample window, after the proposal")
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
