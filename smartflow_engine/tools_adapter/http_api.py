"""The HTTP API; it lives in :mod:`smartflow_engine.tools_adapter.api` (models, middleware, one
router per area). This module keeps the old import path."""

from .api import (
    DEFAULT_MAX_BODY_BYTES,
    TOKENS_ENV,
    ApiError,
    app_from_env,
    create_app,
    parse_tokens,
    serve,
)

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "TOKENS_ENV",
    "ApiError",
    "app_from_env",
    "create_app",
    "parse_tokens",
    "serve",
]
