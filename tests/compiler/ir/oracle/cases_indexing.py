"""gather (take-style rows, general, batching dims), scatter (add with duplicate
indices, overwrite with unique indices, out-of-bounds updates skipped) and sort
(ascending, descending, TOTALORDER with NaNs, stable variadic key/value)."""
import itertools

import numpy as np

from .dtypes import as_type, rand_float, rand_int, rand_values, total_order_key, wrap
from .hlo import Module, ints, shape_str, tuple_str


def index_vectors(indices, ivd):
    """indices with the index vector dimension moved last (a trailing 1 if implicit)."""
    if ivd == indices.ndim:
        indices = indices[..., np.newaxis]
    return np.moveaxis(indices, ivd, -1)


def gather_ref(operand, indices, offset_dims, collapsed, start_index_map, ivd, slice_sizes,
               operand_batching=(), indices_batching=()):
    idx = index_vectors(indices, ivd)
    batch_shape = idx.shape[:-1]
    idx_batch_dims = [d for d in range(indices.ndim + (ivd == indices.ndim)) if d != ivd]
    window = [d for d in range(operand.ndim) if d not in collapsed and d not in operand_batching]
    rank = len(batch_shape) + len(offset_dims)
    batch_out = [d for d in range(rank) if d not in offset_dims]
    out_shape = [0] * rank
    for i, d in enumerate(offset_dims):
        out_shape[d] = slice_sizes[window[i]]
    for i, d in enumerate(batch_out):
        out_shape[d] = batch_shape[i]
    out = np.zeros(out_shape, dtype=operand.dtype)
    for oi in itertools.product(*[range(n) for n in out_shape]):
        g = tuple(oi[d] for d in batch_out)
        start = [0] * operand.ndim
        for k, od in enumerate(start_index_map):
            start[od] = int(idx[g][k])
        for od, idim in zip(operand_batching, indices_batching):
            start[od] = g[idx_batch_dims.index(idim)]
        # Starts clamp so that the whole slice is in bounds.
        start = [min(max(s, 0), operand.shape[d] - slice_sizes[d]) for d, s in enumerate(start)]
        for i, d in enumerate(offset_dims):
            start[window[i]] += oi[d]
        out[oi] = operand[tuple(start)]
    return out


def gather_case(ctx, name, t, operand, it, indices, offset_dims, collapsed, start_index_map, ivd, slice_sizes,
                operand_batching=(), indices_batching=()):
    y = gather_ref(operand, indices, offset_dims, collapsed, start_index_map, ivd, slice_sizes,
                   operand_batching, indices_batching)
    m = Module()
    e = m.entry()
    p, pi = e.param(t, list(operand.shape)), e.param(it, list(indices.shape))
    attrs = [f'offset_dims={ints(offset_dims)}', f'collapsed_slice_dims={ints(collapsed)}',
             f'start_index_map={ints(start_index_map)}']
    if operand_batching:
        attrs += [f'operand_batching_dims={ints(operand_batching)}',
                  f'start_indices_batching_dims={ints(indices_batching)}']
    attrs += [f'index_vector_dim={ivd}', f'slice_sizes={ints(slice_sizes)}']
    r = e.op('gather', t, list(y.shape), [p, pi], attrs)
    ctx.add(name, m.text(e, r), [(t, operand), (it, indices)], [(t, y)])


