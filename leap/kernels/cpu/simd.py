"""Explicit SIMD for the one loop LLVM's vectoriser leaves scalar: interpolating a
cumulative sum at evenly spaced positions (:func:`leap.kernels.cpu.columns.cumulative_at`,
:func:`leap.kernels.cpu.columns.add_cumulative_differences`), and its relative that
integrates a column's values over evenly spaced rows
(:func:`add_row_integrals`, :func:`leap.kernels.cpu.columns.add_integrals`).

Why by hand. Each position ``q = o + t·s`` reads the two neighbours ``cum[⌊q⌋]``,
``cum[⌊q⌋ + 1]``: an indexed (gather) load, which LLVM's cost model does not vectorise,
so the loop ran one position at a time: about 22 micro-operations each (floor, two
int/float conversions, two float32 → float64 conversions), the cone projector's and
back-projector's hottest loop (three quarters of the 128³ cone projection). Here four
positions are one vector: the positions, floors, fractions and the interpolation are
vector instructions, and the neighbours are four paired loads (one 8-byte load per
float32 pair, one 16-byte load per float64 pair) put together with shuffles and
converted to float64 four at a time.

The loop itself is emitted (:func:`_emit_blocks`), so that:

* the positions are a vector induction variable: ``q = o + (t + i)·s`` for the first
  block, then advanced by ``LANES·s`` (one addition instead of a multiplication and an
  addition on the loop's dependency chain: cone projection and back-projection 8 to
  12 % faster at 256³, one thread);
* the floor is the conversion to integers and back (the positions are positive, so
  truncation is the floor: one instruction less than a rounding plus a conversion). The
  integers are 64-bit where the CPU converts 64-bit integer vectors (AVX-512DQ), 32-bit
  elsewhere (AVX2 has only the 32-bit conversions; 64-bit ones become scalar code there);
* on x86 the integers reach the address registers through memory (one store, four
  loads) rather than by lane extractions, which compete with the shuffles for one port,
  the loop's bottleneck;
* the kernels' difference loops can run in the same pass
  (:func:`add_interp_differences`: each value minus its left neighbour, added into one
  or two detector or voxel columns), without storing and reloading the values.

Per position (micro-benchmark, 256 positions per column, one core of an AVX-512 Intel
Xeon): the first vector version (a block per call, floor, lane extractions) took 0.78 ns
for float64 sums and 0.96 ns for float32, this loop 0.51 and 0.52 ns; compiled for AVX2
on the same core, 0.84 and 1.02 → 0.54 and 0.59 ns.

The arithmetic is otherwise the scalar loop's, operation for operation, in float64 and
without fast-math flags (no fused multiply-add, no reassociation): ``k = ⌊q⌋``,
``E[t + i] = c0 + (q − k)·(c1 − c0)``, and the fused differences are those of the
separate loops. The advanced positions differ from ``o + (t + i)·s`` by their rounding,
at most half a unit in the last place of q per block (under 4e-12 of a row after 256
positions in a column of up to 512); the interpolant is continuous, so the values move
by as little (the 60 outputs of a round trip over the geometries: 59 unchanged bit for
bit, one by 8e-12 of its largest value), and a position
that rounds across an integer reads the neighbouring pair with a fraction of 0 or 1, the
same value. The callers leave each range's last inside position to their scalar loop,
so that the vector positions stay a whole step (far more than that rounding) inside the
column and every read inside it.

The intrinsics emit LLVM IR (LLVM then picks the CPU's instructions; on a CPU without
these vector units it emits scalar code for the same operations) into a small function
of the calling kernel's module, one per variant, which the kernel calls once per voxel
column and LLVM never inlines (:func:`_outlined`): no compiled function of their own for
Numba, and a register allocation of their own. Inlined into the kernels, the loops
reloaded base pointers from the stack in some kernels and not in others, depending on
code far from them. Outlined (2 threads, best of 3, alternated with the inlined loops,
128³ / 256³): cone projection 0.158 → 0.145 / 1.203 → 1.131 s, cone back-projection
0.152 → 0.143 / 1.002 → 0.951 s, helical back-projection 0.252 → 0.242 / 1.673 → 1.605 s,
the curved cone, helical projection and the modular kernels within the noise (±3 %);
outputs bit for bit.

:func:`prefetch` is an intrinsic too, emitted inline: a cache hint the cone projector
issues ahead of its reads (:func:`leap.kernels.cpu.columns.prefetch_column`).
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite import binding as llvm
from numba.core import cgutils, types
from numba.core.extending import intrinsic

#: Positions per block of :func:`interp_blocks` (four float64: one AVX2 register; eight,
#: on AVX-512, was slower: the gathered pairs, not the arithmetic, set the pace).
LANES = 4

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_F64 = ir.DoubleType()


def _lane_constant(values):
    return ir.Constant(ir.VectorType(_I32, len(values)), list(values))


def _x86(builder):
    """Whether the module is compiled for x86-64 (see the index loads in
    :func:`_emit_blocks`)."""
    triple = builder.module.triple
    if not triple or triple.startswith("unknown"):
        triple = llvm.get_process_triple()
    return triple.startswith(("x86_64", "amd64"))


def _index_type(context):
    """64-bit lanes where the target converts 64-bit integer vectors (AVX-512DQ with
    VL), 32-bit ones elsewhere (positions stay far below 2³¹: they index one column)."""
    features = set(getattr(context.codegen(), "_tm_features", "").split(","))
    return _I64 if {"+avx512dq", "+avx512vl"} <= features else _I32


def _is_1d(a, dtypes):
    return (isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C"
            and a.dtype in dtypes)


def _splat(builder, x, vd):
    v = ir.Constant(vd, ir.Undefined)
    for i in range(LANES):
        v = builder.insert_element(v, x, ir.Constant(_I32, i))
    return v


def _interpolated(builder, frac, cells):
    """``c0 + (q − ⌊q⌋)·(c1 − c0)``: the cumulative sums' interpolant at the positions."""
    c0, c1 = cells[:2]
    return builder.fadd(c0, builder.fmul(frac, builder.fsub(c1, c0)))


