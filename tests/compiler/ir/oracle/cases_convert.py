"""compare (all directions, FLOAT/TOTALORDER/SIGNED/UNSIGNED), convert between every
pair of element types, bitcast-convert (same and different widths), clamp, select."""
import math

import numpy as np

from .case import single_op
from .cases_elementwise import dims_with_size
from .dtypes import (ALL, TYPES, as_type, bits_of, from_bits, int_map, is_float,
                     rand_float, rand_int, rand_values, round_to, special_floats, total_order_key)
from .hlo import Module

DIRECTIONS = {
    'EQ': lambda a, b: a == b, 'NE': lambda a, b: a != b, 'LT': lambda a, b: a < b,
    'LE': lambda a, b: a <= b, 'GT': lambda a, b: a > b, 'GE': lambda a, b: a >= b,
}


def compare_module(t, dims, variants):
    """One module comparing p0 with p1 under each (direction, type) of variants."""
    m = Module()
    e = m.entry()
    a, b = e.param(t, dims), e.param(t, dims)
    outs = []
    for direction, ctype in variants:
        attrs = [f'direction={direction}'] + ([f'type={ctype}'] if ctype else [])
        outs.append(e.op('compare', 'pred', dims, [a, b], attrs))
    return m.text(e, e.tuple(outs))


def compare_cases(ctx):
    rng = ctx.rng
    for t in ALL:
        if is_float(t):
            sp = special_floats(t)
            dims = dims_with_size(rng, 40, 64)
            a = rand_float(rng, t, dims, -3, 3, integral=True, specials=sp)
            b = rand_float(rng, t, dims, -3, 3, integral=True, specials=sp)
            # Pair each special with every other so that ±0/±NaN/±inf meet.
            n = sp.size
            fa, fb = a.reshape(-1), b.reshape(-1)
            pos = rng.choice(fa.size, size=min(fa.size, n), replace=False)
            for k, p in enumerate(pos):
                fa[p], fb[p] = sp[k], sp[(k + 1 + int(rng.integers(n - 1))) % n]
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            ka, kb = total_order_key(t, a), total_order_key(t, b)
            variants, outs = [], []
            for d, fn in DIRECTIONS.items():
                variants.append((d, None))
                outs.append(('pred', fn(a64, b64)))
            for d, fn in DIRECTIONS.items():
                variants.append((d, 'TOTALORDER'))
                outs.append(('pred', np.array(fn(ka, kb), dtype=np.bool_).reshape(dims)))
            hlo = compare_module(t, dims, variants)
        else:
            dims = dims_with_size(rng, 8, 40)
            if t == 'pred':
                a, b = rand_int(rng, t, dims), rand_int(rng, t, dims)
            else:
                a, b = rand_int(rng, t, dims, edges=True), rand_int(rng, t, dims, edges=True)
                eq = rng.random(dims) < 0.3
                b = np.where(eq, a, b).astype(a.dtype)
            pa, pb = a.astype(object), b.astype(object)
            variants, outs = [], []
            ctype = {'s': 'SIGNED', 'u': 'UNSIGNED', 'pred': 'UNSIGNED'}[TYPES[t].kind]
            for d, fn in DIRECTIONS.items():
                # Explicit type= on every other direction: both spellings are valid.
                variants.append((d, ctype if d in ('NE', 'LE', 'GE') else None))
                outs.append(('pred', np.array(fn(pa, pb), dtype=np.bool_).reshape(dims)))
            hlo = compare_module(t, dims, variants)
        ctx.add(f'compare_{t}', hlo, [(t, a), (t, b)], outs)
    z = np.zeros([0], np.int32)
    single_op(ctx, 'compare_s32_empty', 'compare', [('s32', z), ('s32', z)], 'pred', np.zeros([0], np.bool_),
              attrs='direction=LT')


# ---- convert ---------------------------------------------------------------------------

FLOAT_SOURCES = [0.0, -0.0, 0.4, -0.4, 0.5, -0.5, 0.9, -0.9, 1.5, -1.5, 2.5, -2.5, 100.7, -100.7, 127.5, 128.0,
                 -128.5, -129.0, 255.5, 256.0, -300.0, 32767.5, 32768.0, -32769.0, 65504.0, 65535.9, 65536.0,
                 65520.0, 2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0, 4294967296.0, 5e9,
                 9.2e18, 9.3e18, -9.3e18, 1.8e19, 1.9e19, 1e20, -1e20, 3.4e38, 1e-40, 1.0 / 3.0, 1e-8,
                 math.inf, -math.inf, math.nan]


