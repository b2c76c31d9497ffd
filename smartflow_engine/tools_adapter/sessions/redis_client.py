"""The Redis client of the session store, with time limits: a Redis that is down answers in
about ``socket_connect_timeout``, one that accepts and never answers in about ``socket_timeout``
(each at most twice: one retry on a new connection replaces a connection a restarted server
dropped, so a request after an outage does not fail on it). The URL's own query
(``?socket_timeout=5&socket_connect_timeout=1``) wins over these defaults."""

from __future__ import annotations

from typing import Any

CONNECT_TIMEOUT_S = 2.0
TIMEOUT_S = 2.0
RETRIES = 1


def redis_client(url: str) -> Any:
    """A ``redis.Redis`` for ``url`` with the time limits above."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(
        url,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        socket_timeout=TIMEOUT_S,
        retry=Retry(NoBackoff(), RETRIES),
    )