def _emit_blocks(index_ty, builder, data, o, s, t, count, carry, body, cells=2):
    """Emit the loop over ``count`` blocks of positions ``t + i`` (int64 values) of the
    column at ``data`` (a float or double pointer to its first entry): per block,
    ``body(block, frac, cells, carried)`` (``frac`` the vector of the positions' fractions
    ``q − ⌊q⌋``, ``cells`` the vectors ``data[⌊q⌋ + c]``, c = 0, 1 and, for double data
    and ``cells=4``, 2, 3), which returns the next ``carried`` (a value of LLVM type
    ``carry[1]`` that starts as ``carry[0]``, or None). Returns the carried value after
    the loop."""
    vd = ir.VectorType(_F64, LANES)
    vk = ir.VectorType(index_ty, LANES)

    def splat(x):
        return _splat(builder, x, vd)

    slot = cgutils.alloca_once(builder, vk) if _x86(builder) else None
    ov, sv = splat(o), splat(s)
    lanes0 = builder.fadd(splat(builder.sitofp(t, _F64)),
                          ir.Constant(vd, [float(i) for i in range(LANES)]))
    # The positions advance by LANES·s a block (module notes).
    q0 = builder.fadd(ov, builder.fmul(lanes0, sv))
    advance = builder.fmul(sv, ir.Constant(vd, [float(LANES)] * LANES))
    entry = builder.block
    loop = builder.append_basic_block("interp.loop")
    done = builder.append_basic_block("interp.done")
    builder.cbranch(builder.icmp_signed(">", count, ir.Constant(_I64, 0)), loop, done)

    builder.position_at_end(loop)
    block = builder.phi(_I64)
    q = builder.phi(vd)
    carried = builder.phi(carry[1]) if carry else None
    k = builder.fptosi(q, vk)               # q > 0: truncation is the floor
    frac = builder.fsub(q, builder.sitofp(k, vd))

    if slot is None:
        indices = [builder.sext(builder.extract_element(k, ir.Constant(_I32, i)), _I64)
                   for i in range(LANES)]
    else:
        # The integers through memory: one vector store and four scalar loads, instead
        # of extracting lanes, which on x86 shares one port with the shuffles below (the
        # loop's bottleneck; 20 % less time per position). The empty barrier, which
        # takes the slot's address, keeps LLVM from turning the loads back into
        # extractions.
        builder.store(k, slot)
        builder.asm(ir.FunctionType(ir.VoidType(), [slot.type]), "", "r,~{memory}", [slot],
                    True)
        lanes = builder.bitcast(slot, vk.element.as_pointer())
        indices = [builder.sext(builder.load(builder.gep(lanes, [ir.Constant(_I32, i)])), _I64)
                   for i in range(LANES)]

    def neighbours(i, ty, align, offset):
        ptr = builder.gep(data, [builder.add(indices[i], ir.Constant(_I64, offset))],
                          inbounds=True)
        return builder.load(builder.bitcast(ptr, ty.as_pointer()), align=align)

    # Each lane's pair (c0, c1) as one load (8 bytes of float32, 16 of float64); the
    # pairs of lanes 0 and 2, 1 and 3 side by side (for float32 then converted, four
    # values per instruction), then the even and odd entries: two inserts and two
    # unpacks (inserting lane by lane took twice as many instructions; float32 pairs
    # as 8-byte integers put together and split by shuffles, 6 % slower). Four cells:
    # the pairs (c2, c3) the same way.
    single = isinstance(data.type.pointee, ir.FloatType)
    assert cells == 2 or not single
    pair_ty = ir.VectorType(ir.FloatType() if single else _F64, 2)
    values = []
    for offset in range(0, cells, 2):
        p0, p1, p2, p3 = (neighbours(i, pair_ty, 4 if single else 8, offset)
                          for i in range(LANES))
        x = builder.shuffle_vector(p0, p2, _lane_constant(range(4)))
        y = builder.shuffle_vector(p1, p3, _lane_constant(range(4)))
        if single:
            x, y = builder.fpext(x, vd), builder.fpext(y, vd)
        values.append(builder.shuffle_vector(x, y, _lane_constant((0, 4, 2, 6))))
        values.append(builder.shuffle_vector(x, y, _lane_constant((1, 5, 3, 7))))
    following_carried = body(block, frac, values, carried)

    following = builder.add(block, ir.Constant(_I64, 1))
    block.add_incoming(ir.Constant(_I64, 0), entry)
    block.add_incoming(following, builder.block)
    q.add_incoming(q0, entry)
    q.add_incoming(builder.fadd(q, advance), builder.block)
    if carry:
        carried.add_incoming(carry[0], entry)
        carried.add_incoming(following_carried, builder.block)
    end = builder.block
    builder.cbranch(builder.icmp_signed("<", following, count), loop, done)
    builder.position_at_end(done)
    if not carry:
        return None
    result = builder.phi(carry[1])
    result.add_incoming(carry[0], entry)
    result.add_incoming(following_carried, end)
    return result


