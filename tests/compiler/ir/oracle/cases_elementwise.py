"""Elementwise unary and binary arithmetic on every element type where XLA allows it.

Float references are computed in float64 and rounded to the result type through f32
(the way a 16-bit op computes in f32 and rounds). Basic IEEE ops (+ - * / sqrt fmod) are
then bit-exact in f32/f64; transcendental ones get a few ulps; 16-bit types one ulp.
Integer references use Python integers with XLA's rules written out explicitly.
"""
import math

import numpy as np

from .case import EXACT, single_op, ulps
from .dtypes import (FLOATS, INTS, TYPES, as_type, int_map, rand_float, rand_int, round_to,
                     special_floats, wrap)

np.seterr(all='ignore')


def dims_with_size(rng, n_min, n_max, max_rank=4):
    """Random dims (rank >= 1) whose element count lies in [n_min, n_max]."""
    for _ in range(100):
        rank = int(rng.integers(1, max_rank + 1))
        dims = [int(rng.integers(1, 7)) for _ in range(rank)]
        if n_min <= int(np.prod(dims)) <= n_max:
            return dims
    return [n_min]


def place_pairs(rng, t, a, b, pairs):
    """Overwrites distinct random positions of a and b with the given (x, y) pairs."""
    a, b = a.copy(), b.copy()
    fa, fb = a.reshape(-1), b.reshape(-1)
    k = min(len(pairs), fa.size)
    pos = rng.choice(fa.size, size=k, replace=False)
    for p, (x, y) in zip(pos, [pairs[i] for i in rng.permutation(len(pairs))[:k]]):
        fa[p] = as_type(t, [x])[0]
        fb[p] = as_type(t, [y])[0]
    return a, b


def float_tol(t, kind):
    if kind == 'exact':
        return EXACT
    if kind == 'rounded':  # correctly rounded in f32/f64, double rounding via f32 for 16-bit
        return ulps(1) if TYPES[t].bits == 16 else EXACT
    return {'f16': ulps(1), 'bf16': ulps(1), 'f32': ulps(4), 'f64': ulps(4)}[t]


# ---- unary ---------------------------------------------------------------------------

def sign_ref(x):
    return np.where(x > 0, 1.0, np.where(x < 0, -1.0, x))  # keeps -0, +0 and NaN


