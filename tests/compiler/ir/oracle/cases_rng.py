"""rng-bit-generator against XLA's RngBitGenerator expander (the CPU/GPU lowering):
Threefry-2x32 (20 rounds) and Philox-4x32 (10 rounds) written in NumPy uint32
arithmetic, checked against the Random123 known-answer vectors before use.

XLA's wiring: key = state[0]. Threefry: counter = state[1]; 64-bit outputs use one
block per element (low | high << 32); narrower outputs halve the shape along its first
even dimension (else its largest; a scalar is [1]) and block k of the half shape fills
positions 2i, 2i+1 of that dimension; narrow types keep the low bits. Philox: 128-bit
counter (state[1], state[2]) for u64[3], (state[1], state[0]) for u64[2]; 32-bit
element k is word k % 4 of block k / 4, 64-bit element k is words (0,1) or (2,3) of
block k / 2. New state: counter + blocks used (u64[2] Philox keeps only the low word).
"""
import numpy as np

from .dtypes import TYPES
from .hlo import Module, shape_str, tuple_str

U32 = np.uint32
MASK64 = (1 << 64) - 1


def rotl(x, r):
    return (x << U32(r)) | (x >> U32(32 - r))


def threefry2x32(x0, x1, k0, k1):
    """x0, x1: uint32 arrays (counter words); k0, k1: key words."""
    with np.errstate(over='ignore'):
        k0, k1 = U32(k0), U32(k1)
        ks = [k0, k1, U32(0x1BD11BDA) ^ k0 ^ k1]
        x0 = (x0 + ks[0]).astype(U32)
        x1 = (x1 + ks[1]).astype(U32)
        rotations = [[13, 15, 26, 6], [17, 29, 16, 24]]
        for block in range(5):
            for r in rotations[block % 2]:
                x0 = (x0 + x1).astype(U32)
                x1 = rotl(x1, r) ^ x0
            x0 = (x0 + ks[(block + 1) % 3]).astype(U32)
            x1 = (x1 + ks[(block + 2) % 3] + U32(block + 1)).astype(U32)
    return x0, x1


def philox4x32(x, key):
    """x: 4 uint32 arrays; key: 2 ints."""
    x = [np.asarray(w, dtype=U32) for w in x]
    k0, k1 = int(key[0]), int(key[1])
    for _ in range(10):
        p0 = x[0].astype(np.uint64) * np.uint64(0xD2511F53)
        p1 = x[2].astype(np.uint64) * np.uint64(0xCD9E8D57)
        hi = lambda p: (p >> np.uint64(32)).astype(U32)  # noqa: E731
        lo = lambda p: (p & np.uint64(0xffffffff)).astype(U32)  # noqa: E731
        x = [hi(p1) ^ x[1] ^ U32(k0), lo(p1), hi(p0) ^ x[3] ^ U32(k1), lo(p0)]
        k0 = (k0 + 0x9E3779B9) & 0xffffffff
        k1 = (k1 + 0xBB67AE85) & 0xffffffff
    return x


def check_known_answers():
    """Random123's published known-answer vectors (counter words, key words)."""
    a, b = threefry2x32(np.array([0], U32), np.array([0], U32), 0, 0)
    assert (int(a[0]), int(b[0])) == (0x6b200159, 0x99ba4efe), (hex(a[0]), hex(b[0]))
    a, b = threefry2x32(np.array([0xffffffff], U32), np.array([0xffffffff], U32), 0xffffffff, 0xffffffff)
    assert (int(a[0]), int(b[0])) == (0x1cb996fc, 0xbb002be7), (hex(a[0]), hex(b[0]))
    a, b = threefry2x32(np.array([0x243f6a88], U32), np.array([0x85a308d3], U32), 0x13198a2e, 0x03707344)
    assert (int(a[0]), int(b[0])) == (0xc4923a9c, 0x483df7a0), (hex(a[0]), hex(b[0]))
    y = philox4x32([[0], [0], [0], [0]], [0, 0])
    assert [int(w[0]) for w in y] == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8], [hex(w[0]) for w in y]
    y = philox4x32([[0x243f6a88], [0x85a308d3], [0x13198a2e], [0x03707344]], [0xa4093822, 0x299f31d0])
    assert [int(w[0]) for w in y] == [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1], [hex(w[0]) for w in y]


def words64(values):
    v = np.array([int(x) & MASK64 for x in values], dtype=np.uint64)
    return (v & np.uint64(0xffffffff)).astype(U32), (v >> np.uint64(32)).astype(U32)


