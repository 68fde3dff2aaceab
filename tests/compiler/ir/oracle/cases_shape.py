"""Data movement: broadcast, reshape, transpose, slice, dynamic-slice,
dynamic-update-slice, concatenate, pad, reverse, copy, bitcast, iota."""
import numpy as np

from .case import single_op
from .dtypes import TYPES, as_type, is_float, rand_dims, rand_values, round_to
from .hlo import Module, ints

# Data movement does not look at values: cycle through every type.
CYCLE = ['f32', 's32', 'bf16', 'pred', 'u8', 'f64', 's64', 'f16', 'u16', 's16', 's8', 'u32', 'u64']


class Types:
    def __init__(self):
        self.i = 0

    def next(self):
        self.i += 1
        return CYCLE[(self.i - 1) % len(CYCLE)]


def broadcast_cases(ctx, types):
    rng = ctx.rng
    for k in range(6):
        t = types.next()
        out_dims = rand_dims(rng, 1, 4, 4, zero=(k == 5))
        r = int(rng.integers(0, len(out_dims) + 1)) if k else 0
        kept = sorted(rng.choice(len(out_dims), size=r, replace=False).tolist())
        x = rand_values(rng, t, [out_dims[d] for d in kept])
        # y[idx] = x[idx restricted to the kept dims].
        view = x.reshape([out_dims[d] if d in kept else 1 for d in range(len(out_dims))])
        y = np.broadcast_to(view, out_dims).copy()
        single_op(ctx, f'broadcast_{t}_{k}', 'broadcast', [(t, x)], t, y, attrs=f'dimensions={ints(kept)}')


def reshape_cases(ctx, types):
    rng = ctx.rng
    shapes = [([2, 3, 4], [6, 4]), ([6], [1, 2, 1, 3]), ([], [1, 1]), ([1, 1], []), ([4, 3], [3, 2, 2]),
              ([0, 3], [3, 0, 5]), ([2, 5, 1], [10])]
    for k, (a, b) in enumerate(shapes):
        t = types.next()
        x = rand_values(rng, t, a)
        single_op(ctx, f'reshape_{t}_{k}', 'reshape', [(t, x)], t, x.reshape(b).copy(), layouts=(k % 2 == 0))
    # bitcast with default layouts is a reshape of the row-major data.
    for k, (a, b) in enumerate([([2, 3], [6]), ([4], [2, 1, 2])]):
        t = types.next()
        x = rand_values(rng, t, a)
        single_op(ctx, f'bitcast_{t}_{k}', 'bitcast', [(t, x)], t, x.reshape(b).copy())


def transpose_cases(ctx, types):
    rng = ctx.rng
    for k in range(6):
        t = types.next()
        dims = rand_dims(rng, 1, 4, 4, zero=(k == 5))
        perm = rng.permutation(len(dims)).tolist()
        x = rand_values(rng, t, dims)
        y = np.transpose(x, perm).copy()
        single_op(ctx, f'transpose_{t}_{k}', 'transpose', [(t, x)], t, y, attrs=f'dimensions={ints(perm)}')


def copy_reverse_cases(ctx, types):
    rng = ctx.rng
    for k in range(3):
        t = types.next()
        x = rand_values(rng, t, rand_dims(rng, 0, 3, zero=(k == 2)))
        single_op(ctx, f'copy_{t}_{k}', 'copy', [(t, x)], t, x.copy())
    for k in range(5):
        t = types.next()
        dims = rand_dims(rng, 1, 4, zero=(k == 4))
        rdims = sorted(rng.choice(len(dims), size=int(rng.integers(1, len(dims) + 1)), replace=False).tolist())
        x = rand_values(rng, t, dims)
        y = np.flip(x, axis=tuple(rdims)).copy()
        single_op(ctx, f'reverse_{t}_{k}', 'reverse', [(t, x)], t, y, attrs=f'dimensions={ints(rdims)}')


def slice_cases(ctx, types):
    rng = ctx.rng
    for k in range(7):
        t = types.next()
        dims = rand_dims(rng, 1, 4, 7)
        specs = []
        for n in dims:
            start = int(rng.integers(0, n + 1))
            limit = int(rng.integers(start, n + 1))
            stride = int(rng.integers(1, 4))
            specs.append((start, limit, stride))
        x = rand_values(rng, t, dims)
        y = x[tuple(slice(a, b, s) for a, b, s in specs)].copy()
        text = '{' + ', '.join(f'[{a}:{b}:{s}]' if s != 1 or k % 2 else f'[{a}:{b}]' for a, b, s in specs) + '}'
        single_op(ctx, f'slice_{t}_{k}', 'slice', [(t, x)], t, y, attrs=f'slice={text}')


def clamp_start(start, n, size):
    return min(max(start, 0), n - size)


