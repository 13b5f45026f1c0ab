"""The web page in a real headless Chromium (Debian's ``chromium``, driven by Playwright) against a
real ``layoutverify serve``: paste two layouts, press Prove, the verdict and the highlighted grids
appear, the permalink shows the same stored result after a reload. Screenshots are kept in
``tests/artifacts/`` (ignored by git)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from service_harness import Server, blocked, jhttp

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).parent / "artifacts"

A = blocked((1, 4), (4, 8), (4, 1))
B = blocked((1, 8), (4, 8), (4, 1))


@pytest.fixture(scope="module")
def server():
    d = tempfile.mkdtemp(prefix="lv-web-")
    s = Server(os.path.join(d, "r.sqlite3"), workers=1).start()
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


def _screenshot(page, name: str, tmp_path) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(path, ARTIFACTS / name)
    assert path.stat().st_size > 1000
    return path


def test_paste_prove_permalink(server, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(server.url + "/")
    page.fill("#a", A)
    page.fill("#b", B)
    page.fill("#shape", "32x32")
    page.click("#prove")
    page.wait_for_selector("#verdict")
    assert page.inner_text("#verdict") == "not_equal"
    assert "/r/" in page.url
    # the grids: both drawn, differing cells highlighted, the witness marked in A
    assert page.locator("#grid-a rect.cell").count() == 32 * 32
    assert page.locator("#grid-b rect.cell").count() == 32 * 32
    ndiff = page.locator("#grid-a rect.diff").count()
    assert ndiff > 0 and ndiff == page.locator("#grid-b rect.diff").count() == int(page.inner_text("#diff-count"))
    assert page.locator("#grid-a rect.witness").count() == 1
    # the witness cell A marks is the element the API's witness names
    rid = page.url.rsplit("/", 1)[1]
    status, stored = jhttp("GET", server.url + f"/v1/results/{rid}")
    assert status == 200 and stored["verdict"] == "not_equal"
    r, c = stored["witness"]["a"]
    title = page.locator("#grid-a rect.witness title").text_content()
    assert title.startswith(f"({r}, {c}):")
    # the conversion report
    assert page.inner_text("#mechanism") in ("register_permute", "intra_warp", "intra_cta", "cross_cta")
    _screenshot(page, "service_web_result.png", tmp_path)

    # the permalink shows the same stored result, in a fresh page, after a reload
    permalink = page.get_attribute("#permalink", "href")
    other = browser.new_page()
    other.goto(server.url + permalink)
    other.reload()
    assert other.inner_text("#verdict") == "not_equal"
    assert other.inner_text("#witness") == page.inner_text("#witness")
    assert other.locator("#grid-a rect.diff").count() == ndiff
    page.close()
    other.close()


def test_examples_and_errors(server, browser, tmp_path):
    page = browser.new_page()
    page.goto(server.url + "/")
    page.click("text=MMA accumulator vs the PTX fragment")
    page.click("#prove")
    page.wait_for_selector("#verdict")
    assert page.inner_text("#verdict") == "equal"
    assert page.inner_text("#mechanism") == "no_op"
    assert page.locator("#grid-a rect.diff").count() == 0
    # every drawn cell of B against the PTX ISA's m16n8k16 accumulator fragment: thread T holds
    # c0..c3 at row T/4 (+8 for c2, c3) and column 2*(T%4) + (i%2)
    titles = page.locator("#grid-b rect title").all_text_contents()
    assert len(titles) == 16 * 8
    for t in titles:
        where, holder = t.split(": ")
        r, c = map(int, where.strip("()").split(", "))
        thread, reg = map(int, holder[1:].split(":"))
        assert (r, c) == (thread // 4 + 8 * (reg // 2), 2 * (thread % 4) + reg % 2), t
    _screenshot(page, "service_web_equal.png", tmp_path)
    # bad input: the form comes back with the CLI's message, the text kept
    page.goto(server.url + "/")
    page.fill("#a", "cute:(4,3):(1,4")
    page.fill("#b", "cute:(4,3):(1,4)")
    page.click("#prove")
    page.wait_for_selector("#error")
    assert "unbalanced '('" in page.inner_text("#error")
    assert page.input_value("#a") == "cute:(4,3):(1,4"
    page.fill("#a", "cute:@/etc/passwd")
    page.click("#prove")
    page.wait_for_selector("#error")
    assert "may not name a file" in page.inner_text("#error") and "root:" not in page.content()
    # the blocked example carries a shared layout: the conversion report counts bank conflicts
    page.goto(server.url + "/?example=blocked")
    page.click("#prove")
    page.wait_for_selector("#verdict")
    assert page.inner_text("#verdict") == "not_equal"
    assert page.locator("#conversion .banks").count() == 2  # store A, load B
    assert "-way" in page.locator("#conversion .banks").first.inner_text()
    page.close()