def gather_cases(ctx):
    rng = ctx.rng
    # jnp.take(x, idx, axis=0): rows of a [5, 3] table, indices [4] (some out of range).
    x = rand_values(rng, 'f32', [5, 3])
    idx = np.array([4, 0, 7, -2], dtype=np.int32)
    gather_case(ctx, 'gather_take_rows_f32', 'f32', x, 's32', idx, [1], [0], [0], 1, [1, 3])
    # The same with an explicit index vector dimension and a rank-2 index array.
    x = rand_values(rng, 'bf16', [6, 4])
    idx = rand_int(rng, 's64', [2, 3, 1], -1, 6)
    gather_case(ctx, 'gather_take_rows_2d_bf16', 'bf16', x, 's64', idx, [2], [0], [0], 2, [1, 4])
    # General: 2-d start indices into a [4, 5, 6] operand, [2, 3] windows along dims 1, 2.
    x = rand_values(rng, 's32', [4, 5, 6])
    idx = rand_int(rng, 's32', [3, 2], -1, 5)
    gather_case(ctx, 'gather_general_s32', 's32', x, 's32', idx, [1, 2], [0], [0, 1], 1, [1, 2, 3])
    # Index vector dimension first, start_index_map out of order, offset dims first.
    x = rand_values(rng, 'u8', [5, 4, 3])
    idx = rand_int(rng, 'u32', [2, 2, 2], 0, 5)
    gather_case(ctx, 'gather_ivd0_u8', 'u8', x, 'u32', idx, [0, 1], [1], [2, 1], 0, [2, 1, 2])
    # Everything collapsed: a point gather (like x[i, j]).
    x = rand_values(rng, 'f64', [3, 4])
    idx = rand_int(rng, 's32', [5, 2], -1, 4)
    gather_case(ctx, 'gather_points_f64', 'f64', x, 's32', idx, [], [0, 1], [0, 1], 1, [1, 1])
    # Batching dims: per-batch row lookup (operand [B, N, D], indices [B, K]).
    x = rand_values(rng, 'f32', [2, 5, 3])
    idx = rand_int(rng, 's32', [2, 4], 0, 4)
    gather_case(ctx, 'gather_batching_f32', 'f32', x, 's32', idx, [2], [1], [1], 2, [1, 1, 3], [0], [0])
    # Zero-size indices.
    x = rand_values(rng, 'f32', [3, 2])
    idx = np.zeros([0], np.int32)
    gather_case(ctx, 'gather_empty_f32', 'f32', x, 's32', idx, [1], [0], [0], 1, [1, 2])


def scatter_ref(operand, indices, updates, uwd, iwd, sdod, ivd, combine):
    """Updates falling outside the operand are skipped (cases keep each update window
    either wholly inside or wholly outside)."""
    out = operand.copy()
    idx = index_vectors(indices, ivd)
    scatter_dims = [d for d in range(updates.ndim) if d not in uwd]
    window = [d for d in range(operand.ndim) if d not in iwd]
    for ui in itertools.product(*[range(n) for n in updates.shape]):
        g = tuple(ui[d] for d in scatter_dims)
        full = [0] * operand.ndim
        for k, od in enumerate(sdod):
            full[od] = int(idx[g][k])
        for i, d in enumerate(uwd):
            full[window[i]] += ui[d]
        if any(f < 0 or f >= n for f, n in zip(full, operand.shape)):
            continue
        out[tuple(full)] = combine(out[tuple(full)], updates[ui])
    return out


def scatter_case(ctx, name, t, operand, it, indices, updates, uwd, iwd, sdod, ivd, opcode, combine,
                 unique=False):
    y = scatter_ref(operand, indices, updates, uwd, iwd, sdod, ivd, combine)
    m = Module()
    if opcode == 'assign':
        c = m.comp(f'assign_{t}')
        c.param(t, [])
        new = c.param(t, [])
        comp = '%' + m.finish(c, new)
    else:
        comp = m.binary(opcode, t)
    e = m.entry()
    p, pi, pu = e.param(t, list(operand.shape)), e.param(it, list(indices.shape)), e.param(t, list(updates.shape))
    attrs = [f'update_window_dims={ints(uwd)}', f'inserted_window_dims={ints(iwd)}',
             f'scatter_dims_to_operand_dims={ints(sdod)}', f'index_vector_dim={ivd}']
    if unique:
        attrs.append('unique_indices=true')
    attrs.append(f'to_apply={comp}')
    r = e.op('scatter', t, list(operand.shape), [p, pi, pu], attrs)
    ctx.add(name, m.text(e, r), [(t, operand), (it, indices), (t, updates)], [(t, y)])


