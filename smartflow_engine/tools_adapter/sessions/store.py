"""Where a server keeps its sessions: a small :class:`SessionBackend` protocol with an in-memory
implementation (one process, the default) and a Redis one (shared by every worker, survives
restarts).

A request works on a session through :meth:`SessionBackend.use`, a context manager that yields
the live :class:`~.session.Session` and, when the block ends normally, writes back what changed::

    with backend.use(user, session_id) as session:   # None when there is no such session
        result = session.invoke(tool, args)

Both implementations go through the session's own snapshot API (``Session.snapshot`` /
``Session.restore``): a stored session is its snapshot (state, mode, enabled tools, change log,
pending confirm previews and whatever else the snapshot carries).

- :class:`MemorySessionStore` keeps live sessions in the process, capped by count (per user and
  in all) and by an estimate of their bytes: beyond ``max_bytes`` the least recently used idle
  sessions are evicted to their compressed snapshot (about a hundredth of a live session) and
  rebuilt on their next request; idle sessions expire after ``idle_ttl_s``.
- :class:`RedisSessionStore` keeps each session as ``{version, snapshot}`` under
  ``<prefix>:s:<user>:<session>`` with a TTL refreshed on every use. A worker caches the sessions
  it has rebuilt and checks the version on every request (one round trip); a write back is a
  compare-and-set on the version (a Lua script), so two workers that changed one session at once
  never overwrite each other: the later one gets :class:`SessionConflictError` (HTTP 409, "retry")
  and its change is dropped, the earlier one's is kept.

A confirm that acts outside the session (commit's and upsert_task_class's database writes) is
never followed by a write back that can lose (issue 44 item 3): right before the held call runs,
the request writes the session as it is then (the token spent) as a new version with a *lease*
naming the request (:attr:`Session.before_effect`). While the lease lives, every other write
back of the session is refused (409, nothing of that request kept); the confirming request then
writes its result under its lease, which cannot fail short of Redis being unreachable or the
lease having run out (:data:`LEASE_S`, far beyond a database's time limits). If another request
wrote first, the confirm reloads the session and tries again (:class:`SessionRetry`; nothing
ran): a double click's second confirm then finds its token spent (``unknown_token``), a
concurrent read's change is simply the version the confirm starts from.

A 409 means nothing changed (issue 24 item 2). A request works on the cached session only under
the session's lock and only while the cache still holds that object as the version it loaded;
a request that waited for the lock checks that again and reloads when another request wrote
meanwhile. A request whose compare-and-set lost has changed the cached object, so it drops the
object from the cache before it releases the lock: no later request sees that change. The
memory store likewise checks, once it holds the lock, that the session was not evicted to its
snapshot meanwhile (a write to the detached object would be acknowledged and lost). A confirm
token is spent in the leased version before its held call runs, so it runs once across workers.

The worker's cache of rebuilt sessions is bounded by count and by bytes (issue 44 item 10:
:func:`estimate_bytes` per session, ``max_cached_bytes`` in all), least recently used first out.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
import threading
import time
import zlib
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ...state import ScheduleState
from ..core.render import DayLabels
from ..core.spec import Mode
from .session import Session, SessionError, SessionLimitError

log = logging.getLogger(__name__)

# How often a request looks a session up again when the one it found changed hands while it
# waited for the session's lock, before it gives up with a retry error.
_MAX_RELOADS = 50
# How long a confirm's lease on a Redis session lasts (seconds): far beyond the database's own
# time limits, so only a worker killed mid-confirm leaves one to run out (the session's other
# writes are refused with a retry error until then).
LEASE_S = 60.0


class SessionConflictError(SessionError):
    """Another worker changed the session while this request worked on it: nothing of this
    request was kept; the client should reload the session and retry."""


class SessionRetry(SessionConflictError):
    """A confirm found the session changed by another request before its held call ran: nothing
    ran; the caller loads the session again and repeats the confirm
    (:func:`run_effect`)."""


class SessionStoreUnavailable(SessionError):
    """The session store (Redis) cannot be reached."""


def db_user(user_id: str) -> int | None:
    """The database user of an HTTP user: its id when that is a decimal number, else none."""
    return int(user_id) if user_id.isascii() and user_id.isdigit() else None


def estimate_bytes(session: Session) -> int:
    """A cheap estimate of a live session's memory (calibrated with ``tracemalloc`` on synthetic
    windows of 30-365 days: about 2.6 kB per task with its share of the grid and caches)."""
    state = session.state
    size = 20_000 + 1_000 * len(session.toolbox.changes) + 2_000 * len(session.pending())
    if state is not None:
        size += 2_600 * len(state.tasks) + 8 * state.window.total_days * state.slots_per_day
    return size


@runtime_checkable
class SessionBackend(Protocol):
    """What the HTTP server needs from a session store. Every method acts on one user's
    sessions only: a user never reaches another user's session."""

    def create(
        self,
        user_id: str,
        state: ScheduleState | None,
        *,
        mode: Mode | str = ...,
        enabled_tools: Iterable[str] = (),
        db_user_id: int | None = None,
        frozen_days: int = 0,
        day_labels: DayLabels | None = None,
        db_window: bool = True,
    ) -> Session:
        """A new session of ``user_id``; ``db_window``: ``state`` was loaded from the database
        (``False`` for a posted window: commit and reload then refuse)."""
        ...

    def restore(self, user_id: str, snapshot: dict[str, Any] | str) -> Session: ...

    def use(self, user_id: str, session_id: str, *, read_only: bool = False) -> Any:
        """A context manager yielding the session (or ``None``) and saving it on exit.

        ``read_only``: the caller only reads the session's state (a read tool, a GET): a store
        may then skip serialising the state to see whether it changed (it still saves what
        else changed, e.g. the loop's round log after ``analyze_health``)."""
        ...

    def delete(self, user_id: str, session_id: str) -> bool: ...

    def sessions(self, user_id: str) -> list[Session]: ...

    def shared_secret(self, name: str) -> bytes:
        """A random secret named ``name``, the same for every worker of the deployment (made
        on first use); e.g. the key MCP over HTTP seals its multi-round-trip state with."""
        ...


