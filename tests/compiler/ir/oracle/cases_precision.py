"""reduce-precision (XLA's: the mantissa rounded to mantissa_bits, ties to even; an
exponent outside exponent_bits' range without subnormals becomes a signed infinity or
zero; NaN kept where a mantissa bit is) and domain (the value). The reference rounds in
float64 arithmetic at the quantum of each value's binade, not on bits."""
import numpy as np

from .dtypes import rand_float, round_to
from .hlo import Module

# Source formats: exponent bits, mantissa bits.
FORMATS = {'f32': (8, 23), 'bf16': (8, 7), 'f16': (5, 10)}


def reduce_precision_ref(t, x, e, m):
    src_e, src_m = FORMATS[t]
    v = x.astype(np.float64)
    out = v.copy()
    finite = np.isfinite(v) & (v != 0)
    _, binade = np.frexp(v[finite])
    binade = binade - 1  # floor(log2 |v|)
    src_min = 2 - 2 ** (src_e - 1)  # the smallest normal binade; subnormals round at its quantum
    q = np.ldexp(1.0, np.maximum(binade, src_min) - m)
    r = np.round(v[finite] / q) * q  # numpy rounds half to even
    if e < src_e:
        emax = 2 ** (e - 1) - 1
        _, rb = np.frexp(r)
        rb = rb - 1
        r = np.where(rb > emax, np.copysign(np.inf, r), r)
        r = np.where(rb <= -emax, np.copysign(0.0, r), r)
    out[finite] = r
    if m == 0:
        assert not np.isnan(v).any()  # XLA's result for NaN without mantissa bits is its bits'
    return round_to(t, out)


def precision_cases(ctx):
    rng = ctx.rng
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 65504.0, 65520.0, 6.1e-5, 3e-6, -2.5, 1e-40]
    configs = [('f32', 5, 10), ('f32', 8, 7), ('f32', 4, 3), ('f32', 8, 23), ('f32', 11, 52), ('f32', 8, 1),
               ('bf16', 5, 2), ('f16', 4, 5), ('f16', 6, 10), ('f32', 3, 0)]
    for k, (t, e, m) in enumerate(configs):
        sp = [s for s in specials if not (m == 0 and np.isnan(s))]
        x = rand_float(rng, t, [6, 16], -70000, 70000, specials=sp)
        x = np.where(np.arange(x.size).reshape(x.shape) % 3 == 0,
                     round_to(t, rng.uniform(-4, 4, size=x.shape) * 2.0 ** rng.integers(-30, 20, size=x.shape)), x)
        x = round_to(t, x)
        m_ = Module()
        en = m_.entry()
        p = en.param(t, [6, 16])
        r = en.op('reduce-precision', t, [6, 16], [p], [f'exponent_bits={e}', f'mantissa_bits={m}'])
        ctx.add(f'reduce_precision_{t}_e{e}m{m}_{k}', m_.text(en, r), [(t, x)], [(t, reduce_precision_ref(t, x, e, m))])
    x = rand_float(rng, 'f32', [3, 5])
    m_ = Module()
    en = m_.entry()
    p = en.param('f32', [3, 5])
    r = en.op('domain', 'f32', [3, 5], [p], ['domain={kind="sharding", entry={maximal device=0}, exit={replicated}}'])
    ctx.add('domain_f32', m_.text(en, r), [('f32', x)], [('f32', x)])


def generate(ctx):
    precision_cases(ctx)
