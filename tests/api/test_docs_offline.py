"""The docs pages (/docs, /redoc) load only what the app serves: a browser without internet
got a blank /docs when Swagger UI came from a CDN."""

from __future__ import annotations

import re

import pytest

ASSET_REF = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']""")
CONTENT_TYPES = {
    ".js": ("text/javascript", "application/javascript"),
    ".css": ("text/css",),
    ".png": ("image/png",),
}


async def local_assets(api, page: str, **kwargs) -> list[str]:
    """The asset URLs a docs page references, after checking none names another host."""
    resp = await api.get(page, **kwargs)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/html")
    assert "://" not in resp.text, "the page names another host"
    refs = ASSET_REF.findall(resp.text)
    assert refs, "the page references no asset"
    for ref in refs:
        assert ref.startswith("/") and not ref.startswith("//"), ref
    return refs


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_docs_pages_load_only_assets_the_app_serves(api, page) -> None:
    for ref in await local_assets(api, page):
        resp = await api.get(ref)
        assert resp.status_code == 200, ref
        suffix = ref[ref.rfind(".") :]
        assert resp.headers["content-type"].split(";")[0] in CONTENT_TYPES[suffix], ref
        assert len(resp.content) > 1000, ref


async def test_swagger_ui_reads_the_local_schema(api) -> None:
    html = (await api.get("/docs")).text
    assert "url: '/openapi.json'" in html
    assert any(ref.endswith("swagger-ui-bundle.js") for ref in ASSET_REF.findall(html))
    assert (await api.get("/docs/oauth2-redirect")).status_code == 200


async def test_redoc_may_not_fetch_images_from_elsewhere(api) -> None:
    """Its bundle asks cdn.redoc.ly for a footer logo; the page's policy stops the request."""
    resp = await api.get("/redoc")
    assert resp.headers["content-security-policy"] == "img-src 'self' data:"


async def test_docs_assets_are_open_like_the_docs(api_factory) -> None:
    """With keys set, a remote caller without one still gets the pages and their assets."""
    _services, api = await api_factory(api_keys="alice:ka", client_host="203.0.113.7")
    assert (await api.get("/api/v1/conversations")).status_code == 401
    for page in ("/docs", "/redoc"):
        for ref in await local_assets(api, page):
            assert (await api.get(ref)).status_code == 200, ref
