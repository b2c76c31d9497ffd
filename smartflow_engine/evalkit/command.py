"""What ``smartflow eval`` does (the typer function in ``cli.py`` only forwards its options)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..files import atomic_path, write_atomic
from .runner import Policy, Trial, markdown, run_eval, summary
from .tasks import KINDS, load_tasks

POLICIES = ("scripted", "openai")


def run_command(
    *,
    policy: str,
    k: int,
    out: Path,
    task_ids: list[str] | None = None,
    kinds: list[str] | None = None,
    tasks_file: Path | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    temperature: float | None = None,
    notes: Path | None = None,
    baseline: bool = False,
    console: Console | None = None,
) -> int:
    """Run the kit and write ``out``.parquet and ``out``.md (``notes``' text at its end).

    ``baseline``: the tables are a function of the task set and the policy (no wall-clock
    column), and a trial with a solver call the wall clock cut fails the run, since its row
    hangs on the machine's load.

    The exit code: 0; 1 when a trial stopped on a policy error or (``baseline``) the wall clock
    cut a solver call (the tables are written either way); 2 for bad input or a broken set-up
    (nothing is run or written).
    """
    console = console or Console()
    err = Console(stderr=True)

    def fail(message: str) -> int:
        err.print(f"[red]smartflow eval: {escape(message)}[/red]", soft_wrap=True)
        return 2

    if policy not in POLICIES:
        return fail(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    if k < 1:
        return fail("--k must be at least 1")
    bad = [kd for kd in kinds or () if kd not in KINDS]
    if bad:
        return fail(f"unknown kind(s) {', '.join(bad)}; expected {', '.join(KINDS)}")
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        return fail("the table needs pandas and pyarrow: pip install 'smartflow-engine[eval]'")
    try:
        tasks = load_tasks(tasks_file, task_ids)
    except (OSError, ValueError) as exc:
        return fail(str(exc))
    if kinds:
        tasks = [t for t in tasks if t.kind in kinds]
    if not tasks:
        return fail("no task selected")
    try:
        note_text = notes.read_text(encoding="utf-8") if notes is not None else ""
    except (OSError, UnicodeDecodeError) as exc:
        return fail(f"cannot read --notes {notes}: {getattr(exc, 'strerror', None) or exc}")
    runner: Policy
    if policy == "openai":
        if not model:
            return fail("--policy openai needs --model")
        api_key = os.environ.get(api_key_env)
        if not api_key and base_url is None:  # a local server may take none; OpenAI's API not
            return fail(
                f"no API key: ${api_key_env} is not set "
                "(set it, name another variable with --api-key-env, or give --base-url)"
            )
        try:
            from .policies import OpenAIPolicy

            openai_policy = OpenAIPolicy(
                model, base_url=base_url, api_key=api_key, temperature=temperature
            )
        except ImportError:
            return fail(
                "--policy openai needs the openai SDK: pip install 'smartflow-engine[eval]'"
            )
        problem = openai_policy.setup_problem()
        if problem is not None:  # before any task: one line, nothing written
            return fail(problem)
        runner = openai_policy
    else:
        from .policies import ScriptedPolicy

        runner = ScriptedPolicy()

    with Progress(
        TextColumn("[bold]eval[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        bar = progress.add_task(f"{policy}: {len(tasks)} tasks x {k}", total=len(tasks) * k)

        def tick(t: Trial) -> None:
            mark = "[green]pass[/green]" if t.passed else f"[red]fail {','.join(t.failed)}[/red]"
            if t.stats.error:
                mark += f" [red]({escape(t.stats.error.splitlines()[0])})[/red]"
            progress.console.print(
                f"  {t.task.id} #{t.trial + 1}: {mark} ({t.tool_calls} calls, {t.seconds:.1f}s)"
            )
            progress.advance(bar)

        trials = run_eval(tasks, runner, k=k, on_trial=tick, timings=not baseline)
    table = summary(trials, k)
    name = f"{policy}" + (f" ({model})" if model else "")
    text = markdown(table, trials, f"Eval kit: {name}, k={k}, {len(tasks)} tasks", note_text)
    with atomic_path(out.with_suffix(".parquet")) as tmp:  # a kill leaves the old table
        trials.to_parquet(tmp, index=False)
    write_atomic(out.with_suffix(".md"), text)
    console.print(text, markup=False, highlight=False)
    cut = int((trials["clock_cuts"] > 0).sum())
    if cut:  # the rows of these trials hang on the machine's load
        err.print(
            f"[{'red' if baseline else 'yellow'}]smartflow eval: {cut} of {len(trials)} trials "
            "had a solver call cut by the wall clock (column clock_cuts): their rows may differ "
            f"on a quieter or busier machine{'; not a baseline' if baseline else ''}"
            f"[/{'red' if baseline else 'yellow'}]",
            soft_wrap=True,
        )
    console.print(f"written: {out.with_suffix('.parquet')}, {out.with_suffix('.md')}")
    broken = trials[trials["failed_goals"].str.contains("policy_error", regex=False)]
    if len(broken):  # the policy could not go on: not a score of the model
        first = json.loads(broken["details"].iloc[0])["policy_error"]
        err.print(
            f"[red]smartflow eval: {len(broken)} of {len(trials)} trials stopped on a policy "
            f"error (first: {escape(first.splitlines()[0])})[/red]",
            soft_wrap=True,
        )
        return 1
    return 1 if baseline and cut else 0