def threefry_bits(dims, bits, key, counter):
    """Returns (python-int values row-major, new counter)."""
    k0, k1 = key & 0xffffffff, key >> 32
    n = int(np.prod(dims)) if dims else 1
    if bits == 64:
        lo, hi = threefry2x32(*words64([counter + i for i in range(n)]), k0, k1)
        return [int(a) | int(b) << 32 for a, b in zip(lo, hi)], (counter + n) & MASK64
    if not dims:
        lo, _ = threefry2x32(*words64([counter]), k0, k1)
        return [int(lo[0])], (counter + 1) & MASK64
    evens = [i for i, d in enumerate(dims) if d % 2 == 0]
    split = evens[0] if evens else max(range(len(dims)), key=lambda i: (dims[i], -i))
    half = list(dims)
    half[split] = (dims[split] + 1) // 2
    m = int(np.prod(half))
    w0, w1 = threefry2x32(*words64([counter + i for i in range(m)]), k0, k1)
    full = list(half)
    full[split] *= 2
    out = np.zeros(full, dtype=np.uint64)
    h0 = w0.reshape(half).astype(np.uint64)
    h1 = w1.reshape(half).astype(np.uint64)
    sel0 = [slice(None)] * len(dims)
    sel1 = [slice(None)] * len(dims)
    sel0[split] = slice(0, None, 2)
    sel1[split] = slice(1, None, 2)
    out[tuple(sel0)] = h0
    out[tuple(sel1)] = h1
    out = out[tuple(slice(0, d) for d in dims)]
    mask = (1 << bits) - 1
    return [int(v) & mask for v in out.reshape(-1)], (counter + m) & MASK64


def philox_bits(n, bits, key, low, high):
    """Returns (values, new (low, high) counter)."""
    wide = bits == 64
    blocks = (n * (2 if wide else 1) + 3) // 4
    ctr = [((high << 64) | low) + b for b in range(blocks)]
    words = [[(c >> (32 * j)) & 0xffffffff for c in ctr] for j in range(4)]
    y = philox4x32(words, [key & 0xffffffff, key >> 32])
    vals = []
    for k in range(n):
        if wide:
            b, pair = divmod(k, 2)
            vals.append(int(y[2 * pair][b]) | int(y[2 * pair + 1][b]) << 32)
        else:
            b, j = divmod(k, 4)
            vals.append(int(y[j][b]) & ((1 << bits) - 1))
    new = ((high << 64) | low) + blocks
    return vals, (new & MASK64, (new >> 64) & MASK64)


def rng_case(ctx, name, algorithm, state, t, dims):
    bits = TYPES[t].bits
    n = int(np.prod(dims)) if dims else 1
    key = state[0]
    if algorithm == 'rng_three_fry':
        vals, c = threefry_bits(dims, bits, key, state[1])
        new_state = [key, c]
    elif len(state) == 3:
        vals, (lo, hi) = philox_bits(n, bits, key, state[1], state[2])
        new_state = [key, lo, hi]
    else:
        vals, (lo, _) = philox_bits(n, bits, key, state[1], state[0])
        new_state = [key, lo]
    data = np.array(vals, dtype=TYPES[t].value_dtype).reshape(dims)
    m = Module()
    e = m.entry()
    p = e.param('u64', [len(state)])
    shape = tuple_str([shape_str('u64', [len(state)]), shape_str(t, dims)])
    r = e.op('rng-bit-generator', None, None, [p], f'algorithm={algorithm}', shape=shape)
    ctx.add(name, m.text(e, r), [('u64', np.array(state, dtype=np.uint64))],
            [('u64', np.array(new_state, dtype=np.uint64)), (t, data)])


def generate(ctx):
    check_known_answers()
    rng = ctx.rng

    def u64():
        return int(rng.integers(0, 2 ** 64 - 1, dtype=np.uint64, endpoint=True))
    for k, (t, dims) in enumerate([('u32', [4, 4]), ('u32', [3, 5]), ('u32', []), ('u64', [3, 2]),
                                   ('u16', [2, 3]), ('u8', [5]), ('u32', [3, 1, 2]), ('s32', [2, 3])]):
        state = [u64(), u64() if k != 2 else 2 ** 64 - 1]
        rng_case(ctx, f'rng_bit_generator_threefry_{t}_{k}', 'rng_three_fry', state, t, dims)
    for k, (t, dims, size) in enumerate([('u32', [5, 3], 3), ('u64', [3], 2), ('u32', [7], 2), ('u16', [2, 2], 3),
                                         ('u64', [2, 3], 3)]):
        state = [u64() for _ in range(size)]
        if k == 4:
            state[1] = 2 ** 64 - 2  # the 128-bit counter carries into its high word
        rng_case(ctx, f'rng_bit_generator_philox_{t}_{k}', 'rng_philox', state, t, dims)
    rng_case(ctx, 'rng_bit_generator_default_u32', 'rng_default', [u64(), u64()], 'u32', [6])
