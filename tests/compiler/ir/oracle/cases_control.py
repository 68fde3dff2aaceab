"""parameter, constant, tuple, get-tuple-element, call, fusion, while, conditional,
opt-barrier and custom-call (the test registers the target "oracle_negate")."""
import math

import numpy as np

from .dtypes import ALL, TYPES, as_type, is_float, rand_float, rand_int, rand_values, round_to, special_floats
from .hlo import Module, shape_str, tuple_str


def constant_cases(ctx):
    rng = ctx.rng
    m = Module()
    e = m.entry()
    outs, expected = [], []
    for t in ALL:
        if is_float(t):
            v = np.concatenate([special_floats(t), rand_float(rng, t, [3])])
            v = v[[i for i in range(v.size) if not (math.isnan(v[i]) and np.signbit(v[i]))]]  # no -nan literal
            arrays = [v, rand_float(rng, t, [2, 3]), rand_float(rng, t, [])]
        elif t == 'pred':
            arrays = [np.array([True, False]), np.array(True), rand_int(rng, t, [2, 2])]
        else:
            arrays = [as_type(t, [TYPES[t].lo, TYPES[t].hi, 0, 1]), rand_int(rng, t, [2, 3]), rand_int(rng, t, [])]
        for a in arrays:
            outs.append(e.constant(t, a))
            expected.append((t, a))
    for t, dims in [('f32', [0]), ('s8', [2, 0])]:
        a = np.zeros(dims, TYPES[t].value_dtype)
        outs.append(e.constant(t, a))
        expected.append((t, a))
    ctx.add('constant_all_types', m.text(e, e.tuple(outs)), [], expected)
    # A constant feeding arithmetic.
    m = Module()
    e = m.entry()
    x = rand_float(rng, 'f32', [2, 3])
    c = rand_float(rng, 'f32', [2, 3])
    p = e.param('f32', [2, 3])
    r = e.op('multiply', 'f32', [2, 3], [p, e.constant('f32', c)])
    ctx.add('constant_times_parameter_f32', m.text(e, r), [('f32', x)], [('f32', round_to('f32', x.astype(np.float64) * c))])


def tuple_cases(ctx):
    rng = ctx.rng
    a, b, c = rand_values(rng, 'f32', [2, 3]), rand_values(rng, 's32', []), rand_values(rng, 'pred', [4])
    m = Module()
    e = m.entry()
    pa, pb, pc = e.param('f32', [2, 3]), e.param('s32', []), e.param('pred', [4])
    t = e.tuple([pa, pb, pc, pa])
    g3 = e.gte(t, 3, 'f32', [2, 3])
    g1 = e.gte(t, 1, 's32', [])
    inner = e.tuple([g1, pc])
    r = e.tuple([g3, inner])  # nested result: flattened depth-first
    ctx.add('tuple_nested_gte', m.text(e, r), [('f32', a), ('s32', b), ('pred', c)],
            [('f32', a), ('s32', b), ('pred', c)])
    # get-tuple-element of a tuple built in the computation.
    m = Module()
    e = m.entry()
    pu, pf = e.param('u8', [3]), e.param('f64', [])
    r = e.gte(e.tuple([pu, pf]), 0, 'u8', [3])
    u, f = rand_values(rng, 'u8', [3]), rand_values(rng, 'f64', [])
    ctx.add('get_tuple_element_u8', m.text(e, r), [('u8', u), ('f64', f)], [('u8', u)])


