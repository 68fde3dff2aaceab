"""reduce (add, max, min, and/or, variadic argmax), reduce-window (max/add with strides,
padding, base and window dilation) and select-and-scatter (max-pool gradient).

Float sums depend on the reduction order, which XLA leaves unspecified: sums either use
integer-valued data (exact in any order) or carry a tolerance scaled by the number of
terms."""
import itertools
import math

import numpy as np

from .case import close
from .dtypes import TYPES, as_type, rand_float, rand_int, round_to, wrap
from .hlo import Module, ints, shape_str, tuple_str, window_str

np.seterr(all='ignore')


def sum_tol(x, n_terms):
    """Tolerance for a float32 sum of n_terms values of x in any order."""
    scale = float(np.max(np.abs(x.astype(np.float64)))) if x.size else 0.0
    return close(1e-5, max(n_terms, 1) * scale * 2.0 ** -22)


def reduce_module(t, dims, rdims, opcode, init):
    m = Module()
    comp = m.binary(opcode, t)
    e = m.entry()
    p = e.param(t, dims)
    c = e.constant(t, init)
    out = [n for d, n in enumerate(dims) if d not in rdims]
    r = e.op('reduce', t, out, [p, c], [f'dimensions={ints(rdims)}', f'to_apply={comp}'])
    return m.text(e, r)


def reduce_ref(x, rdims, fn, init, t):
    """Reduces the values of x over rdims with fn, starting from init."""
    keep = [d for d in range(x.ndim) if d not in rdims]
    out_shape = [x.shape[d] for d in keep]
    n_out = int(np.prod(out_shape))
    n_red = int(np.prod([x.shape[d] for d in rdims]))
    rows = np.transpose(x, keep + list(rdims)).reshape(n_out, n_red).tolist()
    res = []
    for row in rows:
        acc = init
        for v in row:
            acc = fn(acc, v)
        res.append(acc)
    return as_type(t, res).reshape(out_shape)


def reduce_cases(ctx):
    rng = ctx.rng
    configs = [
        ('f32', 'add', [3, 5], [1], 'rand'), ('f32', 'add', [2, 3, 4], [0, 2], 'rand'),
        ('f64', 'add', [4, 6], [0, 1], 'rand'), ('bf16', 'add', [3, 8], [1], 'int'),
        ('f16', 'add', [2, 2, 5], [2], 'int'), ('s32', 'add', [4, 7], [0], 'full'),
        ('u8', 'add', [3, 9], [1], 'full'), ('s64', 'add', [2, 3, 2], [0, 1, 2], 'full'),
        ('f32', 'maximum', [3, 4, 2], [1], 'nan'), ('f32', 'maximum', [5, 4], [0, 1], 'rand'),
        ('bf16', 'minimum', [4, 3], [0], 'rand'), ('u8', 'minimum', [2, 6], [1], 'full'),
        ('s16', 'maximum', [3, 3, 3], [2, 0], 'full'), ('f32', 'add', [3, 0], [1], 'rand'),
        ('s32', 'multiply', [3, 4], [1], 'full'), ('f32', 'add', [2, 3], [], 'rand'),
    ]
    for k, (t, opcode, dims, rdims, kind) in enumerate(configs):
        d = TYPES[t]
        if d.kind == 'f':
            x = rand_float(rng, t, dims, -3, 3, integral=(kind == 'int'))
            if kind == 'nan':
                x = x.copy()
                x.reshape(-1)[int(rng.integers(x.size))] = np.nan
            init = {'add': 0.0, 'maximum': -math.inf, 'minimum': math.inf}[opcode]
            init_arr = round_to(t, np.array(init))
            xs = x.astype(np.float64)
            fn = {'add': lambda a, b: a + b, 'maximum': lambda a, b: a if math.isnan(a) else max(a, b) if
                  not math.isnan(b) else b, 'minimum': lambda a, b: a if math.isnan(a) else min(a, b) if
                  not math.isnan(b) else b}[opcode]
            y = reduce_ref(xs, rdims, fn, init, 'f64')
            y = round_to(t, y)
            n_terms = int(np.prod([dims[i] for i in rdims])) if rdims else 1
            tol = sum_tol(x, n_terms) if opcode == 'add' and kind == 'rand' and t in ('f32', 'f64') else {}
        else:
            x = rand_int(rng, t, dims)
            init = {'add': 0, 'multiply': 1, 'maximum': d.lo, 'minimum': d.hi}[opcode]
            init_arr = as_type(t, init)
            fn = {'add': lambda a, b: wrap(t, a + b), 'multiply': lambda a, b: wrap(t, a * b),
                  'maximum': max, 'minimum': min}[opcode]
            y = reduce_ref(x, rdims, fn, init, t)
            tol = {}
        ctx.add(f'reduce_{opcode}_{t}_{k}', reduce_module(t, dims, rdims, opcode, init_arr), [(t, x)],
                [(t, y)], tol)
    # pred and/or.
    for opcode, fn, init in [('and', lambda a, b: a and b, True), ('or', lambda a, b: a or b, False)]:
        x = rand_int(rng, 'pred', [4, 3])
        y = reduce_ref(x, [1], fn, init, 'pred')
        ctx.add(f'reduce_{opcode}_pred', reduce_module('pred', [4, 3], [1], opcode, np.array(init)),
                [('pred', x)], [('pred', y)])
    argmax_case(ctx)


