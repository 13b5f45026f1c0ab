"""The agent interface: an MCP endpoint (official ``mcp`` SDK, streamable HTTP) at ``/mcp``.

Three tools, ``prove``, ``analyze`` and ``show``, take the same fields as the JSON API and
return the same objects, through the same store and worker pool: a coding agent writing a
kernel asks for a proof and gets the verdict with its witness. A refused request is a tool error
carrying the API's one-line message. The endpoint is stateless (every POST stands alone), so any
replica behind a load balancer can answer it.
"""
from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from . import requests as rq


def build(service) -> MCPServer:
    """The MCP server whose tools call ``service`` (an :class:`~.app.Service`)."""
    server = MCPServer(name="layoutverify", version=__import__("layoutverify").__version__,
                       instructions="Prove GPU tensor layouts equal across Triton, CuTe, Tilus, IREE and PTX, or get "
                                    "a counterexample. Layouts are written FRAMEWORK:TEXT, e.g. 'triton:#ttg.blocked"
                                    "<{...}>' with shape '64x64', 'cute:(4,8):(8,1)', 'ptx:mma.m16n8k16.f32.C'.")

    async def call(model, method, fields: dict) -> dict[str, Any]:
        try:
            req = rq.validate(model, {k: v for k, v in fields.items() if v is not None})
            return await method(req)
        except rq.RequestError as e:
            raise ToolError(f"{e.code}: {e.message}") from None

    @server.tool(description="Prove two layouts equal, or get a witness where they differ. Verdicts: equal, "
                             "equal_up_to_register_order, not_equal, different_tensors, unknown.")
    async def prove(a: str, b: str, shape: str | None = None, shape_b: str | None = None, method: str = "auto",
                    timeout_ms: int = 10_000, triton_version: str | None = None, warp_size: int | None = None,
                    strict: bool = False) -> dict[str, Any]:
        return await call(rq.ProveRequest, service.prove, dict(
            a=a, b=b, shape=shape, shape_b=shape_b, method=method, timeout_ms=timeout_ms,
            triton_version=triton_version, warp_size=warp_size, strict=strict))

    @server.tool(description="What converting layout a into layout b costs (no_op, register_permute, intra_warp, "
                             "intra_cta, cross_cta, with witnesses, elements moved, vector width, bank conflicts "
                             "through 'shared'), or the properties of a alone.")
    async def analyze(a: str, b: str | None = None, shape: str | None = None, shared: str | None = None,
                      element_bits: int = 16, timeout_ms: int = 10_000, triton_version: str | None = None,
                      warp_size: int | None = None) -> dict[str, Any]:
        return await call(rq.AnalyzeRequest, service.analyze, dict(
            a=a, b=b, shape=shape, shared=shared, element_bits=element_bits, timeout_ms=timeout_ms,
            triton_version=triton_version, warp_size=warp_size))

    @server.tool(description="A layout's canonical form: hardware and logical dims, F2 bases (or table), "
                             "fingerprint.")
    async def show(spec: str, shape: str | None = None, triton_version: str | None = None,
                   warp_size: int | None = None) -> dict[str, Any]:
        return await call(rq.ShowRequest, service.show, dict(spec=spec, shape=shape, triton_version=triton_version,
                                                            warp_size=warp_size))

    return server


def routes(server: MCPServer, host: str = "127.0.0.1") -> list:
    """The routes that serve ``server`` at ``/mcp``; its session manager must run in the app's lifespan.

    ``host`` is where the service listens: on a loopback address the SDK also checks the ``Host``
    and ``Origin`` headers (DNS-rebinding protection)."""
    app = server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True,
                                     max_request_body_size=rq.MAX_BODY, host=host)
    return list(app.routes)
