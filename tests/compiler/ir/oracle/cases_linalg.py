"""dot (batch and contracting dimensions anywhere, mixed input/output types) and
convolution (any dim_labels, stride, padding, lhs/rhs dilation, feature and batch
groups), computed in float64 (floats) or Python integers (ints)."""
import itertools

import numpy as np

from .case import close
from .dtypes import TYPES, as_type, rand_float, rand_int, round_to, wrap
from .hlo import Module, ints, window_str


def prod(xs):
    return int(np.prod(xs)) if len(xs) else 1


def dot_ref(lhs, rhs, lb, lc, rb, rc):
    """Output dims: batch, then lhs free dims, then rhs free dims (each in order)."""
    lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    left = np.transpose(lhs, lb + lf + lc).reshape(prod([lhs.shape[d] for d in lb]),
                                                   prod([lhs.shape[d] for d in lf]),
                                                   prod([lhs.shape[d] for d in lc]))
    right = np.transpose(rhs, rb + rc + rf).reshape(left.shape[0], left.shape[2],
                                                    prod([rhs.shape[d] for d in rf]))
    out = np.zeros((left.shape[0], left.shape[1], right.shape[2]), dtype=lhs.dtype)
    for b in range(left.shape[0]):
        for i in range(left.shape[1]):
            for j in range(right.shape[2]):
                acc = lhs.dtype.type(0) if lhs.dtype != object else 0
                for k in range(left.shape[2]):
                    acc = acc + left[b, i, k] * right[b, k, j]
                out[b, i, j] = acc
    shape = [lhs.shape[d] for d in lb] + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf]
    return out.reshape(shape)


def float_dot_tol(a, b, k):
    scale = float(np.max(np.abs(a.astype(np.float64)), initial=0) * np.max(np.abs(b.astype(np.float64)), initial=0))
    return close(1e-5, max(k, 1) * scale * 2.0 ** -22)


def dot_cases(ctx):
    rng = ctx.rng
    # (lhs type, rhs type, out type, lhs dims, rhs dims, lb, lc, rb, rc, values)
    configs = [
        ('f32', 'f32', 'f32', [3, 4], [4, 5], [], [1], [], [0], 'rand'),
        ('f32', 'f32', 'f32', [2, 3, 4], [2, 4, 2], [0], [2], [0], [1], 'rand'),
        ('f32', 'f32', 'f32', [3, 2, 4], [4, 5, 2], [1], [2], [2], [0], 'rand'),
        ('f32', 'f32', 'f32', [2, 3, 4], [4, 2, 2], [], [0, 2], [], [2, 0], 'rand'),
        ('bf16', 'bf16', 'f32', [4, 8], [8, 3], [], [1], [], [0], 'rand'),
        ('s32', 's32', 's32', [3, 5], [5, 2], [], [1], [], [0], 'full'),
        ('f64', 'f64', 'f64', [4, 6], [6], [], [1], [], [0], 'rand'),
        ('f32', 'f32', 'f32', [7], [7], [], [0], [], [0], 'rand'),
        ('f32', 'f32', 'f32', [3, 0], [0, 2], [], [1], [], [0], 'rand'),
        ('s8', 's8', 's32', [2, 6], [6, 3], [], [1], [], [0], 'full'),
        ('f16', 'f16', 'f16', [3, 8], [8, 2], [], [1], [], [0], 'int'),
        ('f32', 'f32', 'f32', [3], [4], [], [], [], [], 'rand'),
        ('u8', 'u8', 'u8', [2, 2, 3], [2, 3, 2], [0, 1], [2], [0, 2], [1], 'full'),
    ]
    for k, (ta, tb, tout, da, db, lb, lc, rb, rc, kind) in enumerate(configs):
        if TYPES[ta].kind == 'f':
            a = rand_float(rng, ta, da, -2, 2, integral=(kind == 'int'))
            b = rand_float(rng, tb, db, -2, 2, integral=(kind == 'int'))
            y = round_to(tout, dot_ref(a.astype(np.float64), b.astype(np.float64), lb, lc, rb, rc))
            kdim = prod([da[d] for d in lc])
            tol = float_dot_tol(a, b, kdim) if kind == 'rand' else {}
        else:
            a, b = rand_int(rng, ta, da), rand_int(rng, tb, db)
            res = dot_ref(a.astype(object), b.astype(object), lb, lc, rb, rc)
            y = as_type(tout, [wrap(tout, int(v)) for v in res.reshape(-1).tolist()]).reshape(res.shape)
            tol = {}
        m = Module()
        e = m.entry()
        pa, pb = e.param(ta, da), e.param(tb, db)
        attrs = [f'lhs_batch_dims={ints(lb)}', f'lhs_contracting_dims={ints(lc)}',
                 f'rhs_batch_dims={ints(rb)}', f'rhs_contracting_dims={ints(rc)}']
        if not lb:
            attrs = [a_ for a_ in attrs if 'batch' not in a_]
        if k == 1:
            attrs.append('operand_precision={highest,highest}')
        r = e.op('dot', tout, list(y.shape), [pa, pb], attrs)
        ctx.add(f'dot_{ta}_{tout}_{k}', m.text(e, r), [(ta, a), (tb, b)], [(tout, y)], tol)