def call_fusion_cases(ctx):
    rng = ctx.rng
    x, y = rand_float(rng, 'f32', [3]), rand_float(rng, 'f32', [3])
    m = Module()
    inner = m.comp('fma')
    a, b = inner.param('f32', [3]), inner.param('f32', [3])
    r = inner.op('add', 'f32', [3], [inner.op('multiply', 'f32', [3], [a, b]), a])
    fma = m.finish(inner, r)
    outer = m.comp('twice')
    a, b = outer.param('f32', [3]), outer.param('f32', [3])
    c1 = outer.op('call', 'f32', [3], [a, b], f'to_apply=%{fma}')
    c2 = outer.op('call', 'f32', [3], [c1, b], f'to_apply=%{fma}')
    twice = m.finish(outer, outer.tuple([c2, c1]))
    e = m.entry()
    px, py = e.param('f32', [3]), e.param('f32', [3])
    shape = tuple_str([shape_str('f32', [3])] * 2)
    r = e.op('call', None, None, [px, py], f'to_apply=%{twice}', shape=shape)
    step1 = (x * y).astype(np.float32) + x
    step2 = (step1 * y).astype(np.float32) + step1
    ctx.add('call_nested_f32', m.text(e, r), [('f32', x), ('f32', y)], [('f32', step2), ('f32', step1)])

    m = Module()
    f = m.comp('fused_computation')
    a, b = f.param('s16', [2, 4]), f.param('s16', [2, 4])
    r = f.op('abs', 's16', [2, 4], [f.op('subtract', 's16', [2, 4], [a, b])])
    fused = m.finish(f, r)
    e = m.entry()
    pa, pb = e.param('s16', [2, 4]), e.param('s16', [2, 4])
    r = e.op('fusion', 's16', [2, 4], [pa, pb], ['kind=kLoop', f'calls=%{fused}'])
    a_, b_ = rand_int(rng, 's16', [2, 4]), rand_int(rng, 's16', [2, 4])
    diff = ((a_.astype(np.int64) - b_) + 2 ** 15) % 2 ** 16 - 2 ** 15
    res = np.abs(diff)
    res = np.where(res == 2 ** 15, -2 ** 15, res).astype(np.int16)
    ctx.add('fusion_abs_diff_s16', m.text(e, r), [('s16', a_), ('s16', b_)], [('s16', res)])


def while_module():
    """state (i, n, acc, x): while i < n { i += 1; acc = acc * 0.5 + x }."""
    m = Module()
    st = tuple_str([shape_str('s32', []), shape_str('s32', []), shape_str('f32', [3]), shape_str('f32', [3])])
    c = m.comp('cond')
    s = c.param(shape=st)
    lt = c.op('compare', 'pred', [], [c.gte(s, 0, 's32', []), c.gte(s, 1, 's32', [])], 'direction=LT')
    cond = m.finish(c, lt)
    b = m.comp('body')
    s = b.param(shape=st)
    i, n = b.gte(s, 0, 's32', []), b.gte(s, 1, 's32', [])
    acc, x = b.gte(s, 2, 'f32', [3]), b.gte(s, 3, 'f32', [3])
    i2 = b.op('add', 's32', [], [i, b.constant('s32', np.int32(1))])
    half = b.op('broadcast', 'f32', [3], [b.constant('f32', np.float32(0.5))], 'dimensions={}')
    acc2 = b.op('add', 'f32', [3], [b.op('multiply', 'f32', [3], [acc, half]), x])
    body = m.finish(b, b.tuple([i2, n, acc2, x]))
    e = m.entry()
    pn, pacc, px = e.param('s32', []), e.param('f32', [3]), e.param('f32', [3])
    init = e.tuple([e.constant('s32', np.int32(0)), pn, pacc, px])
    w = e.op('while', None, None, [init], [f'condition=%{cond}', f'body=%{body}'], shape=st)
    return m.text(e, e.tuple([e.gte(w, 0, 's32', []), e.gte(w, 2, 'f32', [3])]))


def while_cases(ctx):
    rng = ctx.rng
    hlo = while_module()
    for n in [5, 0, -3, 1]:
        acc, x = rand_float(rng, 'f32', [3]), rand_float(rng, 'f32', [3])
        a = acc.copy()
        for _ in range(max(n, 0)):
            a = (a * np.float32(0.5)).astype(np.float32) + x
        ctx.add(f'while_counter_{n if n >= 0 else "neg"}', hlo, [('s32', np.array(n, np.int32)), ('f32', acc), ('f32', x)],
                [('s32', np.array(max(n, 0), np.int32)), ('f32', a.astype(np.float32))])


