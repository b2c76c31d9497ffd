"""Progress of a long solver call, as data: the stage, the best objective, the proven bound.

The solver returns data and never prints; a caller that wants to show progress (the CLI's status
line) registers a listener for the duration of a call::

    with progress_listener(lambda p: print(p.stage, p.best, p.bound)):
        propose_placement(state, time_limit_s=5)

The listener runs in the solver's thread between stages; it must return quickly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """One report: ``stage`` is starting (``done`` at the end); ``best`` is the weighted total
    of the best placement so far, ``bound`` the proven lower bound so far (``None``: none yet)."""

    stage: str
    elapsed_s: float
    best: float | None = None
    bound: float | None = None


Listener = Callable[[Progress], None]
_listener: ContextVar[Listener | None] = ContextVar("smartflow_progress", default=None)


@contextmanager
def progress_listener(listener: Listener) -> Iterator[None]:
    """Send every solver progress report made in this context to ``listener``."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def report(
    stage: str, started: float, best: float | None = None, bound: float | None = None
) -> None:
    """Tell the listener, if any, that ``stage`` starts (``started``: ``time.perf_counter()``)."""
    listener = _listener.get()
    if listener is not None:
        listener(Progress(stage, time.perf_counter() - started, best, bound))