def round_afz(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def rsqrt(x):
    return 1.0 / np.sqrt(x)


def logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


# opcode: (reference on float64, (lo, hi) of random inputs, precision kind, extra inputs)
UNARY_FLOAT = {
    'negate': (np.negative, (-4, 4), 'exact', []),
    'abs': (np.abs, (-4, 4), 'exact', []),
    'sign': (sign_ref, (-4, 4), 'exact', []),
    'exponential': (np.exp, (-10, 10), 'approx', [100.0, -100.0]),
    'exponential-minus-one': (np.expm1, (-3, 3), 'approx', [1e-5, -1e-5, 1e-3]),
    'log': (np.log, (0.01, 50), 'approx', [0.5, 2.0]),
    'log-plus-one': (np.log1p, (-0.9, 20), 'approx', [1e-6, -1e-6, -1.0]),
    'sqrt': (np.sqrt, (0, 50), 'rounded', [4.0, 2.0]),
    'rsqrt': (rsqrt, (0.01, 50), 'approx', [4.0, 0.25]),
    'cbrt': (np.cbrt, (-50, 50), 'approx', [27.0, -8.0]),
    'tanh': (np.tanh, (-4, 4), 'approx', [20.0, -20.0]),
    'logistic': (logistic, (-8, 8), 'approx', [0.0, 40.0, -40.0]),
    'sine': (np.sin, (-6, 6), 'approx', [3.0, 1e-4]),
    'cosine': (np.cos, (-6, 6), 'approx', [3.0, 1e-4]),
    'tan': (np.tan, (-1.5, 1.5), 'approx', [0.785, -1e-4, 3.0]),
    'erf': (np.vectorize(math.erf, otypes=[np.float64]), (-4, 4), 'approx', [1e-4, -0.5, 6.0]),
    'floor': (np.floor, (-6, 6), 'exact', [-0.5, 0.5, 2.5, -2.5]),
    'ceil': (np.ceil, (-6, 6), 'exact', [-0.5, 0.5, 2.5, -2.5]),
    'round-nearest-afz': (round_afz, (-6, 6), 'exact', [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997]),
    'round-nearest-even': (np.rint, (-6, 6), 'exact', [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997]),
}


def unary_float_cases(ctx):
    rng = ctx.rng
    for opcode, (ref, (lo, hi), kind, extra) in UNARY_FLOAT.items():
        for t in FLOATS:
            specials = np.concatenate([special_floats(t), round_to(t, np.array(extra, dtype=np.float64))])
            dims = dims_with_size(rng, specials.size + 2, 60)
            x = rand_float(rng, t, dims, lo, hi, specials=specials)
            if opcode.startswith('round') or opcode in ('floor', 'ceil'):
                # Quarter steps put many inputs exactly on .5.
                x = np.where(np.isfinite(x) & (np.abs(x) < 8), round_to(t, np.round(x * 4) / 4), x)
                x = round_to(t, x)
            y = round_to(t, ref(x.astype(np.float64)))
            name = f"{opcode.replace('-', '_')}_{t}"
            single_op(ctx, name, opcode, [(t, x)], t, y, tol=float_tol(t, kind))
    # is-finite: pred result.
    for t in FLOATS:
        x = rand_float(ctx.rng, t, dims_with_size(rng, 16, 40), specials=special_floats(t))
        single_op(ctx, f'is_finite_{t}', 'is-finite', [(t, x)], 'pred', np.isfinite(x.astype(np.float64)))
    # Zero-size operands.
    single_op(ctx, 'negate_bf16_empty', 'negate', [('bf16', np.zeros([0, 3], np.float32))], 'bf16',
              np.zeros([0, 3], np.float32))
    single_op(ctx, 'exponential_f32_empty', 'exponential', [('f32', np.zeros([2, 0, 1], np.float32))],
              'f32', np.zeros([2, 0, 1], np.float32))


def unary_int_cases(ctx):
    rng = ctx.rng
    for t in INTS:
        d = TYPES[t]
        # XLA's shape inference rejects abs and sign of unsigned integers.
        for opcode in ['negate', 'abs', 'sign', 'not'] if d.kind == 's' else ['negate', 'not']:
            x = rand_int(rng, t, dims_with_size(rng, 12, 40), edges=True)
            if opcode == 'negate':
                fn = lambda a: wrap(t, -a)  # noqa: E731
            elif opcode == 'abs':
                fn = lambda a: wrap(t, abs(a))  # noqa: E731  abs(INT_MIN) wraps to INT_MIN
            elif opcode == 'sign':
                fn = lambda a: (a > 0) - (a < 0)  # noqa: E731
            else:
                fn = lambda a: wrap(t, ~a) if d.kind == 's' else d.hi - a  # noqa: E731
            single_op(ctx, f"{opcode}_{t}", opcode, [(t, x)], t, int_map(t, fn, x))
        # Bit counts of the two's complement bits, in the type's width.
        width = d.bits
        bits = lambda a, width=width: a % (1 << width)  # noqa: E731
        x = rand_int(rng, t, dims_with_size(rng, 12, 40), edges=True)
        single_op(ctx, f'popcnt_{t}', 'popcnt', [(t, x)], t,
                  int_map(t, lambda a: bin(bits(a)).count('1'), x))
        x = rand_int(rng, t, dims_with_size(rng, 12, 40), edges=True)
        single_op(ctx, f'count_leading_zeros_{t}', 'count-leading-zeros', [(t, x)], t,
                  int_map(t, lambda a, width=width: width - bits(a).bit_length(), x))
    x = rand_int(rng, 'pred', [7])
    single_op(ctx, 'not_pred', 'not', [('pred', x)], 'pred', ~x)
    x = rand_int(rng, 's32', [0])
    single_op(ctx, 'abs_s32_empty', 'abs', [('s32', x)], 's32', x.copy())


# ---- binary float --------------------------------------------------------------------

FLOAT_PAIRS = {
    'add': [(math.inf, -math.inf), (-0.0, -0.0), (-0.0, 0.0), (1.0, -1.0), (math.inf, 1.0)],
    'subtract': [(math.inf, math.inf), (-0.0, 0.0), (0.0, 0.0), (1.0, 1.0)],
    'multiply': [(0.0, math.inf), (-0.0, 3.0), (-2.0, -0.0), (math.inf, -2.0)],
    'divide': [(1.0, 0.0), (-1.0, 0.0), (1.0, -0.0), (0.0, 0.0), (math.inf, math.inf), (3.0, math.inf),
               (-0.0, 5.0), (7.0, 2.0)],
    'remainder': [(5.5, 0.0), (math.inf, 2.0), (3.0, math.inf), (-0.0, 2.0), (-7.0, 2.0), (7.0, -2.0),
                  (-7.5, 2.0), (6.0, 3.0), (-6.0, 3.0)],
    'power': [(0.0, -1.0), (-0.0, -1.0), (-0.0, -2.0), (math.nan, 0.0), (1.0, math.nan), (-1.0, math.inf),
              (-8.0, 1.0 / 3.0), (2.0, 1000.0), (-2.0, 3.0), (-2.0, -2.0), (0.0, 0.0), (0.5, -math.inf),
              (3.0, 0.5), (math.inf, -1.0), (-math.inf, 3.0)],
    'atan2': [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (1.0, 0.0), (-1.0, -0.0),
              (math.inf, math.inf), (-math.inf, math.inf), (math.inf, -math.inf), (2.0, -math.inf),
              (-2.0, -math.inf), (math.nan, 1.0)],
    'maximum': [(math.nan, 1.0), (1.0, math.nan), (math.inf, -math.inf), (-1.0, -math.inf),
                (math.nan, math.inf)],
    'minimum': [(math.nan, 1.0), (1.0, math.nan), (math.inf, -math.inf), (-1.0, -math.inf),
                (math.nan, -math.inf)],
}

BINARY_FLOAT = {
    'add': (np.add, 'rounded'),
    'subtract': (np.subtract, 'rounded'),
    'multiply': (np.multiply, 'rounded'),
    'divide': (np.divide, 'rounded'),
    'remainder': (np.fmod, 'exact'),
    'power': (np.power, 'approx'),
    'atan2': (np.arctan2, 'approx'),
    'maximum': (np.maximum, 'exact'),
    'minimum': (np.minimum, 'exact'),
}


def binary_float_cases(ctx):
    rng = ctx.rng
    for opcode, (ref, kind) in BINARY_FLOAT.items():
        for t in FLOATS:
            pairs = FLOAT_PAIRS[opcode]
            dims = dims_with_size(rng, len(pairs) + 4, 60)
            if opcode == 'power':
                a = rand_float(rng, t, dims, 0.1, 4.0)
                b = rand_float(rng, t, dims, -3.0, 3.0)
                # Negative bases with integral exponents.
                neg = rng.random(dims) < 0.3
                a = np.where(neg, -a, a).astype(a.dtype)
                b = np.where(neg, round_to(t, np.round(b.astype(np.float64))), b).astype(b.dtype)
            elif opcode == 'remainder':
                a = rand_float(rng, t, dims, -20.0, 20.0)
                b = rand_float(rng, t, dims, 0.5, 5.0) * np.where(rng.random(dims) < 0.5, -1, 1).astype(a.dtype)
            else:
                a = rand_float(rng, t, dims)
                b = rand_float(rng, t, dims)
            a, b = place_pairs(rng, t, a, b, pairs)
            if opcode in ('maximum', 'minimum'):
                # XLA leaves max/min of -0 and +0 unordered: keep such pairs out.
                both_zero = (a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))
                b = np.where(both_zero, np.ones_like(b), b).astype(a.dtype)
            y = round_to(t, ref(a.astype(np.float64), b.astype(np.float64)))
            single_op(ctx, f"{opcode}_{t}", opcode, [(t, a), (t, b)], t, y, tol=float_tol(t, kind))
    # Zero-size operands.
    z = np.zeros([3, 0], np.float32)
    single_op(ctx, 'add_f32_empty', 'add', [('f32', z), ('f32', z)], 'f32', z)


