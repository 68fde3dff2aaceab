"""Collectives over 4 replicas (explicit and iota replica groups): all-reduce,
all-gather, reduce-scatter, all-to-all, collective-permute, collective-broadcast, the
async pairs (all-reduce-start/-done, ...), replica-id, partition-id.
Float data is integer-valued so that sums are exact in any reduction order."""
import numpy as np

from .dtypes import as_type, rand_float, rand_int, round_to, wrap
from .hlo import Module, ints, shape_str, tuple_str

R = 4


def groups_text(groups):
    return '{' + ','.join(ints(g) for g in groups) + '}'


def device_values(rng, t, dims):
    if t in ('f32', 'bf16', 'f64', 'f16'):
        return [rand_float(rng, t, dims, -8, 8, integral=True) for _ in range(R)]
    return [rand_int(rng, t, dims) for _ in range(R)]


def group_of(groups, r):
    for g in groups:
        if r in g:
            return g
    raise ValueError(r)


def combine(t, opcode, values):
    if opcode == 'add':
        if t.startswith('s') or t.startswith('u'):
            acc = [0] * values[0].size
            for v in values:
                acc = [wrap(t, a + int(b)) for a, b in zip(acc, v.reshape(-1).tolist())]
            return as_type(t, acc).reshape(values[0].shape)
        return round_to(t, np.sum([v.astype(np.float64) for v in values], axis=0))
    fn = {'maximum': np.maximum, 'minimum': np.minimum}[opcode]
    out = values[0]
    for v in values[1:]:
        out = fn(out, v)
    return out.astype(values[0].dtype)


def add_spmd(ctx, name, hlo, args, outs):
    ctx.add(name, hlo, args, outs, devices=R, replicas=R)


def all_reduce_cases(ctx):
    rng = ctx.rng
    configs = [
        ('s32', 'add', [2, 3], [[0, 1], [2, 3]], 'replica_groups={{0,1},{2,3}}'),
        ('f32', 'add', [4], [[0, 1], [2, 3]], 'replica_groups=[2,2]<=[4]'),
        ('f32', 'maximum', [2, 2], [[0, 2], [1, 3]], 'replica_groups=[2,2]<=[2,2]T(1,0)'),
        ('bf16', 'add', [3], [[0, 1, 2, 3]], 'replica_groups={}'),
        ('u8', 'minimum', [5], [[3, 1], [0], [2]], 'replica_groups={{3,1},{0},{2}}'),
    ]
    for k, (t, opcode, dims, groups, attr) in enumerate(configs):
        m = Module(f'replica_count={R}')
        comp = m.binary(opcode, t)
        e = m.entry()
        p = e.param(t, dims)
        r = e.op('all-reduce', t, dims, [p], [attr, f'to_apply={comp}'])
        xs = device_values(rng, t, dims)
        outs = [[(t, combine(t, opcode, [xs[j] for j in group_of(groups, d)]))] for d in range(R)]
        add_spmd(ctx, f'all_reduce_{opcode}_{t}_{k}', m.text(e, r), [[(t, x)] for x in xs], outs)
    # Variadic all-reduce: a tuple of two arrays reduced together.
    m = Module(f'replica_count={R}')
    comp = m.binary('add', 's32')
    e = m.entry()
    a, b = e.param('s32', [2]), e.param('s32', [3])
    shape = tuple_str([shape_str('s32', [2]), shape_str('s32', [3])])
    r = e.op('all-reduce', None, None, [a, b], ['replica_groups={{0,1,2,3}}', f'to_apply={comp}'], shape=shape)
    xa, xb = device_values(rng, 's32', [2]), device_values(rng, 's32', [3])
    sa, sb = combine('s32', 'add', xa), combine('s32', 'add', xb)
    add_spmd(ctx, 'all_reduce_variadic_s32', m.text(e, r), [[('s32', xa[d]), ('s32', xb[d])] for d in range(R)],
             [[('s32', sa), ('s32', sb)] for _ in range(R)])


def all_gather_cases(ctx):
    rng = ctx.rng
    for k, (t, dims, dim, groups) in enumerate([('f32', [2, 3], 0, [[0, 1, 2, 3]]), ('s8', [2, 2], 1, [[0, 2], [1, 3]]),
                                               ('pred', [3], 0, [[1, 0], [3, 2]])]):
        m = Module(f'replica_count={R}')
        e = m.entry()
        p = e.param(t, dims)
        out_dims = list(dims)
        out_dims[dim] *= len(groups[0])
        r = e.op('all-gather', t, out_dims, [p], [f'replica_groups={groups_text(groups)}', f'dimensions={{{dim}}}'])
        xs = device_values(rng, t, dims) if t != 'pred' else [rand_int(rng, t, dims) for _ in range(R)]
        outs = [[(t, np.concatenate([xs[j] for j in group_of(groups, d)], axis=dim))] for d in range(R)]
        add_spmd(ctx, f'all_gather_{t}_{k}', m.text(e, r), [[(t, x)] for x in xs], outs)


