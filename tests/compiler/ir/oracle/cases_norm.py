"""batch-norm-training, batch-norm-inference and batch-norm-grad (statistics over every
dimension but feature_index, biased variance), computed in float64 from the textbook
formulas: normalized = (x - mean) / sqrt(var + eps) * scale + offset, and the gradient
in the x-hat form dx = scale / sigma / N * (N dy - sum(dy) - x_hat sum(dy x_hat))."""
import numpy as np

from .case import close
from .dtypes import rand_float, round_to
from .hlo import Module, tuple_str


def moved(x, f):
    """x with its feature dimension last, as a [N, F] matrix."""
    return np.moveaxis(x, f, -1).reshape(-1, x.shape[f])


def unmoved(m, like, f):
    shape = list(np.moveaxis(np.empty(like.shape), f, -1).shape)
    return np.moveaxis(m.reshape(shape), -1, f)


def tolerance(t):
    return close(2e-5, 2e-5) if t == 'f32' else close(1e-2, 1e-2)


def norm_cases(ctx):
    rng = ctx.rng
    configs = [('f32', [4, 3, 5, 2], 1, 1e-3), ('f32', [6, 4], 0, 1e-5), ('f32', [2, 3, 4, 5], 3, 0.1),
               ('bf16', [8, 2, 3, 4], 1, 1e-3), ('f32', [3, 1, 7], 2, 0.0)]
    for k, (t, dims, f, eps) in enumerate(configs):
        feat = [dims[f]]
        x = rand_float(rng, t, dims, -3, 5)
        scale = rand_float(rng, t, feat, 0.5, 2)
        offset = rand_float(rng, t, feat, -1, 1)
        dy = rand_float(rng, t, dims, -1, 1)
        xm = moved(x.astype(np.float64), f)
        n = xm.shape[0]
        mean = xm.mean(axis=0)
        var = ((xm - mean) ** 2).mean(axis=0)
        sigma = np.sqrt(var + np.float32(eps).astype(np.float64))
        x_hat = (xm - mean) / sigma
        y = unmoved(x_hat * scale.astype(np.float64) + offset.astype(np.float64), x, f)
        attrs = [f'epsilon={eps!r}', f'feature_index={f}']

        # Training: normalized by the batch's statistics, which it also returns.
        m = Module()
        e = m.entry()
        px, ps, po = e.param(t, dims), e.param(t, feat), e.param(t, feat)
        fshape = f'{t}[{dims[f]}]{{0}}'
        xshape = e.params[0].shape
        r = e.op('batch-norm-training', None, None, [px, ps, po], attrs, shape=tuple_str([xshape, fshape, fshape]))
        ctx.add(f'batch_norm_training_{t}_{k}', m.text(e, r), [(t, x), (t, scale), (t, offset)],
                [(t, round_to(t, y)), (t, round_to(t, mean)), (t, round_to(t, var))], tolerance(t))

        # Inference: with given statistics (the batch's, rounded to t, and shifted).
        given_mean = round_to(t, mean + 0.25)
        given_var = round_to(t, var * 1.5)
        gm, gv = given_mean.astype(np.float64), given_var.astype(np.float64)
        y_inf = unmoved((xm - gm) / np.sqrt(gv + np.float32(eps).astype(np.float64)) * scale.astype(np.float64)
                        + offset.astype(np.float64), x, f)
        m = Module()
        e = m.entry()
        ops = [e.param(t, dims)] + [e.param(t, feat) for _ in range(4)]
        r = e.op('batch-norm-inference', t, dims, ops, attrs)
        ctx.add(f'batch_norm_inference_{t}_{k}', m.text(e, r),
                [(t, x), (t, scale), (t, offset), (t, given_mean), (t, given_var)], [(t, round_to(t, y_inf))],
                tolerance(t))

        # Grad: through the batch's statistics (given as operands, rounded to t).
        bm, bv = round_to(t, mean), round_to(t, var)
        sig = np.sqrt(bv.astype(np.float64) + np.float32(eps).astype(np.float64))
        xh = (xm - bm.astype(np.float64)) / sig
        g = moved(dy.astype(np.float64), f)
        dxh = g * scale.astype(np.float64)
        dx = (n * dxh - dxh.sum(axis=0) - xh * (dxh * xh).sum(axis=0)) / (n * sig)
        m = Module()
        e = m.entry()
        ops = [e.param(t, dims), e.param(t, feat), e.param(t, feat), e.param(t, feat), e.param(t, dims)]
        r = e.op('batch-norm-grad', None, None, ops, attrs, shape=tuple_str([xshape, fshape, fshape]))
        ctx.add(f'batch_norm_grad_{t}_{k}', m.text(e, r), [(t, x), (t, scale), (t, bm), (t, bv), (t, dy)],
                [(t, round_to(t, unmoved(dx, x, f))), (t, round_to(t, (g * xh).sum(axis=0))),
                 (t, round_to(t, g.sum(axis=0)))], tolerance(t))


def generate(ctx):
    norm_cases(ctx)
