"""The service in a real headless Chromium (Debian's ``chromium`` through Playwright), issue 26:

* a page on another localhost port (another origin, the same *site*) makes the browser post a
  form, a text/plain "JSON" body and a TOML body to the service, as forms and as ``no-cors``
  fetches: no result, permalink, view or job is created (rows of the SQLite store, read directly);
* ``/docs`` renders Swagger UI with every request to another host blocked (no CDN);
* at 800 px the grids' text is drawn at its size (>= 10 px: the grids scroll, never shrink), and
  B's witness element is outlined only where it lies inside the window drawn.
"""
from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

import pytest

from service_harness import Server, blocked, free_port, jhttp

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
A = blocked((1, 4), (4, 8), (4, 1))
B = blocked((1, 8), (4, 8), (4, 1))
TABLES = ("results", "permalinks", "views", "jobs", "job_claims")


@pytest.fixture(scope="module")
def server():
    d = tempfile.mkdtemp(prefix="lv-browser-")
    s = Server(os.path.join(d, "r.sqlite3"), workers=1).start()   # no token: CSRF is all that stands
    yield s
    s.stop()


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail("Chromium is missing: apt-get install -y chromium (the web tests drive a real browser)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def counts(path: str) -> dict:
    con = sqlite3.connect(path)
    try:
        return {t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        con.close()


def attacker_pages(target: str) -> dict[str, str]:
    """Pages another origin could serve: each tries to make the visitor's browser create a result
    or a job at ``target``."""
    toml = f'[[claim]]\\nname = \\"x\\"\\na = \\"cute:(4,3):(1,4)\\"\\nb = \\"cute:(4,3):(1,4)\\"\\nexpect = \\"equal\\"\\n'
    return {
        "/form.html": f"""<form id=f method=post action="{target}/prove">
            <input name=a value="cute:(4,3):(1,4)"><input name=b value="cute:(4,3):(3,1)">
            <input name=csrf value="guessed"></form><script>document.getElementById('f').submit()</script>""",
        "/plain-json.html": f"""<form id=f method=post enctype="text/plain" action="{target}/v1/prove">
            <input name='{{"a": "cute:(4,3):(1,4)", "b": "cute:(4,3):(3,1)", "x": "' value='"}}'></form>
            <script>document.getElementById('f').submit()</script>""",
        "/plain-toml.html": f"""<form id=f method=post enctype="text/plain" action="{target}/v1/check">
            <input name='[[claim]]&#10;name' value='"x"&#10;a = "cute:(4,3):(1,4)"&#10;b = "cute:(4,3):(1,4)"&#10;expect = "equal"'>
            </form><script>document.getElementById('f').submit()</script>""",
        "/fetch.html": f"""<script>
            const opts = (body, type) => ({{method: "POST", mode: "no-cors", credentials: "include", body,
                                            headers: {{"Content-Type": type}}}});
            Promise.allSettled([
              fetch("{target}/v1/prove", opts('{{"a": "cute:(4,3):(1,4)", "b": "cute:(4,3):(3,1)"}}', "text/plain")),
              fetch("{target}/v1/show", opts('{{"spec": "cute:(8,4):(4,1)"}}', "text/plain")),
              fetch("{target}/v1/check", opts("{toml}", "text/plain")),
              fetch("{target}/v1/check", opts("{toml}", "application/x-www-form-urlencoded")),
              fetch("{target}/prove", opts("a=cute:(4,3):(1,4)&b=cute:(4,3):(3,1)", "application/x-www-form-urlencoded")),
            ]).then(() => {{ document.title = "sent"; }});
            </script>""",
    }


class _Attacker(BaseHTTPRequestHandler):
    pages: dict = {}

    def do_GET(self):
        body = self.pages.get(urlparse(self.path).path)
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write((body or "").encode())

    def log_message(self, *args):
        pass


def test_another_localhost_port_cannot_create_results_or_jobs(server, browser):
    _Attacker.pages = attacker_pages(server.url)
    port = free_port()
    httpd = ThreadingHTTPServer(("127.0.0.1", port), _Attacker)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        before = counts(server.db)
        ctx = browser.new_context()
        page = ctx.new_page()
        page.goto(server.url + "/")          # the victim has the service open: its CSRF cookie is set
        assert any(c["name"] == "lv_csrf" for c in ctx.cookies())
        statuses = []
        page.on("response", lambda r: statuses.append((r.url, r.status)) if r.url.startswith(server.url) else None)
        for name in ("/form.html", "/plain-json.html", "/plain-toml.html", "/fetch.html"):
            page.goto(f"http://localhost:{port}{name}")
            if name == "/fetch.html":
                page.wait_for_function("document.title === 'sent'", timeout=60_000)
            else:
                page.wait_for_load_state("load", timeout=60_000)
            time.sleep(0.5)
        posts = [s for u, s in statuses if not u.endswith("/")]
        assert posts and all(400 <= s < 500 for s in posts), statuses
        assert counts(server.db) == before
        # the same browser, on the service's own page, proves as usual (the control)
        page.goto(server.url + "/")
        page.fill("#a", "cute:(4,3):(1,4)")
        page.fill("#b", "cute:(4,3):(3,1)")
        page.click("#prove")
        page.wait_for_selector("#verdict")
        assert page.inner_text("#verdict") == "not_equal"
        after = counts(server.db)
        assert after["results"] > before["results"] and after["permalinks"] > before["permalinks"]
        ctx.close()
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_swagger_ui_renders_without_a_cdn(server, browser):
    page = browser.new_page()
    foreign = []

    def route(r):
        host = urlparse(r.request.url).hostname
        if host not in ("127.0.0.1", "localhost"):
            foreign.append(r.request.url)
            return r.abort()
        return r.continue_()
    page.route("**/*", route)
    page.goto(server.url + "/docs")
    page.wait_for_selector(".swagger-ui .info .title", timeout=60_000)
    assert "layoutverify" in page.inner_text(".swagger-ui .info .title")
    page.wait_for_selector("[data-path='/v1/prove']", timeout=60_000)
    assert foreign == []
    page.close()


def _effective_text_px(page, sel: str) -> float:
    """The on-screen height of the grid's text: its font size times the SVG's scale."""
    return page.evaluate("""(sel) => {
        const svg = document.querySelector(sel);
        const scale = svg.getBoundingClientRect().width / svg.width.baseVal.value;
        const t = svg.querySelector('rect.cell + text');
        return parseFloat(getComputedStyle(t).fontSize) * scale;
    }""", sel)


def test_grids_readable_at_800px_and_witness_marks(server, browser):
    page = browser.new_page(viewport={"width": 800, "height": 900})
    # 128x128: A's witness element (0, 32) is drawn; B's (0, 4) lies outside the 32-column window
    page.goto(server.url + "/")
    page.fill("#a", A)
    page.fill("#b", B)
    page.fill("#shape", "128x128")
    page.click("#prove")
    page.wait_for_selector("#verdict")
    assert page.inner_text("#verdict") == "not_equal"
    for sel in ("#grid-a", "#grid-b"):
        assert _effective_text_px(page, sel) >= 10
    rid = page.url.rsplit("/", 1)[1]
    _, stored = jhttp("GET", server.url + f"/v1/results/{rid}")
    wa, wb = stored["witness"]["a"], stored["witness"]["b"]
    cols = [int(t.split(",")[1].split(")")[0]) for t in page.locator("#grid-a rect title").all_text_contents()]
    lo, hi = min(cols), max(cols)
    marked_a = page.locator("#grid-a rect.witness title").all_text_contents()
    marked_b = page.locator("#grid-b rect.witness title").all_text_contents()
    assert [t.split(":")[0] for t in marked_a] == [f"({wa[0]}, {wa[1]})"]
    if lo <= wb[1] <= hi:
        assert [t.split(":")[0] for t in marked_b] == [f"({wb[0]}, {wb[1]})"]
    else:
        assert marked_b == [] and f"B's witness element ({wb[0]}, {wb[1]}) lies outside" in page.content()
    # 32x32: both witness elements lie in the window, each outlined in its own grid
    page.goto(server.url + "/")
    page.fill("#a", A)
    page.fill("#b", B)
    page.fill("#shape", "32x32")
    page.click("#prove")
    page.wait_for_selector("#verdict")
    rid = page.url.rsplit("/", 1)[1]
    _, stored = jhttp("GET", server.url + f"/v1/results/{rid}")
    wa, wb = stored["witness"]["a"], stored["witness"]["b"]
    assert [t.split(":")[0] for t in page.locator("#grid-a rect.witness title").all_text_contents()] == \
        [f"({wa[0]}, {wa[1]})"]
    assert [t.split(":")[0] for t in page.locator("#grid-b rect.witness title").all_text_contents()] == \
        [f"({wb[0]}, {wb[1]})"]
    page.screenshot(path=os.path.join(tempfile.gettempdir(), "lv_grid_800.png"), full_page=False)
    page.close()
