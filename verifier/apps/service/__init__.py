"""The verification service: ``layoutverify serve``.

* :mod:`.app`: the FastAPI application (JSON API under ``/v1``, ``/healthz``, ``/metrics``);
* :mod:`.requests`: reading and checking request bodies (size limit, types, no file access);
* :mod:`.store`: the result store (SQLite in WAL mode, or PostgreSQL), versioned migrations;
* :mod:`.workers`: a bounded pool of worker processes that run the proofs;
* :mod:`.web`: the HTML + SVG page at ``/`` and the permalinks ``/r/{id}``;
* :mod:`.mcp_server`: the MCP endpoint at ``/mcp`` (tools ``prove``, ``analyze``, ``show``);
* :mod:`.metrics`: Prometheus text-format counters and histograms.

Needs the ``service`` extra: ``pip install 'layoutverify[service]'``.
"""