# ---- binary integer --------------------------------------------------------------------

def trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def int_refs(t):
    d = TYPES[t]
    signed = d.kind == 's'
    bits = d.bits

    def divide(a, b):
        if b == 0:
            return -1 if signed else d.hi
        if signed and a == d.lo and b == -1:
            return d.lo  # overflow wraps
        return trunc_div(a, b)

    def remainder(a, b):
        if b == 0:
            return a
        if signed and a == d.lo and b == -1:
            return 0
        return a - b * trunc_div(a, b)  # sign follows the dividend

    def power(a, b):
        if b < 0:  # XLA: 1 for base 1, otherwise 0 (base -1 included)
            return 1 if a == 1 else 0
        return wrap(t, pow(a, b, 1 << bits))

    def shift_amount(b):
        return b % (1 << bits)  # the amount is read as unsigned

    def shl(a, b):
        s = shift_amount(b)
        return 0 if s >= bits else wrap(t, a << s)

    def shrl(a, b):
        s = shift_amount(b)
        return 0 if s >= bits else wrap(t, (a % (1 << bits)) >> s)

    def shra(a, b):
        s = shift_amount(b)
        a_signed = a - (1 << bits) if a >= (1 << (bits - 1)) else a  # bits as signed
        return wrap(t, a_signed >> min(s, bits - 1))

    return {
        'add': lambda a, b: wrap(t, a + b),
        'subtract': lambda a, b: wrap(t, a - b),
        'multiply': lambda a, b: wrap(t, a * b),
        'divide': divide,
        'remainder': remainder,
        'power': power,
        'maximum': max,
        'minimum': min,
        'and': lambda a, b: wrap(t, a & b),
        'or': lambda a, b: wrap(t, a | b),
        'xor': lambda a, b: wrap(t, a ^ b),
        'shift-left': shl,
        'shift-right-logical': shrl,
        'shift-right-arithmetic': shra,
    }


