"""What ``smartflow eval`` does (the typer function in ``cli.py`` only forwards its options)."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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
    console: Console | None = None,
) -> int:
    """Run the kit and write ``out``.parquet and ``out``.md; the exit code (2: bad input)."""
    console = console or Console()
    err = Console(stderr=True)

    def fail(message: str) -> int:
        err.print(f"[red]smartflow eval: {message}[/red]", soft_wrap=True)
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
    runner: Policy
    if policy == "openai":
        if not model:
            return fail("--policy openai needs --model")
        try:
            from .policies import OpenAIPolicy

            runner = OpenAIPolicy(
                model,
                base_url=base_url,
                api_key=os.environ.get(api_key_env),
                temperature=temperature,
            )
        except ImportError:
            return fail(
                "--policy openai needs the openai SDK: pip install 'smartflow-engine[eval]'"
            )
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
            progress.console.print(
                f"  {t.task.id} #{t.trial + 1}: {mark} ({t.tool_calls} calls, {t.seconds:.1f}s)"
            )
            progress.advance(bar)

        trials = run_eval(tasks, runner, k=k, on_trial=tick)
    table = summary(trials, k)
    name = f"{policy}" + (f" ({model})" if model else "")
    text = markdown(table, trials, f"Eval kit: {name}, k={k}, {len(tasks)} tasks")
    out.parent.mkdir(parents=True, exist_ok=True)
    trials.to_parquet(out.with_suffix(".parquet"), index=False)
    out.with_suffix(".md").write_text(text, encoding="utf-8")
    console.print(text)
    console.print(f"written: {out.with_suffix('.parquet')}, {out.with_suffix('.md')}")
    return 0