def _int64(context, builder, value, ty):
    return context.cast(builder, value, ty, types.int64)


def _data(context, builder, array_ty, array_v, offset=None):
    """Pointer to ``array[offset]`` (or to its first element)."""
    data = context.make_array(array_ty)(context, builder, array_v).data
    return data if offset is None else builder.gep(data, [offset], inbounds=True)


def _vector_at(builder, data, index):
    """Pointer to ``data[index]`` (a double pointer) as a pointer to LANES float64."""
    return builder.bitcast(builder.gep(data, [index], inbounds=True),
                           ir.VectorType(_F64, LANES).as_pointer())


def _load_vector(builder, data, index):
    """The LANES float64 at ``data[index]`` (a double pointer)."""
    return builder.load(_vector_at(builder, data, index), align=8)


def _stretch_vector(builder, squares, index, r):
    """√(1 + D2[index..]·r) (r a vector): voxel_weights.ray_stretch, operation for
    operation."""
    vd = ir.VectorType(_F64, LANES)
    sqrt = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vd, [vd]),
                                          f"llvm.sqrt.v{LANES}f64")
    x = builder.fmul(_load_vector(builder, squares, index), r)
    return builder.call(sqrt, [builder.fadd(ir.Constant(vd, [1.0] * LANES), x)])