def float_to_int(t_out):
    d = TYPES[t_out]

    def f(x):
        if math.isnan(x):
            return 0
        if math.isinf(x):
            return d.hi if x > 0 else d.lo
        return min(max(math.trunc(x), d.lo), d.hi)
    return f


def convert_ref(t_in, t_out, x):
    """XLA convert: float->int truncates toward zero and saturates (NaN -> 0); int->int
    wraps; ->pred is x != 0; int/float -> float rounds to nearest even (16-bit floats
    through f32, as XLA's Eigen types do)."""
    if t_out == 'pred':
        return np.asarray(x.astype(np.float64) != 0 if is_float(t_in) else x.astype(object) != 0,
                          dtype=np.bool_).reshape(x.shape)
    if is_float(t_out):
        if t_in == 'pred':
            return round_to(t_out, x.astype(np.float64))
        if is_float(t_in):
            wide = x.astype(np.float64)
            return wide if t_out == 'f64' else round_to(t_out, wide)
        # Ints: one rounding to f64 or f32 (C conversion), then to 16-bit from f32.
        if t_out == 'f64':
            return x.astype(np.float64)
        return round_to(t_out, x.astype(np.float32))
    if is_float(t_in):
        return int_map(t_out, float_to_int(t_out), x.astype(np.float64))
    d = TYPES[t_out]
    return int_map(t_out, lambda v: (int(v) - d.lo) % (1 << d.bits) + d.lo, x)


def convert_tol(t_in, t_out):
    # f64 -> 16-bit and wide int -> 16-bit round twice (via f32) in XLA; allow the
    # single-rounding answer too.
    if TYPES[t_out].bits == 16 and is_float(t_out) and (t_in == 'f64' or TYPES[t_in].kind in ('s', 'u')):
        return 1
    return 0


def convert_cases(ctx):
    rng = ctx.rng
    for t_in in ALL:
        if is_float(t_in):
            x = round_to(t_in, np.array(FLOAT_SOURCES, dtype=np.float64))
            x = np.concatenate([x, rand_float(rng, t_in, [8], -1000, 1000)])
        elif t_in == 'pred':
            x = np.array([True, False, True], dtype=np.bool_)
        else:
            edges = as_type(t_in, [v for v in [-129, -128, 127, 128, 255, 256, 65535, 65536, -32769, 16777217,
                                               2 ** 31, 2 ** 53 + 1, 2 ** 63 - 1, -2 ** 63]
                                   if TYPES[t_in].lo <= v <= TYPES[t_in].hi])
            x = np.concatenate([rand_int(rng, t_in, [12], edges=True), edges])
        x = rng.permutation(x)
        dims = dims_with_size(rng, x.size, x.size) if rng.random() < 0.5 else [x.size]
        x = x.reshape(dims) if int(np.prod(dims)) == x.size else x
        m = Module()
        e = m.entry()
        p = e.param(t_in, list(x.shape))
        outs, tol = [], {}
        for t_out in ALL:
            if t_out == t_in:
                continue
            outs.append(e.op('convert', t_out, list(x.shape), [p]))
            if convert_tol(t_in, t_out):
                tol[f'out{len(outs) - 1}.ulps'] = '1'
        expected = [(t_out, convert_ref(t_in, t_out, x)) for t_out in ALL if t_out != t_in]
        ctx.add(f'convert_from_{t_in}', m.text(e, e.tuple(outs)), [(t_in, x)], expected, tol)
    x = np.zeros([2, 0], np.float32)
    single_op(ctx, 'convert_f32_s8_empty', 'convert', [('f32', x)], 's8', np.zeros([2, 0], np.int8))
    x = rand_float(rng, 'bf16', [3, 2])
    single_op(ctx, 'convert_bf16_f32_same_value', 'convert', [('bf16', x)], 'f32', x.astype(np.float32))


# ---- bitcast-convert -----------------------------------------------------------------

