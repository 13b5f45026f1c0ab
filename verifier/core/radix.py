"""Mixed-radix normal form and proofs for digit-linear layouts (CuTe shape:stride, Tilus
local/spatial chains, IREE nested layouts, any non-power-of-two sizes).

A layout is **digit-linear** when every logical coordinate is an affine function of the
*digits* of the hardware indices: ``dim_d = offset_d + sum_i digit_i * stride_i[d]`` with
``digit_i = (x // P_i) % (P_{i+1} // P_i)`` for a chain of place values ``1 = P_0 | P_1 | ... |
P_k = size(x)`` of each hardware dim ``x`` (each place value divides the next). This is the
mixed-radix analogue of the F2 normal form: there one digit per bit and strides combine by XOR,
here digits of any radix and strides combine by ``+``.

**Reading the form off the expressions is a derivation, not a guess.** :func:`digit_form`
walks the expression once (:func:`layoutverify.core.expr.fold`) and keeps every value as an
affine form ``const + sum coeff * window`` over *windows* ``(x % q) // p`` (``p | q``); the
rules below are identities over the non-negative integers, so when it succeeds the form equals
the expression at every hardware location:

* ``x`` is the window ``(1, size)``; ``+`` adds forms; ``* c`` scales them;
* ``// c`` and ``% c`` of one window are windows again when the place values divide
  (``((x % q) // p) // c == (x % q) // (p c)`` if ``p c | q``; ``((x % q) // p) % c ==
  (x % (p c)) // p`` if ``p c | q``);
* ``// c`` and ``% c`` of a sum split it into a part whose coefficients are multiples of ``c``
  and a remainder whose largest value is below ``c`` (windows are split at a place value to
  make that so); then ``(c H + L) // c == H`` and ``(c H + L) % c == L`` exactly;
* ``>> k`` is ``// 2**k``, ``<< k`` is ``* 2**k``, ``& (2**w - 1)`` is ``% 2**w``, and ``a ^ b``
  is ``a + b`` when no bit can be set in both (so no carry exists).

Anything else (tables, swizzles that mix bits with carries) is not digit-linear here and the
caller falls back to another method. Finally the windows' place values of each hardware dim
must form a divisibility chain (checked); each window is then a sum of chain digits.

**Proofs on the form** (:func:`compare_radix`), for two layouts over the same tensor:

* *pointwise*: two affine maps of independent digits (each digit ranges over at least two
  values) agree everywhere iff their offsets and all per-digit strides agree (evaluate at the
  origin and at each unit digit); the first differing digit is the counterexample;
* *coverage*: when every digit moves one logical dim only and the digits of each dim do not
  overlap (sorted by stride, each stride is at least the previous stride times its radix), the
  image is a product over dims of sets ``offset + {sum t_j s_j}``, whose merged (stride, radix)
  list is unique (the smallest element missing from the first run is the next stride), so two
  images are equal iff those lists and offsets are;
* *register order*: ``L(r, t) = offset + R(r) + T(t)``, so thread ``t`` holds ``Q + T(t)`` with
  ``Q = offset + image(R)``. The sets agree for every thread iff the ``Q`` agree and the thread
  strides agree (a finite set is invariant under no non-zero translation); the witness takes the
  element of ``Q`` that is extreme in a dim where the translations differ.

When a condition does not hold (overlapping digits, a digit moving two dims, chains that do not
refine to a common one) :func:`compare_radix` returns ``None`` and the caller uses the table or
z3. Every witness is re-evaluated on the expressions before it is returned.
"""
from __future__ import annotations

from math import gcd

import numpy as np

from layoutverify.core import expr as E
from layoutverify.core import result as R
from layoutverify.core.errors import LayoutError
from layoutverify.core.layout import Digits, Layout


class NotDigitLinear(Exception):
    """The expression is not recognisably digit-linear (the caller uses another method)."""


