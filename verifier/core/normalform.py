"""Per-layout normal forms, computed once and memoised on the (immutable) layout, and the
verdicts they decide without building a counterexample.

A :class:`Layout` never changes once built, so everything :func:`layoutverify.core.compare.compare`
derives from one layout alone is derived once (:func:`of`; :func:`prepare` does it eagerly):

* the aligned hardware sizes (dims of size 1 left out: an absent dim counts as size 1), the
  thread sizes (all but ``register``), the kind and the logical dims;
* the **F2 part** (declared or derived bases, bit-packed): the bases, the image as a *reduced*
  row echelon basis (the canonical basis of a subspace: equal tuples iff equal spans), the
  register span likewise, and every thread basis reduced modulo the register span (the
  canonical representative of its coset);
* the **radix part** (:mod:`layoutverify.core.radix`): the digits on the layout's own chains,
  *coalesced* (adjacent digits ``(p, r, s)``, ``(p r, r', s r)`` of one hardware dim merge into
  ``(p, r r', s)``), the canonical image, the canonical register image ``Q`` and the coalesced
  thread digits;
* the **key**: the map written out (F2 bases for declared layouts, else the coalesced digits,
  else derived F2 bases), so that equal keys prove equal layouts.

The key, the logical head, the sizes, the F2 spans and the radix images, thread digits and place
values are *interned* (:func:`_intern`): while any normal form holds a value, it is held as one
token, so two normal forms have equal parts iff they hold the same token, and a verdict is a few
``is`` tests (and, for two radix forms whose place values are not powers of two, a memoised
divisibility test of their place values, :func:`_one_chain`).

**Why coalesced digits decide.** The coalesced form of a digit-linear map is unique on any chain:
refining a digit ``(p, r, s)`` at ``p r1`` gives ``(p, r1, s), (p r1, r / r1, s r1)``, which merge
back, and whether two neighbouring digits merge at a place value does not change under
refinement. Two maps over a common refinement of their chains are equal iff their offsets and
per-digit strides there agree (evaluate at the origin and at each unit digit), i.e. iff their
coalesced forms agree. So: equal coalesced forms prove equality on any sizes; different
coalesced forms prove a difference when the place values of the two forms refine to one chain
(always so for powers of two), and otherwise :func:`decide` leaves the pair to the strategies.

:func:`decide` mirrors the order and conditions of the ``auto`` strategies (``f2`` for two
declared F2 layouts, else ``radix``, else ``f2``) and answers only where they would decide, with
their method name; it returns ``None`` otherwise (and whenever a layout's normal form met an
error, so that the strategy raises it as before). The caller attaches the counterexample lazily
(:meth:`layoutverify.core.result.Result.deferred`): the strategy itself builds and re-checks it.
"""
from __future__ import annotations

import threading
import weakref

from layoutverify.core import f2 as F2
from layoutverify.core import radix as RADIX
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import F2Bases, Layout

REGISTER = "register"

#: the verdicts :func:`decide` proves, as ``(verdict, method)``: the method is the strategy the
#: verdict stands for, which builds its counterexample on request
EQUAL_F2, EQUAL_RADIX = ("equal", "f2"), ("equal", "radix")
NOT_EQUAL_F2, NOT_EQUAL_RADIX = ("not_equal", "f2"), ("not_equal", "radix")
DIFFERENT_F2, DIFFERENT_RADIX = ("different_tensors", "f2"), ("different_tensors", "radix")
REGISTER_ORDER_F2 = ("equal_up_to_register_order", "f2")
REGISTER_ORDER_RADIX = ("equal_up_to_register_order", "radix")
_UNSET = object()


# -- F2 bases (bit-packed) ------------------------------------------------------------------------
class F2Data:
    """The packed bases of one F2 layout (:class:`layoutverify.core.f2.Packing`), with the
    echelon forms compare needs: ``span`` the image (span of every basis), ``reg`` the span of
    the register bases (each thread's elements are a coset of it)."""

    __slots__ = ("packing", "bases", "_span", "_reg")

    def __init__(self, lay: Layout, f2: F2Bases):
        self.packing = packing = F2.Packing.of(lay.out_sizes)
        self.bases = {n: packing.pack_all(vs) for n, vs in f2.bases}
        self._span = self._reg = None

    @property
    def span(self) -> F2.Echelon:
        """The image: the span of every basis."""
        if self._span is None:
            self._span = F2.Echelon(v for vs in self.bases.values() for v in vs)
        return self._span

    @property
    def reg(self) -> F2.Echelon:
        """The span of the register bases (each thread's elements are a coset of it)."""
        if self._reg is None:
            self._reg = F2.Echelon(self.bases.get(REGISTER, []))
        return self._reg


