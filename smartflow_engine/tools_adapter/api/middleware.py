"""ASGI middleware: the request body size cap."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import error_response


class BodyLimit:
    """Refuse request bodies larger than ``limit`` bytes with a typed 413, before parsing.

    A declared ``Content-Length`` above the limit is refused at once; otherwise (chunked bodies
    included) the body is read here up to the limit and replayed to the app, so an oversized
    chunked body is a 413 too, never a parse error.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_large = int(value) > self.limit
                except ValueError:
                    too_large = False
                if too_large:
                    await self._refuse(scope, receive, send)
                    return
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            body = message.get("body", b"")
            seen += len(body)
            if seen > self.limit:
                await self._refuse(scope, receive, send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            413, "request_too_large", f"request body exceeds {self.limit} bytes"
        )
        await response(scope, receive, send)
