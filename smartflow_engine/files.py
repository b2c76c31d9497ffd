"""Files the engine writes, written atomically (issue 44 item 9): the data goes to a temporary
file beside the target, is flushed to disk and then renamed over the target (``os.replace``),
so a process killed mid-write leaves the old file or the new one, never a part of one.

:func:`write_atomic` writes text or bytes; :func:`atomic_path` gives a writer that takes a path
(a table's ``to_parquet``, a figure's ``savefig``) the temporary path to write to, with the
target's suffix so a writer that reads the format from it still does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

NEW_FILE_MODE = 0o644  # a new file's permissions (a temporary file starts private)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed over ``path`` when the block ends
    normally, removed when it raises. The parent directory is created."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.stem}.", suffix=f".part{target.suffix}"
    )
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:  # on disk before it takes the target's name
            os.fsync(fh.fileno())
        if target.exists():
            shutil.copymode(target, tmp)
        else:
            os.chmod(tmp, NEW_FILE_MODE)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically; returns the path."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        tmp.write_bytes(raw)
    return Path(path)
