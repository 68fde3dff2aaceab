"""Test cases and their files: CASE.hlo and CASE.safetensors (inputs argN, expected
outputs outN, tolerances and device counts in __metadata__)."""
import json
import os
import re
import struct
import zlib

import numpy as np

from .dtypes import TYPES, storage

# Tolerance presets (metadata values are strings, as safetensors requires).
EXACT = {}


def ulps(n):
    return {'ulps': str(n)}


def close(rtol, atol=0.0):
    return {'rtol': repr(float(rtol)), 'atol': repr(float(atol))}


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, type, values)."""
    header = {}
    if metadata:
        header['__metadata__'] = {k: str(v) for k, v in metadata.items()}
    blobs, offset = [], 0
    for name, t, values in tensors:
        raw = storage(t, values)
        header[name] = {'dtype': TYPES[t].st, 'shape': [int(d) for d in np.shape(values)],
                        'data_offsets': [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * ((8 - len(text) % 8) % 8)
    tmp = path + '.tmp'
    with open(tmp, 'wb') as f:
        f.write(struct.pack('<Q', len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


class Context:
    """Collects cases; rng is the one seeded generator every case draws from."""

    def __init__(self, rng):
        self.rng = rng
        self.cases = {}

    def add(self, name, hlo, args, outs, tol=None, devices=None, replicas=None, partitions=None):
        """args: [(type, values)] for one device, or (with devices) one such list per
        device; outs likewise [(type, values)] or one list per device. tol: metadata
        such as ulps(2) or close(1e-5, 1e-6); per-output overrides as 'outN.ulps'."""
        assert re.fullmatch(r'[A-Za-z0-9_]+', name), name
        assert name not in self.cases, name
        meta = dict(tol or {})
        if replicas is not None:
            meta['replicas'] = str(replicas)
        if partitions is not None:
            meta['partitions'] = str(partitions)
        tensors = []
        if devices is None:
            tensors += [(f'arg{i}', t, v) for i, (t, v) in enumerate(args)]
            tensors += [(f'out{i}', t, v) for i, (t, v) in enumerate(outs)]
        else:
            assert len(args) == devices and len(outs) == devices
            for d in range(devices):
                tensors += [(f'r{d}.arg{i}', t, v) for i, (t, v) in enumerate(args[d])]
            for d in range(devices):
                tensors += [(f'r{d}.out{i}', t, v) for i, (t, v) in enumerate(outs[d])]
        for _, t, v in tensors:
            assert np.asarray(v).dtype == TYPES[t].value_dtype, (name, t, np.asarray(v).dtype)
        self.cases[name] = (hlo, tensors, meta)

    def write(self, out_dir):
        os.makedirs(out_dir, exist_ok=True)
        for f in os.listdir(out_dir):
            if f.endswith('.hlo') or f.endswith('.safetensors'):
                os.remove(os.path.join(out_dir, f))
        for name, (hlo, tensors, meta) in sorted(self.cases.items()):
            with open(os.path.join(out_dir, name + '.hlo'), 'w') as f:
                f.write(hlo)
            write_safetensors(os.path.join(out_dir, name + '.safetensors'), tensors, meta)


def single_op(ctx, name, opcode, inputs, out_t, expected, attrs=(), tol=None, layouts=True):
    """A module whose entry applies one opcode to parameters; inputs: [(type, values)].
    The text style (entry signature, operand shapes, column-major layouts where the op
    does not depend on layouts) varies by a hash of the name, so every style is used."""
    from .hlo import Module
    style = zlib.crc32(name.encode())
    m = Module(entry_signature=bool(style & 1), operand_shapes=bool(style & 2))
    ranks = [np.ndim(v) for _, v in inputs] + [np.ndim(expected)]
    if layouts is True and style % 5 == 0 and min(ranks) >= 2 and opcode not in ('bitcast', 'reshape'):
        layouts = 'column'
    e = m.entry(layouts=layouts)
    ps = [e.param(t, list(np.shape(v))) for t, v in inputs]
    r = e.op(opcode, out_t, list(np.shape(expected)), ps, attrs)
    ctx.add(name, m.text(e, r), inputs, [(out_t, expected)], tol)