def run_effect(
    backend: SessionBackend, user_id: str, session_id: str, act: Callable[[Session], Any]
) -> Any:
    """``act(session)`` on the stored session, for a call that may act outside the session (a
    confirm): repeated on a freshly loaded session when another request changed it before the
    held call ran (:class:`SessionRetry`; nothing ran). ``None`` when there is no such session.
    """
    for _ in range(_MAX_RELOADS):
        try:
            with backend.use(user_id, session_id) as session:
                return None if session is None else act(session)
        except SessionRetry:
            continue
    raise SessionConflictError(
        f"session {session_id} kept changing while this confirm waited; nothing was done: retry"
    )


def _new_session(
    state: ScheduleState | None,
    user_id: str,
    db_id: int | None,
    mode: Mode | str,
    enabled_tools: Iterable[str],
    frozen_days: int,
    db_window: bool,
    session_kwargs: dict[str, Any],
    day_labels: DayLabels | None = None,
) -> Session:
    """A new session of ``user_id`` as every store makes it (the store's own session settings
    last)."""
    return Session(
        state,
        mode=mode,
        user_id=user_id,
        enabled_tools=enabled_tools,
        db_user_id=db_id,
        frozen_days=frozen_days,
        day_labels=day_labels,
        db_window=db_window,
        **session_kwargs,
    )


@dataclass
class _Entry:
    session: Session | None  # live, or None when evicted to ``packed``
    packed: bytes = b""  # zlib-compressed snapshot JSON of an evicted session
    live_bytes: int = 0
    evicted_last_used: float = 0.0  # the session's ``last_used`` when it was evicted
    db_user_id: int | None = None

    @property
    def bytes(self) -> int:
        return self.live_bytes if self.session is not None else len(self.packed)

    @property
    def last_used(self) -> float:
        """When the session was last used: a live session's own clock (``Session.last_used``,
        which its calls also move), an evicted one's as it was at eviction."""
        return self.session.last_used if self.session is not None else self.evicted_last_used

    def touch(self) -> None:
        if self.session is not None:
            self.session.last_used = time.time()


