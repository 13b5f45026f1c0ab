"""``/docs``: Swagger UI for the OpenAPI description, served from an installed package, never a CDN.

The assets (``swagger-ui-bundle.js``, ``swagger-ui.css``, the favicon) come from the PyPI
package ``swagger-ui-bundle-v2`` (Apache-2.0, Swagger UI 5.x, which reads OpenAPI 3.1; its
files are swagger-ui-dist's, byte for byte), imported as ``swagger_ui_bundle``. The older
``swagger-ui-bundle`` 1.x installs the same module with Swagger UI 4, which cannot render
OpenAPI 3.1: the newest ``vendor/swagger-ui-*`` folder found is served. Without the package,
``/docs`` says how to install it instead of loading a blank page.
"""
from __future__ import annotations

from pathlib import Path

from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from . import requests as rq

#: the files ``/docs/assets/`` serves, and their media types
ASSETS = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css", "favicon-32x32.png": "image/png"}


def assets_dir() -> Path | None:
    """The installed Swagger UI folder, the newest version when several are there (or ``None``)."""
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    root = Path(swagger_ui_bundle.__file__).parent / "vendor"

    def version(p: Path) -> tuple:
        return tuple(int(x) if x.isdigit() else 0 for x in p.name.rsplit("-", 1)[-1].split("."))
    found = sorted((p for p in root.glob("swagger-ui-*") if (p / "swagger-ui-bundle.js").exists()), key=version)
    return found[-1] if found else None


def register(app) -> None:
    """Add ``/docs`` and ``/docs/assets/{name}`` to ``app`` (created with ``docs_url=None``)."""

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui():
        if assets_dir() is None:
            return HTMLResponse("<!doctype html><title>layoutverify API</title><p>The API explorer needs Swagger UI's "
                                "files: <code>pip install 'layoutverify[service]'</code> (package "
                                "<code>swagger-ui-bundle-v2</code>). The OpenAPI description is at "
                                "<a href='/openapi.json'>/openapi.json</a>.</p>", status_code=200)
        return get_swagger_ui_html(openapi_url=app.openapi_url, title=f"{app.title} API",
                                   swagger_js_url="/docs/assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs/assets/swagger-ui.css",
                                   swagger_favicon_url="/docs/assets/favicon-32x32.png")

    @app.get("/docs/assets/{name}", include_in_schema=False)
    async def swagger_asset(name: str):
        where = assets_dir()
        if name not in ASSETS or where is None:
            raise rq.RequestError(404, "not_found", f"no asset {name[:80]!r}")
        return FileResponse(where / name, media_type=ASSETS[name], headers={"Cache-Control": "public, max-age=86400"})