def argmax_case(ctx):
    """Variadic reduce over (values, indices): the max value and its first index."""
    rng = ctx.rng
    dims = [4, 6]
    x = rand_float(rng, 'f32', dims, -3, 3, integral=True)  # integral: ties are likely
    m = Module()
    c = m.comp('argmax')
    a, ai, b, bi = c.param('f32', []), c.param('s32', []), c.param('f32', []), c.param('s32', [])
    gt = c.op('compare', 'pred', [], [a, b], 'direction=GT')
    eq = c.op('compare', 'pred', [], [a, b], 'direction=EQ')
    lt = c.op('compare', 'pred', [], [ai, bi], 'direction=LT')
    take_a = c.op('or', 'pred', [], [gt, c.op('and', 'pred', [], [eq, lt])])
    v = c.op('select', 'f32', [], [take_a, a, b])
    i = c.op('select', 's32', [], [take_a, ai, bi])
    name = m.finish(c, c.tuple([v, i]))
    e = m.entry()
    p = e.param('f32', dims)
    idx = e.op('iota', 's32', dims, [], 'iota_dimension=1')
    init_v = e.constant('f32', np.float32(-np.inf))
    init_i = e.constant('s32', np.int32(0))
    shape = tuple_str([shape_str('f32', [4]), shape_str('s32', [4])])
    r = e.op('reduce', None, None, [p, idx, init_v, init_i], ['dimensions={1}', f'to_apply=%{name}'], shape=shape)
    arg = np.argmax(x, axis=1).astype(np.int32)  # first maximal index
    vals = x[np.arange(dims[0]), arg]
    ctx.add('reduce_variadic_argmax_f32', m.text(e, r), [('f32', x)], [('f32', vals), ('s32', arg)])


# ---- windows -------------------------------------------------------------------------

def window_positions(o, size, stride, pad_lo, base_dil, win_dil, n):
    """Operand indices (or None for padding/holes) of window offsets at output o."""
    for w in range(size):
        p = o * stride + w * win_dil - pad_lo
        if p < 0 or p % base_dil:
            yield w, None
            continue
        q = p // base_dil
        yield w, (q if q < n else None)


