"""When the compiled kernels of :mod:`._kernels` are compiled and loaded.

Compiling the numba kernels takes 5-15 s, once per installation (numba keeps the machine code in
its cache). Loading them from that cache takes a fraction of a second. So that the first
proposal of a fresh install does not pay the compiler:

- :func:`kernels_ready` loads the kernels when numba's cache holds them for this machine (the
  index is checked without compiling anything) and answers ``True``;
- otherwise it starts one background process that compiles them into the cache (it outlives a
  short-lived caller such as a CLI call, so the next process finds them) and answers ``False``:
  the caller then works without the compiled kernels (the proposal skips its column search, so it
  carries no column-generation bound), and a later call loads them once the process is done;
- ``SMARTFLOW_KERNELS=wait`` (the test suite sets it) always compiles in the calling process
  instead, so the same seed gives the same proposal from the first call on;
- ``python -m smartflow_engine.solver._jit`` (or ``smartflow warm-up``) compiles them now, for a
  deployment step or an image build.

Nothing here changes the kernels themselves; every public dispatcher of :mod:`._kernels` (a name
not starting with ``_``) is handled, so new kernels are picked up without a change here.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ENV_MODE = "SMARTFLOW_KERNELS"  # "background" (default) or "wait"

_lock = threading.Lock()
_ready = False
_child: subprocess.Popen[bytes] | None = None


def _dispatchers() -> dict[str, Any]:
    """The public numba dispatchers of :mod:`._kernels`, by name."""
    from numba.core.dispatcher import Dispatcher

    from . import _kernels

    return {
        name: obj
        for name, obj in vars(_kernels).items()
        if isinstance(obj, Dispatcher) and not name.startswith("_")
    }


def cached_signatures(dispatcher: Any) -> list[Any] | None:
    """The signatures numba's cache holds, valid for this source, numba and machine.

    ``None`` when the cache cannot be inspected (no cache for this function, or a numba whose
    internals differ); callers then compile in-process, as without this module.
    """
    try:
        cache = dispatcher._cache  # noqa: SLF001 (numba keeps its cache index private)
        index = cache._cache_file._load_index()  # noqa: SLF001
        codegen = dispatcher.targetctx.codegen()
        return [key[0] for key in index if key == cache._index_key(key[0], codegen)]  # noqa: SLF001
    except Exception:  # numba internals: any change means "cannot tell"
        return None


def load_cached() -> bool | None:
    """Load every kernel numba's cache holds; ``True`` when all are loaded, ``False`` when one
    is missing from the cache, ``None`` when the cache cannot be inspected."""
    found: dict[Any, list[Any]] = {}
    for dispatcher in _dispatchers().values():
        if dispatcher.signatures:
            continue
        sigs = cached_signatures(dispatcher)
        if sigs is None:
            return None
        if not sigs:
            return False
        found[dispatcher] = sigs
    for dispatcher, sigs in found.items():
        for sig in sigs:
            dispatcher.compile(sig)  # a cache hit: loads, does not compile
    return True


def compile_now() -> None:
    """Compile (or load) the kernels in this process; the cache keeps them for later ones."""
    global _ready
    from ._kernels import warm_up

    with _lock:
        warm_up()
        _ready = True


def _lock_path() -> Path:
    from . import _kernels

    key = f"{_kernels.__file__}|{os.environ.get('NUMBA_CACHE_DIR', '')}|{sys.executable}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"smartflow-kernels-{digest}.lock"


def _spawn() -> subprocess.Popen[bytes]:
    """Start the background compile (one per process; the child serialises with a file lock)."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env.pop(ENV_MODE, None)
    return subprocess.Popen(
        [sys.executable, "-m", "smartflow_engine.solver._jit", "--lock"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def kernels_ready(mode: str | None = None) -> bool:
    """Whether the compiled kernels can be used now (loading them when the cache has them).

    ``mode`` (default: ``$SMARTFLOW_KERNELS`` or ``background``): ``wait`` compiles in this
    process when needed and always answers ``True``; ``background`` never compiles here.
    """
    global _ready, _child
    if _ready:
        return True
    if not mode:
        from ..settings import current

        mode = current().kernels
    if mode == "wait":
        compile_now()
        return True
    with _lock:
        loaded = load_cached()
        if loaded:
            _ready = True
            return True
        if loaded is False and (_child is None or _child.poll() is None):
            if _child is None:
                _child = _spawn()
            return False
    # No cache to wait for, or the compiler process ended and the cache still lacks the
    # kernels (it failed, or the cache is not writable): compile here, as without this module.
    compile_now()
    return True


def wait_for_background(timeout: float | None = None) -> bool:
    """Wait for this process's background compile, if any; ``True`` when none is running."""
    child = _child
    if child is None:
        return True
    try:
        child.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def _main(argv: list[str]) -> int:
    if "--lock" in argv:
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock, numba's cache writes are still atomic
            compile_now()
            return 0
        with open(_lock_path(), "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            with contextlib.suppress(OSError):
                compile_now()
        return 0
    compile_now()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
