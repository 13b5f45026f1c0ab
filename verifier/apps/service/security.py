"""Who may make the service compute or write, and what a browser may send it.

* **Token.** With a token (``serve --token-file``), every request that computes or writes needs
  ``Authorization: Bearer <token>`` (the web form also takes it in its token field). Reads of
  stored results stay open unless ``--private-reads``; a permalink page read anonymously shows
  only what is stored.
* **Cross-site requests.** A page on another origin (another host, or another port of
  localhost) can make a browser send a form (``application/x-www-form-urlencoded``,
  ``multipart/form-data``, ``text/plain``) but not ``application/json`` or ``application/toml``
  without a CORS preflight, which this service never grants. So the JSON API takes JSON only as
  ``application/json`` and corpora only as ``application/toml`` (415 otherwise); every unsafe
  request whose ``Origin`` is not the service's own (or one allowed by ``--allow-origin``) is
  refused (403); and the web form carries a CSRF token: an HMAC, under a secret of this server,
  of a random value kept in a ``SameSite=Strict``, ``HttpOnly`` cookie. (``SameSite`` alone would
  not do: every port of one host is the same *site*, and a page there can also set cookies for
  the host, so the token is bound to the cookie by a key the page cannot know.)
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from . import requests as rq

#: the web form's CSRF cookie
CSRF_COOKIE = "lv_csrf"
#: methods that change nothing (RFC 9110 section 9.2.1)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_FINGERPRINT = re.compile(r"[A-Za-z0-9:._-]{1,128}")


def bearer_ok(headers, token: str | None) -> bool:
    """Whether ``headers`` carry ``Authorization: Bearer <token>`` (always, without a token)."""
    if not token:
        return True
    scheme, _, value = (headers.get("authorization") or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


def token_ok(given: str | None, token: str | None) -> bool:
    """Whether ``given`` is the bearer token (always, when no token is set); compared in constant
    time."""
    return not token or hmac.compare_digest((given or "").strip().encode(), token.encode())


def unauthorized() -> rq.RequestError:
    """The 401 error (``WWW-Authenticate: Bearer``) of a missing or wrong bearer token."""
    return rq.RequestError(401, "unauthorized", "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})


def check_id(value: str, what: str = "result") -> str:
    """An id from a URL: letters, digits, ``-`` and ``_`` (else 404 before any store look-up, so
    that no byte the store cannot hold, such as NUL, reaches it)."""
    if not _ID.fullmatch(value):
        raise rq.RequestError(404, "not_found", f"no {what} {value[:80]!r}")
    return value


def check_fingerprint(value: str) -> str:
    """``value`` when it is a layout fingerprint, else a 422 error."""
    if not _FINGERPRINT.fullmatch(value):
        raise rq.RequestError(422, "invalid_field", "field 'fingerprint': not a layout fingerprint", "fingerprint")
    return value


def require_media_type(headers, *types: str) -> str:
    """The request's media type, if one of ``types`` (parameters such as ``charset`` aside); 415 else."""
    got = (headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if got not in types:
        raise rq.RequestError(415, "unsupported_media_type",
                              f"Content-Type {got or 'missing'!r}: send {' or '.join(types)}",
                              headers={"Accept-Post": ", ".join(types)})
    return got


def same_origin(headers, scheme: str, allowed: tuple[str, ...] = ()) -> bool:
    """Whether the ``Origin`` header (when present) is this service's own origin or an allowed one.

    The service's origin is the scheme and the ``Host`` header the client used; behind a proxy
    that rewrites ``Host``, name the public origin with ``--allow-origin``."""
    origin = headers.get("origin")
    if origin is None:
        return True
    origin = origin.strip().rstrip("/").lower()
    if origin in (o.rstrip("/").lower() for o in allowed):
        return True
    host = (headers.get("host") or "").strip().lower()
    if not host or origin == "null":
        return False
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    candidates = {f"{scheme}://{host}"}
    if default and host.endswith(default):
        candidates.add(f"{scheme}://{host[: -len(default)]}")
    elif default and ":" not in host.rsplit("]", 1)[-1]:
        candidates.add(f"{scheme}://{host}{default}")
    return origin in candidates


class Csrf:
    """CSRF tokens for the web form: ``HMAC(secret, cookie)``, the cookie a random value."""

    def __init__(self, secret: bytes | None = None):
        self.secret = secret or secrets.token_bytes(32)

    def token_for(self, cookie: str) -> str:
        """The form token of ``cookie``: ``HMAC-SHA256(secret, cookie)`` in hex."""
        return hmac.new(self.secret, cookie.encode(), hashlib.sha256).hexdigest()

    def issue(self, cookies: dict) -> tuple[str, str | None]:
        """(the form's token, a new cookie value to set or ``None`` when the browser has one)."""
        cookie = cookies.get(CSRF_COOKIE)
        if cookie and re.fullmatch(r"[0-9a-f]{32}", cookie):
            return self.token_for(cookie), None
        cookie = secrets.token_hex(16)
        return self.token_for(cookie), cookie

    def valid(self, cookies: dict, token: str | None) -> bool:
        """Whether ``token`` is the form token of the request's CSRF cookie (compared in constant time)."""
        cookie = cookies.get(CSRF_COOKIE)
        if not cookie or not token:
            return False
        return hmac.compare_digest(self.token_for(cookie).encode(), token.strip().encode())


def set_csrf_cookie(response, value: str, secure: bool = False) -> None:
    """Set the CSRF cookie to ``value`` (HTTP-only, ``SameSite=Strict``, secure when asked)."""
    response.set_cookie(CSRF_COOKIE, value, httponly=True, samesite="strict", path="/", secure=secure)
