"""Database-backed tools (upsert_task_class): registered with the storage work."""

from __future__ import annotations

from .spec import ToolSpec

STORE_TOOLS: tuple[ToolSpec, ...] = ()
