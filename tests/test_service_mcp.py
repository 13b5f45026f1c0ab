"""The MCP endpoint: a real MCP client session (the SDK's streamable HTTP client) against a real
``layoutverify serve``, calling the prove, analyze and show tools."""
from __future__ import annotations

import asyncio
import json
import os
import tempfile

import pytest

from service_harness import Server, blocked, jhttp

A = blocked((1, 4), (4, 8), (4, 1))
B = blocked((1, 8), (4, 8), (4, 1))


@pytest.fixture(scope="module")
def server():
    d = tempfile.mkdtemp(prefix="lv-mcp-")
    s = Server(os.path.join(d, "r.sqlite3"), workers=1).start()
    yield s
    s.stop()


def _payload(result) -> dict:
    """A tool result's object: the structured content, else the JSON text block."""
    if getattr(result, "structured_content", None):
        return result.structured_content
    return json.loads(result.content[0].text)


async def _session(url: str):
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    async with streamable_http_client(url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            proved = await session.call_tool("prove", {"a": A, "b": B, "shape": "32x32"})
            analyzed = await session.call_tool("analyze", {"a": A, "b": B, "shape": "32x32"})
            shown = await session.call_tool("show", {"spec": "cute:(4,8):(8,1)"})
            bad = await session.call_tool("prove", {"a": "cute:(4,3):(1,4", "b": "cute:(1)"})
            refused = await session.call_tool("show", {"spec": "cute:@/etc/passwd"})
            return tools, proved, analyzed, shown, bad, refused


def test_mcp_tools(server):
    tools, proved, analyzed, shown, bad, refused = asyncio.run(_session(server.url + "/mcp"))
    assert {"prove", "analyze", "show"} <= tools
    p = _payload(proved)
    assert not proved.is_error and p["verdict"] == "not_equal" and p["kind"] == "proof"
    # the same answer as the JSON API (same store: the second is cached, same id)
    status, api = jhttp("POST", server.url + "/v1/prove", {"a": A, "b": B, "shape": "32x32"})
    assert status == 200 and api["id"] == p["id"] and api["witness"] == p["witness"] and api["cached"]
    assert _payload(analyzed)["mechanism"] == jhttp("POST", server.url + "/v1/analyze",
                                                     {"a": A, "b": B, "shape": "32x32"})[1]["mechanism"]
    assert _payload(shown)["fingerprint"]
    assert bad.is_error and "unbalanced '('" in bad.content[0].text
    assert refused.is_error and "file_not_allowed" in refused.content[0].text and "root:" not in refused.content[0].text
