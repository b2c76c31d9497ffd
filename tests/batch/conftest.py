"""Fixtures of the batch tests: a local Ray for the whole session (two CPUs, started once)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def local_ray() -> Iterator[object]:
    """A local Ray with 2 CPUs and a small object store, shut down after the tests."""
    import ray

    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=100 * 1024 * 1024, configure_logging=False,
             runtime_env={"env_vars": env} if env else None)
    try:
        yield ray
    finally:
        ray.shutdown()