# ---- convolution ---------------------------------------------------------------------

def canonical_axis(label, ch, kind):
    """Axis of a dim_labels character in the canonical layout (b/o, f/i, spatial...)."""
    if ch.isdigit():
        return 2 + int(ch)
    if kind == 'kernel':
        return {'o': 0, 'i': 1}[ch]
    return {'b': 0, 'f': 1}[ch]


def to_layout(canon, labels, kind):
    return np.transpose(canon, [canonical_axis(labels, c, kind) for c in labels]).copy()


def conv_ref(lhs, rhs, strides, pads, lhs_dil, rhs_dil, fgc, bgc):
    """lhs (N, C, *S), rhs (O, I, *K) canonical; returns (N / bgc, O, *out)."""
    n_in, _ = lhs.shape[:2]
    o_size, i_size = rhs.shape[:2]
    spatial, kernel = lhs.shape[2:], rhs.shape[2:]
    out_sp = []
    for s, k, st, (lo, hi), ld, rd in zip(spatial, kernel, strides, pads, lhs_dil, rhs_dil):
        padded = (s - 1) * ld + 1 + lo + hi
        eff = (k - 1) * rd + 1
        out_sp.append((padded - eff) // st + 1 if padded >= eff else 0)
    n_out = n_in // bgc
    out = np.zeros([n_out, o_size] + out_sp, dtype=lhs.dtype)
    for o in range(o_size):
        g = o // (o_size // fgc)             # feature group: input features g*I ..
        bg = o // (o_size // bgc)            # batch group: input batches bg*n_out ..
        feats = slice(g * i_size, (g + 1) * i_size)
        for n in range(n_out):
            for pos in itertools.product(*[range(v) for v in out_sp]):
                acc = 0
                for kpos in itertools.product(*[range(v) for v in kernel]):
                    idx = []
                    for d in range(len(spatial)):
                        p = pos[d] * strides[d] + kpos[d] * rhs_dil[d] - pads[d][0]
                        if p < 0 or p % lhs_dil[d] or p // lhs_dil[d] >= spatial[d]:
                            break
                        idx.append(p // lhs_dil[d])
                    else:
                        vec = lhs[(bg * n_out + n, feats) + tuple(idx)]
                        ker = rhs[(o, slice(None)) + kpos]
                        for a, b in zip(vec.tolist(), ker.tolist()):
                            acc = acc + a * b
                out[(n, o) + pos] = acc
    return out


CONV_CONFIGS = [
    # type, N, C, S, O, K, strides, pads, lhs_dil, rhs_dil, fgc, bgc, labels, values
    ('f32', 2, 3, [5, 5], 4, [3, 3], [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1], 1, 1, 'bf01_oi01->bf01', 'rand'),
    ('f32', 1, 2, [6, 5], 3, [2, 3], [2, 1], [(0, 1), (1, 0)], [1, 1], [1, 1], 1, 1, 'b01f_01io->b01f', 'rand'),
    ('f32', 1, 2, [4, 3], 2, [3, 2], [1, 1], [(2, 2), (1, 1)], [2, 2], [1, 2], 1, 1, 'bf01_oi01->bf01', 'rand'),
    ('f32', 2, 4, [4, 4], 4, [2, 2], [1, 2], [(0, 0), (0, 1)], [1, 1], [1, 1], 2, 1, 'b01f_01io->b01f', 'rand'),
    ('f32', 1, 3, [5, 4], 6, [3, 3], [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1], 3, 1, 'b01f_01io->b01f', 'rand'),
    ('f32', 2, 3, [4, 4], 4, [2, 2], [1, 1], [(0, 0), (0, 0)], [1, 1], [1, 1], 1, 2, 'bf01_oi01->bf01', 'rand'),
    ('f32', 2, 3, [7], 2, [3], [2], [(1, 2)], [1], [3], 1, 1, 'b0f_0io->b0f', 'rand'),
    ('f32', 2, 2, [3, 4], 3, [2, 2], [1, 1], [(1, 0), (0, 1)], [1, 1], [1, 1], 1, 1, '01bf_i01o->f01b', 'rand'),
    ('bf16', 1, 2, [4, 4], 2, [2, 2], [2, 2], [(1, 1), (1, 1)], [1, 1], [1, 1], 1, 1, 'bf01_oi01->bf01', 'int'),
    ('s32', 1, 2, [5], 2, [2], [1], [(1, 1)], [2], [1], 1, 1, 'bf0_oi0->bf0', 'int'),
    ('f64', 1, 1, [3, 3, 3], 2, [2, 2, 2], [1, 1, 1], [(0, 0), (1, 0), (0, 1)], [1, 1, 1], [1, 1, 1], 1, 1,
     'b012f_012io->b012f', 'rand'),
    ('f32', 1, 2, [3, 3], 2, [3, 3], [1, 1], [(0, 0), (0, 0)], [1, 1], [1, 1], 1, 1, 'b01f_01io->b01f', 'rand'),
    # Negative padding crops the input.
    ('f32', 1, 2, [6, 5], 2, [2, 2], [1, 2], [(-1, 0), (1, -2)], [1, 1], [1, 1], 1, 1, 'bf01_oi01->bf01', 'rand'),
    # Window reversal along spatial dim 1 (the kernel is flipped there).
    ('s32', 2, 1, [4, 5], 2, [2, 3], [1, 1], [(0, 1), (1, 1)], [1, 1], [1, 1], 1, 1, 'b01f_01io->b01f', 'int',
     [False, True]),
]


def conv_cases(ctx):
    rng = ctx.rng
    for k, cfg in enumerate(CONV_CONFIGS):
        t, n, c, s, o, kern, strides, pads, ld, rd, fgc, bgc, labels, kind = cfg[:14]
        reversal = cfg[14] if len(cfg) > 14 else None
        in_l, rest = labels.split('_')
        ker_l, out_l = rest.split('->')
        i_size = c // fgc
        lhs_c_dims, rhs_c_dims = [n, c] + s, [o, i_size] + kern
        if TYPES[t].kind == 'f':
            lhs = rand_float(rng, t, lhs_c_dims, -2, 2, integral=(kind == 'int'))
            rhs = rand_float(rng, t, rhs_c_dims, -2, 2, integral=(kind == 'int'))
            flips = tuple(2 + d for d, r in enumerate(reversal or []) if r)
            out_c = round_to(t, conv_ref(lhs.astype(np.float64), np.flip(rhs, axis=flips).astype(np.float64), strides,
                                         pads, ld, rd, fgc, bgc))
            tol = float_dot_tol(lhs, rhs, i_size * prod(kern)) if kind == 'rand' else {}
        else:
            lhs, rhs = rand_int(rng, t, lhs_c_dims, -9, 9), rand_int(rng, t, rhs_c_dims, -9, 9)
            flips = tuple(2 + d for d, r in enumerate(reversal or []) if r)
            res = conv_ref(lhs.astype(object), np.flip(rhs, axis=flips).astype(object), strides, pads, ld, rd, fgc,
                           bgc)
            out_c = as_type(t, res.reshape(-1).tolist()).reshape(res.shape)
            tol = {}
        x = to_layout(lhs, in_l, 'input')
        w = to_layout(rhs, ker_l, 'kernel')
        y = to_layout(out_c, out_l, 'output')
        m = Module()
        e = m.entry()
        px, pw = e.param(t, list(x.shape)), e.param(t, list(w.shape))
        attrs = [window_str(kern, strides, pads, ld, rd, reversal), f'dim_labels={labels}']
        if fgc > 1:
            attrs.append(f'feature_group_count={fgc}')
        if bgc > 1:
            attrs.append(f'batch_group_count={bgc}')
        r = e.op('convolution', t, list(y.shape), [px, pw], attrs)
        ctx.add(f'convolution_{t}_{k}', m.text(e, r), [(t, x), (t, w)], [(t, y)], tol)


def generate(ctx):
    dot_cases(ctx)
    conv_cases(ctx)