def reduce_scatter_cases(ctx):
    rng = ctx.rng
    for k, (t, dims, dim, groups) in enumerate([('f32', [8, 2], 0, [[0, 1, 2, 3]]), ('s32', [3, 4], 1, [[1, 0], [3, 2]])]):
        m = Module(f'replica_count={R}')
        comp = m.binary('add', t)
        e = m.entry()
        p = e.param(t, dims)
        n = len(groups[0])
        out_dims = list(dims)
        out_dims[dim] //= n
        r = e.op('reduce-scatter', t, out_dims, [p],
                 [f'replica_groups={groups_text(groups)}', f'dimensions={{{dim}}}', f'to_apply={comp}'])
        xs = device_values(rng, t, dims)
        outs = []
        for d in range(R):
            g = group_of(groups, d)
            total = combine(t, 'add', [xs[j] for j in g])
            outs.append([(t, np.split(total, n, axis=dim)[g.index(d)].copy())])
        add_spmd(ctx, f'reduce_scatter_{t}_{k}', m.text(e, r), [[(t, x)] for x in xs], outs)


def all_to_all_cases(ctx):
    rng = ctx.rng
    for k, (t, dims, dim, groups) in enumerate([('f32', [4, 3], 0, [[0, 1, 2, 3]]), ('u16', [2, 4], 1, [[0, 1], [2, 3]]),
                                               ('s64', [2, 8], 1, [[3, 0, 1, 2]])]):
        m = Module(f'replica_count={R}')
        e = m.entry()
        p = e.param(t, dims)
        r = e.op('all-to-all', t, dims, [p], [f'replica_groups={groups_text(groups)}', f'dimensions={{{dim}}}'])
        xs = device_values(rng, t, dims)
        outs = []
        for d in range(R):
            g = group_of(groups, d)
            me = g.index(d)
            chunks = [np.split(xs[j], len(g), axis=dim)[me] for j in g]
            outs.append([(t, np.concatenate(chunks, axis=dim))])
        add_spmd(ctx, f'all_to_all_{t}_{k}', m.text(e, r), [[(t, x)] for x in xs], outs)
    # Tuple form: operand j of each replica goes to replica j; result j comes from replica j.
    m = Module(f'replica_count={R}')
    e = m.entry()
    ps = [e.param('s16', [2]) for _ in range(R)]
    shape = tuple_str([shape_str('s16', [2])] * R)
    r = e.op('all-to-all', None, None, ps, 'replica_groups={{0,1,2,3}}', shape=shape)
    xs = [[rand_int(rng, 's16', [2]) for _ in range(R)] for _ in range(R)]
    add_spmd(ctx, 'all_to_all_tuple_s16', m.text(e, r), [[('s16', x) for x in xs[d]] for d in range(R)],
             [[('s16', xs[j][d]) for j in range(R)] for d in range(R)])


def permute_and_id_cases(ctx):
    rng = ctx.rng
    for k, pairs in enumerate([[(0, 1), (1, 2), (2, 3), (3, 0)], [(0, 2), (1, 0)]]):
        m = Module(f'replica_count={R}')
        e = m.entry()
        p = e.param('f32', [2, 2])
        text = '{' + ','.join(f'{{{a},{b}}}' for a, b in pairs) + '}'
        r = e.op('collective-permute', 'f32', [2, 2], [p], f'source_target_pairs={text}')
        xs = device_values(rng, 'f32', [2, 2])
        outs = []
        for d in range(R):
            src = [a for a, b in pairs if b == d]
            outs.append([('f32', xs[src[0]].copy() if src else np.zeros([2, 2], np.float32))])
        add_spmd(ctx, f'collective_permute_{k}', m.text(e, r), [[('f32', x)] for x in xs], outs)
    # replica-id, also as data: each replica adds its id to its input.
    m = Module(f'replica_count={R}')
    e = m.entry()
    p = e.param('u32', [3])
    rid = e.op('replica-id', 'u32', [], [])
    b = e.op('broadcast', 'u32', [3], [rid], 'dimensions={}')
    r = e.tuple([rid, e.op('add', 'u32', [3], [p, b])])
    xs = [rand_int(rng, 'u32', [3], 0, 1000) for _ in range(R)]
    add_spmd(ctx, 'replica_id_u32', m.text(e, r), [[('u32', x)] for x in xs],
             [[('u32', np.array(d, np.uint32)), ('u32', (xs[d] + d).astype(np.uint32))] for d in range(R)])
    m = Module(f'num_partitions={R}')
    e = m.entry()
    r = e.op('partition-id', 'u32', [], [])
    ctx.add('partition_id_u32', m.text(e, r), [[] for _ in range(R)],
            [[('u32', np.array(d, np.uint32))] for d in range(R)], devices=R, replicas=1, partitions=R)


