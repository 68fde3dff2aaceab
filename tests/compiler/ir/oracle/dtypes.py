"""Element types, 16-bit float rounding, bit views and random test values.

Values are held as NumPy arrays of a "value dtype": bf16 values live in float32 arrays
(always exactly representable in bf16), every other type in its own NumPy dtype. Only
the safetensors writer turns bf16 into its uint16 bit pattern.
"""
import math

import numpy as np


class DType:
    def __init__(self, name, st, value_dtype, kind, bits):
        self.name = name            # HLO spelling
        self.st = st                # safetensors dtype
        self.value_dtype = np.dtype(value_dtype)
        self.kind = kind            # 'pred', 's', 'u' or 'f'
        self.bits = bits

    @property
    def lo(self):
        return -(1 << (self.bits - 1)) if self.kind == 's' else 0

    @property
    def hi(self):
        return (1 << (self.bits - 1)) - 1 if self.kind == 's' else (1 << self.bits) - 1


TYPES = {t.name: t for t in [
    DType('pred', 'BOOL', np.bool_, 'pred', 8),
    DType('s8', 'I8', np.int8, 's', 8),
    DType('s16', 'I16', np.int16, 's', 16),
    DType('s32', 'I32', np.int32, 's', 32),
    DType('s64', 'I64', np.int64, 's', 64),
    DType('u8', 'U8', np.uint8, 'u', 8),
    DType('u16', 'U16', np.uint16, 'u', 16),
    DType('u32', 'U32', np.uint32, 'u', 32),
    DType('u64', 'U64', np.uint64, 'u', 64),
    DType('f16', 'F16', np.float16, 'f', 16),
    DType('bf16', 'BF16', np.float32, 'f', 16),
    DType('f32', 'F32', np.float32, 'f', 32),
    DType('f64', 'F64', np.float64, 'f', 64),
]}

FLOATS = ['f16', 'bf16', 'f32', 'f64']
SIGNED = ['s8', 's16', 's32', 's64']
UNSIGNED = ['u8', 'u16', 'u32', 'u64']
INTS = SIGNED + UNSIGNED
ALL = ['pred'] + INTS + FLOATS


def is_float(t):
    return TYPES[t].kind == 'f'


def is_int(t):
    return TYPES[t].kind in ('s', 'u')


# ---- 16-bit floats -------------------------------------------------------------------

def f32_to_bf16_bits(x):
    """Round float32 values to bfloat16 bit patterns, ties to even; NaN stays NaN."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    nan = (u & np.uint32(0x7fffffff)) > np.uint32(0x7f800000)
    bias = np.uint32(0x7fff) + ((u >> np.uint32(16)) & np.uint32(1))
    rounded = ((u + bias) >> np.uint32(16)).astype(np.uint16)
    # A NaN whose payload fits in 16 bits keeps its bits (bitcast results); others quiet.
    exact = (u & np.uint32(0xffff)) == 0
    quiet = ((u >> np.uint32(16)) | np.where(exact, np.uint32(0), np.uint32(0x40))).astype(np.uint16)
    return np.where(nan, quiet, rounded).astype(np.uint16)


def bf16_bits_to_f32(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_to(t, x):
    """Rounds real values (any float array) to type t the way a float computation in
    f32 (for the 16-bit types) or in t itself would: f64 -> f32 -> 16-bit."""
    x = np.asarray(x)
    if t == 'f64':
        return x.astype(np.float64)
    x32 = x.astype(np.float32)
    if t == 'f32':
        return x32
    if t == 'f16':
        return x32.astype(np.float16)
    if t == 'bf16':
        return bf16_bits_to_f32(f32_to_bf16_bits(x32)).reshape(x.shape)
    raise ValueError(t)


def bits_of(t, v):
    """Raw bit patterns (as unsigned ints of the type's width) of value array v."""
    v = np.ascontiguousarray(v)
    if t == 'bf16':
        return f32_to_bf16_bits(v).reshape(v.shape)
    if t == 'pred':
        return v.astype(np.uint8)
    return v.view(np.dtype(f'u{TYPES[t].bits // 8}'))


def from_bits(t, b):
    """Inverse of bits_of."""
    b = np.ascontiguousarray(b)
    if t == 'bf16':
        return bf16_bits_to_f32(b.astype(np.uint16)).reshape(b.shape)
    if t == 'pred':
        return b.astype(np.bool_)
    return b.astype(np.dtype(f'u{TYPES[t].bits // 8}')).view(TYPES[t].value_dtype)


def storage(t, v):
    """Little-endian bytes of value array v as stored in a safetensors file."""
    v = np.asarray(v)
    if t == 'bf16':
        return f32_to_bf16_bits(v).astype('<u2').tobytes()
    if t == 'pred':
        return v.astype(np.uint8).tobytes()
    return v.astype(TYPES[t].value_dtype.newbyteorder('<')).tobytes()


def total_order_key(t, v):
    """Python ints ordering floats as XLA's TOTALORDER comparison does:
    -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN."""
    w = TYPES[t].bits
    keys = []
    for b in bits_of(t, v).reshape(-1).tolist():
        b = int(b)
        if b >> (w - 1):
            keys.append(-(b & ((1 << (w - 1)) - 1)) - 1)
        else:
            keys.append(b)
    return np.array(keys, dtype=object).reshape(np.shape(v))


def neg_nan(t):
    return round_to(t, np.array([np.copysign(np.nan, -1.0)]))[0]


def special_floats(t):
    """Values with well-defined results for most ops: zeros, infinities, NaNs, extremes."""
    info = {'f16': (65504.0, 2.0 ** -14, 2.0 ** -24), 'bf16': (3.3895313892515355e38, 2.0 ** -126, 2.0 ** -133),
            'f32': (3.4028234663852886e38, 2.0 ** -126, 2.0 ** -149),
            'f64': (1.7976931348623157e308, 2.0 ** -1022, 5e-324)}[t]
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, info[0], -info[0], info[1], info[2], -info[2]]
    out = round_to(t, np.array(vals, dtype=np.float64))
    out = np.concatenate([out, np.array([neg_nan(t)], dtype=out.dtype)])
    return out


