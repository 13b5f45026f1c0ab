"""Float instructions on concrete operands in the PTX interpreter (``layoutverify.apps.ptxsim``).

They were once routed to the integer handler (``mul.f32 1.5, 2.0`` gave ``0.0``, ``max.f32 1.5,
-1.0`` gave ``-1.0``). Now a float instruction is either computed bit-exactly, as IEEE-754 fixes it
for the PTX rounding (``.rn`` by default), or refused. Expected values come from Python's own
binary64 arithmetic rounded by ``struct`` (``'f'``: binary32, ``'e'``: binary16, round half to
even), never from the interpreter's code.
"""
from __future__ import annotations

import struct

import pytest

from layoutverify.apps.ptxsim import Machine, SimError, parse_ptx


def _bits32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _f32(x: float) -> str:
    return f"0f{_bits32(x):08X}"


def _run(body: str, nbytes: int) -> bytes:
    """Run ``body`` in one warp; it stores its results from ``[%rd1]`` on (buffer 1)."""
    ptx = f""".version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
.reqntid 32
{{
.reg .b16 %h<8>;
.reg .b32 %r<16>;
.reg .b64 %rd<4>;
.reg .pred %p<4>;
ld.param.u64 %rd1, [k_param_1];
{body}
ret;
}}"""
    m = Machine(parse_ptx(ptx), threads=32, element_bytes=4, input_elements=0)
    m.run()
    stored = m.glob.stores.get(1, {})
    return bytes(stored[o][0] if o in stored else 0 for o in range(nbytes))


def _f32s(raw: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def test_the_reported_wrong_answers_are_now_right():
    out = _f32s(_run(f"""mov.b32 %r1, {_f32(1.5)};
mov.b32 %r2, {_f32(2.0)};
mov.b32 %r3, {_f32(-1.0)};
mul.f32 %r4, %r1, %r2;
st.global.b32 [%rd1], %r4;
max.f32 %r5, %r1, %r3;
st.global.b32 [%rd1+4], %r5;
add.f32 %r6, %r1, %r3;
st.global.b32 [%rd1+8], %r6;
sub.f32 %r7, %r3, %r2;
st.global.b32 [%rd1+12], %r7;
neg.f32 %r8, %r1;
st.global.b32 [%rd1+16], %r8;
div.rn.f32 %r9, %r3, %r2;
st.global.b32 [%rd1+20], %r9;
min.f32 %r10, %r1, %r3;
st.global.b32 [%rd1+24], %r10;""", 28))
    assert out == [1.5 * 2.0, max(1.5, -1.0), 1.5 + -1.0, -1.0 - 2.0, -1.5, -1.0 / 2.0, min(1.5, -1.0)]


def test_results_are_rounded_once_to_nearest_even():
    third = struct.unpack("<f", struct.pack("<f", 1 / 3))[0]
    a, b = 1 + 2 ** -12, 1 + 2 ** -12
    out = _f32s(_run(f"""mov.b32 %r1, {_f32(1.0)};
mov.b32 %r2, {_f32(3.0)};
div.rn.f32 %r3, %r1, %r2;
st.global.b32 [%rd1], %r3;
mov.b32 %r4, {_f32(a)};
mov.b32 %r5, {_f32(b)};
mov.b32 %r6, {_f32(-1.0)};
fma.rn.f32 %r7, %r4, %r5, %r6;
st.global.b32 [%rd1+4], %r7;
mul.rn.f32 %r8, %r4, %r5;
add.rn.f32 %r9, %r8, %r6;
st.global.b32 [%rd1+8], %r9;""", 12))
    # fma rounds a*b-1 once (exact here: 2^-11 + 2^-24); mul then add rounds a*b to 1+2^-11 first
    fused = a * b - 1.0                                   # exact in binary64
    separate = struct.unpack("<f", struct.pack("<f", a * b))[0] - 1.0
    assert fused != separate
    assert out == [third, fused, separate]


def test_half_precision_and_packed_halves():
    h = lambda x: struct.unpack("<H", struct.pack("<e", x))[0]  # noqa: E731
    one, tiny = h(1.0), h(2.0 ** -11)          # 1 + 2^-11 is a tie between 1 and 1 + 2^-10
    raw = _run(f"""mov.b16 %h1, {one:#x};
mov.b16 %h2, {tiny:#x};
add.rn.f16 %h3, %h1, %h2;
st.global.b16 [%rd1], %h3;
mov.b32 %r1, {(h(1.5) << 16) | h(-2.0):#x};
mov.b32 %r2, {(h(2.0) << 16) | h(0.25):#x};
mul.rn.f16x2 %r3, %r1, %r2;
st.global.b32 [%rd1+4], %r3;""", 8)
    lo, = struct.unpack("<e", raw[0:2])
    assert lo == struct.unpack("<e", struct.pack("<e", 1.0 + 2.0 ** -11))[0] == 1.0
    packed = struct.unpack("<2e", raw[4:8])
    assert packed == (-2.0 * 0.25, 1.5 * 2.0)


def test_float_comparisons_set_predicates():
    raw = _run(f"""mov.b32 %r1, {_f32(1.5)};
mov.b32 %r2, 0f7FC00000;
setp.lt.f32 %p1, %r1, {_f32(2.0)};
selp.b32 %r3, 1, 0, %p1;
st.global.b32 [%rd1], %r3;
setp.lt.f32 %p2, %r1, %r2;
selp.b32 %r4, 1, 0, %p2;
st.global.b32 [%rd1+4], %r4;
setp.ltu.f32 %p3, %r1, %r2;
selp.b32 %r5, 1, 0, %p3;
st.global.b32 [%rd1+8], %r5;""", 12)
    # ordered < is false with a NaN operand, unordered <u is true (PTX ISA setp)
    assert struct.unpack("<3I", raw) == (1, 0, 1)


@pytest.mark.parametrize("ins", ["ex2.approx.f32 %r3, %r1", "div.full.f32 %r3, %r1, %r1",
                                 "add.rz.f32 %r3, %r1, %r1", "rsqrt.approx.f32 %r3, %r1",
                                 "sqrt.approx.f32 %r3, %r1"])
def test_results_the_isa_does_not_fix_are_refused(ins):
    with pytest.raises(SimError, match="not fixed bit for bit"):
        _run(f"mov.b32 %r1, {_f32(1.5)};\n{ins};\nst.global.b32 [%rd1], %r3;", 4)


def test_float_arithmetic_on_data_bytes_is_refused():
    ptx = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
.reqntid 32
{
.reg .b32 %r<4>;
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [k_param_0];
ld.global.b32 %r1, [%rd1];
add.f32 %r2, %r1, %r1;
ret;
}"""
    m = Machine(parse_ptx(ptx), threads=32, element_bytes=4, input_elements=1)
    with pytest.raises(SimError, match="arithmetic on data bytes"):
        m.run()