@Layout.derive("f2_data")
def f2_data(lay: Layout) -> F2Data | None:
    """The layout's packed F2 bases (:class:`F2Data`, derived data of the layout), or ``None``
    when it is not F2-linear (its F2 form: :attr:`Layout.f2_form`)."""
    f2 = lay.f2_form
    return None if f2 is None else F2Data(lay, f2)


class F2Part:
    """The F2 part of a normal form. The key (the bases over the hardware dims of size > 1,
    sorted by name, with the logical dims) is built with it; what only a verdict on two different
    keys reads is built by the first such verdict (:meth:`rest`; ``span`` is ``_UNSET`` until
    then): the image as a reduced echelon basis (``span``), the register span likewise (``reg``),
    and every thread basis reduced modulo the register span (``tred``: the canonical
    representative of its coset)."""

    __slots__ = ("key", "span", "reg", "tred", "_src")

    def __init__(self, nf: "NormalForm", lay: Layout, f2: F2Bases):
        b = dict(f2.bases)
        self.key = _intern(("f2", nf.kind, nf.sizes, nf.out_dims, tuple((n, b.get(n, ())) for n, _ in nf.sizes)))
        self.span = _UNSET
        self._src = (nf.threads, weakref.ref(lay))

    def rest(self):
        """Build the spans, once; return the image token (``None``: the layout is gone)."""
        src = self._src
        if src is None:  # another thread built them (``span`` is set before ``_src`` is dropped)
            return self.span
        threads, ref = src
        lay = ref()
        if lay is None:
            return None
        data = f2_data(lay)
        b = data.bases
        if all(v & (v - 1) == 0 for vs in b.values() for v in vs):
            self._unit_vectors(threads, b)
        else:
            reg_rows = F2.pivot_rows(b.get(REGISTER, ()))
            rows = F2.pivot_rows((v for n, vs in b.items() if n != REGISTER for v in vs), reg_rows)
            full = data.packing.full
            reg = F2.rref(reg_rows)
            self.reg = _intern(tuple(reg))
            self.tred = _intern(tuple((n, tuple(F2.reduce(v, reg) for v in b.get(n, ()))) for n, _ in threads))
            # a span of every logical bit (a bijective layout: swizzled shared) is all bits, reduced
            self.span = _intern(_bits_high_first(full) if len(rows) == full.bit_length() else tuple(F2.rref(rows)))
        self._src = None
        return self.span

    def _unit_vectors(self, threads, b: dict) -> None:
        """The spans when every basis is 0 or one logical bit (a permutation of bits with
        broadcasts: blocked, MMA, MFMA, dot_op, slice layouts). The reduced echelon basis of
        such a span is its set of bits, highest first, and reducing modulo it clears those bits:
        the same canonical values as the general elimination, without it."""
        reg_mask = 0
        for v in b.get(REGISTER, ()):
            reg_mask |= v
        mask = reg_mask
        for n, vs in b.items():
            if n != REGISTER:
                for v in vs:
                    mask |= v
        self.reg = _intern(_bits_high_first(reg_mask))
        keep = ~reg_mask
        self.tred = _intern(tuple((n, tuple(v & keep for v in b.get(n, ()))) for n, _ in threads))
        self.span = _intern(_bits_high_first(mask))


def _bits_high_first(mask: int) -> tuple[int, ...]:
    """The set bits of ``mask`` as single-bit ints, highest first."""
    out = []
    while mask:
        top = 1 << (mask.bit_length() - 1)
        out.append(top)
        mask ^= top
    return tuple(out)


# -- mixed radix ----------------------------------------------------------------------------------
def _coalesce(digits: dict) -> dict:
    """``{name: ((place, radix, strides), ...)}`` with adjacent digits merged where the upper
    stride is the lower stride times its radix (see the module docstring)."""
    per: dict = {}
    for (n, p), (r, s) in sorted(digits.items()):
        run = per.setdefault(n, [])
        if run:
            p0, r0, s0 = run[-1]
            if p0 * r0 == p and all(x == y * r0 for x, y in zip(s, s0)):
                run[-1] = (p0, r0 * r, s0)
                continue
        run.append((p, r, s))
    return {n: tuple(v) for n, v in per.items()}