def int_pairs(t, opcode):
    d = TYPES[t]
    lo, hi, bits = d.lo, d.hi, d.bits
    signed = d.kind == 's'
    if opcode in ('add', 'subtract', 'multiply'):
        p = [(hi, 1), (hi, hi), (lo, lo), (hi, 2), (0, 0)]
        return p + ([(lo, -1), (lo, 1), (-1, -1)] if signed else [(0, 1), (1, hi)])
    if opcode in ('divide', 'remainder'):
        p = [(5, 0), (0, 0), (hi, 0), (lo, 0), (7, 2), (hi, hi), (6, 3)]
        return p + ([(lo, -1), (-7, 2), (7, -2), (-7, -2), (-5, 0), (lo, 1), (lo, 2)] if signed else [(hi, 2)])
    if opcode == 'power':
        p = [(2, 3), (3, 0), (0, 0), (0, 5), (1, 77), (5, 100), (3, bits + 3), (2, bits), (2, bits - 1)]
        return p + ([(-2, 3), (-3, 5), (1, -5), (-1, -3), (-1, -4), (2, -1), (-2, -2), (0, -1), (lo, 1),
                     (lo, 2)] if signed else [(hi, 2), (hi, 3)])
    if opcode.startswith('shift'):
        p = [(1, 0), (1, bits - 1), (1, bits), (hi, bits + 1), (lo, 1), (hi, 1), (5, 200), (3, hi)]
        return p + ([(-1, 1), (-8, 2), (-8, -1), (lo, bits - 1), (lo, bits), (-5, lo)] if signed else
                    [(hi, bits - 1), (1 << (bits - 1), 3)])
    return [(lo, hi), (hi, lo), (0, 0), (lo, lo)]