def bitcast_ref(t_in, t_out, x):
    """Reinterprets the little-endian bytes of x: a narrower result gets a new minor
    dimension of width ratio, a wider one consumes the operand's minor dimension."""
    wi, wo = TYPES[t_in].bits // 8, TYPES[t_out].bits // 8
    raw = np.ascontiguousarray(bits_of(t_in, x)).astype(np.dtype(f'<u{wi}')).tobytes()
    words = np.frombuffer(raw, dtype=np.dtype(f'<u{wo}'))
    dims = list(x.shape)
    if wo < wi:
        dims = dims + [wi // wo]
    elif wo > wi:
        assert dims[-1] == wo // wi
        dims = dims[:-1]
    return from_bits(t_out, words.astype(np.dtype(f'u{wo}'))).reshape(dims)


BITCASTS = [('f32', 's32', [3, 4]), ('s32', 'f32', [5]), ('f32', 'u32', [2, 3]), ('u64', 'f64', [4]),
            ('f64', 's64', [2, 2]), ('bf16', 'u16', [6]), ('s16', 'bf16', [2, 3]), ('f16', 'u16', [5]),
            ('f16', 'bf16', [4]), ('u8', 's8', [7]), ('f32', 'u8', [3]), ('u8', 'f32', [2, 4]),
            ('f64', 'u32', [2]), ('u32', 'f64', [3, 2]), ('u16', 'u8', [2, 2]), ('s32', 'u16', [2, 2]),
            ('bf16', 'u8', []), ('f32', 'f32', [3])]


def bitcast_cases(ctx):
    rng = ctx.rng
    for t_in, t_out, dims in BITCASTS:
        if is_float(t_in):
            # Up to half the elements special (NaN payloads and signs must survive).
            n = int(np.prod(dims)) if dims else 1
            x = rand_float(rng, t_in, dims, -100, 100, specials=special_floats(t_in)[:n // 2])
        else:
            x = rand_int(rng, t_in, dims)
        y = bitcast_ref(t_in, t_out, x)
        single_op(ctx, f'bitcast_convert_{t_in}_{t_out}', 'bitcast-convert', [(t_in, x)], t_out, y)


# ---- clamp and select ------------------------------------------------------------------

def clamp_cases(ctx):
    rng = ctx.rng
    for t in ['f32', 'bf16', 'f64', 'f16', 's32', 'u8', 's64', 'u32', 's8']:
        dims = dims_with_size(rng, 6, 30)
        scalar_bounds = rng.random() < 0.5
        bdims = [] if scalar_bounds else dims
        if is_float(t):
            x = rand_float(rng, t, dims, -5, 5, specials=[math.inf, -math.inf, -0.0])
            lo = rand_float(rng, t, bdims, -3, 0)
            hi = rand_float(rng, t, bdims, 0, 3)
        else:
            x = rand_int(rng, t, dims, edges=True)
            lo = rand_int(rng, t, bdims, TYPES[t].lo, TYPES[t].lo // 2 + 10 if TYPES[t].kind == 's' else 10)
            hi = rand_int(rng, t, bdims, TYPES[t].hi // 2, TYPES[t].hi)
        if not scalar_bounds and t in ('s32', 'f32'):
            # min > max at some positions: the result is max (min(max(x, lo), hi)).
            swap = rng.random(dims) < 0.2
            lo, hi = np.where(swap, hi, lo).astype(lo.dtype), np.where(swap, lo, hi).astype(hi.dtype)
        if is_float(t):
            y = np.minimum(np.maximum(x.astype(np.float64), lo.astype(np.float64)), hi.astype(np.float64))
            y = round_to(t, y)
        else:
            y = int_map(t, lambda lo_, x_, hi_: min(max(x_, lo_), hi_),
                        np.broadcast_to(lo, dims), x, np.broadcast_to(hi, dims))
        single_op(ctx, f'clamp_{t}' + ('_scalar_bounds' if scalar_bounds else ''), 'clamp',
                  [(t, lo), (t, x), (t, hi)], t, y)


def select_cases(ctx):
    rng = ctx.rng
    for t in ['f32', 'bf16', 's8', 'u64', 'pred', 'f16', 's32', 'f64']:
        dims = dims_with_size(rng, 1, 30)
        p = rand_int(rng, 'pred', dims)
        a, b = rand_values(rng, t, dims), rand_values(rng, t, dims)
        single_op(ctx, f'select_{t}', 'select', [('pred', p), (t, a), (t, b)], t, np.where(p, a, b).astype(a.dtype))
    p = np.zeros([0, 2], np.bool_)
    z = np.zeros([0, 2], np.float32)
    single_op(ctx, 'select_f32_empty', 'select', [('pred', p), ('f32', z), ('f32', z)], 'f32', z)
    p = np.array(True)
    a, b = rand_int(rng, 's16', []), rand_int(rng, 's16', [])
    single_op(ctx, 'select_s16_rank0', 'select', [('pred', p), ('s16', a), ('s16', b)], 's16', a.copy())


def generate(ctx):
    compare_cases(ctx)
    convert_cases(ctx)
    bitcast_cases(ctx)
    clamp_cases(ctx)
    select_cases(ctx)