def scatter_cases(ctx):
    rng = ctx.rng
    # Row-wise add with duplicate indices (integer-valued floats: exact in any order) and
    # one row index past the end.
    x = rand_float(rng, 'f32', [5, 3], -4, 4, integral=True)
    idx = np.array([[1], [3], [1], [9], [1]], dtype=np.int32)
    u = rand_float(rng, 'f32', [5, 3], -4, 4, integral=True)
    scatter_case(ctx, 'scatter_add_rows_f32', 'f32', x, 's32', idx, u, [1], [0], [0], 1, 'add', lambda a, b: a + b)
    # Point add into s32 with wraparound and duplicates.
    x = rand_int(rng, 's32', [3, 4])
    idx = np.array([[0, 1], [2, 3], [0, 1], [-1, 0], [2, 3], [1, 1]], dtype=np.int64)
    u = rand_int(rng, 's32', [6])
    scatter_case(ctx, 'scatter_add_points_s32', 's32', x, 's64', idx, u, [], [0, 1], [0, 1], 1, 'add',
                 lambda a, b: wrap('s32', int(a) + int(b)))
    # Overwrite with unique indices (order-free), window along dim 0, scattered dim 1.
    x = rand_values(rng, 'bf16', [4, 6])
    idx = np.array([5, 0, 2], dtype=np.int32)
    u = rand_values(rng, 'bf16', [4, 3])
    scatter_case(ctx, 'scatter_assign_cols_bf16', 'bf16', x, 's32', idx, u, [0], [1], [1], 1, 'assign',
                 lambda a, b: b, unique=True)
    # 2-d windows placed by 1-d indices with index_vector_dim = 0, max combiner.
    x = rand_int(rng, 'u16', [6, 5])
    idx = np.array([[0, 3, 4]], dtype=np.int32)
    u = rand_int(rng, 'u16', [3, 2, 2])
    scatter_case(ctx, 'scatter_max_windows_u16', 'u16', x, 's32', idx, u, [1, 2], [], [0], 0, 'maximum',
                 lambda a, b: max(a, b))
    # Scalar updates into a vector with the implicit trailing index vector dimension.
    x = rand_float(rng, 'f64', [6], -4, 4, integral=True)
    idx = np.array([2, 2, 5, 0, 2], dtype=np.int32)
    u = rand_float(rng, 'f64', [5], -4, 4, integral=True)
    scatter_case(ctx, 'scatter_add_implicit_ivd_f64', 'f64', x, 's32', idx, u, [], [0], [0], 1, 'add',
                 lambda a, b: a + b)
    variadic_scatter_case(ctx)


def variadic_scatter_case(ctx):
    """Two operands scattered together: the combiner takes (old1, old2, new1, new2)."""
    rng = ctx.rng
    x1, x2 = rand_float(rng, 'f32', [5], -4, 4, integral=True), rand_int(rng, 's32', [5])
    idx = np.array([[1], [3], [1], [0], [6]], dtype=np.int32)
    u1, u2 = rand_float(rng, 'f32', [5], -4, 4, integral=True), rand_int(rng, 's32', [5])
    y1 = scatter_ref(x1, idx, u1, [], [0], [0], 1, lambda a, b: a + b)
    y2 = scatter_ref(x2, idx, u2, [], [0], [0], 1, max)
    m = Module()
    c = m.comp('add_max')
    a1, a2, b1, b2 = c.param('f32', []), c.param('s32', []), c.param('f32', []), c.param('s32', [])
    comb = m.finish(c, c.tuple([c.op('add', 'f32', [], [a1, b1]), c.op('maximum', 's32', [], [a2, b2])]))
    e = m.entry()
    p1, p2 = e.param('f32', [5]), e.param('s32', [5])
    pi = e.param('s32', [5, 1])
    q1, q2 = e.param('f32', [5]), e.param('s32', [5])
    shape = tuple_str([shape_str('f32', [5]), shape_str('s32', [5])])
    r = e.op('scatter', None, None, [p1, p2, pi, q1, q2],
             ['update_window_dims={}', 'inserted_window_dims={0}', 'scatter_dims_to_operand_dims={0}',
              'index_vector_dim=1', f'to_apply=%{comb}'], shape=shape)
    ctx.add('scatter_variadic_f32_s32', m.text(e, r), [('f32', x1), ('s32', x2), ('s32', idx), ('f32', u1), ('s32', u2)],
            [('f32', y1), ('s32', y2)])


# ---- sort ----------------------------------------------------------------------------

def sort_perm(keys, reverse):
    """Stable argsort; Python's sort keeps equal keys in input order even reversed."""
    return sorted(range(len(keys)), key=lambda i: keys[i], reverse=reverse)


