"""Explicit SIMD for the one loop LLVM's vectoriser leaves scalar: interpolating a
cumulative sum at evenly spaced positions (:func:`leap.kernels.cpu.columns.cumulative_at`).

Why by hand. Each position ``q = o + t·s`` reads the two neighbours ``cum[⌊q⌋]``,
``cum[⌊q⌋ + 1]``: an indexed (gather) load, which LLVM's cost model does not vectorise,
so the loop ran one position at a time: about 22 micro-operations each (floor, two
int/float conversions, two float32 → float64 conversions), the cone projector's and
back-projector's hottest loop (three quarters of the 128³ cone projection). Here four
positions are one vector: the positions, floors, fractions and the interpolation are
vector instructions, and the neighbours are four paired loads (one 8-byte load per
float32 pair, one 16-byte load per float64 pair) put together with a shuffle, then
converted to float64 in one instruction — half the time per position on AVX2/AVX-512.

The arithmetic is the scalar loop's, operation for operation, in float64 and without
fast-math flags (no fused multiply-add, no reassociation): ``q = o + (t + i)·s``,
``k = ⌊q⌋``, ``E[t + i] = c0 + (q − k)·(c1 − c0)``; ``t + i`` is exact in float64, so
the results are bit for bit the scalar loop's (the kernels stay exact transposes).

:func:`interp_block` is a Numba intrinsic: it emits LLVM IR into the calling kernel
(LLVM then picks the CPU's instructions; on a CPU without these vector units it emits
scalar code for the same operations), so it adds no call and no compiled function of
its own.
"""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.core.extending import intrinsic

#: Positions per :func:`interp_block` (four float64: one AVX2 register; eight, on
#: AVX-512, was no faster for the back-projector).
LANES = 4

_I32 = ir.IntType(32)


def _lane_constant(values):
    return ir.Constant(ir.VectorType(_I32, len(values)), list(values))


@intrinsic
def interp_block(typingctx, cum, base, o, s, t, E):
    """``E[t + i] = c0 + (q − ⌊q⌋)·(c1 − c0)`` for ``i < LANES``, with ``q = o + (t + i)·s``
    and ``c0, c1 = cum[base + ⌊q⌋]``, ``cum[base + ⌊q⌋ + 1]``.

    cum : 1-D C-contiguous float32 or float64 array; base : unsigned offset into it;
    o, s : float64; t : integer; E : 1-D C-contiguous float64 array. The caller
    guarantees ``0 <= q`` and ``base + ⌊q⌋ + 1`` inside ``cum`` for every lane and
    ``t + LANES <= len(E)`` (no bounds checks: the kernels peel the ends first).
    """
    if not (isinstance(cum, types.Array) and cum.ndim == 1 and cum.layout == "C"
            and cum.dtype in (types.float32, types.float64)
            and isinstance(E, types.Array) and E.ndim == 1 and E.layout == "C"
            and E.dtype == types.float64
            and isinstance(base, types.Integer) and isinstance(t, types.Integer)):
        return None
    sig = types.void(cum, base, types.float64, types.float64, t, E)

    def codegen(context, builder, signature, args):
        cum_ty, base_ty, _, _, t_ty, E_ty = signature.args
        cum_v, base_v, o_v, s_v, t_v, E_v = args
        data = context.make_array(cum_ty)(context, builder, cum_v).data
        out = context.make_array(E_ty)(context, builder, E_v).data
        f64, i64 = ir.DoubleType(), ir.IntType(64)
        vd, vi = ir.VectorType(f64, LANES), ir.VectorType(i64, LANES)

        def splat(x):
            v = ir.Constant(vd, ir.Undefined)
            for i in range(LANES):
                v = builder.insert_element(v, x, ir.Constant(_I32, i))
            return v

        t64 = context.cast(builder, t_v, t_ty, types.int64)
        tv = builder.fadd(splat(builder.sitofp(t64, f64)),
                          ir.Constant(vd, [float(i) for i in range(LANES)]))
        q = builder.fadd(splat(o_v), builder.fmul(tv, splat(s_v)))
        floor = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vd, [vd]),
                                               f"llvm.floor.v{LANES}f64")
        fk = builder.call(floor, [q])
        k = builder.fptosi(fk, vi)
        frac = builder.fsub(q, fk)
        b64 = context.cast(builder, base_v, base_ty, types.uint64)

        def neighbours(i, ty, align):
            ki = builder.add(b64, builder.extract_element(k, ir.Constant(_I32, i)))
            ptr = builder.gep(data, [ki], inbounds=True)
            return builder.load(builder.bitcast(ptr, ty.as_pointer()), align=align)

        if cum_ty.dtype == types.float32:
            # Each lane's pair as one 8-byte load; even floats are c0, odd ones c1.
            pairs = ir.Constant(vi, ir.Undefined)
            for i in range(LANES):
                pairs = builder.insert_element(pairs, neighbours(i, i64, 4), ir.Constant(_I32, i))
            floats = builder.bitcast(pairs, ir.VectorType(ir.FloatType(), 2 * LANES))
            c0 = builder.fpext(builder.shuffle_vector(
                floats, floats, _lane_constant(range(0, 2 * LANES, 2))), vd)
            c1 = builder.fpext(builder.shuffle_vector(
                floats, floats, _lane_constant(range(1, 2 * LANES, 2))), vd)
        else:
            # Pairs (a_i, b_i) of lanes 0 and 2, 1 and 3 side by side, then the even and
            # odd entries: two 128-bit inserts and two unpacks (inserting lane by lane
            # took twice as many instructions).
            pair_ty = ir.VectorType(f64, 2)
            p0, p1, p2, p3 = (neighbours(i, pair_ty, 8) for i in range(LANES))
            x = builder.shuffle_vector(p0, p2, _lane_constant(range(4)))
            y = builder.shuffle_vector(p1, p3, _lane_constant(range(4)))
            c0 = builder.shuffle_vector(x, y, _lane_constant((0, 4, 2, 6)))
            c1 = builder.shuffle_vector(x, y, _lane_constant((1, 5, 3, 7)))
        e = builder.fadd(c0, builder.fmul(frac, builder.fsub(c1, c0)))
        dst = builder.gep(out, [t64], inbounds=True)
        builder.store(e, builder.bitcast(dst, vd.as_pointer()), align=8)
        return context.get_dummy_value()

    return sig, codegen
