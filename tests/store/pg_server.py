"""A throwaway PostgreSQL server for the store tests (``SMARTFLOW_PG_URL=temp``).

``initdb`` + ``pg_ctl`` from the installed PostgreSQL (Debian package ``postgresql``) create a
cluster in a temporary directory, listening on 127.0.0.1 on a free port with trust
authentication, run as a non-root user (PostgreSQL refuses to run as root: when the tests run as
root, the cluster runs as ``postgres`` or, failing that, ``nobody``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROLE = "smartflow"


def _bindir() -> Path:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not versions:
        raise RuntimeError("SMARTFLOW_PG_URL=temp needs PostgreSQL's pg_ctl/initdb "
                           "(apt-get install postgresql)")
    return Path(versions[-1]).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_temp_server() -> tuple[str, Callable[[], None]]:
    """Start a cluster in a new temporary directory (under the system's temp dir, which the
    server's user can reach); return its server URL (database ``postgres``) and a function that
    stops it and removes the directory."""
    bindir = _bindir()
    base = Path(tempfile.mkdtemp(prefix="smartflow-pg-"))
    run_as: dict[str, Any] = {}
    if os.geteuid() == 0:
        for name in ("postgres", "nobody"):
            try:
                entry = pwd.getpwnam(name)
            except KeyError:
                continue
            run_as = {"user": entry.pw_uid, "group": entry.pw_gid}
            os.chown(base, entry.pw_uid, entry.pw_gid)
            break
        else:
            raise RuntimeError("no non-root user (postgres, nobody) to run PostgreSQL as")
    data, port = base / "data", _free_port()
    env = {**os.environ, "LC_ALL": "C"}

    def run(*args: str) -> None:
        done = subprocess.run([str(bindir / args[0]), *args[1:]], env=env, cwd=base,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              **run_as)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stderr.strip()}")

    run("initdb", "-D", str(data), "-U", ROLE, "--auth=trust", "-E", "UTF8", "--no-sync",
        "--no-instructions")
    run("pg_ctl", "-D", str(data), "-l", str(base / "server.log"), "-w", "-o",
        f"-h 127.0.0.1 -p {port} -k {base} -F", "start")

    def stop() -> None:
        try:
            run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(base, ignore_errors=True)

    return f"postgresql+psycopg://{ROLE}@127.0.0.1:{port}/postgres", stop
