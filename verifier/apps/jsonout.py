"""The CLI's machine-readable output: one versioned schema for every subcommand.

Every JSON document the CLI prints (or writes with ``--json FILE``) is an object whose first two
fields are ``"schema": "layoutverify/1"`` and ``"kind"`` (what the rest of the object is: ``layout``,
``proof``, ``conversion``, ``properties``, ``check``, ``snapshot``, ``diff``, ``atlas``, ``list``
or ``error``). The fields of each kind are documented in ``docs/json-schema.md``. Within one
schema version fields are only ever added, never renamed or removed.

An error under ``--json`` is printed on stdout as::

    {"schema": "layoutverify/1", "kind": "error", "exit": 2,
     "error": {"code": "parse_error", "message": "...", "token": "...", "column": 12}}

with exit status 2 (bad input) or 70 (``code`` ``internal``: a bug of layoutverify).
"""
from __future__ import annotations

import json
import sys

SCHEMA = "layoutverify/1"

#: error class name -> ``error.code`` (the most specific class wins; see :func:`error_code`)
ERROR_CODES = {
    "ParseError": "parse_error",
    "UnsupportedError": "unsupported",
    "NotInvertibleError": "not_invertible",
    "SizeLimitError": "size_limit",
    "NativeError": "native_error",
    "LayoutError": "bad_input",
}


def document(kind: str, fields: dict | None = None) -> dict:
    """A JSON document of ``kind``: ``schema`` and ``kind`` first, then ``fields``."""
    out = {"schema": SCHEMA, "kind": kind}
    for key, value in (fields or {}).items():
        if key in ("schema", "kind"):
            raise ValueError(f"internal: {key!r} is reserved in JSON documents")
        out[key] = value
    return out


def dumps(kind: str, fields: dict | None = None, *, indent: int | None = None) -> str:
    """A document of ``kind`` as JSON text (values JSON cannot write as they are, as strings)."""
    return json.dumps(document(kind, fields), indent=indent, default=str)


def emit(kind: str, fields: dict | None = None, *, indent: int | None = None, file=None) -> None:
    """Print a document of ``kind`` on stdout (one line unless ``indent``)."""
    print(dumps(kind, fields, indent=indent), file=file or sys.stdout)


def error_code(exc: BaseException) -> str:
    """The JSON error code of an exception: that of the first class in its MRO listed in
    :data:`ERROR_CODES`, else ``internal``."""
    for cls in type(exc).__mro__:
        if cls.__name__ in ERROR_CODES:
            return ERROR_CODES[cls.__name__]
    return "internal"


def error_document(code: str, message: str, *, exit_code: int, token: str | None = None,
                   column: int | None = None) -> dict:
    """The ``error`` document: the exit code and ``{code, message}``, with the offending token and
    column when known."""
    err = {"code": code, "message": message}
    if token is not None:
        err["token"] = token
    if column is not None:
        err["column"] = column
    return document("error", {"exit": exit_code, "error": err})


def wants_json(argv) -> bool:
    """Whether the command line asks for JSON (``--json``, ``--json FILE``, ``--json=FILE``)."""
    return any(isinstance(a, str) and (a == "--json" or a.startswith("--json=")) for a in argv or ())
