"""The web page: paste two layouts, press Prove, see the verdict and both grids.

Server-rendered HTML with inline SVG; a plain HTML form, no JavaScript. ``GET /`` shows the
form (``/?example=NAME`` fills it with an example), ``POST /prove`` proves, draws the page's
grids and conversion report, stores them, and redirects to the request's permalink ``/r/{id}``,
which anyone can open. The result page draws A's and B's grids side by side on the same window
(at most :data:`WINDOW` rows and columns around the witness): each cell names its holders
(``T{thread}:{register}``, or the offset of a memory layout), cells whose holders differ between
A and B are highlighted (class ``diff``), each layout's witness element is outlined (class
``witness``) when it lies inside the window. Below: the verdict, the reason, the witness, and the
conversion report A -> B (mechanism, why not each cheaper one, elements moved, vector width).

A permalink page only reads: its grids and report (the *view*) are stored when they are first
computed, and they are computed only for a caller allowed to compute (the form's poster with the
token, or a ``GET`` with the bearer header; anyone when no token is set). The form is protected
against cross-site posts by a CSRF token (see :mod:`.security`), and takes the token from its
field or from an ``Authorization: Bearer`` header.
"""
from __future__ import annotations

import hashlib
import html
import json
from urllib.parse import parse_qs, quote

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse

from . import requests as rq
from . import security

#: rows / columns drawn per grid
WINDOW = 32

