"""Where a batch's windows come from: state JSON files (a directory or a glob), a JSONL file of
states, or the database through :class:`~smartflow_engine.store.Store`.

A source is a sized iterable of :class:`WindowItem`. Items carry the window as JSON text and are
read lazily, one at a time, so a cohort of 50,000 windows is never held in memory at once. Parsing
and validating the text happens in the worker: a malformed window becomes an error row there,
never an exception here (an unreadable file is an item with ``error`` set).
"""

from __future__ import annotations

import glob as globlib
import hashlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import Store


class SourceError(ValueError):
    """A source that cannot be opened at all (one line naming what is wrong)."""


@dataclass(frozen=True)
class WindowItem:
    """One window to process.

    ``text`` is the state JSON (None when the item could not be read; ``error`` says why).
    Database items carry ``user_id``, the ``day_mapping`` they were loaded over and a
    ``fingerprint`` of the loaded window, so a commit can tell whether the rows changed since.
    """

    index: int
    window_id: str
    text: str | None
    user_id: int | None = None
    error: str | None = None
    fingerprint: str | None = None
    day_mapping: tuple[tuple[int, int, int], ...] | None = None  # (day_index, week, day_of_week)


def fingerprint(text: str) -> str:
    """A digest of a window's canonical JSON (what ``state.to_json(indent=None)`` gives)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class WindowSource(ABC):
    """A sized, re-iterable stream of :class:`WindowItem` (``len`` is known before reading)."""

    kind: str = "source"

    @abstractmethod
    def __len__(self) -> int:
        """How many windows the source holds."""

    @abstractmethod
    def __iter__(self) -> Iterator[WindowItem]:
        """The windows, in a fixed order (every pass gives the same)."""


class FileSource(WindowSource):
    """State JSON files, one window each; ``window_id`` is the file name relative to ``root``."""

    kind = "files"

    def __init__(self, paths: Sequence[Path], root: Path | None = None) -> None:
        self.paths = list(paths)
        self.root = root

    def __len__(self) -> int:
        return len(self.paths)

    def _name(self, path: Path) -> str:
        if self.root is not None:
            try:
                return path.relative_to(self.root).as_posix()
            except ValueError:
                pass
        return path.as_posix()

    def __iter__(self) -> Iterator[WindowItem]:
        for i, path in enumerate(self.paths):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                yield WindowItem(
                    i, self._name(path), None, error=f"unreadable: {type(exc).__name__}: {exc}"
                )
                continue
            yield WindowItem(i, self._name(path), text)


class JsonlSource(WindowSource):
    """A JSONL file: each non-blank line is a state, or ``{"window_id", "user_id"?, "state"}``.

    A bare state line is named ``<file name>:<line number>``.
    """

    kind = "jsonl"

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            with path.open("rb") as fh:
                self._count = sum(1 for line in fh if line.strip())
        except OSError as exc:
            raise SourceError(f"cannot read {path}: {exc}") from None

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[WindowItem]:
        i = 0
        with self.path.open("rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                default_id = f"{self.path.name}:{lineno}"
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield WindowItem(i, default_id, None, error=f"unreadable: {exc}")
                    i += 1
                    continue
                yield _jsonl_item(i, default_id, line)
                i += 1


def _jsonl_item(index: int, default_id: str, line: str) -> WindowItem:
    """A wrapper line gives its id (and user); anything else goes to the worker as it is."""
    if '"state"' in line:
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("state"), dict):
            user = data.get("user_id")
            return WindowItem(
                index,
                str(data.get("window_id", default_id)),
                json.dumps(data["state"], ensure_ascii=False),
                user_id=user if isinstance(user, int) else None,
            )
    return WindowItem(index, default_id, line)


class ListSource(WindowSource):
    """Windows already in memory: states, dicts or JSON texts (the notebook, tests, benchmarks).

    ``ids`` name them (default ``"0"``, ``"1"``, ...).
    """

    kind = "memory"

    def __init__(self, windows: Sequence[Any], ids: Sequence[str] | None = None) -> None:
        if ids is not None and len(ids) != len(windows):
            raise SourceError(f"{len(ids)} ids for {len(windows)} windows")
        self.windows = list(windows)
        self.ids = (
            [str(x) for x in ids] if ids is not None else [str(i) for i in range(len(windows))]
        )

    def __len__(self) -> int:
        return len(self.windows)

    def __iter__(self) -> Iterator[WindowItem]:
        for i, (wid, window) in enumerate(zip(self.ids, self.windows, strict=True)):
            if isinstance(window, str):
                text = window
            elif isinstance(window, dict):
                text = json.dumps(window, ensure_ascii=False)
            elif hasattr(window, "to_json"):
                text = window.to_json(indent=None)
            else:
                yield WindowItem(
                    i, wid, None, error=f"invalid_state: a {type(window).__name__} is not a state"
                )
                continue
            yield WindowItem(i, wid, text)


class StoreSource(WindowSource):
    """Users' windows loaded from the database, one per user with pending work.

    The planning window of a user is ``weeks`` (every day of weeks ``a..b``) when given, else the
    span of the task classes their pending items belong to; a user with neither gets an error row.
    Windows are loaded one at a time as the batch consumes them.
    """

    kind = "db"

    def __init__(
        self,
        store: Store,
        users: Iterable[int] | None = None,
        weeks: tuple[int, int] | None = None,
        slots_per_day: int = 12,
    ) -> None:
        from ..store.cohort import pending_class_spans, users_with_pending_work

        self.store = store
        self.weeks = weeks
        self.slots_per_day = slots_per_day
        wanted = None if users is None else list(users)
        self.users = users_with_pending_work(store, wanted)
        self.spans = pending_class_spans(store, self.users) if weeks is None else {}

    def __len__(self) -> int:
        return len(self.users)

    def mapping_for(self, user: int) -> tuple[tuple[int, int, int], ...] | str:
        """The day mapping of a user's window, or why there is none."""
        if self.weeks is not None:
            start, end = (self.weeks[0], 1), (self.weeks[1], 7)
        else:
            span = self.spans.get(user)
            if span is None or span.start is None or span.end is None:
                return (
                    "no_window: the user's task classes give no start and end dates; "
                    "give the window (--weeks A-B)"
                )
            start, end = span.start, span.end
            if start > end:
                return f"no_window: the task classes' span {start} .. {end} is empty"
        return day_mapping_between(start, end)

    def __iter__(self) -> Iterator[WindowItem]:
        from ..store import StoreError

        for i, user in enumerate(self.users):
            wid = f"user:{user}"
            mapping = self.mapping_for(user)
            if isinstance(mapping, str):
                yield WindowItem(i, wid, None, user_id=user, error=mapping)
                continue
            try:
                state = self.store.load_window(
                    user,
                    [{"day_index": d, "week": w, "day_of_week": dow} for d, w, dow in mapping],
                    slots_per_day=self.slots_per_day,
                )
            except StoreError as exc:
                yield WindowItem(
                    i, wid, None, user_id=user, error=f"invalid_state: {exc}", day_mapping=mapping
                )
                continue
            text = state.to_json(indent=None)
            yield WindowItem(
                i, wid, text, user_id=user, fingerprint=fingerprint(text), day_mapping=mapping
            )


