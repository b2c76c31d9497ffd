"""HTTP API (FastAPI) for backends: stateless tool calls on a posted state, and sessions.

Every ``/v1`` endpoint needs ``Authorization: Bearer <token>``; the token maps to a principal
(the HTTP user) and a principal reaching another principal's session gets 404. Errors are typed
JSON bodies ``{"error_code": ..., "error": ...}`` (401, 403, 404, 409, 413, 422, 429, 503); a
tool's own refusal is a normal 200 reply with ``status="error"`` that the backend hands to the
model. Request size, the number and bytes of sessions and every solver time limit are capped.

Modules: :mod:`.models` (request/response bodies), :mod:`.errors`, :mod:`.middleware` (body
cap), :mod:`.context` (settings, auth, session access), one router per area
(:mod:`.routes_meta`, :mod:`.routes_stateless`, :mod:`.routes_sessions`), :mod:`.snapshot`
(restore validation), :mod:`.solver_pool` (solving calls off the server's process) and
:mod:`.app` (:func:`create_app`, :func:`serve`).
"""

from .app import DEFAULT_MAX_BODY_BYTES, TOKENS_ENV, app_from_env, create_app, serve
from .context import parse_tokens
from .errors import ApiError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "TOKENS_ENV",
    "ApiError",
    "app_from_env",
    "create_app",
    "parse_tokens",
    "serve",
]
