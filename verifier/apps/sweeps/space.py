"""The points of a sweep spec, numbered: point ``i`` of ``0 <= i < Space.points`` is fixed by the
spec alone, so a worker given the range ``[lo, hi)`` enumerates its own points.

The numbering, space by space in the order the spec lists them:

* a ``[[triton]]`` space is a sequence of **groups**, one per (version, element type, num_warps,
  shape) in that nesting order (the last fastest); a group's points are the product of its A
  layouts and its B layouts, A-major: point ``k`` of a group is ``(A[k // |B|], B[k % |B|])``.
  ``limit`` cuts the sequence after that many points (the last group may be cut short);
* a ``[[template]]`` space numbers the combinations of its variables as ``itertools.product``
  does (zipped variables move together; the last axis fastest); every combination is a group of
  one point. Its groups are made when asked for, so a space of a million combinations costs no
  memory until a worker reaches them.

A point's ``id`` (a hash of the task, its group's ``key`` and the two layout specs) stays the
same when a spec is reordered or extended, so results of two sweeps line up by ``id``; the
index ``i`` is this spec's numbering, the one results and resuming use.
"""
from __future__ import annotations

import bisect
import hashlib
import itertools
import math
import string
from dataclasses import dataclass, field

from layoutverify.core.errors import LayoutError

from . import triton_space


def point_id(task: str, key: str, a_spec: str, b_spec: str) -> str:
    """The stable id of a point: a hash of the task, its group and the two layout specs."""
    return hashlib.blake2b(f"{task}|{key}|{a_spec}|{b_spec}".encode(), digest_size=8).hexdigest()


@dataclass
class Group:
    """Points sharing shape, element type and adapter options: the first ``count`` pairs of
    ``a x b`` (A-major), layouts named in ``layouts``."""
    key: str                                  # stable description, part of every point id
    task: str
    shape_a: tuple | None
    shape_b: tuple | None
    options: dict                             # adapter options (triton_version)
    element_type: str | None
    layouts: dict = field(default_factory=dict)   # name -> spec text ("triton:...")
    a: list = field(default_factory=list)         # names of side A, in order
    b: list = field(default_factory=list)         # names of side B, in order
    count: int = 0
    meta: dict = field(default_factory=dict)      # written into every record
    error: str | None = None                      # every point of the group is this error (bad shape)
    share: str | None = None                      # groups of one share parse to the same layouts (A and B
                                                  # lists, shapes, options); None: shared with no other
    parsed: dict = field(default_factory=dict, repr=False, compare=False)   # the share's parsed layouts
                                                  # (filled by the process that evaluates its points)

    def pair(self, k: int) -> tuple[str, str]:
        """The names ``(a, b)`` of the group's ``k``-th pair (A-major)."""
        nb = len(self.b)
        return self.a[k // nb], self.b[k % nb]

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """The names of all the group's pairs, in order."""
        return [self.pair(k) for k in range(self.count)]

    def point_id(self, a: str, b: str) -> str:
        """The stable id of the point pairing layouts ``a`` and ``b`` (:func:`point_id`)."""
        return point_id(self.task, self.key, self.layouts[a], self.layouts[b])


class Space:
    """The numbered points of a :class:`~.spec.Spec` (see the module docstring)."""

    def __init__(self, spec):
        self.task = spec.task
        self._starts: list[int] = []   # first index of each segment
        self._segs: list = []          # Group | _TemplateSpace
        self._ranks: list[int] = []    # each segment's place in the locality order (see locality)
        shares: dict = {}
        n = 0
        for k, (kind, sp) in enumerate(spec.spaces):
            parts = _triton_groups(spec.task, sp) if kind == "triton" else [_TemplateSpace(spec.task, sp)]
            for part in parts:
                if part.count:
                    share = getattr(part, "share", None)
                    rank = len(self._ranks) if share is None else shares.setdefault((k, share), len(self._ranks))
                    self._ranks.append(rank)
                    self._starts.append(n)
                    self._segs.append(part)
                    n += part.count
        self.points = n

    def groups(self):
        """Every group in order (template groups made one by one)."""
        for seg in self._segs:
            if isinstance(seg, Group):
                yield seg
            else:
                yield from (seg.group(j) for j in range(seg.count))

    def locality(self, i: int) -> tuple:
        """Where point ``i`` goes in the **locality order**, in which neighbouring points use the
        same parsed layouts: groups of one ``share`` (Triton groups that differ only in element
        type) together, at the place of the first of them, their points by A row (the row's A
        layout and every B layout are the same in each), then by index. Any other point keeps its
        place. A worker given consecutive shards of this order parses each layout it needs once."""
        s = bisect.bisect_right(self._starts, i) - 1
        seg = self._segs[s]
        row = (i - self._starts[s]) // len(seg.b) if isinstance(seg, Group) and seg.share is not None else 0
        return self._ranks[s], row, i

    def slices(self, lo: int, hi: int):
        """``(group, k0, k1, i0)`` covering the points ``[lo, hi)``: the group's points ``k0..k1-1``
        are the space's points ``i0..i0+k1-k0-1``."""
        lo, hi = max(0, lo), min(hi, self.points)
        s = bisect.bisect_right(self._starts, lo) - 1
        while lo < hi and s < len(self._segs):
            start, seg = self._starts[s], self._segs[s]
            end = min(hi, start + seg.count)
            if isinstance(seg, Group):
                yield seg, lo - start, end - start, lo
            else:
                for j in range(lo - start, end - start):
                    yield seg.group(j), 0, 1, start + j
            lo = end
            s += 1


#: most elements a sweep shape may have (a tensor of 2^24 elements is far past any register tile)
MAX_SHAPE_ELEMENTS = 1 << 24


def shape_of(v, where: str) -> tuple:
    """A spec's shape (``[64, 64]`` or ``\"64x64\"``), at most :data:`MAX_SHAPE_ELEMENTS` elements."""
    if isinstance(v, str):
        from layoutverify.adapters import parse_shape
        shape = tuple(parse_shape(v))
    elif isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v):
        shape = tuple(v)
    else:
        raise LayoutError(f"{where}: bad shape {v!r} (want [64, 64] or \"64x64\")")
    n = 1
    for x in shape:
        n *= x
        if n > MAX_SHAPE_ELEMENTS:
            raise LayoutError(f"{where}: shape {'x'.join(map(str, shape))} has more than {MAX_SHAPE_ELEMENTS} "
                              f"elements (2^24), the sweep limit")
    return shape