def broadcast_and_async_cases(ctx):
    rng = ctx.rng
    # collective-broadcast: every device of a group gets the value of the group's first.
    groups = [[2, 0], [1, 3]]
    m = Module(f'replica_count={R}')
    e = m.entry()
    p = e.param('f32', [3, 2])
    r = e.op('collective-broadcast', 'f32', [3, 2], [p], f'replica_groups={groups_text(groups)}')
    xs = device_values(rng, 'f32', [3, 2])
    add_spmd(ctx, 'collective_broadcast_f32', m.text(e, r), [[('f32', x)] for x in xs],
             [[('f32', xs[group_of(groups, d)[0]].copy())] for d in range(R)])
    # Async pairs as XLA prints them; each done is its collective's result.
    m = Module(f'replica_count={R}')
    comp = m.binary('add', 's32')
    e = m.entry()
    p = e.param('s32', [4])
    ar = e.op('all-reduce-start', 's32', [4], [p], ['replica_groups={{0,1},{2,3}}', f'to_apply={comp}'])
    ag = e.op('all-gather-start', None, None, [p], ['replica_groups={}', 'dimensions={0}'],
              shape=tuple_str([shape_str('s32', [4]), shape_str('s32', [4 * R])]))
    cp = e.op('collective-permute-start', None, None, [p], 'source_target_pairs={{0,3},{3,1},{1,0}}',
              shape=tuple_str([shape_str('s32', [4])] * 2 + [shape_str('u32', [])] * 2))
    dones = [e.op('all-reduce-done', 's32', [4], [ar]), e.op('all-gather-done', 's32', [4 * R], [ag]),
             e.op('collective-permute-done', 's32', [4], [cp])]
    r = e.tuple(dones)
    xs = device_values(rng, 's32', [4])
    outs = []
    for d in range(R):
        source = {3: 0, 1: 3, 0: 1}.get(d)
        outs.append([('s32', combine('s32', 'add', [xs[j] for j in group_of([[0, 1], [2, 3]], d)])),
                     ('s32', np.concatenate(xs)),
                     ('s32', xs[source].copy() if source is not None else np.zeros([4], np.int32))])
    add_spmd(ctx, 'async_pairs_s32', m.text(e, r), [[('s32', x)] for x in xs], outs)
    # Generic async ops: XLA's shorthand (reduce-scatter-start / -update / -done) and
    # async-start / -update / -done around a computation of an all-to-all.
    m = Module(f'replica_count={R}')
    comp = m.binary('add', 's32')
    w = m.comp('wrapped_all_to_all')
    q = w.param('s32', [2 * R])
    wrapped = m.finish(w, w.op('all-to-all', 's32', [2 * R], [q], ['replica_groups={}', 'dimensions={0}']))
    e = m.entry()
    p = e.param('s32', [2 * R])
    operands = tuple_str([shape_str('s32', [2 * R])])
    rs_shape = tuple_str([operands, shape_str('s32', [2])])
    rs = e.op('reduce-scatter-start', None, None, [p],
              ['replica_groups={}', 'dimensions={0}', f'to_apply={comp}'], shape=rs_shape)
    rs = e.op('reduce-scatter-update', None, None, [rs], shape=rs_shape)
    rs = e.op('reduce-scatter-done', 's32', [2], [rs])
    a2a_shape = tuple_str([operands, shape_str('s32', [2 * R]), shape_str('s32', [])])
    a2a = e.op('async-start', None, None, [p], f'calls=%{wrapped}', shape=a2a_shape)
    a2a = e.op('async-update', None, None, [a2a], f'calls=%{wrapped}', shape=a2a_shape)
    a2a = e.op('async-done', 's32', [2 * R], [a2a], f'calls=%{wrapped}')
    r = e.tuple([rs, a2a])
    xs = device_values(rng, 's32', [2 * R])
    outs = [[('s32', combine('s32', 'add', [x[2 * d:2 * d + 2] for x in xs])),
             ('s32', np.concatenate([x[2 * d:2 * d + 2] for x in xs]))] for d in range(R)]
    add_spmd(ctx, 'async_generic_s32', m.text(e, r), [[('s32', x)] for x in xs], outs)


def generate(ctx):
    all_reduce_cases(ctx)
    all_gather_cases(ctx)
    reduce_scatter_cases(ctx)
    all_to_all_cases(ctx)
    permute_and_id_cases(ctx)
    broadcast_and_async_cases(ctx)
