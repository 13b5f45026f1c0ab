"""Reading and checking request bodies.

Every body is read with a size limit (:data:`MAX_BODY`, HTTP 413 past it), decoded as JSON by
the standard library (malformed JSON, deep nesting and oversized numbers are HTTP 400) and
checked against a pydantic model with strict types and no unknown fields (HTTP 422 naming the
field). Layouts are accepted only as text: a spec whose text starts with ``@`` (which the CLI
reads as a file name) is refused, and no message ever contains a file's contents.
"""
from __future__ import annotations

import json
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from layoutverify.adapters import FRAMEWORKS, MAX_TEXT

#: largest request body (bytes)
MAX_BODY = 2 << 20
#: largest solver time limit a request may ask for (milliseconds)
MAX_TIMEOUT_MS = 120_000
TRITON_VERSIONS = ("3.6", "3.7", "3.8", "3.9")

Shape = Union[str, list[int], None]


class RequestError(Exception):
    """A request the service refuses: HTTP ``status`` with ``{"error": {"code", "message", "token"}}``."""

    def __init__(self, status: int, code: str, message: str, token: str | None = None, headers: dict | None = None,
                 column: int | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.token, self.column = status, code, message, token, column
        self.headers = headers or {}

    def body(self) -> dict:
        """The CLI's ``error`` document (``layoutverify/1``), ``token`` always present."""
        from layoutverify.apps.jsonout import document
        return document("error", {"error": {"code": self.code, "message": self.message, "token": self.token,
                                            **({"column": self.column} if self.column is not None else {})}})


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class LayoutOptions(_Body):
    triton_version: Literal[TRITON_VERSIONS] | None = Field(None, description="read triton: layouts with this "  # type: ignore[valid-type]
                                                                               "Triton release's semantics")
    warp_size: int | None = Field(None, ge=1, le=1024, description="threads per warp where the text does not fix it")


class ProveRequest(LayoutOptions):
    a: str = Field(max_length=MAX_TEXT, description="first layout, FRAMEWORK:TEXT")
    b: str = Field(max_length=MAX_TEXT, description="second layout, FRAMEWORK:TEXT")
    shape: Shape = Field(None, description="logical shape for A (and B unless shape_b), e.g. '64x64'")
    shape_b: Shape = Field(None, description="logical shape for B when it differs")
    method: Literal["auto", "f2", "z3", "table"] = "auto"
    timeout_ms: int = Field(10_000, ge=1, le=MAX_TIMEOUT_MS, description="time limit per solver query")
    strict: bool = Field(False, description="exit code 1 for equal_up_to_register_order")


class AnalyzeRequest(LayoutOptions):
    a: str = Field(max_length=MAX_TEXT, description="source layout, FRAMEWORK:TEXT")
    b: str | None = Field(None, max_length=MAX_TEXT, description="destination layout (omit for A's properties)")
    shape: Shape = None
    shared: str | None = Field(None, max_length=MAX_TEXT, description="shared-memory layout for bank conflicts")
    element_bits: int = Field(16, ge=1, le=1024)
    timeout_ms: int = Field(10_000, ge=1, le=MAX_TIMEOUT_MS)


class ShowRequest(LayoutOptions):
    spec: str = Field(max_length=MAX_TEXT, description="the layout, FRAMEWORK:TEXT")
    shape: Shape = None


class CheckRequest(_Body):
    corpus: str = Field(max_length=MAX_BODY, description="a corpus file's TOML text")
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]{1,64}$",
                             description="the corpus's name (the CLI's file stem): claim ids are NAME::claim "
                                         "(default 'request')")


def refuse_file_reference(spec: str | None, field: str) -> None:
    """Refuse ``@FILE`` layout texts: the service reads no server files on anyone's behalf."""
    if spec is None:
        return
    head, sep, rest = spec.partition(":")
    text = rest if sep and head.strip().lower() in FRAMEWORKS else spec
    if text.strip().startswith("@") or spec.strip().startswith("@"):
        raise RequestError(400, "file_not_allowed",
                           f"{field}: layout text may not name a file ('@...'): the service takes layout text only",
                           token=field)


async def read_body(request, limit: int = MAX_BODY) -> bytes:
    """The raw body, at most ``limit`` bytes (HTTP 413 otherwise, before reading it all)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not (declared.isascii() and declared.isdigit()):
            raise RequestError(400, "bad_request", "Content-Length is not a number")
        if int(declared) > limit:
            raise RequestError(413, "body_too_large", f"request body of {declared} bytes is over the limit of {limit}")
    chunks, got = [], 0
    async for chunk in request.stream():
        got += len(chunk)
        if got > limit:
            raise RequestError(413, "body_too_large", f"request body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def decode_json(body: bytes):
    if not body.strip():
        raise RequestError(400, "malformed_json", "empty request body: send a JSON object")
    try:
        return json.loads(body)
    except RecursionError:
        raise RequestError(400, "malformed_json", "input nested too deeply") from None
    except UnicodeDecodeError as e:
        raise RequestError(400, "malformed_json", f"request body is not UTF-8 (byte offset {e.start})") from None
    except json.JSONDecodeError as e:
        raise RequestError(400, "malformed_json", f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except ValueError as e:  # e.g. an integer literal with too many digits
        raise RequestError(400, "malformed_json", f"malformed JSON: {str(e)[:200]}") from None


def validate(model: type[BaseModel], data) -> BaseModel:
    """``data`` checked against ``model``; the first problem becomes an HTTP 422 naming its field."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors(include_url=False, include_input=False)[0]
        loc = ".".join(str(x) for x in err.get("loc", ()) if not str(x).startswith(("list[", "str", "int", "literal")))
        where = f"field {loc!r}" if loc else "request body"
        raise RequestError(422, "invalid_field", f"{where}: {err.get('msg', 'invalid')}", token=loc or None) from None
    except RecursionError:
        raise RequestError(400, "malformed_json", "input nested too deeply") from None


async def parse(request, model: type[BaseModel]) -> BaseModel:
    """Read, decode and check one JSON request body."""
    return validate(model, decode_json(await read_body(request)))


def schema_body(model: type[BaseModel]) -> dict:
    """``openapi_extra`` that documents ``model`` as the JSON request body."""
    return {"requestBody": {"required": True,
                            "content": {"application/json": {"schema": model.model_json_schema(
                                ref_template="#/components/schemas/{model}")}}}}