def _triton_groups(task: str, sp: dict) -> list[Group]:
    left = sp.get("limit") or math.inf
    out = []
    made: dict = {}
    parsed: dict = {}
    for version, etype, nw, shape in itertools.product(sp.get("versions", [None]), sp.get("element_types", ["f16"]),
                                                        sp.get("num_warps", [4]),
                                                        [shape_of(s, sp["_where"]) for s in sp["shapes"]]):
        if left <= 0:
            break
        opts = {"triton_version": str(version)} if version is not None else {}
        key = f"triton|{version}|{etype}|w{nw}|{'x'.join(map(str, shape))}"
        sides = made.get((shape, nw))
        if sides is None:       # (groups of one shape and num_warps share their layouts: read-only)
            sides = made[(shape, nw)] = _triton_sides(sp, shape, nw)
        layouts, a, b = sides
        g = Group(key, task, shape, shape, opts, etype, layouts=layouts, a=a, b=b,
                  meta={"version": version, "element_type": etype, "num_warps": nw, "shape": list(shape)},
                  share=f"triton|{version}|w{nw}|{'x'.join(map(str, shape))}")
        g.parsed = parsed.setdefault(g.share, {})
        g.count = int(min(len(g.a) * len(g.b), left))
        left -= g.count
        if g.count:
            out.append(g)
    return out


def _triton_sides(sp: dict, shape: tuple, nw: int) -> tuple[dict, list, list]:
    """(name -> spec, A names, B names) of a Triton space for one shape and warp count."""
    layouts: dict = {}
    sides = ([], [])
    for side, names in zip(("a", "b"), sides):
        for fam in sp[side]:
            for name, text in triton_space.instances(fam, shape, nw, sp.get(fam)):
                layouts[name] = "triton:" + text
                names.append(name)
    return layouts, sides[0], sides[1]


class _TemplateSpace:
    """A ``[[template]]`` space: combination ``j`` of its variables is a group of one point."""

    def __init__(self, task: str, sp: dict):
        self.task, self.sp = task, sp
        vars_ = {k: v for k, v in sp.get("vars", {}).items() if k != "zip"}
        ties = [list(t) for t in sp.get("vars", {}).get("zip", [])]
        tied = {n for t in ties for n in t}
        self.axes = [(t, list(zip(*(vars_[n] for n in t)))) for t in ties] + \
            [([n], [(x,) for x in vals]) for n, vals in vars_.items() if n not in tied]
        total = math.prod(len(vals) for _, vals in self.axes)
        self.count = min(total, sp.get("limit") or total)

    def group(self, j: int) -> Group:
        env = {}
        for names, vals in reversed(self.axes):   # the last axis varies fastest, as in itertools.product
            j, r = divmod(j, len(vals))
            env.update({n: str(v) for n, v in zip(names, vals[r])})
        env = {n: env[n] for names, _ in self.axes for n in names}
        sp = self.sp

        def sub(t):
            return string.Template(str(t)).substitute(env)

        a, b = sub(sp["a"]), sub(sp["b"])
        both = sp.get("shape")
        sa, sb = sp.get("shape_a", both), sp.get("shape_b", both)
        key = "template|" + "|".join(f"{k}={v}" for k, v in sorted(env.items()))
        g = Group(key, self.task, None, None, {}, None, layouts={"a": a, "b": b}, a=["a"], b=["b"], count=1,
                  meta={"vars": env, "a_spec": a, "b_spec": b})
        try:
            g.shape_a = shape_of(sub(sa), sp["_where"]) if sa else None
            g.shape_b = shape_of(sub(sb), sp["_where"]) if sb else None
        except LayoutError as e:
            g.error = str(e)
        return g