def apply_sort(arrays, key_fn, dim, reverse):
    """Sorts every 1-d slice along dim by the keys of arrays[0]; permutes all arrays."""
    keys = key_fn(arrays[0])
    outs = [a.copy() for a in arrays]
    moved_keys = np.moveaxis(keys, dim, -1)
    moved = [np.moveaxis(o, dim, -1) for o in outs]
    srcs = [np.moveaxis(a, dim, -1) for a in arrays]
    for pos in itertools.product(*[range(n) for n in moved_keys.shape[:-1]]):
        perm = sort_perm(moved_keys[pos].tolist(), reverse)
        for dst, src in zip(moved, srcs):
            dst[pos] = src[pos][perm]
    return outs


def comparator(m, types, direction, ctype=None):
    c = m.comp('cmp')
    ps = []
    for t in types:
        ps += [c.param(t, []), c.param(t, [])]
    attrs = [f'direction={direction}'] + ([f'type={ctype}'] if ctype else [])
    r = c.op('compare', 'pred', [], [ps[0], ps[1]], attrs)
    return '%' + m.finish(c, r)


def sort_case(ctx, name, arrays, types, dim, direction, ctype=None, stable=True, key_fn=None):
    reverse = direction == 'GT'
    key_fn = key_fn or (lambda a: a.astype(object))
    ys = apply_sort(arrays, key_fn, dim, reverse)
    m = Module()
    cmp = comparator(m, types, direction, ctype)
    e = m.entry()
    ps = [e.param(t, list(a.shape)) for t, a in zip(types, arrays)]
    attrs = [f'dimensions={{{dim}}}'] + (['is_stable=true'] if stable else []) + [f'to_apply={cmp}']
    if len(arrays) == 1:
        r = e.op('sort', types[0], list(arrays[0].shape), ps, attrs)
    else:
        shape = tuple_str([shape_str(t, list(a.shape)) for t, a in zip(types, arrays)])
        r = e.op('sort', None, None, ps, attrs, shape=shape)
    ctx.add(name, m.text(e, r), list(zip(types, arrays)), list(zip(types, ys)))


def sort_cases(ctx):
    rng = ctx.rng
    x = rand_float(rng, 'f32', [3, 7])
    sort_case(ctx, 'sort_ascending_f32', [x], ['f32'], 1, 'LT', stable=False)
    x = rand_int(rng, 's32', [6, 2], edges=True)
    sort_case(ctx, 'sort_descending_s32', [x], ['s32'], 0, 'GT')
    x = rand_int(rng, 'u64', [2, 3, 4])
    sort_case(ctx, 'sort_ascending_u64_dim1', [x], ['u64'], 1, 'LT')
    x = rand_float(rng, 'bf16', [9], -3, 3, integral=True)
    sort_case(ctx, 'sort_descending_bf16_ties', [x], ['bf16'], 0, 'GT')
    # TOTALORDER: NaNs, infinities and signed zeros all have a place.
    x = rand_float(rng, 'f32', [2, 8], specials=[np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan])
    x.reshape(-1)[0] = np.float32(np.copysign(np.nan, -1.0))
    sort_case(ctx, 'sort_totalorder_f32', [x], ['f32'], 1, 'LT', ctype='TOTALORDER',
              key_fn=lambda a: total_order_key('f32', a))
    # Variadic key/value, stable, duplicate keys.
    k = rand_int(rng, 's32', [3, 6], 0, 3)
    v = rand_values(rng, 'f32', [3, 6])
    sort_case(ctx, 'sort_key_value_stable_s32_f32', [k, v], ['s32', 'f32'], 1, 'LT')
    k = rand_float(rng, 'f16', [7], -2, 2, integral=True)
    v = rand_int(rng, 'u8', [7])
    w = rand_int(rng, 'pred', [7])
    sort_case(ctx, 'sort_three_operands_f16', [k, v, w], ['f16', 'u8', 'pred'], 0, 'GT')
    # -0 and +0 are equal under LT (FLOAT): a stable sort keeps their input order.
    x = as_type('f32', [0.0, 1.0, -0.0, -1.0, 0.0, -0.0, 2.0, -0.0])
    sort_case(ctx, 'sort_stable_signed_zeros_f32', [x], ['f32'], 0, 'LT')
    x = np.zeros([0, 3], np.float32)
    sort_case(ctx, 'sort_empty_f32', [x], ['f32'], 0, 'LT')
    x = as_type('s8', [5])
    sort_case(ctx, 'sort_single_s8', [x], ['s8'], 0, 'LT')


def generate(ctx):
    gather_cases(ctx)
    scatter_cases(ctx)
    sort_cases(ctx)