def _outlined(builder, name, return_type, args, emit):
    """Call the module's internal function ``name`` on ``args``, first defining it
    (never inlined) with ``emit(builder, arguments)`` emitting its body and returning its
    result (None for void).

    Why a function of its own: emitted into a kernel, the loop shared the register
    allocation of the whole kernel, which varied with code far from it. The cone
    back-projector's loop reloaded base pointers from the stack four times a block, and
    after an unrelated change to the modular projector its interpolation loop did so
    five times. In a function of its own the loop keeps its pointers in registers,
    whatever its caller holds, for one call per voxel column.
    """
    module = builder.module
    try:
        fn = module.get_global(name)
    except KeyError:
        fn = ir.Function(module, ir.FunctionType(return_type, [v.type for v in args]), name)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        fn.attributes.add("nounwind")
        body = ir.IRBuilder(fn.append_basic_block("entry"))
        result = emit(body, fn.args)
        if result is None:
            body.ret_void()
        else:
            body.ret(result)
    return builder.call(fn, args)


def _variant(name, cum_ty, *flags):
    """The name of an outlined loop's variant: its cumulative sums' type and flags."""
    return ".".join(["leap.simd", name, str(cum_ty.dtype)] + [f for f in flags if f])


@intrinsic
def interp_blocks(typingctx, cum, base, o, s, t, count, E):
    """``E[t + i] = c0 + (q − ⌊q⌋)·(c1 − c0)`` for ``0 <= i < LANES·count``, with
    ``q = o + (t + i)·s`` and ``c0, c1 = cum[base + ⌊q⌋]``, ``cum[base + ⌊q⌋ + 1]``.

    cum : 1-D C-contiguous float32 or float64 array; base : unsigned offset into it;
    o, s : float64; t, count : integers; E : 1-D C-contiguous float64 array. The caller
    guarantees ``0 < q`` and ``base + ⌊q⌋ + 1`` inside ``cum`` for every position and
    ``t + LANES·count <= len(E)`` (no bounds checks: the kernels peel the ends first).
    """
    if not (_is_1d(cum, (types.float32, types.float64)) and _is_1d(E, (types.float64,))
            and all(isinstance(v, types.Integer) for v in (base, t, count))):
        return None
    sig = types.void(cum, base, types.float64, types.float64, t, count, E)

    def codegen(context, builder, signature, args):
        cum_ty, base_ty, _, _, t_ty, count_ty, E_ty = signature.args
        cum_v, base_v, o_v, s_v, t_v, count_v, E_v = args
        index_ty = _index_type(context)

        def emit(b, params):
            data, o, s, t, count, E = params

            def store(block, frac, cells, _):
                index = b.add(t, b.mul(block, ir.Constant(_I64, LANES)))
                b.store(_interpolated(b, frac, cells), _vector_at(b, E, index), align=8)

            _emit_blocks(index_ty, b, data, o, s, t, count, None, store)

        _outlined(builder, _variant("interp_blocks", cum_ty, index_ty == _I64 and "i64"),
                  ir.VoidType(),
                  [_data(context, builder, cum_ty, cum_v,
                         _int64(context, builder, base_v, base_ty)), o_v, s_v,
                   _int64(context, builder, t_v, t_ty),
                   _int64(context, builder, count_v, count_ty),
                   _data(context, builder, E_ty, E_v)], emit)
        return context.get_dummy_value()

    return sig, codegen


def _is_stretch(spec):
    """Whether spec is a ray-stretch triple (D2, r, v) of :func:`add_interp_differences`."""
    return (isinstance(spec, types.BaseTuple) and len(spec) == 3
            and _is_1d(spec[0], (types.float64,)) and spec[1] == types.float64
            and _is_1d(spec[2], (types.float64,)))