class _CreatesSessions(ABC):
    """``create`` and ``restore`` of both stores: a new session (fresh or from a snapshot) is
    built the same way and handed to the store's ``_keep``."""

    session_kwargs: dict[str, Any]

    @abstractmethod
    def _keep(self, session: Session, db_id: int | None) -> None:
        """Store a new session of database user ``db_id`` (each store its own way)."""

    def create(
        self,
        user_id: str,
        state: ScheduleState | None,
        *,
        mode: Mode | str = Mode.FIRST_FULL,
        enabled_tools: Iterable[str] = (),
        db_user_id: int | None = None,
        frozen_days: int = 0,
        day_labels: DayLabels | None = None,
        db_window: bool = True,
    ) -> Session:
        db_id = db_user_id if db_user_id is not None else db_user(user_id)
        session = _new_session(
            state,
            user_id,
            db_id,
            mode,
            enabled_tools,
            frozen_days,
            db_window,
            self.session_kwargs,
            day_labels,
        )
        self._keep(session, db_id)
        return session

    def restore(self, user_id: str, snapshot: dict[str, Any] | str) -> Session:
        session = Session.restore(
            snapshot,
            user_id=user_id,
            session_id=secrets.token_urlsafe(12),
            db_user_id=db_user(user_id),
            **self.session_kwargs,
        )
        self._keep(session, db_user(user_id))
        return session