# -- affine forms over windows ----------------------------------------------------------------
class _Form:
    """``const + sum coeff * window``; a window ``(name, p, q)`` is ``(x % q) // p``, ``p | q``,
    ``q <= size(x)`` (``q == size`` means no ``%``)."""

    __slots__ = ("const", "terms")

    def __init__(self, const: int = 0, terms: dict | None = None):
        self.const = const
        self.terms = terms or {}

    def add(self, other: "_Form") -> "_Form":
        t = dict(self.terms)
        for w, c in other.terms.items():
            t[w] = t.get(w, 0) + c
        return _Form(self.const + other.const, t)

    def scale(self, c: int) -> "_Form":
        if c == 0:
            return _Form()
        return _Form(self.const * c, {w: v * c for w, v in self.terms.items()})

    def max(self) -> int:
        return self.const + sum(c * (w[2] // w[1] - 1) for w, c in self.terms.items())

    def single(self):
        """The window when the form is exactly one window with coefficient 1."""
        if self.const == 0 and len(self.terms) == 1:
            (w, c), = self.terms.items()
            if c == 1:
                return w
        return None

    def bits(self) -> int:
        """A mask of the bits any value of the form may have set."""
        masks = []
        if self.const:
            masks.append(self.const)
        for (n, p, q), c in self.terms.items():
            r = q // p
            if r & (r - 1) == 0 and c & (c - 1) == 0:
                masks.append(c * (r - 1))
            else:
                masks.append((1 << (c * (r - 1)).bit_length()) - 1)
        acc = 0
        for m in masks:
            if acc & m:  # a carry is possible: any bit up to the largest value
                return (1 << self.max().bit_length()) - 1
            acc |= m
        return acc


def _window_form(name: str, p: int, q: int, size: int) -> _Form:
    """The window ``(x % q) // p`` of a dim of ``size``; only place values that divide each
    other and the size are accepted, so that :meth:`_Form.max` is exact."""
    if q <= p:
        return _Form()
    if q % p or size % q:
        raise NotDigitLinear
    return _Form(0, {(name, p, q): 1})


def _split_for(form: _Form, c: int, sizes: dict) -> tuple[_Form, _Form]:
    """``form == c * high + low`` with ``0 <= low < c`` everywhere, or raise."""
    high, low = _Form(form.const // c), _Form(form.const % c)
    for (n, p, q), a in form.terms.items():
        if a % c == 0:
            high.terms[(n, p, q)] = high.terms.get((n, p, q), 0) + a // c
            continue
        m = c // gcd(a, c)  # smallest m with c | a * m
        q2 = p * m
        if q2 < q and q % q2 == 0:
            low.terms[(n, p, q2)] = low.terms.get((n, p, q2), 0) + a
            high.terms[(n, q2, q)] = high.terms.get((n, q2, q), 0) + a * m // c
        else:
            low.terms[(n, p, q)] = low.terms.get((n, p, q), 0) + a
    if low.max() >= c:
        raise NotDigitLinear
    return high, low


def _floordiv(f: _Form, c: int, sizes: dict) -> _Form:
    w = f.single()
    if w is not None:
        n, p, q = w
        if p * c >= q:
            return _Form()
        if q % (p * c) == 0:
            return _window_form(n, p * c, q, sizes[n])
    return _split_for(f, c, sizes)[0]


def _mod(f: _Form, c: int, sizes: dict) -> _Form:
    if f.max() < c:
        return f
    w = f.single()
    if w is not None:
        n, p, q = w
        if q % (p * c) == 0:
            return _window_form(n, p, p * c, sizes[n])
    return _split_for(f, c, sizes)[1]


def _forms(lay: Layout) -> list[_Form]:
    sizes = dict(lay.in_dims)

    def var(x):
        s = sizes[x.name]
        return _window_form(x.name, 1, s, s)

    def xor(x, a, b):
        if a.bits() & b.bits():
            raise NotDigitLinear
        return a.add(b)

    def and_(x, a):
        if x.c & (x.c + 1) == 0:  # 2**w - 1
            return _mod(a, x.c + 1, sizes)
        raise NotDigitLinear

    def lookup(x, i):
        raise NotDigitLinear

    rules = {
        E.Var: var,
        E.Const: lambda x: _Form(x.value),
        E.Add: lambda x, a, b: a.add(b),
        E.Mul: lambda x, a: a.scale(x.c),
        E.FloorDiv: lambda x, a: _floordiv(a, x.c, sizes),
        E.Mod: lambda x, a: _mod(a, x.c, sizes),
        E.Shr: lambda x, a: _floordiv(a, 1 << x.c, sizes),
        E.Shl: lambda x, a: a.scale(1 << x.c),
        E.And: and_,
        E.Xor: xor,
        E.Lookup: lookup,
    }
    memo: dict = {}
    return [E.fold(e, rules, memo) for e in lay.exprs]


# -- the normal form ----------------------------------------------------------------------------
def _own_of_digits(sizes: dict, digits, nout: int) -> dict | None:
    """:meth:`DigitForm.own_digits` of declared digits that do not overlap and lie on one
    divisibility chain per hardware dim, read off them: each moving digit as it is, the gaps
    between them (and up to the size) as digits that move nothing. ``None`` (the general
    refinement decides) for anything else."""
    per: dict = {}
    for n, p, r, strides in digits:
        if any(strides):
            per.setdefault(n, []).append((p, r, strides))
    zero = (0,) * nout
    own = {}
    for n, size in sizes.items():
        pos = 1
        for p, r, strides in sorted(per.get(n, ())):
            if p < pos or p % pos:
                return None
            if p > pos:
                own[(n, pos)] = (p // pos, zero)
            own[(n, p)] = (r, strides)
            pos = p * r
        if pos < size:
            if size % pos:
                return None
            own[(n, pos)] = (size // pos, zero)
    return own


class DigitForm:
    """A digit-linear layout's windows, ready to be refined to digit chains.

    ``offset[d]``: the constant of logical dim ``d``; ``windows[d]``: ``{(name, p, q): coeff}``;
    ``cuts[name]``: the place values its windows use (including 1 and the dim's size).
    """

    def __init__(self, lay: Layout, forms: list[_Form]):
        # the layout's logical dims, not the layout: the cache below is keyed weakly by the layout,
        # and a value holding its key would keep every layout alive
        self.out_names, self.out_sizes = lay.out_names, lay.out_sizes
        self.sizes = dict(lay.in_dims)
        self.nout = len(lay.out_dims)
        self.offset = tuple(f.const for f in forms)
        self.windows = [{w: c for w, c in f.terms.items() if c} for f in forms]
        cuts = {n: {1, s} for n, s in lay.in_dims}
        for ws in self.windows:
            for (n, p, q) in ws:
                cuts[n].update((p, q))
        self.cuts = cuts
        self._own = None

    @classmethod
    def of_digits(cls, lay: Layout, declared: Digits) -> "DigitForm":
        """The digit form of a layout made from digits (:meth:`Layout.from_digits`): the same as
        ``DigitForm(lay, forms)`` with the forms its expressions would give (each digit
        ``(x // p) % r`` is the window ``(x, p, p r)``), without building either."""
        df = cls.__new__(cls)
        df.out_names, df.out_sizes = lay.out_names, lay.out_sizes
        df.sizes = dict(lay.in_dims)
        nout = df.nout = len(lay.out_dims)
        offset, digits = declared.offset, declared.digits
        df.offset = offset
        windows: list[dict] = [{} for _ in range(nout)]
        cuts = {n: {1, s} for n, s in lay.in_dims}
        for n, p, r, strides in digits:
            w = (n, p, p * r)
            moved = False
            for d, c in enumerate(strides):
                if c:  # (strides are non-negative: sums never cancel)
                    ws = windows[d]
                    ws[w] = ws.get(w, 0) + c
                    moved = True
            if moved:  # a digit that moves nothing is no window (as in the expressions)
                cuts[n].update((p, p * r))
        df.windows, df.cuts = windows, cuts
        df._own = _own_of_digits(df.sizes, digits, nout)
        return df

    def chain_ok(self, name: str, cuts) -> list[int] | None:
        """The sorted place values when they form a divisibility chain ending at the size."""
        ps = sorted(cuts)
        if ps[0] != 1 or ps[-1] != self.sizes[name]:
            return None
        for a, b in zip(ps, ps[1:]):
            if b % a:
                return None
        return ps

    def digits(self, chains: dict) -> dict:
        """``{(name, P): (radix, stride vector)}`` for the given chains (name -> place values),
        which must refine this form's cuts. Digits of radix 1 are left out."""
        out = {}
        for n, ps in chains.items():
            for a, b in zip(ps, ps[1:]):
                out[(n, a)] = [b // a, [0] * self.nout]
        for d, ws in enumerate(self.windows):
            for (n, p, q), c in ws.items():
                for a, b in zip(chains[n], chains[n][1:]):
                    if p <= a < q:
                        out[(n, a)][1][d] += c * (a // p)
        return {k: (r, tuple(s)) for k, (r, s) in out.items() if r > 1}

    def own_digits(self) -> dict | None:
        """Digits over this layout's own chains (``None`` when its cuts are not a chain)."""
        if self._own is None:
            chains = {}
            for n in self.sizes:
                ps = self.chain_ok(n, self.cuts[n])
                if ps is None:
                    self._own = False
                    return None
                chains[n] = ps
            self._own = self.digits(chains)
        return None if self._own is False else self._own

    def at(self, loc: dict) -> list[int]:
        """The element at a hardware location, from the digit form (exact, like the expressions)."""
        out = list(self.offset)
        for (n, p), (r, s) in self.own_digits().items():
            t = (loc.get(n, 0) // p) % r
            if t:
                for d, c in enumerate(s):
                    out[d] += t * c
        return out

    def maximum(self) -> list[int]:
        """The exact largest value of every logical coordinate (digits are independent)."""
        out = list(self.offset)
        for r, s in self.own_digits().values():
            for d, c in enumerate(s):
                if c:
                    out[d] += (r - 1) * c
        return out


@Layout.derive("digit_form")
def digit_form(lay: Layout) -> DigitForm | None:
    """The layout's digit form (derived data of the layout: ``lay.digit_form``), or ``None``
    when it is not digit-linear or its place values do not form a chain."""
    try:
        m = lay.map
        df = DigitForm.of_digits(lay, m) if type(m) is Digits else DigitForm(lay, _forms(lay))
        if df.own_digits() is None:
            df = None
    except NotDigitLinear:
        df = None
    return df


# -- images ------------------------------------------------------------------------------------
def _image(df: DigitForm, digits: dict, offset) -> tuple | None:
    """Canonical form of ``{offset + sum t_i s_i}`` over ``digits``: per logical dim, the offset
    and the merged (stride, radix) runs; ``None`` when a digit moves two dims or the digits of a
    dim overlap."""
    per = [[] for _ in range(df.nout)]
    for (r, s) in digits.values():
        nz = [d for d in range(df.nout) if s[d]]
        if len(nz) > 1:
            return None
        if nz:
            per[nz[0]].append((s[nz[0]], r))
    out = []
    for d in range(df.nout):
        runs = []
        for s, r in sorted(per[d]):
            if runs:
                ps, pr = runs[-1]
                if s < ps * pr:
                    return None  # overlapping digits: not a canonical set
                if s == ps * pr:
                    runs[-1] = (ps, pr * r)
                    continue
            runs.append((s, r))
        out.append((offset[d], tuple(runs)))
    return tuple(out)


def _in_image(img, element) -> bool:
    for (off, runs), x in zip(img, element):
        v = x - off
        if v < 0:
            return False
        for s, r in reversed(runs):
            t = min(v // s, r - 1)
            v -= t * s
        if v:
            return False
    return True


def _missing_in_dim(ex, ey) -> tuple[str, int]:
    """For two different canonical sets of one dim, ``("x", v)`` with ``v`` in the first and
    not in the second, or ``("y", v)`` the other way round. Constructive (no enumeration):

    * different offsets: the smaller minimum is missing from the other set;
    * otherwise at the first differing run ``(sx, rx)`` vs ``(sy, ry)``: every element below the
      next run's stride is a combination of the common earlier runs, whose largest value is
      below that stride; so ``off + sx`` is missing from ``y`` when ``sx < sy`` (and vice versa),
      and with equal strides ``off + min(rx, ry) * s`` is missing from the side with fewer
      steps (its next run starts above ``rx * s``); a side without run ``j`` lacks the other's
      ``off + s``.
    """
    (ox, rx), (oy, ry) = ex, ey
    if ox != oy:
        return ("x", ox) if ox < oy else ("y", oy)
    for j in range(max(len(rx), len(ry))):
        if j >= len(rx):
            return "y", oy + ry[j][0]
        if j >= len(ry):
            return "x", ox + rx[j][0]
        (sx, nx), (sy, ny) = rx[j], ry[j]
        if sx != sy:
            return ("x", ox + sx) if sx < sy else ("y", oy + sy)
        if nx != ny:
            return ("y", oy + nx * sx) if nx < ny else ("x", ox + ny * sy)
    raise AssertionError("equal canonical sets")  # pragma: no cover - callers pass different ones


def _missing_element(img_x, img_y) -> list[int] | None:
    """An element of image ``img_x`` outside image ``img_y`` (both canonical: products over
    dims), or ``None`` when every differing dim has its witness on the other side."""
    for d, (ex, ey) in enumerate(zip(img_x, img_y)):
        if ex == ey:
            continue
        side, v = _missing_in_dim(ex, ey)
        if side == "x":
            el = [e[0] for e in img_x]
            el[d] = v
            return el
    return None


#: Largest (values x digits) of one dim's reachability layers for the mask form of an image.
MASK_LIMIT = 1 << 24


class _DimMask:
    """The image of one logical dim as a bitmap, for digits that overlap (where the canonical
    runs do not exist): ``layers[k][v]`` says whether ``v`` is a sum of the first ``k`` digits
    (each ``t * stride``, ``t < radix``); the last layer is the image minus the offset."""

    def __init__(self, offset: int, digits: list):
        self.offset = offset
        self.digits = sorted(digits, key=lambda t: t[2])  # (key, radix, stride)
        span = 1 + sum((r - 1) * st for _, r, st in self.digits)
        if span * (len(self.digits) + 1) > MASK_LIMIT:
            raise NotDigitLinear
        cur = np.zeros(span, dtype=bool)
        cur[0] = True
        self.layers = [cur]
        for _, r, st in self.digits:
            cur = _spread(cur, st, r)
            self.layers.append(cur)

    @property
    def mask(self) -> np.ndarray:
        return self.layers[-1]

    def __eq__(self, other) -> bool:
        return self.offset == other.offset and np.array_equal(self.mask, other.mask)

    def contains(self, v: int) -> bool:
        i = v - self.offset
        return 0 <= i < len(self.mask) and bool(self.mask[i])

    def first_missing(self, other: "_DimMask") -> int | None:
        """The smallest value of this set that ``other`` lacks."""
        n, shift = len(self.mask), other.offset - self.offset
        held = np.zeros(n, dtype=bool)  # held[i]: other holds self.offset + i
        lo, hi = max(0, shift), min(n, shift + len(other.mask))
        if lo < hi:
            held[lo:hi] = other.mask[lo - shift:hi - shift]
        miss = self.mask & ~held
        i = int(np.argmax(miss))
        return self.offset + i if miss[i] else None

    def locate(self, v: int) -> dict | None:
        """Digit values ``{key: t}`` summing to ``v`` (backtracking through the layers)."""
        i = v - self.offset
        if not self.contains(v):
            return None
        out = {}
        for k in range(len(self.digits), 0, -1):
            key, r, st = self.digits[k - 1]
            prev = self.layers[k - 1]
            for t in range(r):
                j = i - t * st
                if j >= 0 and j < len(prev) and prev[j]:
                    out[key] = t
                    i = j
                    break
        return out if i == 0 else None


def _spread(cur: np.ndarray, stride: int, radix: int) -> np.ndarray:
    """``{v + t * stride : v in cur, t < radix}`` as a bitmap of the same length, by doubling
    (``log2(radix)`` shifted ORs instead of ``radix``)."""
    span = len(cur)
    out = np.zeros_like(cur)
    blk, blk_len, off = cur.copy(), 1, 0  # blk: the set for t < blk_len
    rem = radix
    while rem:
        if rem & 1:
            sh = off * stride
            if sh < span:
                out[sh:] |= blk[:span - sh]
            off += blk_len
        rem >>= 1
        if rem:
            sh = blk_len * stride
            if sh < span:
                blk[sh:] |= blk[:span - sh].copy()
            blk_len *= 2
    return out


def _mask_image(df: "DigitForm", digits: dict, offset) -> list | None:
    """Per logical dim a :class:`_DimMask`, or ``None`` when a digit moves two dims or a dim
    is too large for bitmaps."""
    per = [[] for _ in range(df.nout)]
    for key, (r, s) in digits.items():
        nz = [d for d in range(df.nout) if s[d]]
        if len(nz) > 1:
            return None
        if nz:
            per[nz[0]].append((key, r, s[nz[0]]))
    try:
        return [_DimMask(offset[d], per[d]) for d in range(df.nout)]
    except NotDigitLinear:
        return None


def _mask_missing(mx: list, my: list) -> list[int] | None:
    for d, (x, y) in enumerate(zip(mx, my)):
        if x == y:
            continue
        v = x.first_missing(y)
        if v is not None:
            el = [m.offset for m in mx]
            el[d] = v
            return el
    return None


def _mask_locate(mx: list, element, names) -> dict | None:
    loc = {n: 0 for n in names}
    for m, v in zip(mx, element):
        ts = m.locate(int(v))
        if ts is None:
            return None
        for (n, p), t in ts.items():
            loc[n] += t * p
    return loc


def _locate(digits: dict, offset, element, names) -> dict | None:
    """A hardware location (dict over ``names``) whose value is ``element``, by greedy digit
    decomposition (exact for non-overlapping digits); ``None`` if none is found."""
    loc = {n: 0 for n in names}
    rest = [int(x) - int(o) for x, o in zip(element, offset)]
    if any(v < 0 for v in rest):
        return None
    order = sorted(((s, k, r) for k, (r, s) in digits.items() if any(s)), key=lambda t: -max(t[0]))
    for s, (n, p), r in order:
        d = next(i for i, c in enumerate(s) if c)
        t = min(rest[d] // s[d], r - 1)
        rest[d] -= t * s[d]
        loc[n] += t * p
    return loc if not any(rest) else None


# -- comparison --------------------------------------------------------------------------------
def _common_chains(pair: R.Pair, fa: DigitForm, fb: DigitForm, names) -> dict | None:
    chains = {}
    for n in names:
        if pair.size_a[n] != pair.size_b[n]:
            return None
        cuts = fa.cuts.get(n, {1}) | fb.cuts.get(n, {1}) | {pair.size_a[n]}
        ps = sorted(cuts)
        if ps[0] != 1 or any(b % a for a, b in zip(ps, ps[1:])):
            return None
        chains[n] = ps
    return chains


def _side_chains(df: DigitForm, chains: dict) -> dict:
    """``chains`` restricted to the dims of ``df``'s layout (absent dims have size 1)."""
    return {n: chains.get(n, [1, s]) if s > 1 else [1] for n, s in df.sizes.items()}


def _candidate_diff(pair: R.Pair, fa: DigitForm, fb: DigitForm, names) -> dict | None:
    """A location of the common box where A and B differ, among the origin and the unit and
    top digits of each layout's own chain (a search; ``None`` proves nothing)."""
    cands = [pair.location()]
    common = {n: min(pair.size_a[n], pair.size_b[n]) for n in pair.names}
    for df in (fa, fb):
        for (n, p), (r, _s) in (df.own_digits() or {}).items():
            if n in names:
                for v in (p, p * (r - 1)):
                    if v < common[n]:
                        cands.append(pair.location(**{n: v}))
    for loc in cands:
        if fa.at(loc) != fb.at(loc):
            return loc
    return None


def compare_radix(pair: R.Pair) -> R.Result | None:
    """Decide ``pair`` on the mixed-radix normal form, or ``None`` when it cannot (see the
    module docstring). Raises :class:`LayoutError` for a layout that leaves its shape."""
    fa, fb = digit_form(pair.a), digit_form(pair.b)
    if fa is None or fb is None:
        return None
    da, db = fa.own_digits(), fb.own_digits()
    if da is None or db is None:
        return None
    for df, side in ((fa, "A"), (fb, "B")):
        for d, (m, s) in enumerate(zip(df.maximum(), df.out_sizes)):
            if m >= s:
                raise LayoutError(f"layout {side} maps some hardware location to {df.out_names[d]}={m}, "
                                  f"outside its logical shape {list(df.out_sizes)}")

    # Coverage: canonical images.
    ia, ib = _image(fa, da, fa.offset), _image(fb, db, fb.offset)
    if ia is None or ib is None:  # overlapping digits: compare bitmaps of the images instead
        ma, mb = _mask_image(fa, da, fa.offset), _mask_image(fb, db, fb.offset)
        if ma is None or mb is None:
            return None
        if ma != mb:
            for side, mx, my in (("a", ma, mb), ("b", mb, ma)):
                el = _mask_missing(mx, my)
                if el is None:
                    continue
                loc = _mask_locate(mx, el, pair.names)
                if loc is None or pair.evaluate(side, loc) != el or all(m.contains(v) for m, v in zip(my, el)):
                    return None  # pragma: no cover - the derivation and the evaluator disagree
                return R.coverage_result("radix", side, el, loc)
            return None
    elif ia != ib:
        for side, (ix, iy, dx, fx, other) in (("a", (ia, ib, da, fa, fb)), ("b", (ib, ia, db, fb, fa))):
            el = _missing_element(ix, iy)
            if el is None:
                continue
            loc = _locate(dx, fx.offset, el, pair.names)
            if loc is None or pair.evaluate(side, loc) != el or _in_image(iy, el):
                return None  # pragma: no cover - the derivation and the evaluator disagree
            return R.coverage_result("radix", side, el, loc)
        return None

    # Pointwise.
    chains = _common_chains(pair, fa, fb, pair.names)
    if chains is not None:
        ca = fa.digits(_side_chains(fa, chains))
        cb = fb.digits(_side_chains(fb, chains))
        if fa.offset == fb.offset and ca == cb:
            return R.equal_result("radix", "identical mixed-radix digit strides")
        diff_loc = None
        if fa.offset != fb.offset:
            diff_loc = pair.location()
        else:
            for n in pair.names:
                for p in chains[n][:-1]:
                    if ca.get((n, p)) != cb.get((n, p)):
                        diff_loc = pair.location(**{n: p})
                        break
                if diff_loc:
                    break
    else:
        diff_loc = pair.outside_location() if not pair.same_sizes else None
        if diff_loc is None:
            diff_loc = _candidate_diff(pair, fa, fb, pair.names)
        if diff_loc is None:
            return None
    w = pair.location_witness(diff_loc)
    if w["a"] == w["b"]:
        return None  # pragma: no cover - the derivation and the evaluator disagree

    # Register order.
    if not pair.has_register:
        return R.not_equal_result(pair, "radix", diff_loc)
    if not pair.same_threads:
        return R.not_equal_result(pair, "radix", pair.outside_thread_location())
    rega = {k: v for k, v in da.items() if k[0] == R.REGISTER}
    regb = {k: v for k, v in db.items() if k[0] == R.REGISTER}
    qa, qb = _image(fa, rega, fa.offset), _image(fb, regb, fb.offset)
    q_masks = None
    if qa is None or qb is None:  # registers with overlapping digits: bitmaps of the sets Q
        q_masks = _mask_image(fa, rega, fa.offset), _mask_image(fb, regb, fb.offset)
        if q_masks[0] is None or q_masks[1] is None:
            return None
        if q_masks[0] != q_masks[1]:
            for side, mx, my in (("a", q_masks[0], q_masks[1]), ("b", q_masks[1], q_masks[0])):
                el = _mask_missing(mx, my)
                if el is None:
                    continue
                loc = _mask_locate(mx, el, pair.names)
                if loc is None or pair.evaluate(side, loc) != el or not _thread_witness_ok(pair, side, loc):
                    return None
                return R.not_equal_result(pair, "radix", loc, side, thread_set=True)
            return None
    elif qa != qb:
        for side, qx, qy, rx, fx in (("a", qa, qb, rega, fa), ("b", qb, qa, regb, fb)):
            el = _missing_element(qx, qy)
            if el is None:
                continue
            loc = _locate(rx, fx.offset, el, pair.names)
            if loc is None or pair.evaluate(side, loc) != el or not _thread_witness_ok(pair, side, loc):
                return None
            return R.not_equal_result(pair, "radix", loc, side, thread_set=True)
        return None
    threads = [n for n in pair.thread_names if pair.size_a[n] > 1]
    tchains = _common_chains(pair, fa, fb, threads)
    if tchains is None:
        return None
    ta = {k: v for k, v in fa.digits(_side_chains(fa, tchains)).items() if k[0] in tchains}
    tb = {k: v for k, v in fb.digits(_side_chains(fb, tchains)).items() if k[0] in tchains}
    if ta == tb:
        return R.reg_order_result(pair, "radix", diff_loc)
    for n in threads:
        for p in tchains[n][:-1]:
            sa, sb = ta.get((n, p)), tb.get((n, p))
            if sa == sb:
                continue
            va = sa[1] if sa else (0,) * fa.nout
            vb = sb[1] if sb else (0,) * fb.nout
            d = next(i for i in range(fa.nout) if va[i] != vb[i])
            if q_masks is None:
                el = [off for off, _ in qa]
                off_d, runs = qa[d]
                if va[d] > vb[d]:
                    el[d] = off_d + sum(s * (r - 1) for s, r in runs)
                loc = _locate(rega, fa.offset, el, pair.names)
            else:
                el = [m.offset for m in q_masks[0]]
                if va[d] > vb[d]:
                    el[d] = q_masks[0][d].offset + len(q_masks[0][d].mask) - 1
                loc = _mask_locate(q_masks[0], el, pair.names)
            if loc is None:
                return None
            loc[n] = p
            if not _thread_witness_ok(pair, "a", loc):
                return None
            return R.not_equal_result(pair, "radix", loc, "a", thread_set=True)
    return None


def _thread_witness_ok(pair: R.Pair, side: str, loc: dict) -> bool:
    """Re-check: the element at ``loc`` of ``side`` is in no register of the same thread of the
    other layout (exact evaluation over that thread's registers)."""
    other = "b" if side == "a" else "a"
    el = pair.evaluate(side, loc)
    if el is None:
        return False
    ly = pair.layout(other)
    n = pair.sizes(other).get(R.REGISTER, 1)
    env = {d: np.full(n, loc.get(d, 0), dtype=np.int64) for d in ly.in_names}
    if R.REGISTER in ly.in_names:
        env[R.REGISTER] = np.arange(n, dtype=np.int64)
    held = ly.apply(env)
    return not (held == np.asarray(el)).all(axis=1).any()