def out_size(n, size, stride, lo, hi, base_dil, win_dil):
    padded = (n - 1) * base_dil + 1 + lo + hi if n else lo + hi
    eff = (size - 1) * win_dil + 1
    return max(0, (padded - eff) // stride + 1) if padded >= eff else 0


def reduce_window_ref(x, init, fn, win):
    sizes, strides, pads, bdil, wdil = win
    out_dims = [out_size(n, s, st, lo, hi, b, w) for n, s, st, (lo, hi), b, w in
                zip(x.shape, sizes, strides, pads, bdil, wdil)]
    res = []
    for o in itertools.product(*[range(n) for n in out_dims]):
        acc = init
        per_dim = [list(window_positions(o[d], sizes[d], strides[d], pads[d][0], bdil[d], wdil[d], x.shape[d]))
                   for d in range(x.ndim)]
        for combo in itertools.product(*per_dim):
            if any(q is None for _, q in combo):
                continue
            acc = fn(acc, x[tuple(q for _, q in combo)])
        res.append(acc)
    return res, out_dims


def reduce_window_cases(ctx):
    rng = ctx.rng
    # (type, op, dims, sizes, strides, pads, base dilation, window dilation, init)
    configs = [
        ('f32', 'maximum', [4, 6], [2, 2], [2, 2], [(0, 0), (0, 0)], [1, 1], [1, 1], None),
        ('s32', 'add', [5, 4], [3, 2], [1, 2], [(1, 1), (0, 1)], [1, 1], [1, 1], None),
        ('f32', 'maximum', [4, 5], [2, 3], [1, 2], [(1, 0), (2, 1)], [2, 1], [1, 2], None),
        ('f32', 'add', [2, 3, 5], [1, 2, 3], [1, 1, 2], [(0, 0), (1, 1), (1, 1)], [1, 2, 1], [1, 1, 2], None),
        ('bf16', 'add', [6], [3], [2], [(2, 2)], [1], [1], None),
        ('s32', 'add', [3, 4], [2, 2], [1, 1], [(0, 0), (0, 0)], [1, 1], [1, 1], 1),
        ('f64', 'minimum', [5, 3], [3, 1], [2, 1], [(1, 1), (0, 0)], [1, 1], [2, 1], None),
        ('u8', 'maximum', [7], [4], [3], [(0, 3)], [2], [1], None),
    ]
    for k, (t, opcode, dims, sizes, strides, pads, bdil, wdil, init) in enumerate(configs):
        d = TYPES[t]
        if d.kind == 'f':
            x = rand_float(rng, t, dims, -5, 5, integral=(opcode == 'add'))
            if init is None:
                init = {'add': 0.0, 'maximum': -math.inf, 'minimum': math.inf}[opcode]
            fn = {'add': lambda a, b: a + b, 'maximum': max, 'minimum': min}[opcode]
            res, out_dims = reduce_window_ref(x.astype(np.float64), init, fn, (sizes, strides, pads, bdil, wdil))
            y = round_to(t, np.array(res, dtype=np.float64)).reshape(out_dims)
        else:
            x = rand_int(rng, t, dims)
            if init is None:
                init = {'add': 0, 'maximum': d.lo, 'minimum': d.hi}[opcode]
            fn = {'add': lambda a, b: wrap(t, a + b), 'maximum': max, 'minimum': min}[opcode]
            res, out_dims = reduce_window_ref(x.astype(object), init, fn, (sizes, strides, pads, bdil, wdil))
            y = as_type(t, res).reshape(out_dims)
        m = Module()
        comp = m.binary(opcode, t)
        e = m.entry()
        p = e.param(t, dims)
        c = e.constant(t, as_type(t, init))
        win = window_str(sizes, strides, pads, bdil, wdil)
        r = e.op('reduce-window', t, out_dims, [p, c], [win, f'to_apply={comp}'])
        ctx.add(f'reduce_window_{opcode}_{t}_{k}', m.text(e, r), [(t, x)], [(t, y)])


def select_and_scatter_ref(x, src, init, sizes, strides, pads):
    """select=GE keeps the first maximum in row-major window order; padding positions
    are never selected; scatter=add accumulates source values in row-major order."""
    out = [init] * x.size
    for o in itertools.product(*[range(n) for n in src.shape]):
        best, best_idx = None, None
        per_dim = [list(window_positions(o[d], sizes[d], strides[d], pads[d][0], 1, 1, x.shape[d]))
                   for d in range(x.ndim)]
        for combo in itertools.product(*per_dim):
            if any(q is None for _, q in combo):
                continue
            idx = tuple(q for _, q in combo)
            v = x[idx]
            if best is None or not (best >= v):
                best, best_idx = v, idx
        if best_idx is not None:
            flat = int(np.ravel_multi_index(best_idx, x.shape))
            out[flat] = out[flat] + src[o]
    return out


def select_and_scatter_cases(ctx):
    rng = ctx.rng
    configs = [
        ('f32', [4, 6], [2, 2], [2, 2], [(0, 0), (0, 0)], 'distinct'),
        ('f32', [5, 5], [3, 3], [1, 1], [(1, 1), (1, 1)], 'ties'),
        ('s32', [6, 4], [3, 2], [2, 1], [(1, 0), (0, 1)], 'ties'),
        ('bf16', [2, 7], [1, 3], [1, 2], [(0, 0), (1, 1)], 'distinct'),
        ('f64', [1, 4, 4, 2], [1, 2, 2, 1], [1, 2, 2, 1], [(0, 0), (0, 1), (0, 1), (0, 0)], 'distinct'),
    ]
    for k, (t, dims, sizes, strides, pads, kind) in enumerate(configs):
        n = int(np.prod(dims))
        if kind == 'distinct':
            base = rng.permutation(n).reshape(dims) - n // 2
        else:
            base = rng.integers(-2, 3, size=dims)
        x = as_type(t, base.tolist()) if TYPES[t].kind != 'f' else round_to(t, base.astype(np.float64))
        src_dims = [out_size(dn, s, st, lo, hi, 1, 1) for dn, s, st, (lo, hi) in zip(dims, sizes, strides, pads)]
        src_vals = rng.integers(-4, 5, size=src_dims)
        src = round_to(t, src_vals.astype(np.float64)) if TYPES[t].kind == 'f' else as_type(t, src_vals.tolist())
        init = 0
        res = select_and_scatter_ref(x.astype(object), src.astype(object), init, sizes, strides, pads)
        y = as_type(t, [float(v) for v in res] if TYPES[t].kind == 'f' else res).reshape(dims)
        m = Module()
        ge = m.compare(t, 'GE')
        add = m.binary('add', t)
        e = m.entry()
        p, s = e.param(t, dims), e.param(t, src_dims)
        c = e.constant(t, as_type(t, init))
        win = window_str(sizes, strides, pads)
        r = e.op('select-and-scatter', t, dims, [p, s, c], [win, f'select={ge}', f'scatter={add}'])
        ctx.add(f'select_and_scatter_{t}_{k}', m.text(e, r), [(t, x), (t, src)], [(t, y)])


def map_cases(ctx):
    """map applies a computation of several ops to the operands' elements."""
    rng = ctx.rng
    # f32: a * b + a, rounded after each op.
    a, b = rand_float(rng, 'f32', [3, 4]), rand_float(rng, 'f32', [3, 4])
    m = Module()
    c = m.comp('fma_like')
    x, y = c.param('f32', []), c.param('f32', [])
    fn = m.finish(c, c.op('add', 'f32', [], [c.op('multiply', 'f32', [], [x, y]), x]))
    e = m.entry()
    r = e.op('map', 'f32', [3, 4], [e.param('f32', [3, 4]), e.param('f32', [3, 4])],
             ['dimensions={0,1}', f'to_apply=%{fn}'])
    ctx.add('map_f32', m.text(e, r), [('f32', a), ('f32', b)], [('f32', (a * b) + a)])
    # s32 and f32 in, f32 out: convert(i) * f, a scalar constant inside.
    i, f = rand_int(rng, 's32', [7], -100, 100), rand_float(rng, 'f32', [7])
    m = Module()
    c = m.comp('scale')
    x, y = c.param('s32', []), c.param('f32', [])
    half = c.constant('f32', np.float32(0.5))
    prod = c.op('multiply', 'f32', [], [c.op('convert', 'f32', [], [x]), y])
    fn = m.finish(c, c.op('add', 'f32', [], [prod, half]))
    e = m.entry()
    r = e.op('map', 'f32', [7], [e.param('s32', [7]), e.param('f32', [7])],
             ['dimensions={0}', f'to_apply=%{fn}'])
    want = (i.astype(np.float32) * f) + np.float32(0.5)
    ctx.add('map_s32_f32', m.text(e, r), [('s32', i), ('f32', f)], [('f32', want)])


def generate(ctx):
    reduce_cases(ctx)
    reduce_window_cases(ctx)
    select_and_scatter_cases(ctx)
    map_cases(ctx)