def day_mapping_between(
    start: tuple[int, int], end: tuple[int, int]
) -> tuple[tuple[int, int, int], ...]:
    """Every day from ``(week, day_of_week)`` ``start`` to ``end``, both included."""
    out: list[tuple[int, int, int]] = []
    week, dow = start
    while (week, dow) <= end:
        out.append((len(out) + 1, week, dow))
        week, dow = (week, dow + 1) if dow < 7 else (week + 1, 1)
    return tuple(out)


_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$")


def parse_range(text: str, what: str = "range") -> tuple[int, int]:
    """``"1-5000"`` -> ``(1, 5000)``; ``"7"`` -> ``(7, 7)``."""
    match = _RANGE.match(text)
    if match is None:
        raise SourceError(f"{what} should look like A-B or A, got {text!r}")
    lo = int(match.group(1))
    hi = int(match.group(2)) if match.group(2) is not None else lo
    if lo > hi:
        raise SourceError(f"{what} {text!r} is empty (start after end)")
    return lo, hi


def open_source(source: Any) -> WindowSource:
    """A :class:`WindowSource` for ``source``: a source already, a list of windows, a directory
    (its ``*.json`` files, sorted), a ``.jsonl`` file, a single ``.json`` file or a glob pattern.

    Raises
    ------
    SourceError
        Nothing matches, or the path cannot be read.
    """
    if isinstance(source, WindowSource):
        return source
    if isinstance(source, list | tuple):
        return ListSource(source)
    if not isinstance(source, str | Path):
        raise SourceError(f"cannot read windows from a {type(source).__name__}")
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.json") if p.is_file())
        if not files:
            raise SourceError(f"directory {path} holds no *.json files")
        return FileSource(files, root=path)
    if path.is_file():
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            return JsonlSource(path)
        return FileSource([path], root=path.parent)
    if globlib.has_magic(str(source)):
        matches = sorted(
            Path(p) for p in globlib.glob(str(source), recursive=True) if Path(p).is_file()
        )
        if not matches:
            raise SourceError(f"no file matches {source}")
        prefix: list[str] = []
        for part in Path(source).parts:
            if globlib.has_magic(part):
                break
            prefix.append(part)
        return FileSource(matches, root=Path(*prefix) if prefix else Path("."))
    raise SourceError(f"{source}: no such file or directory")
