"""A small TCP forwarder on loopback for outage tests: the tests put it in front of a running
database or Redis server and cut or blackhole it, instead of stopping the service.

- ``open``: every connection is forwarded both ways (the initial mode).
- ``cut()``: every live connection is closed, and new ones are accepted and closed at once (a
  server that is down or restarting: the client sees the connection drop).
- ``blackhole()``: live connections stop forwarding (what the client sends is read and dropped,
  nothing comes back) and new ones are accepted and never answered (a hung server, or a network
  that swallows packets: the client waits until its own time limit).
- ``restore()``: back to ``open``; connections held in the blackhole are closed (their protocol
  state is lost), new ones are forwarded again.
- ``lose_answer_to(needle)``: once, when a client sends bytes containing ``needle`` (e.g.
  ``b"COMMIT"``), the request is forwarded but the server's answer is dropped and both sides of
  that connection are closed (a network that fails right after the request); with
  ``lose_request=True`` the request itself is dropped instead. ``then="cut"`` cuts everything
  at that moment (the client cannot reconnect either).

One thread accepts, two threads pump each connection; everything stops with :meth:`close`.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, Literal

Mode = Literal["open", "cut", "blackhole"]


class TcpProxy:
    """Forward ``127.0.0.1:<port>`` to ``(host, target_port)`` with cut / blackhole / restore."""

    def __init__(self, host: str, target_port: int) -> None:
        self.target = (host, target_port)
        self.mode: Mode = "open"
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._closed = False
        self._needle: tuple[bytes, bool, Mode] | None = None
        self.lost = threading.Event()  # set when lose_answer_to has struck
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ controls
    def cut(self) -> None:
        """Close every live connection; accept and drop new ones."""
        with self._lock:
            self.mode = "cut"
            self._drop_all()

    def blackhole(self) -> None:
        """Stop answering: live and new connections get nothing back."""
        with self._lock:
            self.mode = "blackhole"

    def restore(self) -> None:
        """Forward again; connections held in the blackhole are closed."""
        with self._lock:
            was = self.mode
            self.mode = "open"
            if was == "blackhole":
                self._drop_all()

    def lose_answer_to(
        self, needle: bytes, *, lose_request: bool = False, then: Mode = "open"
    ) -> None:
        """Once: drop the server's answer to the next request containing ``needle`` (or,
        with ``lose_request``, the request) and close that connection; then go to ``then``."""
        with self._lock:
            self._needle = (needle, lose_request, then)
            self.lost.clear()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._drop_all()
        with suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        self._thread.join(timeout=5)

    # ------------------------------------------------------------------ internals
    def _drop_all(self) -> None:
        for sock in list(self._socks):
            _kill(sock)
        self._socks.clear()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # the listener was closed
            with self._lock:
                mode, closed = self.mode, self._closed
                if not closed:
                    self._socks.add(client)
            if closed or mode == "cut":
                _kill(client)
            elif mode == "blackhole":
                threading.Thread(target=self._swallow, args=(client,), daemon=True).start()
            else:
                threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=5)
            upstream.settimeout(None)
        except OSError:
            self._forget(client)
            return
        with self._lock:
            if self.mode != "open":  # cut or blackholed while connecting
                _kill(upstream)
                if self.mode == "cut":
                    self._forget_locked(client)
                    return
            else:
                self._socks.add(upstream)
        if self.mode == "blackhole":
            self._swallow(client)
            return
        link: dict[str, Any] = {}  # "then" once the next answer on this connection is lost
        threading.Thread(target=self._pump, args=(upstream, client, link), daemon=True).start()
        self._pump(client, upstream, link, upstream=True)

    def _pump(
        self,
        src: socket.socket,
        dst: socket.socket,
        link: dict[str, Any],
        *,
        upstream: bool = False,
    ) -> None:
        """Copy ``src`` to ``dst`` while open; in the blackhole, read and drop."""
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data or (not upstream and "then" in link):
                if data:
                    self._struck(link)
                self._forget(src)
                self._forget(dst)
                return
            if self.mode == "blackhole":
                continue
            if upstream and self._strikes(data, link):
                self._struck(link)
                self._forget(src)
                self._forget(dst)
                return
            try:
                dst.sendall(data)
            except OSError:
                self._forget(src)
                self._forget(dst)
                return

    def _strikes(self, data: bytes, link: dict[str, Any]) -> bool:
        """Whether ``data`` is the request to lose; if so the proxy is disarmed and ``link``
        remembers what follows. ``True``: drop the request itself now."""
        with self._lock:
            if self._needle is None or self._needle[0] not in data:
                return False
            _, lose_request, link["then"] = self._needle
            self._needle = None
        return lose_request

    def _struck(self, link: dict[str, Any]) -> None:
        with self._lock:
            self.mode = link["then"]
            if self.mode == "cut":
                self._drop_all()
        self.lost.set()

    def _swallow(self, client: socket.socket) -> None:
        """Read and drop what a client sends until the connection is closed."""
        while True:
            try:
                if not client.recv(65536):
                    break
            except OSError:
                break
        self._forget(client)

    def _forget(self, sock: socket.socket) -> None:
        with self._lock:
            self._forget_locked(sock)

    def _forget_locked(self, sock: socket.socket) -> None:
        self._socks.discard(sock)
        _kill(sock)


def _kill(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@contextmanager
def proxy_to(host: str, port: int) -> Iterator[TcpProxy]:
    """A :class:`TcpProxy` for the duration of a ``with`` block."""
    proxy = TcpProxy(host, port)
    try:
        yield proxy
    finally:
        proxy.close()