def conditional_cases(ctx):
    rng = ctx.rng
    pair = tuple_str([shape_str('f32', [3]), shape_str('f32', [3])])
    # pred selector: true branch takes a tuple, false branch a plain array.
    m = Module()
    t = m.comp('on_true')
    s = t.param(shape=pair)
    tr = m.finish(t, t.op('add', 'f32', [3], [t.gte(s, 0, 'f32', [3]), t.gte(s, 1, 'f32', [3])]))
    f = m.comp('on_false')
    s = f.param('f32', [3])
    fa = m.finish(f, f.op('negate', 'f32', [3], [s]))
    e = m.entry()
    pp, pa, pb = e.param('pred', []), e.param('f32', [3]), e.param('f32', [3])
    r = e.op('conditional', 'f32', [3], [pp, e.tuple([pa, pb]), pa],
             [f'true_computation=%{tr}', f'false_computation=%{fa}'])
    hlo = m.text(e, r)
    for p in [True, False]:
        a, b = rand_float(rng, 'f32', [3]), rand_float(rng, 'f32', [3])
        y = (a + b).astype(np.float32) if p else -a
        ctx.add(f'conditional_pred_{str(p).lower()}', hlo, [('pred', np.array(p)), ('f32', a), ('f32', b)],
                [('f32', y)])
    # s32 branch index; out of range (negative or too large) runs the last branch.
    m = Module()
    names = []
    for k, opcode in enumerate(['add', 'subtract', 'maximum']):
        c = m.comp(f'branch{k}')
        s = c.param(shape=pair)
        names.append(m.finish(c, c.op(opcode, 'f32', [3], [c.gte(s, 0, 'f32', [3]), c.gte(s, 1, 'f32', [3])])))
    e = m.entry()
    pi, pa, pb = e.param('s32', []), e.param('f32', [3]), e.param('f32', [3])
    tup = e.tuple([pa, pb])
    r = e.op('conditional', 'f32', [3], [pi, tup, tup, tup],
             'branch_computations={' + ', '.join('%' + n for n in names) + '}')
    hlo = m.text(e, r)
    fns = [np.add, np.subtract, np.maximum]
    for idx in [0, 1, 2, -1, 7]:
        a, b = rand_float(rng, 'f32', [3]), rand_float(rng, 'f32', [3])
        fn = fns[idx] if 0 <= idx < 3 else fns[2]
        ctx.add(f'conditional_index_{idx if idx >= 0 else "neg"}', hlo,
                [('s32', np.array(idx, np.int32)), ('f32', a), ('f32', b)], [('f32', fn(a, b).astype(np.float32))])


def barrier_custom_call_cases(ctx):
    rng = ctx.rng
    a, b = rand_values(rng, 'bf16', [2, 2]), rand_values(rng, 's64', [3])
    m = Module()
    e = m.entry()
    pa, pb = e.param('bf16', [2, 2]), e.param('s64', [3])
    t = e.tuple([pa, pb])
    r = e.op('opt-barrier', None, None, [t], shape=t.shape)
    ctx.add('opt_barrier_tuple', m.text(e, r), [('bf16', a), ('s64', b)], [('bf16', a), ('s64', b)])
    x = rand_float(rng, 'f32', [2, 3])
    m = Module()
    e = m.entry()
    p = e.param('f32', [2, 3])
    r = e.op('custom-call', 'f32', [2, 3], [p], 'custom_call_target="oracle_negate"')
    ctx.add('custom_call_registered_negate', m.text(e, r), [('f32', x)], [('f32', -x)])


def generate(ctx):
    constant_cases(ctx)
    tuple_cases(ctx)
    call_fusion_cases(ctx)
    while_cases(ctx)
    conditional_cases(ctx)
    barrier_custom_call_cases(ctx)
