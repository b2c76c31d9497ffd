"""Apps as a deployment serves them: one worker with the memory store, or two workers sharing a
Redis prefix, both on one database (for the tests of confirms across workers).

Not a conftest: imported explicitly by the tests that need it.
"""

from __future__ import annotations

from typing import Any

from smartflow_engine.tools_adapter.api import create_app
from smartflow_engine.tools_adapter.sessions.store import RedisSessionStore
from tests.helpers.db_servers import REDIS_URL


def worker_apps(kind: str, tokens: dict[str, str], database: Any, prefix: str) -> list[Any]:
    """``kind`` "memory": one app (listed once); "redis": two apps sharing ``prefix``."""
    if kind == "memory":
        return [create_app(tokens, database=database, max_time_limit_s=2.0)]
    kwargs = {"store": database, "max_time_limit_s": 2.0, "num_workers": 1}
    return [
        create_app(
            tokens,
            sessions=RedisSessionStore(REDIS_URL, prefix=prefix, session_kwargs=kwargs),
            database=database,
            max_time_limit_s=2.0,
        )
        for _ in range(2)
    ]