def _stretch_pointers(context, builder, ty, value):
    """[D2 data, r, v data] of a stretch triple's type and value."""
    d2, r, v = (builder.extract_value(value, i) for i in range(3))
    return [_data(context, builder, ty[0], d2), r, _data(context, builder, ty[2], v)]


@intrinsic
def add_interp_differences(typingctx, cum, base, o, s, t, count, prev, a, a0, w0, a1, w1):
    """The values ``e_u`` of :func:`interp_blocks` at ``u = t .. t + LANES·count − 1``,
    not stored: their differences ``d_u = e_u − e_{u−1}`` (``e_{t−1} = prev``) are added
    to ``a[a0 + u − 1] += w0·d_u`` and, unless a1 is None, ``a[a1 + u − 1] += w1·d_u``
    (the kernels' difference loops, in the same pass: no store and reload of the
    values, bit for bit the same sums). Returns ``e`` at the last position (prev if
    count is 0).

    Weights per difference instead (with a1 None): w0 an array, weight ``w0[u − 1]``
    (slice weights), or a triple ``(D2, r, v)``, weight ``v[u − 1]·√(1 + D2[u − 1]·r)``:
    slice weights v times the vertical modular modules' ray stretch
    (:mod:`leap.kernels.cpu.voxel_weights`), its square root taken here.

    a : 1-D C-contiguous float64 array; a0, a1 : integer offsets; prev, w1 : float64;
    w0 : float64, an array or a triple (array, float64, array); D2, v, Q : 1-D
    C-contiguous float64
    arrays; the other arguments and the caller's guarantees as for :func:`interp_blocks`,
    and ``a[a0 + t − 1 .. a0 + t + LANES·count − 2]`` (and a1's, D2's, v's) inside the
    arrays.
    """
    two = not isinstance(a1, types.NoneType)
    per_position = not isinstance(w0, (types.Float, types.Integer))
    stretched = per_position and _is_stretch(w0)
    if not (_is_1d(cum, (types.float32, types.float64)) and _is_1d(a, (types.float64,))
            and all(isinstance(v, types.Integer) for v in (base, t, count, a0))
            and (not two or isinstance(a1, types.Integer))
            and (not per_position or ((stretched or _is_1d(w0, (types.float64,)))
                                      and not two))):
        return None
    f64 = types.float64
    sig = f64(cum, base, f64, f64, t, count, f64, a, a0, w0 if per_position else f64, a1, f64)

    def codegen(context, builder, signature, args):
        cum_ty, base_ty, _, _, t_ty, count_ty, _, a_ty, a0_ty, w0_ty, a1_ty, _ = signature.args
        cum_v, base_v, o_v, s_v, t_v, count_v, prev_v, a_v, a0_v, w0_v, a1_v, w1_v = args
        vd = ir.VectorType(_F64, LANES)
        index_ty = _index_type(context)
        params = [_data(context, builder, cum_ty, cum_v,
                        _int64(context, builder, base_v, base_ty)), o_v, s_v,
                  _int64(context, builder, t_v, t_ty),
                  _int64(context, builder, count_v, count_ty), prev_v,
                  _data(context, builder, a_ty, a_v), _int64(context, builder, a0_v, a0_ty)]
        params += (_stretch_pointers(context, builder, w0_ty, w0_v) if stretched
                   else [_data(context, builder, w0_ty, w0_v)] if per_position else [w0_v])
        if two:
            params += [_int64(context, builder, a1_v, a1_ty), w1_v]

        def emit(b, values):
            values = list(values)
            data, o, s, t, count, prev, a, a0 = values[:8]
            rest = values[8:]
            if stretched:
                d2w, rw, vw = rest[:3]
                rw = _splat(b, rw, vd)
                rest = rest[3:]
                outputs = [(a0, None)]
            elif per_position:
                vw = rest[0]
                rest = rest[1:]
                outputs = [(a0, None)]
            else:
                outputs = [(a0, rest[0])]
                rest = rest[1:]
            if two:
                outputs.append((rest[0], rest[1]))
            one = ir.Constant(_I64, 1)
            # a[offset + t − 1 + LANES·block + i], i < LANES.
            starts = [b.sub(b.add(offset, t), one) for offset, _ in outputs]
            weights = [ir.Constant(vd, ir.Undefined) if w is None else _splat(b, w, vd)
                       for _, w in outputs]
            prev_vector = b.insert_element(ir.Constant(vd, ir.Undefined), prev,
                                           ir.Constant(_I32, LANES - 1))

            def add(block, frac, cells, carried):
                e = _interpolated(b, frac, cells)
                # (e_{u−1}) = the previous block's last value, then this block's first three.
                before = b.shuffle_vector(carried, e, _lane_constant(
                    range(LANES - 1, 2 * LANES - 1)))
                d = b.fsub(e, before)
                step = b.mul(block, ir.Constant(_I64, LANES))
                if per_position:
                    index = b.add(b.sub(t, one), step)
                    weights[0] = _load_vector(b, vw, index)
                    if stretched:
                        weights[0] = b.fmul(weights[0], _stretch_vector(b, d2w, index, rw))
                for start, wv in zip(starts, weights):
                    ptr = _vector_at(b, a, b.add(start, step))
                    b.store(b.fadd(b.load(ptr, align=8), b.fmul(wv, d)), ptr, align=8)
                return e

            last = _emit_blocks(index_ty, b, data, o, s, t, count, (prev_vector, vd), add)
            return b.extract_element(last, ir.Constant(_I32, LANES - 1))

        return _outlined(builder, _variant("add_interp_differences", cum_ty,
                                           index_ty == _I64 and "i64", two and "two",
                                           stretched and "stretch",
                                           per_position and not stretched and "weights"),
                         _F64, params, emit)

    return sig, codegen