def binary_int_cases(ctx):
    rng = ctx.rng
    for t in INTS:
        d = TYPES[t]
        for opcode, fn in int_refs(t).items():
            pairs = int_pairs(t, opcode)
            dims = dims_with_size(rng, len(pairs) + 4, 60)
            a = rand_int(rng, t, dims)
            if opcode == 'power':
                small = rand_int(rng, t, dims, max(d.lo, -4), 4)
                a = np.where(rng.random(dims) < 0.7, small, a).astype(a.dtype)
                b = rand_int(rng, t, dims, max(d.lo, -3), 40)
            elif opcode.startswith('shift'):
                b = rand_int(rng, t, dims, max(d.lo, -3), d.bits + 4)
            elif opcode in ('divide', 'remainder'):
                small = rand_int(rng, t, dims, max(d.lo, -9), 9)
                b = np.where(rng.random(dims) < 0.5, small, rand_int(rng, t, dims)).astype(a.dtype)
            else:
                b = rand_int(rng, t, dims)
            a, b = place_pairs(rng, t, a, b, pairs)
            y = int_map(t, fn, a, b)
            single_op(ctx, f"{opcode.replace('-', '_')}_{t}", opcode, [(t, a), (t, b)], t, y)
    for opcode, fn in [('and', np.logical_and), ('or', np.logical_or), ('xor', np.logical_xor)]:
        a = np.array([False, False, True, True, True], dtype=np.bool_)
        b = np.array([False, True, False, True, False], dtype=np.bool_)
        single_op(ctx, f'{opcode}_pred', opcode, [('pred', a), ('pred', b)], 'pred', fn(a, b))
    a = rand_int(rng, 's64', [2, 0, 3])
    single_op(ctx, 'divide_s64_empty', 'divide', [('s64', a), ('s64', a)], 's64', a.copy())


def scalar_cases(ctx):
    """Rank-0 operands for every unary/binary float op (f64, f32) and integer op (s64)."""
    rng = ctx.rng
    for opcode, (ref, (lo, hi), kind, _) in UNARY_FLOAT.items():
        x = rand_float(rng, 'f64', [], lo, hi)
        single_op(ctx, f"{opcode.replace('-', '_')}_f64_scalar", opcode, [('f64', x)], 'f64', ref(x),
                  tol=float_tol('f64', kind))
    for opcode, (ref, kind) in BINARY_FLOAT.items():
        a, b = rand_float(rng, 'f32', [], 0.5, 3), rand_float(rng, 'f32', [], -2, 2)
        y = round_to('f32', ref(a.astype(np.float64), b.astype(np.float64)))
        single_op(ctx, f'{opcode}_f32_scalar', opcode, [('f32', a), ('f32', b)], 'f32', y, tol=float_tol('f32', kind))
    for opcode, fn in int_refs('s64').items():
        pairs = int_pairs('s64', opcode)
        x, y = pairs[int(rng.integers(len(pairs)))]
        a, b = as_type('s64', x), as_type('s64', y)
        single_op(ctx, f"{opcode.replace('-', '_')}_s64_scalar", opcode, [('s64', a), ('s64', b)], 's64',
                  int_map('s64', fn, a, b))


def generate(ctx):
    scalar_cases(ctx)
    unary_float_cases(ctx)
    unary_int_cases(ctx)
    binary_float_cases(ctx)
    binary_int_cases(ctx)