@dataclass
class MemorySessionStore(_CreatesSessions):
    """Sessions in this process, keyed by ``(user_id, session_id)`` (see the module docstring).

    Parameters
    ----------
    max_sessions_per_user, max_sessions
        Caps on the number of sessions; :class:`SessionLimitError` beyond them.
    max_bytes
        Cap on the estimated bytes of all sessions (live ones by :func:`estimate_bytes`, evicted
        ones by their compressed snapshot). Idle sessions are evicted to fit; when even the
        evicted ones exceed it, new sessions are refused with :class:`SessionLimitError`.
    idle_ttl_s
        Sessions unused for this long are dropped (``None``: never).
    session_kwargs
        Passed to every :class:`Session` (``max_time_limit_s``, ``num_workers``, ``self_check``,
        ``specs``, ``store``).
    """

    max_sessions_per_user: int = 32
    max_sessions: int = 1024
    max_bytes: int = 2 * 1024**3
    idle_ttl_s: float | None = 6 * 3600.0
    session_kwargs: dict[str, Any] = field(default_factory=dict)
    _entries: OrderedDict[tuple[str, str], _Entry] = field(default_factory=OrderedDict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _secrets: dict[str, bytes] = field(default_factory=dict, init=False)

    # ------------------------------------------------------------------ protocol
    def _keep(self, session: Session, db_id: int | None) -> None:
        self.add(session, db_user_id=db_id)

    @contextmanager
    def use(
        self, user_id: str, session_id: str, *, read_only: bool = False
    ) -> Iterator[Session | None]:
        """The live session under its lock (``None`` if there is none).

        The session is looked up, then locked, then checked to be still the one the store
        holds: between the two steps another request may have evicted it to its snapshot (a
        write to the detached object would be acknowledged and lost); then it is looked up
        again."""
        key = (user_id, session_id)
        for _ in range(_MAX_RELOADS):
            session = self.get(user_id, session_id)
            if session is None:
                yield None
                return
            session.lock.acquire()
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None and entry.session is session:
                    break
            session.lock.release()
        else:
            raise SessionConflictError(
                f"session {session_id} kept changing hands; nothing was done: retry"
            )
        try:
            yield session
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None and entry.session is session:
                    entry.live_bytes = estimate_bytes(session)
                    entry.touch()
                    self._entries.move_to_end(key)
                    self._fit(keep=key)
        finally:
            session.lock.release()

    def delete(self, user_id: str, session_id: str) -> bool:
        with self._lock:
            return self._entries.pop((user_id, session_id), None) is not None

    def sessions(self, user_id: str) -> list[Session]:
        keys = [k for k in list(self._entries) if k[0] == user_id]
        return [s for k in keys if (s := self.get(*k)) is not None]

    def shared_secret(self, name: str) -> bytes:
        """This process's secret ``name`` (the memory store serves one worker)."""
        with self._lock:
            return self._secrets.setdefault(name, secrets.token_bytes(32))

    # ------------------------------------------------------------------ the rest
    def add(self, session: Session, *, db_user_id: int | None = None) -> None:
        """Hold ``session`` (its ``user_id`` and ``session_id`` are the key)."""
        key = (session.user_id, session.session_id)
        entry = _Entry(session, live_bytes=estimate_bytes(session), db_user_id=db_user_id)
        with self._lock:
            self._expire()
            mine = sum(1 for (uid, _) in self._entries if uid == session.user_id)
            if mine >= self.max_sessions_per_user:
                raise SessionLimitError(
                    f"user has {mine} sessions (limit {self.max_sessions_per_user})"
                )
            if len(self._entries) >= self.max_sessions:
                raise SessionLimitError(
                    f"server holds {len(self._entries)} sessions (limit {self.max_sessions})"
                )
            self._entries[key] = entry
            self._fit(keep=key)
            if self.total_bytes() > self.max_bytes:
                del self._entries[key]
                raise SessionLimitError(
                    f"sessions use about {self.total_bytes()} bytes (limit {self.max_bytes})"
                )

    def get(self, user_id: str, session_id: str) -> Session | None:
        """The live session (rebuilt from its snapshot if it was evicted), or ``None``."""
        with self._lock:
            entry = self._entries.get((user_id, session_id))
            if entry is None:
                return None
            if self.idle_ttl_s is not None and entry.last_used < time.time() - self.idle_ttl_s:
                del self._entries[(user_id, session_id)]
                return None
            if entry.session is None:
                text = zlib.decompress(entry.packed).decode("utf-8")
                entry.session = Session.restore(
                    text,
                    user_id=user_id,
                    session_id=session_id,
                    db_user_id=entry.db_user_id,
                    **self.session_kwargs,
                )
                entry.packed = b""
                entry.live_bytes = estimate_bytes(entry.session)
            entry.touch()
            self._entries.move_to_end((user_id, session_id))
            self._fit(keep=(user_id, session_id))
            return entry.session

    def is_live(self, user_id: str, session_id: str) -> bool:
        """Whether the session is held live (``False`` once evicted to its snapshot)."""
        entry = self._entries.get((user_id, session_id))
        return entry is not None and entry.session is not None

    def total_bytes(self) -> int:
        """Estimated bytes of all sessions held (live and evicted)."""
        return sum(e.bytes for e in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def _fit(self, keep: tuple[str, str]) -> None:
        """Evict least recently used idle sessions to their snapshot until the total fits."""
        total = self.total_bytes()
        for key, entry in list(self._entries.items()):
            if total <= self.max_bytes:
                return
            session = entry.session
            if key == keep or session is None or not session.lock.acquire(blocking=False):
                continue  # the current one, already evicted, or busy in another request
            try:
                packed = zlib.compress(session.to_json().encode("utf-8"), 1)
            finally:
                session.lock.release()
            total -= entry.live_bytes - len(packed)
            entry.evicted_last_used = session.last_used
            entry.session, entry.packed = None, packed

    def _expire(self) -> None:
        if self.idle_ttl_s is None:
            return
        cutoff = time.time() - self.idle_ttl_s
        for key in [k for k, e in self._entries.items() if e.last_used < cutoff]:
            del self._entries[key]


# ---------------------------------------------------------------------------------- Redis
# KEYS[1] = session key; ARGV = expected version, snapshot, ttl seconds, this request's id,
# "lease" (write and take the lease for LEASE_S) or "write" (write and drop this request's
# lease), the lease's length in milliseconds. Returns the new version; -1 when the stored version
# is not the expected one (another request wrote meanwhile) or the session is gone; -2 when
# another request holds a live lease (a confirm of this session is being written).
_CAS = """
local v = redis.call('HGET', KEYS[1], 'v')
if (not v) or tonumber(v) ~= tonumber(ARGV[1]) then return -1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = redis.call('HGET', KEYS[1], 'l')
if lease then
  local sep = string.find(lease, '|', 1, true)
  local owner = string.sub(lease, 1, sep - 1)
  local deadline = tonumber(string.sub(lease, sep + 1))
  if owner ~= ARGV[4] and deadline > now then return -2 end
end
local nv = tonumber(v) + 1
redis.call('HSET', KEYS[1], 'v', nv, 's', ARGV[2])
if ARGV[5] == 'lease' then
  redis.call('HSET', KEYS[1], 'l', ARGV[4] .. '|' .. (now + tonumber(ARGV[6])))
else
  redis.call('HDEL', KEYS[1], 'l')
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return nv
"""


@dataclass
class _Hold:
    """A request's hold on a Redis session: the version it works on and that version's text,
    and whether it took the confirm's lease (see the module docstring)."""

    version: int
    text: str
    owner: str = field(default_factory=lambda: secrets.token_hex(8))
    leased: bool = False


class RedisSessionStore(_CreatesSessions):
    """Sessions in Redis as versioned snapshots (see the module docstring).

    Parameters
    ----------
    url
        ``redis://host:port/db``; or pass ``client`` (a ``redis.Redis``).
    prefix
        Key prefix (one per deployment, or per test run).
    idle_ttl_s
        Idle sessions expire after this long (Redis TTL, refreshed on every use).
    max_sessions_per_user
        Cap per user (:class:`SessionLimitError` beyond it).
    max_cached, max_cached_bytes
        Caps on this worker's cache of rebuilt sessions: a count, and their estimated bytes
        (:func:`estimate_bytes`); the least recently used leave first (the newest stays even
        when it alone is larger).
    session_kwargs
        As for :class:`MemorySessionStore`.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        client: Any = None,
        prefix: str = "smartflow",
        idle_ttl_s: float = 6 * 3600.0,
        max_sessions_per_user: int = 32,
        max_cached: int = 256,
        max_cached_bytes: int = 256 * 1024**2,
        session_kwargs: dict[str, Any] | None = None,
    ) -> None:
        from .redis_client import redis_client  # time limits (issue 24)

        self.redis: Any = client if client is not None else redis_client(url)
        self.prefix = prefix
        self.ttl = max(1, int(idle_ttl_s))
        self.max_sessions_per_user = max_sessions_per_user
        self.max_cached = max_cached
        self.max_cached_bytes = max_cached_bytes
        self.session_kwargs = dict(session_kwargs or {})
        self._cas = self.redis.register_script(_CAS)
        # Sessions this worker rebuilt: the version and snapshot text they were rebuilt from.
        self._cache: OrderedDict[tuple[str, str], tuple[int, Session, str]] = OrderedDict()
        self._cached_bytes: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._secrets: dict[str, bytes] = {}

    # ------------------------------------------------------------------ keys
    def _key(self, user_id: str, session_id: str) -> str:
        return f"{self.prefix}:s:{user_id}:{session_id}"

    def _index(self, user_id: str) -> str:
        return f"{self.prefix}:u:{user_id}"

    # ------------------------------------------------------------------ protocol
    def _keep(self, session: Session, db_id: int | None) -> None:
        self._insert(session, db_id)

    @contextmanager
    def use(
        self, user_id: str, session_id: str, *, read_only: bool = False
    ) -> Iterator[Session | None]:
        """The session (``None`` if there is none), saved on exit if it changed.

        Loading costs one round trip (the version, with the idle TTL restarted); a cached
        session whose version still matches is used as is. On exit the snapshot is compared
        with the stored one and written by compare-and-set only when it differs. With
        ``read_only`` (the request only reads the state) the state is not serialised: only the
        rest of the snapshot (mode, tools, change log, pending confirmations, loop) is compared,
        which a read tool may change (``analyze_health`` records its round). A confirm takes
        the session's lease before its held call runs (:meth:`_lease`) and then always writes
        its result back."""
        for _ in range(_MAX_RELOADS):
            loaded = self._load(user_id, session_id)
            if loaded is None:
                yield None
                return
            version, session, text = loaded
            session.lock.acquire()
            if self._holds(user_id, session_id, version, session):
                break
            # Another request of this worker wrote (or failed to write) the session while this
            # one waited for its lock: the cached object is not version ``version`` any more.
            session.lock.release()
        else:
            raise SessionConflictError(
                f"session {session_id} kept changing while this request waited; nothing of "
                "this request was done: retry"
            )
        hold = _Hold(version, text)
        session.before_effect = functools.partial(self._lease, user_id, session_id, session, hold)
        try:
            marker = _marker(session) if read_only else None
            state = session.state
            try:
                yield session
            except BaseException:
                if hold.leased:  # the held call failed: give the lease back, keep what it saw
                    self._write(user_id, session_id, session, hold, hold.text, quiet=True)
                self._forget(user_id, session_id, session)  # it may hold a half-done change
                raise
            if hold.leased:  # acted outside the session: its result is written, come what may
                self._write(user_id, session_id, session, hold, session.to_json(), quiet=True)
                return
            if (
                marker is not None
                and session.state is state
                and _unchanged(marker, _marker(session))
            ):
                return  # nothing but the state could have changed, and it was only read
            after = session.to_json()
            if after == text:  # nothing changed (the TTL restarted on loading)
                return
            self._write(user_id, session_id, session, hold, after)
        finally:
            session.before_effect = None
            session.lock.release()

    def shared_secret(self, name: str) -> bytes:
        """The deployment's secret ``name``, kept in Redis (the first worker to ask makes it)."""
        with self._lock:
            known = self._secrets.get(name)
        if known is not None:
            return known
        key = f"{self.prefix}:secret:{name}"
        try:
            self.redis.set(key, secrets.token_bytes(32), nx=True)
            value = bytes(self.redis.get(key))
        except Exception as exc:
            raise SessionStoreUnavailable(f"session store unavailable: {exc}") from None
        with self._lock:
            self._secrets[name] = value
        return value

    def _lease(self, user_id: str, session_id: str, session: Session, hold: _Hold) -> None:
        """Write ``session`` as it is now (the confirm's token spent) as the next version with
        this request's lease, before the confirmed call acts outside the session. Raises
        :class:`SessionRetry` when another request wrote first (nothing ran: reload and
        repeat), :class:`SessionConflictError` when another confirm holds the lease."""
        text = session.to_json()
        new = self._cas_call(user_id, session_id, session, hold, text, "lease")
        if new == -1:
            self._forget(user_id, session_id, session)
            raise SessionRetry(
                f"session {session_id} was changed by another request before this confirm ran; "
                "nothing was done: retry"
            )
        if new == -2:
            self._forget(user_id, session_id, session)
            raise SessionConflictError(_LEASED.format(session_id=session_id))
        hold.version, hold.text, hold.leased = new, text, True
        self._remember(user_id, session_id, new, session, text)

    def _write(
        self,
        user_id: str,
        session_id: str,
        session: Session,
        hold: _Hold,
        text: str,
        *,
        quiet: bool = False,
    ) -> None:
        """Write ``text`` back by compare-and-set on ``hold``'s version (dropping its lease).
        A write that loses raises :class:`SessionConflictError` (the cached object, which holds
        this request's change, is dropped first), unless ``quiet``: a confirm's result after its
        effect, which only a lease run out can lose (logged; the caller reads the effect)."""
        try:
            new = self._cas_call(user_id, session_id, session, hold, text, "write")
        except SessionStoreUnavailable:
            if not quiet:
                raise
            log.error("session %s: a confirm's result could not be written back", session_id)
            return
        if new < 0:
            # The cached object holds this request's change, which was not kept: drop it
            # (under its lock, so a request waiting for it sees it is gone and reloads).
            self._forget(user_id, session_id, session)
            if quiet:
                log.error("session %s: a confirm's lease ran out before its write back", session_id)
                return
            if new == -2:
                raise SessionConflictError(_LEASED.format(session_id=session_id))
            raise SessionConflictError(
                f"session {session_id} was changed by another request meanwhile; this "
                "request's change was not kept: reload the session and retry"
            )
        self._remember(user_id, session_id, new, session, text)

    def _cas_call(
        self, user_id: str, session_id: str, session: Session, hold: _Hold, text: str, how: str
    ) -> int:
        args = [hold.version, text, self.ttl, hold.owner, how, int(LEASE_S * 1000)]
        try:
            return int(self._cas(keys=[self._key(user_id, session_id)], args=args))
        except Exception as exc:
            self._forget(user_id, session_id, session)
            raise SessionStoreUnavailable(f"session store unavailable: {exc}") from None

    def _remember(
        self, user_id: str, session_id: str, version: int, session: Session, text: str
    ) -> None:
        size = estimate_bytes(session)  # before taking _lock (it takes the session's lock)
        with self._lock:
            self._cache[(user_id, session_id)] = (version, session, text)
            self._cached_bytes[(user_id, session_id)] = size
            self._cache.move_to_end((user_id, session_id))
            self._trim()

    def delete(self, user_id: str, session_id: str) -> bool:
        self._forget(user_id, session_id)
        self.redis.zrem(self._index(user_id), session_id)
        return bool(self.redis.delete(self._key(user_id, session_id)))

    def sessions(self, user_id: str) -> list[Session]:
        out = []
        for raw in self.redis.zrange(self._index(user_id), 0, -1):
            sid = raw.decode() if isinstance(raw, bytes) else str(raw)
            loaded = self._load(user_id, sid)
            if loaded is None:
                self.redis.zrem(self._index(user_id), sid)
            else:
                out.append(loaded[1])
        return out

    # ------------------------------------------------------------------ internals
    def _insert(self, session: Session, db_id: int | None) -> None:
        user_id, sid = session.user_id, session.session_id
        index = self._index(user_id)
        live = [
            raw
            for raw in self.redis.zrange(index, 0, -1)
            if self.redis.exists(self._key(user_id, raw.decode()))
        ]
        if len(live) >= self.max_sessions_per_user:
            raise SessionLimitError(
                f"user has {len(live)} sessions (limit {self.max_sessions_per_user})"
            )
        text = session.to_json()
        pipe = self.redis.pipeline()
        pipe.hset(
            self._key(user_id, sid),
            mapping={"v": 1, "s": text, "db": "" if db_id is None else db_id},
        )
        pipe.expire(self._key(user_id, sid), self.ttl)
        pipe.zadd(index, {sid: time.time()})
        pipe.expire(index, self.ttl)  # the index outlives no session of its user (issue 45)
        pipe.execute()
        self._remember(user_id, sid, 1, session, text)

    def _load(self, user_id: str, session_id: str) -> tuple[int, Session, str] | None:
        key = self._key(user_id, session_id)
        pipe = self.redis.pipeline(transaction=False)  # one round trip: version + idle TTL
        pipe.hget(key, "v")
        pipe.expire(key, self.ttl)
        pipe.expire(self._index(user_id), self.ttl)
        try:
            raw_version, *_ = pipe.execute()
        except Exception as exc:
            raise SessionStoreUnavailable(f"session store unavailable: {exc}") from None
        if raw_version is None:
            self._forget(user_id, session_id)
            return None
        version = int(raw_version)
        with self._lock:
            cached = self._cache.get((user_id, session_id))
            if cached is not None and cached[0] == version:
                self._cache.move_to_end((user_id, session_id))
                return cached
        raw_version, raw_text, raw_db = self.redis.hmget(key, ["v", "s", "db"])
        if raw_version is None or raw_text is None:
            return None
        version, text = int(raw_version), raw_text.decode("utf-8")
        db_id = int(raw_db) if raw_db else None
        session = Session.restore(
            text, user_id=user_id, session_id=session_id, db_user_id=db_id, **self.session_kwargs
        )
        self._remember(user_id, session_id, version, session, text)
        return version, session, text

    def _forget(self, user_id: str, session_id: str, session: Session | None = None) -> None:
        """Drop the cached session (only if it is ``session``, when given: another request may
        have cached a newer one meanwhile)."""
        with self._lock:
            cached = self._cache.get((user_id, session_id))
            if cached is not None and (session is None or cached[1] is session):
                del self._cache[(user_id, session_id)]
                self._cached_bytes.pop((user_id, session_id), None)

    def _holds(self, user_id: str, session_id: str, version: int, session: Session) -> bool:
        """Whether the cache still holds ``session`` as version ``version``: its content is
        then exactly that stored version (a request works on it only under its lock, and a
        request whose write was not kept drops it from the cache before releasing the lock)."""
        with self._lock:
            cached = self._cache.get((user_id, session_id))
        return cached is not None and cached[0] == version and cached[1] is session

    def _trim(self) -> None:
        """Drop the least recently used cached sessions beyond the count and byte caps (the
        caller holds ``_lock``); the newest always stays."""
        total = sum(self._cached_bytes.values())
        while len(self._cache) > 1 and (
            len(self._cache) > self.max_cached or total > self.max_cached_bytes
        ):
            key, _ = self._cache.popitem(last=False)
            total -= self._cached_bytes.pop(key, 0)

    def cached_bytes(self) -> int:
        """Estimated bytes of the sessions this worker holds rebuilt."""
        with self._lock:
            return sum(self._cached_bytes.values())


_LEASED = (
    "session {session_id} is being written by a confirm of another request (a database write); "
    "nothing of this request was done: retry"
)


def _marker(session: Session) -> tuple[str, Any]:
    """What a request may change in a session besides its state: mode, offered tools, the
    change log, the pending confirmations and the loop's bookkeeping, as JSON text (so lists
    changed in place compare as changed), and the loop's best state (a whole state, replaced,
    never edited: compared by identity, see :func:`_unchanged`)."""
    loop = session.toolbox.ctx.loop
    data = loop.to_dict() if loop is not None else {}
    best = data.pop("best_state", None)
    changes = session.toolbox.changes
    text = json.dumps(
        [
            session.mode.value,
            list(session.enabled_tools),
            len(changes),
            id(changes[-1]) if changes else None,
            [(p.token, p.tool) for p in session.pending()],
            data,
        ],
        sort_keys=True,
        default=str,
    )
    return text, best


def _unchanged(before: tuple[str, Any], after: tuple[str, Any]) -> bool:
    return before[0] == after[0] and before[1] is after[1]


def session_backend(url: str | None, **kwargs: Any) -> SessionBackend:
    """The backend a ``--session-store`` value names: ``None``/``memory`` or ``redis://...``."""
    if url in (None, "", "memory"):
        return MemorySessionStore(**kwargs)
    assert url is not None
    if url.startswith(("redis://", "rediss://", "unix://")):
        allowed = {
            "idle_ttl_s",
            "max_sessions_per_user",
            "session_kwargs",
            "prefix",
            "max_cached_bytes",
        }
        return RedisSessionStore(
            url, **{k: v for k, v in kwargs.items() if k in allowed and v is not None}
        )
    raise SessionError(f"unknown session store {url!r}: use 'memory' or a redis:// URL")


# The name of the first, memory-only store (tests and library callers use it): the same class.
SessionStore = MemorySessionStore
