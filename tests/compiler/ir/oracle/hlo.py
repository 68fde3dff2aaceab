"""A small writer of XLA HLO text: modules, computations, instructions, literals."""
import math

import numpy as np

from .dtypes import is_float

# Every opcode some generated module uses (for the coverage check in numpy_oracle.py).
USED_OPCODES = set()


def shape_str(t, dims, layout=True):
    """layout: True (row-major, XLA's default {n-1,...,0}), False (none printed) or
    'column' ({0,...,n-1}). Layouts never change logical values."""
    s = f"{t}[{','.join(str(int(d)) for d in dims)}]"
    if layout and len(dims) > 0:
        order = range(len(dims)) if layout == 'column' else reversed(range(len(dims)))
        s += '{' + ','.join(str(i) for i in order) + '}'
    return s


def tuple_str(shapes):
    return '(' + ', '.join(shapes) + ')'


def strip_layout(shape):
    """Removes {...} layouts from a shape string (signatures carry none)."""
    out, depth = [], 0
    for ch in shape:
        if ch == '{':
            depth += 1
        elif ch == '}':
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return ''.join(out)


def ints(xs):
    return '{' + ','.join(str(int(x)) for x in xs) + '}'


def window_str(size, stride=None, pad=None, lhs_dilate=None, rhs_dilate=None, reversal=None):
    n = len(size)
    parts = ['size=' + 'x'.join(str(s) for s in size)]
    if stride is not None:
        parts.append('stride=' + 'x'.join(str(s) for s in stride))
    if pad is not None:
        parts.append('pad=' + 'x'.join(f'{lo}_{hi}' for lo, hi in pad))
    if lhs_dilate is not None:
        parts.append('lhs_dilate=' + 'x'.join(str(s) for s in lhs_dilate))
    if rhs_dilate is not None:
        parts.append('rhs_dilate=' + 'x'.join(str(s) for s in rhs_dilate))
    if reversal is not None:
        parts.append('rhs_reversal=' + 'x'.join(str(int(r)) for r in reversal))
    assert n > 0
    return 'window={' + ' '.join(parts) + '}'


def scalar_text(t, v):
    if t == 'pred':
        return 'true' if bool(v) else 'false'
    if is_float(t):
        f = float(v)
        if math.isnan(f):
            return 'nan'
        if math.isinf(f):
            return 'inf' if f > 0 else '-inf'
        return repr(f)  # the exact value of the double, shortest form
    return str(int(v))


def literal_text(t, arr):
    arr = np.asarray(arr)
    if arr.ndim == 0:
        return scalar_text(t, arr[()])

    def rec(a):
        if a.ndim == 1:
            return '{' + ', '.join(scalar_text(t, x) for x in a.tolist()) + '}'
        return '{' + ', '.join(rec(sub) for sub in a) + '}'
    return rec(arr)


class V:
    """An HLO value: instruction name and shape text."""

    def __init__(self, name, shape):
        self.name, self.shape = name, shape

    def __str__(self):
        return '%' + self.name