@intrinsic
def add_row_integrals(typingctx, u, o, s, t, count, a, a0, w0, a1, w1, roots, root_blocks):
    """``a[a0 + j] += w0·d_j`` and ``a[a1 + j] += w1·d_j`` for the rows ``j = t .. t +
    LANES·count − 1``, where ``d_j = ∫ u`` over ``[p, p + s]``, ``p = o + j·s``, of the
    column's piecewise-constant values (``u[k]`` on ``[k, k + 1)``): the difference of
    the cumulative integral at the row's two edges, taken without the cumulative sums
    (:func:`leap.kernels.cpu.columns.row_integral`, operation for operation; the
    positions advance by addition, as in :func:`interp_blocks`). Returns nothing.

    A row meets at most three cells when ``0 < s <= 2``: with ``k = ⌊p⌋`` and ``k' =
    ⌊p + s⌋ <= k + 2``, ``d = (Σ_{k <= i < k'} u[i]) − (p − k)·u[k] + (p + s −
    k')·u[k']``; the sum is 0, ``u[k]`` or ``u[k] + u[k + 1]``, chosen by comparisons, so
    the loop has no branches.

    ``roots``, a triple ``(D2, r, Q)``: ``Q[i] = √(1 + D2[i]·r)`` for ``0 <= i <
    LANES·min(count, root_blocks)`` in the same loop, as for
    :func:`add_interp_differences` (the caller shares the roots between this loop and
    others: the square-root unit sets this loop's pace when it takes one a row).

    u, a : 1-D C-contiguous float64 arrays; o, s, w0, w1 : float64; t, count, a0, a1 :
    integers. The caller guarantees ``0 <= p`` and ``u[⌊p⌋ .. ⌊p⌋ + 3]`` inside ``u``
    for every row, ``0 < s <= 2``, and the rows of a inside it.
    """
    if not (_is_1d(u, (types.float64,)) and _is_1d(a, (types.float64,))
            and all(isinstance(v, types.Integer) for v in (t, count, a0, a1, root_blocks))
            and _is_stretch(roots)):
        return None
    f64 = types.float64
    sig = types.void(u, f64, f64, t, count, a, a0, f64, a1, f64, roots, root_blocks)

    def codegen(context, builder, signature, args):
        u_ty, _, _, t_ty, count_ty, a_ty, a0_ty, _, a1_ty, _, roots_ty, rb_ty = signature.args
        u_v, o_v, s_v, t_v, count_v, a_v, a0_v, w0_v, a1_v, w1_v, roots_v, rb_v = args
        vd = ir.VectorType(_F64, LANES)
        index_ty = _index_type(context)
        params = [_data(context, builder, u_ty, u_v), o_v, s_v,
                  _int64(context, builder, t_v, t_ty),
                  _int64(context, builder, count_v, count_ty),
                  _data(context, builder, a_ty, a_v), _int64(context, builder, a0_v, a0_ty),
                  w0_v, _int64(context, builder, a1_v, a1_ty), w1_v]
        params += _stretch_pointers(context, builder, roots_ty, roots_v)
        params.append(_int64(context, builder, rb_v, rb_ty))

        def emit(b, values):
            data, o, s, t, count, a, a0, w0, a1, w1, d2q, rq, qq, rb = values
            rq = _splat(b, rq, vd)
            sv = _splat(b, s, vd)
            zero = ir.Constant(vd, [0.0] * LANES)
            one = ir.Constant(vd, [1.0] * LANES)
            two = ir.Constant(vd, [2.0] * LANES)
            outputs = [(b.add(a0, t), _splat(b, w0, vd)), (b.add(a1, t), _splat(b, w1, vd))]

            def add(block, frac, cells, _):
                c0, c1, c2, _ = cells
                # The row's upper edge, from the start of cell k: in cell k + 0, 1 or 2.
                upper = b.fadd(frac, sv)
                past1 = b.fcmp_ordered(">=", upper, one)
                past2 = b.fcmp_ordered(">=", upper, two)
                frac1 = b.fsub(upper, b.select(past2, two, b.select(past1, one, zero)))
                top = b.select(past2, c2, b.select(past1, c1, c0))
                whole = b.fadd(b.select(past1, c0, zero), b.select(past2, c1, zero))
                d = b.fadd(b.fsub(whole, b.fmul(frac, c0)), b.fmul(frac1, top))
                step = b.mul(block, ir.Constant(_I64, LANES))
                with b.if_then(b.icmp_signed("<", block, rb), likely=True):
                    b.store(_stretch_vector(b, d2q, step, rq), _vector_at(b, qq, step),
                            align=8)
                for start, wv in outputs:
                    ptr = _vector_at(b, a, b.add(start, step))
                    b.store(b.fadd(b.load(ptr, align=8), b.fmul(wv, d)), ptr, align=8)
                return None

            _emit_blocks(index_ty, b, data, o, s, t, count, None, add, cells=4)

        _outlined(builder, _variant("add_row_integrals", u_ty, index_ty == _I64 and "i64"),
                  ir.VoidType(), params, emit)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def prefetch(typingctx, a, index):
    """Ask the CPU to bring the cache line holding ``a[index]`` into its caches (a hint:
    no load, no fault, nothing if the index lies outside the array). a : 1-D
    C-contiguous array; index : integer."""
    if not (isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C"
            and isinstance(index, types.Integer)):
        return None
    sig = types.void(a, index)

    def codegen(context, builder, signature, args):
        a_ty, index_ty = signature.args
        data = context.make_array(a_ty)(context, builder, args[0]).data
        # No ``inbounds``: the index may lie past the end.
        ptr = builder.bitcast(builder.gep(data, [_int64(context, builder, args[1], index_ty)]),
                              ir.IntType(8).as_pointer())
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ptr.type, _I32, _I32, _I32]),
            "llvm.prefetch.p0")
        # read, keep in all cache levels, data cache
        builder.call(fn, [ptr, ir.Constant(_I32, 0), ir.Constant(_I32, 3),
                          ir.Constant(_I32, 1)])
        return context.get_dummy_value()

    return sig, codegen