def dynamic_slice_cases(ctx, types):
    rng = ctx.rng
    index_types = ['s32', 's64', 'u32', 's32', 'u8', 's16', 's32']
    for k, it in enumerate(index_types):
        t = types.next()
        dims = rand_dims(rng, 1, 3, 6) if k else [5]
        sizes = [int(rng.integers(0 if k == 6 else 1, n + 1)) for n in dims]
        lo = TYPES[it].lo
        starts = [int(rng.integers(max(lo, -3), n + 4)) for n in dims]
        if TYPES[it].kind == 'u' and k == 2:
            starts[0] = TYPES[it].hi  # huge unsigned start: clamps to the end
        x = rand_values(rng, t, dims)
        cs = [clamp_start(s, n, z) for s, n, z in zip(starts, dims, sizes)]
        y = x[tuple(slice(c, c + z) for c, z in zip(cs, sizes))].copy()
        m = Module()
        e = m.entry()
        p = e.param(t, dims)
        idx = [e.param(it, []) for _ in dims]
        r = e.op('dynamic-slice', t, sizes, [p] + idx, f'dynamic_slice_sizes={ints(sizes)}')
        args = [(t, x)] + [(it, as_type(it, s)) for s in starts]
        ctx.add(f'dynamic_slice_{t}_{k}', m.text(e, r), args, [(t, y)])

    for k, it in enumerate(['s32', 's64', 'u16', 's32', 's8', 'u32']):
        t = types.next()
        dims = rand_dims(rng, 1, 3, 6)
        udims = [int(rng.integers(0 if k == 5 else 1, n + 1)) for n in dims]
        starts = [int(rng.integers(max(TYPES[it].lo, -4), n + 4)) for n in dims]
        x = rand_values(rng, t, dims)
        u = rand_values(rng, t, udims)
        cs = [clamp_start(s, n, z) for s, n, z in zip(starts, dims, udims)]
        y = x.copy()
        y[tuple(slice(c, c + z) for c, z in zip(cs, udims))] = u
        m = Module()
        e = m.entry()
        p, pu = e.param(t, dims), e.param(t, udims)
        idx = [e.param(it, []) for _ in dims]
        r = e.op('dynamic-update-slice', t, dims, [p, pu] + idx)
        args = [(t, x), (t, u)] + [(it, as_type(it, s)) for s in starts]
        ctx.add(f'dynamic_update_slice_{t}_{k}', m.text(e, r), args, [(t, y)])


def concatenate_cases(ctx, types):
    rng = ctx.rng
    for k in range(6):
        t = types.next()
        base = rand_dims(rng, 1, 3, 4)
        d = int(rng.integers(len(base)))
        n_ops = int(rng.integers(1, 4))
        parts = []
        for j in range(n_ops):
            dims = list(base)
            dims[d] = 0 if (k == 5 and j == 0) else int(rng.integers(1, 4))
            parts.append(rand_values(rng, t, dims))
        y = np.concatenate(parts, axis=d)
        m = Module()
        e = m.entry()
        ps = [e.param(t, list(p.shape)) for p in parts]
        r = e.op('concatenate', t, list(y.shape), ps, f'dimensions={{{d}}}')
        ctx.add(f'concatenate_{t}_{k}', m.text(e, r), [(t, p) for p in parts], [(t, y)])


def pad_ref(x, value, cfg):
    """Interior padding first, then low/high edges (negative ones remove elements)."""
    out = x
    for d, (lo, hi, interior) in enumerate(cfg):
        n = out.shape[d]
        size = n + max(n - 1, 0) * interior
        shape = list(out.shape)
        shape[d] = size + max(lo, 0) + max(hi, 0)
        full = np.full(shape, value, dtype=x.dtype)
        index = [slice(None)] * out.ndim
        index[d] = slice(max(lo, 0), max(lo, 0) + size, interior + 1) if n else slice(0, 0)
        full[tuple(index)] = out
        keep = [slice(None)] * out.ndim
        keep[d] = slice(max(-lo, 0), shape[d] - max(-hi, 0))
        out = full[tuple(keep)]
    return out.copy()


def pad_cases(ctx, types):
    rng = ctx.rng
    for k in range(7):
        t = types.next()
        dims = rand_dims(rng, 1, 3, 5, zero=(k == 6))
        cfg = []
        for n in dims:
            interior = int(rng.integers(0, 3))
            size = n + max(n - 1, 0) * interior
            lo = int(rng.integers(-min(size, 2), 3))
            hi = int(rng.integers(-min(size + min(lo, 0), 2), 3))
            cfg.append((lo, hi, interior))
        x = rand_values(rng, t, dims)
        v = rand_values(rng, t, [])
        y = pad_ref(x, v[()], cfg)
        text = 'x'.join(f'{lo}_{hi}_{i}' if i or k % 2 else f'{lo}_{hi}' for lo, hi, i in cfg)
        single_op(ctx, f'pad_{t}_{k}', 'pad', [(t, x), (t, v)], t, y, attrs=f'padding={text}')


def iota_cases(ctx):
    rng = ctx.rng
    for k, t in enumerate(['s32', 'f32', 'bf16', 'u8', 's64', 'f16', 'u64', 'f64', 's8']):
        dims = rand_dims(rng, 1, 4, 5, zero=(k == 8))
        d = int(rng.integers(len(dims)))
        shape = [1] * len(dims)
        shape[d] = dims[d]
        vals = np.broadcast_to(np.arange(dims[d]).reshape(shape), dims)
        y = round_to(t, vals.astype(np.float64)) if is_float(t) else as_type(t, vals.tolist()).reshape(dims)
        m = Module()
        e = m.entry()
        r = e.op('iota', t, dims, [], f'iota_dimension={d}')
        ctx.add(f'iota_{t}_{k}', m.text(e, r), [], [(t, y)])


def generate(ctx):
    types = Types()
    broadcast_cases(ctx, types)
    reshape_cases(ctx, types)
    transpose_cases(ctx, types)
    copy_reverse_cases(ctx, types)
    slice_cases(ctx, types)
    dynamic_slice_cases(ctx, types)
    concatenate_cases(ctx, types)
    pad_cases(ctx, types)
    iota_cases(ctx)