class RadixPart:
    """The radix part of a normal form. The key (offset and coalesced digits) is built with it;
    what only a verdict on two different keys reads (place values, images, thread digits) is
    built by the first such verdict (:meth:`rest`; ``image`` is ``_UNSET`` until then)."""

    __slots__ = ("key", "offset", "co", "cuts", "pow2", "p2dims", "image", "q", "tkey", "cut_token", "tcut_token",
                 "_src")

    def __init__(self, nf: "NormalForm", lay: Layout, df: "RADIX.DigitForm"):
        digits = df.own_digits()
        co = _coalesce(digits)
        self.offset = df.offset
        self.co = co
        self.key = _intern(("radix", nf.kind, nf.sizes, nf.out_dims, df.offset, tuple((n, co.get(n, ())) for n, _ in nf.sizes)))
        self._src = (nf.sizes, nf.threads, nf.has_register, df, digits)
        self.image = _UNSET

    def rest(self):
        """Build the parts a verdict on different keys reads, once; return the image token."""
        src = self._src
        if src is None:  # another thread built them (``image`` is set before ``_src`` is dropped)
            return self.image
        sizes, threads, has_register, df, digits = src
        co = self.co
        cuts = self.cuts = {n: tuple(p for p, _, _ in co.get(n, ())) for n, _ in sizes}
        #: the place values of every hardware dim, and of the thread dims: the same token on both
        #: sides means one chain without looking further (:func:`_chains_combine`)
        self.cut_token = _intern(("cuts", sizes, tuple(cuts.values())))
        self.tcut_token = _intern(("cuts", threads, tuple(cuts[n] for n, _ in threads)))
        #: the hardware dims whose size and place values are all powers of two (any two such
        #: sets of place values refine to one chain)
        self.p2dims = frozenset(n for n, s in sizes if s & (s - 1) == 0 and all(p & (p - 1) == 0 for p in cuts[n]))
        self.pow2 = len(self.p2dims) == len(sizes)
        # the register image and the thread digits, and last the image, interned (``None``:
        # overlapping digits, no canonical set)
        self.q = None
        if has_register:
            q = RADIX._image(df, {k: v for k, v in digits.items() if k[0] == REGISTER}, df.offset)
            self.q = None if q is None else _intern(("image", q))
        self.tkey = _intern(("threads", tuple((n, co.get(n, ())) for n, _ in threads)))
        image = RADIX._image(df, digits, df.offset)
        self.image = None if image is None else _intern(("image", image))
        self._src = None
        return self.image

    def at(self, name: str, x: int) -> tuple:
        """The element at hardware location ``name = x`` (every other dim 0), from the digits."""
        out = list(self.offset)
        for p, r, s in self.co.get(name, ()):
            t = (x // p) % r
            if t:
                for d, c in enumerate(s):
                    out[d] += t * c
        return tuple(out)


def _differ_at_a_cut(ra: RadixPart, rb: RadixPart, dims) -> bool:
    """Whether the two maps differ at the origin or at a place value of either coalesced form
    (exact evaluation of both digit forms; ``False`` proves nothing)."""
    if ra.offset != rb.offset:
        return True
    for n, _ in dims:
        for x in set(ra.cuts[n]) | set(rb.cuts[n]):
            if x and ra.at(n, x) != rb.at(n, x):
                return True
    return False


def _chains_combine(ra: RadixPart, rb: RadixPart, dims) -> bool:
    """Whether the place values of both coalesced forms refine to one divisibility chain per
    hardware dim (both layouts have the same sizes on ``dims``)."""
    if ra.pow2 and rb.pow2:
        return True
    ca, cb, p2a, p2b = ra.cuts, rb.cuts, ra.p2dims, rb.p2dims
    for n, s in dims:
        a, b = ca[n], cb[n]
        # the same place values (a form's own places lie on one chain ending at the size), or
        # powers of two on both sides: a chain without looking further
        if a == b or (n in p2a and n in p2b):
            continue
        ps = sorted(set(a) | set(b) | {s})
        if any(y % x for x, y in zip(ps, ps[1:])):
            return False
    return True


def _one_chain(ta: "_Token", tb: "_Token", ra: RadixPart, rb: RadixPart, dims) -> bool:
    """:func:`_chains_combine` on ``dims``, whose place values (and sizes) are the cut tokens
    ``ta``, ``tb`` of ``ra``, ``rb``: at once for one token or powers of two on both sides
    (the memo keeps the pairs that need the divisibility test), else memoised per pair of tokens."""
    if ta is tb or (ra.pow2 and rb.pow2):
        return True
    pair = (ta, tb)
    combine = _COMBINE.get(pair)
    if combine is None:
        combine = _chains_combine(ra, rb, dims)
        if len(_COMBINE) >= _COMBINE_MAX:
            _COMBINE.clear()
        _COMBINE[pair] = combine
    return combine


#: (cut token, cut token) -> :func:`_chains_combine` of the forms that hold them: the test's
#: answer is a function of the place values and sizes, which the tokens are. Emptied when full
#: (it holds its tokens alive).
_COMBINE: "dict[tuple[_Token, _Token], bool]" = {}
_COMBINE_MAX = 4096


# -- the normal form --------------------------------------------------------------------------------
class _Token:
    """The one live token of a value (:func:`_intern`): two tokens are of equal values iff they
    are the same object, so verdicts compare parts with ``is``. ``value`` is the value."""

    __slots__ = ("value", "__weakref__")

    def __init__(self, value: tuple):
        self.value = value

    def __repr__(self) -> str:
        return f"_Token({self.value!r})"


#: value -> weak reference to its one live token. A token's death costs nothing (no callback):
#: entries of dead tokens stay until the table reaches ``_PURGE_AT`` entries, when they are swept
#: out (and the mark moves to twice the live entries), so the table stays within twice its live size
_TOKENS: "dict[tuple, weakref.ref]" = {}
_PURGE_AT = [1 << 16]
_TOKENS_LOCK = threading.Lock()  # two threads interning one value must get one token


def _intern(value: tuple) -> _Token:
    ref = _TOKENS.get(value)
    if ref is not None:
        token = ref()
        if token is not None:
            return token
    with _TOKENS_LOCK:  # (again under the lock: another thread may have made it meanwhile)
        ref = _TOKENS.get(value)
        token = None if ref is None else ref()
        if token is None:
            if len(_TOKENS) >= _PURGE_AT[0]:
                _purge()
            token = _Token(value)
            _TOKENS[value] = weakref.ref(token)
        return token


def _purge() -> None:
    """Drop the entries of dead tokens (the caller holds the lock)."""
    for value in [v for v, ref in _TOKENS.items() if ref() is None]:
        del _TOKENS[value]
    _PURGE_AT[0] = max(1 << 16, 2 * len(_TOKENS))


class NormalForm:
    """Everything :func:`decide` needs of one layout (see the module docstring)."""

    __slots__ = ("layout", "head", "kind", "out_dims", "sizes", "threads", "size_token", "thread_token",
                 "has_register", "declared", "error",
                 "_f2", "_radix", "key", "mode", "part", "equal", "__weakref__")

    def __init__(self, lay: Layout):
        self.layout = weakref.ref(lay)
        self.kind = lay.kind
        self.out_dims = lay.out_dims
        self.head = _intern((self.kind, self.out_dims))  # layouts with other heads: shape / kind verdicts
        self.sizes = tuple(sorted((n, s) for n, s in lay.in_dims if s > 1))
        self.threads = tuple((n, s) for n, s in self.sizes if n != REGISTER)
        self.size_token = self.thread_token = _UNSET  # built by the first verdict on another key (tokens())
        self.has_register = REGISTER in lay.in_names
        self.declared = type(lay.map) is F2Bases
        self.error = False
        self._f2 = self._radix = _UNSET
        part = self.f2 if self.declared else (self.radix or self.f2)
        #: the part ``auto`` decides on when the other layout has the same mode: ``"f2"`` (declared
        #: bases, or F2-linear without digit form) or ``"radix"``; ``None`` when neither applies
        self.part = None if part is None or self.error else part
        self.key = None if self.part is None else part.key
        self.mode = None if self.part is None else ("f2" if isinstance(part, F2Part) else "radix")
        #: the verdict ``equal`` when the other layout has the same key
        self.equal = None if self.part is None else ("equal", self.mode)

    def _lay(self) -> Layout:
        return self.layout()

    def tokens(self) -> None:
        """Intern the hardware sizes and thread sizes (read only by verdicts on different keys)."""
        self.size_token, self.thread_token = _intern(self.sizes), _intern(self.threads)

    @property
    def f2(self) -> F2Part | None:
        """The F2 part (:class:`F2Part`), built on first use; ``None`` when the layout is not F2-linear
        (or leaves its shape: ``error`` is then set)."""
        if self._f2 is _UNSET:
            lay = self._lay()
            if lay is None:  # a shallow copy outlived the layout: leave the pair to the strategies
                return None
            try:
                f2 = lay.f2_form
                self._f2 = None if f2 is None else F2Part(self, lay, f2)
            except LayoutError:
                self.error, self._f2 = True, None
        return self._f2

    @property
    def radix(self) -> RadixPart | None:
        """The radix part (:class:`RadixPart`), built on first use; ``None`` when the layout is not
        digit-linear (or leaves its shape: ``error`` is then set)."""
        if self._radix is _UNSET:
            lay = self._lay()
            if lay is None:
                return None
            part = None
            try:
                df = RADIX.digit_form(lay)
                if df is not None:
                    if any(m >= s for m, s in zip(df.maximum(), lay.out_sizes)):
                        self.error = True  # compare_radix raises the error with its message
                    else:
                        part = RadixPart(self, lay, df)
            except LayoutError:
                self.error = True
            self._radix = part
        return self._radix


@Layout.derive("normal_form")
def of(lay: Layout) -> NormalForm:
    """The layout's normal form (derived data of the layout: ``lay.normal_form``)."""
    return NormalForm(lay)


def prepare(lay: Layout) -> Layout:
    """Build ``lay``'s normal form now (it is otherwise built by the first comparison) and return
    ``lay``."""
    of(lay)
    return lay


# -- verdicts on normal forms -------------------------------------------------------------------------
def decide(na: NormalForm, nb: NormalForm):
    """The verdict proved on the normal forms as ``(verdict, method)``, or ``None`` (see the
    module docstring).
    The logical dims and kinds must already agree."""
    ka = na.key
    if ka is not None and ka is nb.key:  # interned: equal keys are one object
        return na.equal
    return decide_other_keys(na, nb)


def decide_other_keys(na: NormalForm, nb: NormalForm):
    """:func:`decide` for two normal forms whose keys are not one object (the caller checked)."""
    mode = na.mode
    if mode is not None and mode == nb.mode:  # both F2 (declared or without digits), or both radix
        if mode == "radix":
            return _decide_radix(na, nb, na.part, nb.part)
        return _f2_verdict(na, nb, na.part, nb.part)  # (the keys were compared by the caller)
    # other modes (a layout given by bases has mode f2): the first strategy of ``auto`` that
    # both parts allow, radix, then f2; none where a layout leaves its shape
    ra, rb = na.radix, nb.radix
    if na.error or nb.error:
        return None
    if ra is not None and rb is not None:
        return _decide_radix(na, nb, ra, rb)
    fa = na.f2
    fb = None if fa is None else nb.f2
    if fa is None or fb is None or na.error or nb.error:
        return None
    return EQUAL_F2 if fa.key is fb.key else _f2_verdict(na, nb, fa, fb)


def _f2_verdict(na: NormalForm, nb: NormalForm, fa: F2Part, fb: F2Part):
    """The verdict on two F2 parts of different keys: their images, then per-thread sets."""
    ia, ib = fa.span, fb.span  # (interned: equal spans are one token)
    if ia is _UNSET:
        ia = fa.rest()
    if ib is _UNSET:
        ib = fb.rest()
    if ia is None or ib is None:
        return None
    if ia is not ib:
        return DIFFERENT_F2
    if na.thread_token is _UNSET:
        na.tokens()
    if nb.thread_token is _UNSET:
        nb.tokens()
    if not (na.has_register or nb.has_register) or na.thread_token is not nb.thread_token:
        return NOT_EQUAL_F2
    if fa.reg is not fb.reg or fa.tred is not fb.tred:
        return NOT_EQUAL_F2
    return REGISTER_ORDER_F2


def _decide_radix(na: NormalForm, nb: NormalForm, ra: RadixPart, rb: RadixPart):
    ia, ib = ra.image, rb.image  # (interned: equal images are one token)
    if ia is _UNSET:
        ia = ra.rest()
    if ib is _UNSET:
        ib = rb.rest()
    if ia is None or ib is None:
        return None  # overlapping digits: the strategy compares bitmaps
    if ia is not ib:
        return DIFFERENT_RADIX
    if ra.key is rb.key:  # (the layouts' keys may be of other parts)
        return EQUAL_RADIX
    if na.size_token is _UNSET:
        na.tokens()
    if nb.size_token is _UNSET:
        nb.tokens()
    if (na.size_token is nb.size_token and not _one_chain(ra.cut_token, rb.cut_token, ra, rb, na.sizes)
            and not _differ_at_a_cut(ra, rb, na.sizes)):
        return None  # no common chain and no difference at a place value: left to the strategies
    # not pointwise equal: the keys differ (different sizes, or different coalesced forms)
    if not (na.has_register or nb.has_register) or na.thread_token is not nb.thread_token:
        return NOT_EQUAL_RADIX
    qa, qb = ra.q, rb.q
    if qa is None or qb is None:
        return None
    if qa is not qb:
        return NOT_EQUAL_RADIX
    if not _one_chain(ra.tcut_token, rb.tcut_token, ra, rb, na.threads):
        return None
    if ra.tkey is rb.tkey:
        return REGISTER_ORDER_RADIX
    return NOT_EQUAL_RADIX
