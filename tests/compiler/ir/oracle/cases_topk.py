"""topk (the k largest or smallest along the last dimension, IEEE totalOrder for floats,
ties in position order) and copy-start / copy-done (an asynchronous copy: the value)."""
import numpy as np

from .dtypes import TYPES, rand_float, rand_int
from .hlo import Module, tuple_str


def order_keys(t, x):
    """Integers whose order is t's element order (totalOrder for floats)."""
    if t in ('f32', 'f16', 'f64'):
        bits = x.view({'f32': np.int32, 'f16': np.int16, 'f64': np.int64}[t]).astype(np.int64)
        top = {'f32': 2**31 - 1, 'f16': 2**15 - 1, 'f64': 2**63 - 1}[t]
        return np.where(bits < 0, bits ^ top, bits)
    return x.astype(np.int64)


def topk_cases(ctx):
    rng = ctx.rng
    configs = [('f32', [3, 10], 4, True), ('f32', [2, 3, 7], 3, False), ('s32', [5, 9], 9, True),
               ('f32', [1, 6], 6, True), ('u8', [4, 12], 5, False), ('f16', [17], 2, True), ('f32', [2, 5], 0, True)]
    for k, (t, dims, top, largest) in enumerate(configs):
        if t.startswith('f'):
            x = rand_float(rng, t, dims, -4, 4, specials=[0.0, -0.0, np.inf, -np.inf, np.nan, 1.0])
        else:
            x = rand_int(rng, t, dims, 0, 6)  # few values: many ties
        keys = order_keys(t, x)
        rows, n = x.reshape(-1, dims[-1]), dims[-1]
        krows = keys.reshape(-1, n)
        pos = np.stack([np.argsort(-kr if largest else kr, kind='stable') for kr in krows])[:, :top]
        vals = np.take_along_axis(rows, pos, axis=1)
        out_dims = dims[:-1] + [top]
        m = Module()
        e = m.entry()
        p = e.param(t, dims)
        shape = tuple_str([e._shape(t, out_dims), e._shape('s32', out_dims)])
        r = e.op('topk', None, None, [p], [f'k={top}', f'largest={"true" if largest else "false"}'], shape=shape)
        ctx.add(f'topk_{t}_{k}', m.text(e, r), [(t, x)],
                [(t, vals.reshape(out_dims)), ('s32', pos.reshape(out_dims).astype(TYPES['s32'].value_dtype))])


def copy_start_cases(ctx):
    rng = ctx.rng
    for k, (t, dims) in enumerate([('f32', [3, 4]), ('bf16', [5])]):
        x = rand_float(rng, t, dims)
        m = Module()
        e = m.entry()
        p = e.param(t, dims)
        shape = e._shape(t, dims)
        s = e.op('copy-start', None, None, [p], shape=tuple_str([shape, shape, 'u32[]']))
        r = e.op('copy-done', t, dims, [s])
        ctx.add(f'copy_start_done_{t}_{k}', m.text(e, r), [(t, x)], [(t, x)])


def generate(ctx):
    topk_cases(ctx)
    copy_start_cases(ctx)
