"""Fixtures of the batch tests: a local Ray for the whole session (two CPUs, started once)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def local_ray() -> Iterator[object]:
    """A local Ray with 2 CPUs and a small object store, shut down after the tests."""
    import ray

    from smartflow_engine.batch.engines import local_ray_options

    ray.init(**local_ray_options(2), object_store_memory=100 * 1024 * 1024)
    try:
        yield ray
    finally:
        ray.shutdown()
