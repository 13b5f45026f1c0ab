"""Framework adapters: each turns one framework's layout text into a canonical :class:`~layoutverify.Layout`.

A *layout spec* is ``FRAMEWORK:TEXT`` (``triton:#ttg.blocked<...>``, ``cute:(4,8):(8,1)``,
``tilus:local(2,1).spatial(8,4)``, ``iree:#iree_vector_ext.nested_layout<...>``,
``ptx:mma.m16n8k16.f16.A``, ``amd:...``). Without a known prefix the framework is guessed from
the text. ``@PATH`` as TEXT reads the text from a file.

Every adapter module exposes ``parse(text, shape=None, **options) -> Layout`` and raises only
:class:`~layoutverify.core.errors.LayoutError` subclasses on bad input.
"""
from __future__ import annotations

import difflib
import importlib
import re
import threading
from collections import OrderedDict

from layoutverify.core.errors import LayoutError

#: framework name -> module implementing ``parse``
FRAMEWORKS = {
    "triton": "layoutverify.adapters.triton",
    "iree": "layoutverify.adapters.iree",
    "tilus": "layoutverify.adapters.tilus",
    "ptx": "layoutverify.adapters.ptx",
    "amd": "layoutverify.adapters.amd",
    "cute": "layoutverify.adapters.cute",
}

MAX_TEXT = 1 << 20


def guess_framework(text: str) -> str:
    """The framework whose adapter recognises unprefixed spec ``text`` (each adapter's ``looks_like``).

    Adapters are asked in :data:`FRAMEWORKS` order and the first that recognises the text wins;
    adapters declare their own spec syntax, so a new framework needs no change here.
    """
    for name in FRAMEWORKS:
        try:
            looks_like = getattr(adapter(name), "looks_like", None)
        except LayoutError:
            continue
        if looks_like is not None and looks_like(text):
            return name
    raise LayoutError(f"cannot tell which framework {text[:40]!r} is; write it as FRAMEWORK:TEXT "
                      f"with FRAMEWORK one of {', '.join(FRAMEWORKS)}")


def split_spec(spec: str) -> tuple[str, str]:
    """``"cute:(4,8):(8,1)"`` -> ``("cute", "(4,8):(8,1)")``; guesses when no known prefix."""
    if not isinstance(spec, str):
        raise LayoutError(f"a layout spec must be text, got {type(spec).__name__}")
    if len(spec) > MAX_TEXT:
        raise LayoutError(f"layout text of {len(spec)} characters is too long (limit {MAX_TEXT})")
    head, sep, rest = spec.partition(":")
    if sep and head.strip().lower() in FRAMEWORKS:
        fw, text = head.strip().lower(), rest
    else:
        try:
            fw, text = guess_framework(spec), spec
        except LayoutError:
            close = _misspelt_framework(head) if sep else None
            if close:
                raise LayoutError(f"unknown framework {head.strip()!r} in {spec[:40]!r}; did you mean "
                                  f"{close!r}? (write FRAMEWORK:TEXT with FRAMEWORK one of "
                                  f"{', '.join(FRAMEWORKS)})") from None
            raise
    text = text.strip()
    if text.startswith("@"):
        from layoutverify.core.files import read_text
        text = read_text(text[1:].strip(), what="layout file", limit=MAX_TEXT)
    if not text.strip():
        raise LayoutError(f"empty {fw} layout text")
    return fw, text.strip()


def _misspelt_framework(head: str) -> str | None:
    """The framework name ``head`` (the text before the first ``:``) is a misspelling of, if any."""
    word = head.strip().lower()
    if not word.isidentifier() or len(word) > 20:
        return None
    close = difflib.get_close_matches(word, list(FRAMEWORKS), n=1, cutoff=0.6)
    return close[0] if close else None


_LOADED: dict = {}  # module name -> the imported adapter module


def adapter(framework: str):
    mod = FRAMEWORKS.get(framework)
    got = _LOADED.get(mod)
    if got is not None:
        return got
    if mod is None:
        raise LayoutError(f"unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}")
    try:
        got = _LOADED[mod] = importlib.import_module(mod)
        return got
    except ModuleNotFoundError as e:
        if e.name == mod:
            raise LayoutError(f"the {framework} adapter is not available in this build") from None
        raise


#: the adapter options each framework reads (``warp_size`` everywhere: the CLI's ``--warp-size``);
#: any other name is a mistake, reported rather than ignored
OPTIONS = {
    "triton": ("warp_size", "triton_version", "element_type", "dtype", "element_bitwidth", "elementBitWidth",
               "element_bits"),
    "cute": ("warp_size", "as", "as_", "bits"),
    "tilus": ("warp_size",),
    "iree": ("warp_size", "num_subgroups"),
    "ptx": ("warp_size",),
    "amd": ("warp_size",),
}
_INT_OPTIONS = {"warp_size": 1024, "num_subgroups": 1 << 20, "bits": 1024, "element_bits": 1024,
                "element_bitwidth": 1024, "elementBitWidth": 1024}
_STR_OPTIONS = ("triton_version", "element_type", "dtype", "as", "as_")


