"""``GET /docs``: Swagger UI over the node's ``/openapi.json``, every asset served by the node itself.

FastAPI's own page loads Swagger UI from a CDN, which is a blank page on a machine without internet.
The assets come from the ``fastapi-offline`` wheel (Swagger UI 5, which reads OpenAPI 3.1; the
``swagger-ui-bundle`` wheel ships 4.15, which refuses 3.1 documents).
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_PATH = "/docs-assets"


def mount_docs(app: FastAPI, openapi_url: str = "/openapi.json") -> None:
    """Serve ``/docs`` and its assets under ``ASSETS_PATH`` (create the app with ``docs_url=None``)."""
    assets = files("fastapi_offline") / "static"
    app.mount(ASSETS_PATH, StaticFiles(directory=str(assets)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url, title=f"{app.title} - API",
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js", swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_PATH}/favicon.png")
