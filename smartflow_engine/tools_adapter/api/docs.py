"""``/docs`` (Swagger UI) and ``/redoc`` with every asset served by the app, so the API's docs
work with no network: FastAPI's own pages load Swagger UI and ReDoc from a public CDN.

The assets come from the ``fastapi-offline`` package (Swagger UI's bundle and CSS, ReDoc's
standalone bundle, a favicon), served under :data:`ASSETS`; ReDoc's Google Fonts link is left
out (ReDoc falls back to the system fonts). ReDoc's bundle itself draws its "API docs by
Redocly" logo from ``cdn.redoc.ly``: the app serves the bundle with that address replaced by
its own favicon (:data:`REDOC_JS`), so the page makes no outside request at all.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS = "/static/docs"
REDOC_JS = "/static/redoc.offline.js"  # ReDoc's bundle, its one outside address replaced
_REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


def asset_dir() -> Path:
    """The folder of the packaged Swagger UI / ReDoc files."""
    return Path(str(resources.files("fastapi_offline") / "static"))


def install(app: FastAPI) -> None:
    """Mount the assets and add ``/docs``, ``/docs/oauth2-redirect`` and ``/redoc``."""
    app.mount(ASSETS, StaticFiles(directory=asset_dir()), name="docs-assets")
    redoc_js: list[bytes] = []  # read and patched on first use, then kept

    @app.get(REDOC_JS, include_in_schema=False)
    async def redoc_bundle() -> Response:
        if not redoc_js:
            bundle = (asset_dir() / "redoc.standalone.js").read_bytes()
            redoc_js.append(bundle.replace(_REDOC_LOGO, f"{ASSETS}/favicon.png".encode()))
        return Response(
            redoc_js[0],
            media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    title = app.title
    redirect = "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{title} - Swagger UI",
            oauth2_redirect_url=redirect,
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
        )

    @app.get(redirect, include_in_schema=False)
    async def swagger_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{title} - ReDoc",
            redoc_js_url=REDOC_JS,
            redoc_favicon_url=f"{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
