"""An app served by uvicorn in a thread on a loopback port the OS picks (for browser and MCP
client tests): never a fixed port, nothing outside the test process.

Not a conftest: imported explicitly by the tests that need a real socket.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve ``app`` on ``127.0.0.1:<free port>``; yield its base URL; stop it at the end.

    The socket is bound and listening before the server starts, so a client may connect at
    once (the connection waits in the backlog until uvicorn accepts it)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
