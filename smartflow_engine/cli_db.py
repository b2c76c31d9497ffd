"""``smartflow db init`` and ``smartflow rough-build`` (issue 41): the backend's own database.

Registered on :data:`smartflow_engine.cli.app` by :func:`register`; kept apart from cli.py so the
store commands stay in one place.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

db_app = typer.Typer(help="The database: SmartFlow-Agent's four tables (and our extension).")
_err = Console(stderr=True)


def _refuse(command: str, message: str) -> typer.Exit:
    _err.print(Text(f"smartflow {command}: {message}", style="red"), soft_wrap=True)
    return typer.Exit(2)


@db_app.command("init")
def db_init(
    db: Annotated[str, typer.Argument(help="Database URL, e.g. sqlite:///smartflow.db.")],
) -> None:
    """Create SmartFlow-Agent's four tables and our extension table on a database holding none
    of them; on a database that holds them, check the tables and columns (nothing is altered)."""
    from .store import Store, StoreError

    try:
        store = Store.from_url(db)
    except StoreError as exc:
        raise _refuse("db init", str(exc)) from None
    except Exception as exc:  # a bad URL or an unreachable server: one line
        raise _refuse("db init", f"cannot open {db}: {str(exc).splitlines()[0]}") from None
    try:
        ext = "with" if store.has_extension else "without"
        print(f"{db}: schema ready ({ext} the extension table smartflow_extensions)")
    finally:
        store.dispose()


def rough_build(
    db: Annotated[str, typer.Argument(help="Database URL of the backend's tables.")],
    user: Annotated[int, typer.Option(help="The user id.")],
    classes: Annotated[str, typer.Option(help="Task class ids, comma-separated: 10,11.")],
    time_limit: Annotated[
        float, typer.Option(help="Seconds for the whole call (loading and every solve).")
    ] = 5.0,
    workers: Annotated[int, typer.Option(help="CP-SAT workers.")] = 1,
) -> None:
    """SmartFlow-Agent's rough build by the proposal search: the classes' pending items placed
    with every rule, printed as JSON in the backend's coordinates; nothing is written."""
    from .store import Store, StoreError

    try:
        ids = [int(c) for c in classes.split(",") if c.strip()]
    except ValueError:
        raise _refuse("rough-build", f"--classes {classes!r}: comma-separated ids") from None
    try:
        store = Store.from_url(db, create=False)
    except StoreError as exc:
        raise _refuse("rough-build", str(exc)) from None
    except Exception as exc:
        raise _refuse("rough-build", f"cannot open {db}: {str(exc).splitlines()[0]}") from None
    try:
        answer = store.rough_build(user, ids, time_limit_s=time_limit, num_workers=workers)
    except StoreError as exc:
        raise _refuse("rough-build", str(exc)) from None
    finally:
        store.dispose()
    print(json.dumps(answer.to_dict(), ensure_ascii=False))


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
    app.command("rough-build")(rough_build)