# ---- random values -------------------------------------------------------------------

def rand_dims(rng, min_rank=0, max_rank=3, max_dim=5, zero=False):
    rank = int(rng.integers(min_rank, max_rank + 1))
    dims = [int(rng.integers(1, max_dim + 1)) for _ in range(rank)]
    if rank and rng.random() < 0.3:
        dims[int(rng.integers(rank))] = 1
    if zero and rank:
        dims[int(rng.integers(rank))] = 0
    return dims


def sprinkle(rng, arr, specials):
    """Copies arr and overwrites distinct random positions with the given specials."""
    out = np.array(arr, copy=True)
    flat = out.reshape(-1)
    specials = np.asarray(specials, dtype=out.dtype).reshape(-1)
    k = min(flat.size, specials.size)
    if k:
        pos = rng.choice(flat.size, size=k, replace=False)
        flat[pos] = specials[rng.permutation(specials.size)[:k]]
    return out


def rand_float(rng, t, dims, lo=-4.0, hi=4.0, specials=None, integral=False):
    v = rng.uniform(lo, hi, size=dims)
    if integral:
        v = np.round(v) + 0.0  # no -0: integral data stands for exact integers
    v = round_to(t, v)
    if specials is not None:
        v = sprinkle(rng, v, round_to(t, np.asarray(specials, dtype=np.float64)))
    return v


def int_edges(t):
    d = TYPES[t]
    vals = {d.lo, d.hi, 0, 1, d.lo + 1, d.hi - 1, 2}
    if d.kind == 's':
        vals |= {-1, -2}
    return sorted(vals)


def rand_int(rng, t, dims, lo=None, hi=None, edges=False):
    d = TYPES[t]
    lo = d.lo if lo is None else lo
    hi = d.hi if hi is None else hi
    if t == 'pred':
        return rng.integers(0, 2, size=dims).astype(np.bool_)
    v = rng.integers(lo, hi, size=dims, endpoint=True, dtype=d.value_dtype)
    if edges:
        v = sprinkle(rng, v, np.array(int_edges(t), dtype=object).astype(d.value_dtype))
    return v


def rand_values(rng, t, dims, **kw):
    if t == 'pred':
        return rng.integers(0, 2, size=dims).astype(np.bool_)
    if is_float(t):
        return rand_float(rng, t, dims, **kw)
    return rand_int(rng, t, dims, **kw)


def as_type(t, values):
    """An array of type t's value dtype holding exactly these values (ints, bools,
    floats representable in t)."""
    if is_float(t):
        return round_to(t, np.asarray(values, dtype=np.float64))
    if t == 'pred':
        return np.asarray(values, dtype=np.bool_)
    return np.array(np.asarray(values, dtype=object).tolist(), dtype=TYPES[t].value_dtype)


def wrap(t, x):
    """Python int x reduced modulo 2^bits into type t's range (two's complement)."""
    d = TYPES[t]
    x %= 1 << d.bits
    if d.kind == 's' and x > d.hi:
        x -= 1 << d.bits
    return x


def int_map(t_out, fn, *arrays):
    """Elementwise fn over Python ints/bools/floats of arrays (same shape); the results
    are Python values exactly representable in t_out."""
    shape = np.shape(arrays[0])
    flats = [np.asarray(a).reshape(-1).tolist() for a in arrays]
    out = [fn(*vals) for vals in zip(*flats)]
    if not out:
        return np.zeros(shape, dtype=TYPES[t_out].value_dtype)
    return as_type(t_out, out).reshape(shape)