def check_options(framework: str, options: dict) -> None:
    """Refuse option names ``framework``'s adapter does not read and values of the wrong type or
    range (``warp_size`` a power of two up to 1024; widths and counts positive integers)."""
    if not options:
        return
    known = OPTIONS.get(framework)
    if known is not None:
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise LayoutError(f"unknown {framework} option(s) {', '.join(map(repr, unknown))}; "
                              f"known: {', '.join(known)}")
    for name, v in options.items():
        if v is None:
            continue
        if name in _INT_OPTIONS:
            top = _INT_OPTIONS[name]
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top or \
                    (name == "warp_size" and v & (v - 1)):
                what = "a power of two" if name == "warp_size" else "a positive integer"
                raise LayoutError(f"option {name} must be {what} of at most {top}, got {v!r}")
        elif name in _STR_OPTIONS and not isinstance(v, str):
            raise LayoutError(f"option {name} must be a string, got {v!r}")


#: Parsed layouts kept by :func:`parse_spec` (least recently used dropped first).
PARSE_CACHE_SIZE = 4096
#: Layouts with more hardware locations than this count as large: they may come to carry large
#: derived tables (``Layout.table``), so fewer of them are kept, in their own LRU.
PARSE_CACHE_MAX_LOCATIONS = 1 << 20
PARSE_CACHE_LARGE_SIZE = 16
_PARSE_CACHE: "OrderedDict[tuple, object]" = OrderedDict()
_LARGE_CACHE: "OrderedDict[tuple, object]" = OrderedDict()
#: (spec as written, shape) -> layout, for option-free calls: a hit skips splitting, option checks
#: and key building (emptied when full; never holds ``@FILE`` specs; a large layout leaves it when
#: it leaves its LRU)
_SPEC_HITS: "dict[tuple, object]" = {}
_CACHE_STATS = {"hits": 0, "misses": 0}
_CACHE_LOCK = threading.Lock()


def _cache_key(fw: str, text: str, shape, options: dict):
    try:
        key = (fw, text, None if shape is None else tuple(int(s) for s in shape),
               tuple(sorted(options.items())))
        hash(key)
    except (TypeError, ValueError):
        return None  # unhashable or odd options: parse without the cache
    return key


def parse_spec(spec: str, shape=None, **options):
    """Parse ``FRAMEWORK:TEXT`` into a canonical layout.

    Results are cached by (framework, text, shape, options): layouts are immutable, so one
    object can serve every caller; ``@FILE`` specs are keyed by the file's text, so an edited
    file is parsed again. Errors are not cached.
    """
    if not options:  # the spec exactly as a caller wrote it before: one dict look-up
        try:
            hit = _SPEC_HITS.get((spec, shape))
        except TypeError:  # an unhashable shape (a list): the keyed path below normalises it
            hit = None
        if hit is not None:
            _CACHE_STATS["hits"] += 1
            return hit
    fw, text = split_spec(spec)
    check_options(fw, options)
    key = _cache_key(fw, text, shape, options)
    if key is not None:
        with _CACHE_LOCK:
            for cache in (_PARSE_CACHE, _LARGE_CACHE):
                hit = cache.get(key)
                if hit is not None:
                    cache.move_to_end(key)
                    _CACHE_STATS["hits"] += 1
                    return hit
            _CACHE_STATS["misses"] += 1
    lay = adapter(fw).parse(text, shape=shape, **options)
    if key is not None:
        large = lay.in_size() > PARSE_CACHE_MAX_LOCATIONS
        cache, size = (_LARGE_CACHE, PARSE_CACHE_LARGE_SIZE) if large else (_PARSE_CACHE, PARSE_CACHE_SIZE)
        with _CACHE_LOCK:
            cache[key] = lay
            if len(cache) > size:
                _, gone = cache.popitem(last=False)
                if large:  # a large layout leaves every cache (a rare event: the scan is cheap)
                    for k in [k for k, v in _SPEC_HITS.items() if v is gone]:
                        del _SPEC_HITS[k]
            if not options and type(spec) is str and "@" not in spec:  # (files: keyed by content)
                if len(_SPEC_HITS) >= PARSE_CACHE_SIZE:
                    _SPEC_HITS.clear()
                _SPEC_HITS[(spec, key[2])] = lay
    return lay


def clear_parse_cache() -> None:
    with _CACHE_LOCK:
        _PARSE_CACHE.clear()
        _LARGE_CACHE.clear()
        _SPEC_HITS.clear()


def parse_shape(text: str | None):
    """``"64x64"`` / ``"64,64"`` / ``"[64, 64]"`` -> ``(64, 64)``; None stays None."""
    if text is None:
        return None
    t = text.strip().strip("[]()")
    if not t.strip():
        raise LayoutError(f"empty shape {text!r}")
    parts = re.split(r"\s*[x×,]\s*|\s+", t.strip())
    if "" in parts:
        raise LayoutError(f"bad shape {text!r}: a size is missing between separators")
    out = []
    for p in parts:
        if not re.fullmatch(r"[0-9]+", p):
            raise LayoutError(f"bad shape {text!r}: {p!r} is not a positive integer")
        v = int(p)
        if v < 1:
            raise LayoutError(f"bad shape {text!r}: sizes must be positive")
        out.append(v)
    if len(out) > 8:
        raise LayoutError(f"shape {text!r} has {len(out)} dims; at most 8 are supported")
    total = 1
    for v in out:
        total *= v
    if total > 1 << 32:
        raise LayoutError(f"shape {text!r} has {total} elements, more than 2^32")
    return tuple(out)
