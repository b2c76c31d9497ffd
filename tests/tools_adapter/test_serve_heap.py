"""Tests of a serve worker's start-up heap (issue 25's server latency): frozen out of the garbage
collector's reach, with a larger youngest generation."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from smartflow_engine.tools_adapter.api import app as app_module


@pytest.fixture
def restored_gc() -> Iterator[None]:
    saved = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*saved)


def test_settle_heap_freezes_the_start_up_objects_and_raises_the_gen0_threshold(restored_gc):
    """Tests that settle_heap moves the live objects into the permanent generation (the freeze
    count grows) and that the youngest generation is then collected every GC_GEN0_THRESHOLD
    allocations, the older thresholds unchanged."""
    _, second, third = gc.get_threshold()
    before = gc.get_freeze_count()
    app_module.settle_heap()
    assert gc.get_freeze_count() > before
    assert gc.get_threshold() == (app_module.GC_GEN0_THRESHOLD, second, third)


def test_a_serve_worker_settles_its_heap_once_the_app_is_built(monkeypatch, restored_gc):
    """Tests that app_from_env (what every `smartflow serve` worker runs) settles the heap after
    building the app, so the app's own objects are frozen too."""
    order: list[str] = []
    real_create = app_module.create_app

    def create(*args, **kwargs):
        order.append("create_app")
        return real_create(*args, **kwargs)

    monkeypatch.setattr(app_module, "create_app", create)
    monkeypatch.setattr(app_module, "settle_heap", lambda: order.append("settle_heap"))
    app_module.app_from_env()
    assert order == ["create_app", "settle_heap"]