class Comp:
    def __init__(self, module, name, layouts=True, entry=False):
        self.module, self.name, self.layouts, self.entry = module, name, layouts, entry
        self.lines, self.params = [], []

    def _name(self, prefix):
        # Unique across the module: XLA dumps never repeat an instruction name.
        self.module.count += 1
        return f'{prefix}{self.module.count}'

    def _shape(self, t, dims):
        return shape_str(t, dims, self.layouts)

    def param(self, t=None, dims=None, shape=None):
        i = len(self.params)
        shape = shape or self._shape(t, dims)
        v = V(f'p{i}' if self.entry else self._name('q'), shape)
        self.params.append(v)
        self.lines.append((v.name, f'%{v.name} = {shape} parameter({i})'))
        USED_OPCODES.add('parameter')
        return v

    def op(self, opcode, t, dims, operands=(), attrs=(), shape=None):
        """Appends `%name = shape opcode(operands), attrs`. attrs: a string or list;
        shape (text) replaces t/dims for tuple results."""
        shape = shape or self._shape(t, dims)
        name = self._name('v')
        v = V(name, shape)
        if isinstance(attrs, str):
            attrs = [attrs] if attrs else []
        if self.module.operand_shapes:
            args = ', '.join(f'{o.shape} {o}' for o in operands)
        else:
            args = ', '.join(str(o) for o in operands)
        text = f'%{name} = {shape} {opcode}({args})'
        if attrs:
            text += ', ' + ', '.join(attrs)
        self.lines.append((name, text))
        USED_OPCODES.add(opcode)
        return v

    def constant(self, t, arr):
        arr = np.asarray(arr)
        name = self._name('c')
        shape = self._shape(t, list(arr.shape))
        self.lines.append((name, f'%{name} = {shape} constant({literal_text(t, arr)})'))
        USED_OPCODES.add('constant')
        return V(name, shape)

    def tuple(self, values):
        return self.op('tuple', None, None, values, shape=tuple_str([v.shape for v in values]))

    def gte(self, v, index, t, dims):
        return self.op('get-tuple-element', t, dims, [v], f'index={index}')

    def text(self, root, entry):
        body = []
        for name, line in self.lines:
            body.append(('  ROOT ' if name == root.name else '  ') + line)
        if entry and not self.module.entry_signature:
            head = f'ENTRY %{self.name} {{'
        else:
            sig = ', '.join(f'{p.name}: {strip_layout(p.shape)}' for p in self.params)
            head = ('ENTRY ' if entry else '') + f'%{self.name} ({sig}) -> {strip_layout(root.shape)} {{'
        return head + '\n' + '\n'.join(body) + '\n}\n'


class Module:
    """Computations are emitted in the order they are finished, so callees (finished
    before a caller names them) precede their callers; the entry comes last."""

    def __init__(self, header='', entry_signature=False, operand_shapes=False):
        """entry_signature: print `ENTRY %e (p0: f32[2]) -> f32[2] {` rather than
        `ENTRY %e {`; operand_shapes: print operands as `f32[2]{0} %p0` (XLA dumps)."""
        self.header = header
        self.entry_signature, self.operand_shapes = entry_signature, operand_shapes
        self.done = []
        self.names = set()
        self.cache = {}
        self.count = 0

    def comp(self, name, layouts=True):
        base, k = name, 1
        while name in self.names:
            k += 1
            name = f'{base}_{k}'
        self.names.add(name)
        return Comp(self, name, layouts)

    def finish(self, comp, root):
        self.done.append(comp.text(root, entry=False))
        return comp.name

    def entry(self, name='e', layouts=True):
        self.names.add(name)
        return Comp(self, name, layouts, entry=True)

    def text(self, entry_comp, root):
        head = 'HloModule m' + (', ' + self.header if self.header else '')
        return head + '\n\n' + '\n'.join(self.done + [entry_comp.text(root, entry=True)])

    # ---- common scalar computations ---------------------------------------------------

    def binary(self, opcode, t, attrs=()):
        """A computation (x: t[], y: t[]) -> t[] applying opcode (cached per module)."""
        key = ('binary', opcode, t, tuple(attrs) if not isinstance(attrs, str) else attrs)
        if key not in self.cache:
            c = self.comp(f"{opcode.replace('-', '_')}_{t}")
            x, y = c.param(t, []), c.param(t, [])
            out_t = 'pred' if opcode == 'compare' else t
            r = c.op(opcode, out_t, [], [x, y], attrs)
            self.cache[key] = self.finish(c, r)
        return '%' + self.cache[key]

    def compare(self, t, direction, ctype=None):
        attrs = [f'direction={direction}'] + ([f'type={ctype}'] if ctype else [])
        return self.binary('compare', t, attrs)
