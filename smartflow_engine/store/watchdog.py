"""The client-side deadline of a database round trip: one daemon thread that shuts a
connection's socket down when a call overruns (see :mod:`.timeouts`). No driver is imported here:
:mod:`._psycopg_deadline` (psycopg, optional) arms it around each round trip."""

from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Watchdog:
    """One daemon thread that ends calls that overran their deadline: it shuts the socket of
    their connection down (the blocked driver then reads end-of-file and reports a lost
    connection). Arming and disarming are a heap push and a flag under a lock."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Armed]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._pid = 0

    @contextmanager
    def guard(self, fileno: int, seconds: float | None) -> Iterator[_Armed]:
        """Shut ``fileno`` down if the block has not ended ``seconds`` from now (``None``: no
        deadline). The caller must keep the socket open until the block ends."""
        armed = _Armed(fileno)
        if seconds is None:
            yield armed
            return
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + seconds, next(self._seq), armed))
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="db-deadline", daemon=True)
                self._thread.start()
            self._cond.notify()
        try:
            yield armed
        finally:
            with self._cond:  # after this the thread never touches the socket
                armed.done = True

    def _run(self) -> None:
        with self._cond:
            while True:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, _, armed = self._heap[0]
                left = deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                heapq.heappop(self._heap)
                armed.fired = True
                _shutdown(armed.fileno)


class _Armed:
    __slots__ = ("done", "fileno", "fired")

    def __init__(self, fileno: int) -> None:
        self.fileno, self.done, self.fired = fileno, False, False


def _shutdown(fileno: int) -> None:
    try:
        sock = socket.socket(fileno=os.dup(fileno))
    except OSError:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


WATCHDOG = Watchdog()