EXAMPLES = {
    "mma": ("MMA accumulator vs the PTX fragment",
            {"a": "triton:#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 1], "
                  "instrShape = [16, 8]}>",
             "b": "ptx:mma.m16n8k16.f32.C", "shape": "16x8"}),
    "blocked": ("Two blocked layouts that differ",
                {"a": "triton:#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
                      "order = [1, 0]}>",
                 "b": "triton:#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
                      "order = [1, 0]}>", "shape": "32x32",
                 "shared": "triton:#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>"}),
    "registers": ("Same elements per thread, registers renumbered",
             {"a": "triton:#ttg.linear<{register = [[0, 1], [0, 2]], lane = [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]], "
                   "warp = [], block = []}>",
              "b": "triton:#ttg.linear<{register = [[0, 2], [0, 1]], lane = [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]], "
                   "warp = [], block = []}>", "shape": "8x16"}),
}

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;max-width:110em;color:#222}
textarea{width:100%;font-family:monospace;font-size:12px}
.row{display:flex;gap:1.5em;flex-wrap:wrap}.col{flex:1;min-width:30em}
.verdict{font-size:1.4em;font-weight:bold}.equal{color:#060}.not_equal,.different_tensors{color:#b00}
.unknown{color:#a60}.equal_up_to_register_order{color:#046}
.err{background:#fee;border:1px solid #c00;padding:.6em;font-family:monospace}
pre{background:#f6f6f6;padding:.6em;overflow:auto;white-space:pre-wrap}
.grids{display:flex;gap:1.5em;flex-wrap:wrap}.gridbox{overflow-x:auto;max-width:100%}
.gridbox svg{max-width:none;flex:none;display:block}
svg text{font-family:monospace;font-size:11px;pointer-events:none}
rect.cell{stroke:#bbb;stroke-width:.5}rect.diff{stroke:#d00;stroke-width:1.5}
rect.witness{stroke:#000;stroke-width:3}
table.kv td{padding:.1em .8em .1em 0;vertical-align:top}
"""


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}</title>"
                        f"<style>{_CSS}</style></head><body>{body}</body></html>", status_code=status)


def _form(values: dict, *, need_token: bool, csrf: str, error: str | None = None) -> str:
    v = {k: html.escape(str(values.get(k) or "")) for k in ("a", "b", "shape", "shape_b", "shared")}
    method = values.get("method") or "auto"
    tv = values.get("triton_version") or ""
    methods = "".join(f"<option{' selected' if m == method else ''}>{m}</option>" for m in ("auto", "f2", "z3", "table"))
    versions = "".join(f"<option value='{x}'{' selected' if x == tv else ''}>{x or 'installed'}</option>"
                       for x in ("",) + rq.TRITON_VERSIONS)
    examples = " · ".join(f"<a href='/?example={k}'>{html.escape(t)}</a>" for k, (t, _) in EXAMPLES.items())
    token = ("<label>Bearer token <input name=token type=password size=24></label>" if need_token else "")
    err = f"<p class=err id=error>{html.escape(error)}</p>" if error else ""
    return f"""<h1>layoutverify</h1>
<p>Paste two layouts (<code>FRAMEWORK:TEXT</code>: triton, cute, tilus, iree, ptx, amd) and a logical shape,
then press Prove. Examples: {examples}</p>{err}
<form method=post action=/prove><input type=hidden name=csrf value="{html.escape(csrf)}">
<div class=row><div class=col><label for=a>Layout A</label><textarea id=a name=a rows=5>{v['a']}</textarea></div>
<div class=col><label for=b>Layout B</label><textarea id=b name=b rows=5>{v['b']}</textarea></div></div>
<p><label>Shape <input id=shape name=shape value="{v['shape']}" placeholder=64x64 size=12></label>
<label>Shape of B (if different) <input name=shape_b value="{v['shape_b']}" size=12></label>
<label>Method <select name=method>{methods}</select></label>
<label>Triton semantics <select name=triton_version>{versions}</select></label> {token}
<button id=prove type=submit>Prove</button></p>
<p><label>Shared-memory layout for the bank-conflict count (optional)
<input id=shared name=shared value="{v['shared']}" size=90 placeholder="triton:#ttg.swizzled_shared<...> or cute:Sw&lt;3,4,3&gt; o (8,64):(64,1)"></label></p>
</form>"""


def _svg_grid(g: dict, differ, mark, title: str, sid: str) -> str:
    """One grid as SVG at its natural size (never scaled down: 11 px text; the box scrolls)."""
    cw, ch, left, top = 66, 22, 36, 30
    cells = g["cells"]
    r0, c0 = g["rows"][0], g["cols"][0]
    nr, nc = len(cells), len(cells[0]) if cells else 0
    w, h = left + nc * cw + 4, top + nr * ch + 4
    out = [f"<svg id={sid} xmlns='http://www.w3.org/2000/svg' width={w} height={h} viewBox='0 0 {w} {h}'>",
           f"<text x=2 y=10 style='font-size:11px;font-weight:bold'>{html.escape(title)}</text>"]
    for j in range(nc):
        out.append(f"<text x={left + j * cw + 2} y={top - 4}>{c0 + j}</text>")
    for i in range(nr):
        out.append(f"<text x=2 y={top + i * ch + 15}>{r0 + i}</text>")
        for j in range(nc):
            holders = cells[i][j]
            label = holders[0] if holders else "."
            if len(holders) > 1:
                label += f"+{len(holders) - 1}"
            thread = holders[0].split(":")[0] if holders else ""
            hue = (sum(map(ord, thread)) * 47) % 360
            fill = f"hsl({hue},60%,88%)" if holders else "#fff"
            cls = "cell"
            if differ[i][j]:
                cls += " diff"
                fill = "#fbb"
            if mark is not None and mark == [r0 + i, c0 + j]:
                cls += " witness"
            tip = html.escape(f"({r0 + i}, {c0 + j}): " + (", ".join(holders) or "no holder"))
            out.append(f"<rect class='{cls}' x={left + j * cw} y={top + i * ch} width={cw} height={ch} fill='{fill}'>"
                       f"<title>{tip}</title></rect><text x={left + j * cw + 2} y={top + i * ch + 15}>"
                       f"{html.escape(label[:10])}</text>")
    out.append("</svg>")
    return "<div class=gridbox>" + "".join(out) + "</div>"


def _conversion_html(rep: dict | None, error: str | None) -> str:
    if error:
        return f"<h2>Conversion A &rarr; B</h2><p>not analysed: {html.escape(error)}</p>"
    if not rep:
        return ""
    rows = [("mechanism", f"<b id=mechanism>{html.escape(str(rep.get('mechanism')))}</b>")]
    for m, w in (rep.get("witnesses") or {}).items():
        if w:
            rows.append((f"why not {m}", html.escape(str(w.get("reason", "")))))
    rows += [("elements moved between threads", rep.get("elements_moved")),
             ("nearest holder", html.escape(", ".join(f"{k} {v}" for k, v in (rep.get("moved_by_level") or {}).items()))),
             ("vector width", rep.get("vector_width"))]
    for k, b in (rep.get("bank_conflicts") or {}).items():
        text = (f"{b.get('conflict_ways')}-way; {b.get('instructions')} instructions/warp of {b.get('access_bytes')} B per "
                f"thread; worst {b.get('wavefronts')} wavefronts (ideal {b.get('ideal_wavefronts')}); total "
                f"{b.get('total_wavefronts')} (ideal {b.get('total_ideal')})") if "conflict_ways" in b else json.dumps(b)
        rows.append((f"bank conflicts, {k.replace('_', ' ')}", f"<span class=banks>{html.escape(text)}</span>"))
    for n in rep.get("notes") or []:
        rows.append(("note", html.escape(str(n))))
    body = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
    return f"<h2>Conversion A &rarr; B</h2><table class=kv id=conversion>{body}</table>"


def view_key(permalink: str, shared: str | None) -> str:
    """The store key of a permalink page's view (with or without a shared layout)."""
    return hashlib.sha256(f"{permalink}\0{shared or ''}".encode()).hexdigest()


async def compute_view(service, res: dict, request_fields: dict, shared: str | None) -> dict:
    """What a result page draws besides the verdict: both grids and the conversion report (a grid
    job and an analysis in the workers; for a caller allowed to compute)."""
    layout_args = {k: request_fields.get(k) for k in ("a", "b", "shape", "shape_b", "triton_version", "warp_size")}
    try:
        g = await service.run_job("grids", {**layout_args, "witness": res.get("witness"), "window": WINDOW}, 60.0)
    except rq.RequestError as e:
        g = {"drawn": False, "why": e.message}
    except Exception as e:  # a stopped worker: the page still shows the verdict
        g = {"drawn": False, "why": type(e).__name__}
    rep, rep_error = None, None
    verdict = res["verdict"]
    if verdict in ("equal", "equal_up_to_register_order", "not_equal") and not request_fields.get("shape_b"):
        try:
            rep = await service.analyze(rq.validate(rq.AnalyzeRequest, {
                k: v for k, v in {"a": request_fields["a"], "b": request_fields["b"], "shape": request_fields.get("shape"),
                                  "shared": shared,
                                  "triton_version": request_fields.get("triton_version"),
                                  "warp_size": request_fields.get("warp_size")}.items() if v is not None}))
        except rq.RequestError as e:
            rep_error = e.message
    elif verdict == "different_tensors":
        rep_error = "the layouts hold different tensors"
    return {"grids": g, "conversion": rep, "conversion_error": rep_error}


def _result_page(res: dict, request_fields: dict, view: dict | None, why_not: str = "") -> str:
    """The result page from stored data only: the verdict and, when stored, the view."""
    verdict = res["verdict"]
    rid = res.get("id")
    parts = [f"<p><a href='/'>&larr; new proof</a></p><h1>Result</h1>",
             f"<p class='verdict {html.escape(verdict)}' id=verdict>{html.escape(verdict)}</p>",
             "<table class=kv>",
             f"<tr><td>A</td><td><code id=spec-a>{html.escape(request_fields['a'])}</code></td></tr>",
             f"<tr><td>B</td><td><code id=spec-b>{html.escape(request_fields['b'])}</code></td></tr>",
             f"<tr><td>shape</td><td id=shape>{html.escape(str(request_fields.get('shape') or '(from the layouts)'))}"
             + (f" / B {html.escape(str(request_fields['shape_b']))}" if request_fields.get("shape_b") else "")
             + "</td></tr>",
             f"<tr><td>method</td><td>{html.escape(str(res['method']))} ({res['seconds'] * 1000:.1f} ms)"
             f"{' · stored result' if res.get('cached') else ''}</td></tr>",
             f"<tr><td>reason</td><td id=reason>{html.escape(str(res['reason']))}</td></tr>"]
    if res.get("witness"):
        parts.append(f"<tr><td>witness</td><td><code id=witness>{html.escape(json.dumps(res['witness']))}</code></td></tr>")
    if rid:
        parts.append(f"<tr><td>permalink</td><td><a id=permalink href='/r/{rid}'>/r/{rid}</a> · "
                     f"<a href='/v1/results/{rid}'>JSON</a>"
                     + (f" · <a href='/v1/results/{rid}/smt2'>SMT-LIB2</a>" if str(res["method"]).startswith("z3")
                        else "") + "</td></tr>")
    parts.append("</table>")
    if view is None:
        parts.append(f"<h2>Grids</h2><p id=no-view>not drawn: {html.escape(why_not)}</p>")
        return "".join(parts)
    g = view["grids"]
    if g.get("drawn"):
        ga, gb = g["a"], g["b"]
        span = (f"rows {ga['rows'][0]}..{ga['rows'][1] - 1} of {ga['shape'][-2] if len(ga['shape']) > 1 else 1}, "
                f"columns {ga['cols'][0]}..{ga['cols'][1] - 1} of {ga['shape'][-1]}")
        outside = [f"{side}'s witness element {tuple(el)} lies outside this window"
                   for side, el, mark in (("A", (res.get("witness") or {}).get("a"), g["mark_a"]),
                                          ("B", (res.get("witness") or {}).get("b"), g["mark_b"]))
                   if el is not None and mark is None]
        parts.append(f"<h2>Grids</h2><p>{span}; <span id=diff-count>{g['differing_cells']}</span> cells whose holders "
                     "differ are red, each layout's witness element is outlined in black"
                     + (f" ({html.escape('; '.join(outside))})" if outside else "")
                     + ". Hover a cell for all its holders.</p>")
        parts.append("<div class=grids>" + _svg_grid(ga, g["differ"], g["mark_a"], "A", "grid-a")
                     + _svg_grid(gb, g["differ"], g["mark_b"], "B", "grid-b") + "</div>")
    else:
        parts.append(f"<h2>Grids</h2><p>not drawn: {html.escape(str(g.get('why')))}</p>")
    parts.append(_conversion_html(view["conversion"], view["conversion_error"]))
    return "".join(parts)


def _csrf_page(service, request: Request, title: str, values: dict, *, error: str | None = None,
               status: int = 200) -> HTMLResponse:
    """The form page with a CSRF token (and its cookie, when the browser has none yet)."""
    token, new_cookie = service.csrf.issue(request.cookies)
    resp = _page(title, _form(values, need_token=bool(service.config.token), csrf=token, error=error), status)
    if new_cookie:
        security.set_csrf_cookie(resp, new_cookie, secure=request.url.scheme == "https")
    return resp


def register(app, service) -> None:
    """Add ``/``, ``/prove`` and ``/r/{id}`` to ``app``."""

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index(request: Request, example: str | None = None):
        values = EXAMPLES[example][1] if example in EXAMPLES else {}
        return _csrf_page(service, request, "layoutverify", values)

    @app.post("/prove", response_class=HTMLResponse, include_in_schema=False)
    async def prove_form(request: Request):
        try:
            security.require_media_type(request.headers, "application/x-www-form-urlencoded")
            body = await rq.read_body(request)
            try:
                form = {k: v[0] for k, v in parse_qs(body.decode("utf-8"), keep_blank_values=True,
                                                     max_num_fields=32).items()}
            except (UnicodeDecodeError, ValueError):
                raise rq.RequestError(400, "bad_request", "the form could not be read") from None
        except rq.RequestError as e:
            return _csrf_page(service, request, "layoutverify", {}, error=e.message, status=e.status)
        fields = {k: (form.get(k) or "").strip() or None for k in ("a", "b", "shape", "shape_b", "method",
                                                                    "triton_version")}
        fields = {k: v for k, v in fields.items() if v is not None}
        shared = (form.get("shared") or "").strip() or None
        if not service.csrf.valid(request.cookies, form.get("csrf")):
            return _csrf_page(service, request, "layoutverify", {**fields, "shared": shared}, status=403,
                              error="the form has expired or was not sent from this page: press Prove again")
        if not (service.authorized(request) or security.token_ok(form.get("token"), service.config.token)):
            return _csrf_page(service, request, "layoutverify", {**fields, "shared": shared}, status=401,
                              error="missing or wrong bearer token")
        try:
            if shared is not None:
                rq.refuse_file_reference(shared, "shared")
                if len(shared) > rq.MAX_TEXT:
                    raise rq.RequestError(422, "invalid_field", "field 'shared': too long", "shared")
            req = rq.validate(rq.ProveRequest, fields)
            res = await service.prove(req, _client(request))
        except rq.RequestError as e:
            return _csrf_page(service, request, "layoutverify", {**fields, "shared": shared}, error=e.message,
                              status=e.status)
        request_fields = {"shape": None, "shape_b": None, **fields}
        if res.get("id"):
            key = view_key(res["id"], shared)
            if await service.db(service.store.view_get, key) is None:
                view = await compute_view(service, res, request_fields, shared)
                await service.db(service.store.view_put, key, res["id"], view)
            where = f"/r/{res['id']}" + (f"?shared={quote(shared, safe='')}" if shared else "")
            return RedirectResponse(where, status_code=303)
        view = await compute_view(service, res, request_fields, shared)
        return _page("layoutverify: result", _result_page(res, request_fields, view))

    @app.get("/r/{rid}", response_class=HTMLResponse, include_in_schema=False)
    async def permalink(request: Request, rid: str, shared: str | None = None):
        row = await service.db(service.store.get, security.check_id(rid))
        if row is None:
            return _page("not found", f"<p class=err>no result {html.escape(rid)!s}</p><p><a href='/'>home</a></p>", 404)
        if row["kind"] != "prove":
            body = (f"<p><a href='/'>&larr; new proof</a></p><h1>{html.escape(row['kind'])} result</h1>"
                    f"<pre id=result>{html.escape(json.dumps(row['result'], indent=2))}</pre>")
            return _page("layoutverify: result", body)
        res = {**row["result"], "id": row["id"], "cached": True}
        shared = shared or None
        if shared is not None:
            try:
                rq.refuse_file_reference(shared, "shared")
                if len(shared) > rq.MAX_TEXT:
                    raise rq.RequestError(422, "invalid_field", "field 'shared': too long", "shared")
            except rq.RequestError as e:
                return _page("layoutverify", f"<p class=err id=error>{html.escape(e.message)}</p>", e.status)
        key = view_key(row["id"], shared)
        view = await service.db(service.store.view_get, key)
        if view is None and service.authorized(request):
            view = await compute_view(service, res, row["request"], shared)
            await service.db(service.store.view_put, key, row["id"], view)
        why = ("they are drawn for callers with the service's token (prove these layouts from the form with the "
               "token, or open this page with an Authorization header)")
        return _page("layoutverify: result", _result_page(res, row["request"], view, why))


def _client(request: Request) -> str:
    return request.client.host if request.client else ""
