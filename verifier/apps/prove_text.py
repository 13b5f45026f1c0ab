"""Batch proofs from layout text: parse each distinct layout once, then
:func:`layoutverify.core.batch.prove_many` (canonical forms first, shared results).

Used by ``check`` and ``snapshot``/``diff``; the service and sweeps call :func:`prove_specs`.
"""
from __future__ import annotations

from typing import Iterable

from layoutverify.core.batch import prove_many
from layoutverify.core.errors import LayoutError


def _spec_key(spec: str, shape, options: dict | None):
    shape = None if shape is None else tuple(int(s) for s in shape)
    try:
        opts = tuple(sorted((options or {}).items()))
        hash(opts)
    except TypeError:
        opts = repr(sorted((options or {}).items()))
    return spec, shape, opts


def load_many(items: Iterable[tuple[str, object, dict | None]]) -> dict:
    """``{(spec, shape, options): Layout | LayoutError}`` for every distinct item, each parsed once
    through the adapter registry."""
    from layoutverify.adapters import parse_spec
    out: dict = {}
    for spec, shape, options in items:
        key = _spec_key(spec, shape, options)
        if key in out:
            continue
        try:
            out[key] = parse_spec(spec, shape=shape, **(options or {}))
        except LayoutError as e:
            out[key] = e
    return out


def prove_specs(pairs: Iterable, *, method: str = "auto", timeout_ms: int = 10_000) -> list:
    """Prove pairs given as text.

    Each pair is ``(spec_a, spec_b)`` or ``(spec_a, spec_b, shape)`` or a dict with keys ``a``,
    ``b`` and optional ``shape``, ``shape_a``, ``shape_b``, ``options``, ``options_a``,
    ``options_b``. Returns, in order, a :class:`~layoutverify.core.result.Result` per pair, or
    the :class:`LayoutError` that parsing or proving raised for it.
    """
    norm = []
    for p in pairs:
        if isinstance(p, dict):
            shape = p.get("shape")
            opts = p.get("options") or {}
            norm.append((p["a"], p.get("shape_a", shape), p.get("options_a", opts),
                         p["b"], p.get("shape_b", shape), p.get("options_b", opts)))
        else:
            p = tuple(p)
            shape = p[2] if len(p) > 2 else None
            norm.append((p[0], shape, {}, p[1], shape, {}))
    layouts = load_many([(sa, ha, oa) for sa, ha, oa, *_ in norm] + [(sb, hb, ob) for *_, sb, hb, ob in norm])
    out: list = [None] * len(norm)
    todo, where = [], []
    for i, (sa, ha, oa, sb, hb, ob) in enumerate(norm):
        la, lb = layouts[_spec_key(sa, ha, oa)], layouts[_spec_key(sb, hb, ob)]
        bad = la if isinstance(la, LayoutError) else lb if isinstance(lb, LayoutError) else None
        if bad is not None:
            out[i] = bad
            continue
        todo.append((la, lb))
        where.append(i)
    for i, res in zip(where, prove_many(todo, method=method, timeout_ms=timeout_ms, errors="return")):
        out[i] = res
    return out
