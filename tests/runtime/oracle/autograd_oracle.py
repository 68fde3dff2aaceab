"""Gradient oracle for tests/runtime/autograd_test.cc (PyTorch 1.13).

For every case: seeded inputs, a random cotangent w, and the gradients of
sum(f(inputs) * w) with respect to every floating input, computed by torch.autograd.
Writes one safetensors file (by hand: torch 1.13 has no safetensors package):
  CASE.in0, CASE.in1, ...  the inputs (f32 or bf16, s64 for indices, BOOL for masks)
  CASE.w                   the cotangent (shape and dtype of f's result)
  CASE.grad0, ...          torch's gradient of each input that requires grad
Usage: autograd_oracle.py OUTPUT.safetensors
"""
import json
import struct
import sys

import torch
import torch.nn.functional as F


def normal(*shape):
    return torch.randn(*shape, dtype=torch.float32)


def bf16(*shape):
    return torch.randn(*shape, dtype=torch.float32).to(torch.bfloat16)


def positive(*shape):
    return torch.rand(*shape, dtype=torch.float32) * 1.5 + 0.5


def ties(*shape):
    # Small integers: many exact ties and zeros (max/min/abs/relu/clamp edge cases).
    return torch.randint(-2, 3, shape).to(torch.float32)


def index(n, *shape):
    return torch.randint(0, n, shape, dtype=torch.int64)


def mask(*shape):
    return torch.rand(*shape) > 0.5


def inplace(x, y):
    a = x * 1.0
    a += y
    a *= y
    a -= x
    a /= 2
    a += 1.5
    return a


def copy(x, y):
    a = x * 2.0
    a.copy_(y)
    return a * x


def cross_entropy(logits, target):
    return -logits.log_softmax(1).gather(1, target.unsqueeze(1))


def mlp(x, w1, b1, w2):
    return (x @ w1.t() + b1).relu() @ w2


def reuse(x):
    # One tensor used several times: gradients from every use add up.
    y = x.exp()
    return y * x + y.sum() - x.tanh()


# name -> (inputs, function). Keep in step with kCases in autograd_test.cc.
CASES = {
    "add": (lambda: [normal(3, 4), normal(4)], lambda x, y: x + y),
    "add_scalar": (lambda: [normal(3, 4)], lambda x: x + 2.5),
    "sub": (lambda: [normal(2, 3), normal(2, 1)], lambda x, y: x - y),
    "rsub": (lambda: [normal(5)], lambda x: 2 - x),
    "mul": (lambda: [normal(3, 4), normal(3, 1)], lambda x, y: x * y),
    "mul_scalar": (lambda: [normal(3, 4)], lambda x: x * 3),
    "div": (lambda: [normal(3, 4), positive(4)], lambda x, y: x / y),
    "div_scalar": (lambda: [normal(3, 4)], lambda x: x / 4),
    "rdiv": (lambda: [positive(6)], lambda x: 2 / x),
    "pow": (lambda: [positive(3, 4), normal(3, 4)], lambda x, y: x ** y),
    "pow_scalar": (lambda: [normal(3, 4)], lambda x: x ** 3),
    "pow_half": (lambda: [positive(7)], lambda x: x ** 0.5),
    "pow_zero": (lambda: [normal(4)], lambda x: x ** 0),
    "rpow": (lambda: [normal(5)], lambda x: 2 ** x),
    "maximum": (lambda: [ties(4, 5), ties(4, 5)], torch.maximum),
    "minimum": (lambda: [ties(4, 5), ties(5)], torch.minimum),
    "clamp": (lambda: [normal(20)], lambda x: x.clamp(-0.5, 0.5)),
    "clamp_min": (lambda: [ties(20)], lambda x: x.clamp(min=0)),
    "clamp_max": (lambda: [ties(20)], lambda x: x.clamp(max=1)),
    "clamp_tensor": (lambda: [normal(4, 5), normal(4, 5) - 1, normal(5) + 0.5],
                     lambda x, lo, hi: torch.clamp(x, lo, hi)),
    "where": (lambda: [mask(3, 4), normal(3, 4), normal(4)], torch.where),
    "where_scalar": (lambda: [mask(3, 4), normal(3, 4)], lambda c, x: torch.where(c, x, 0.5)),
    "neg": (lambda: [normal(6)], lambda x: -x),
    "abs": (lambda: [ties(3, 5)], torch.abs),
    "exp": (lambda: [normal(3, 4)], torch.exp),
    "log": (lambda: [positive(3, 4)], torch.log),
    "sqrt": (lambda: [positive(3, 4)], torch.sqrt),
    "rsqrt": (lambda: [positive(3, 4)], torch.rsqrt),
    "tanh": (lambda: [normal(3, 4)], torch.tanh),
    "sigmoid": (lambda: [normal(3, 4)], torch.sigmoid),
    "relu": (lambda: [ties(4, 5)], torch.relu),
    "gelu": (lambda: [normal(4, 5) * 3], F.gelu),
    "gelu_tanh": (lambda: [normal(4, 5) * 3], lambda x: F.gelu(x, approximate="tanh")),
    "matmul": (lambda: [normal(3, 4), normal(4, 5)], torch.matmul),
    "matmul_dot": (lambda: [normal(4), normal(4)], torch.matmul),
    "matmul_vec_mat": (lambda: [normal(4), normal(4, 5)], torch.matmul),
    "matmul_mat_vec": (lambda: [normal(3, 4), normal(4)], torch.matmul),
    "matmul_batched": (lambda: [normal(2, 3, 4), normal(2, 4, 5)], torch.matmul),
    "matmul_broadcast": (lambda: [normal(2, 1, 3, 4), normal(3, 4, 5)], torch.matmul),
    "matmul_batch_mat": (lambda: [normal(2, 3, 4), normal(4, 5)], torch.matmul),
    "matmul_mat_batch": (lambda: [normal(3, 4), normal(2, 4, 5)], torch.matmul),
    "matmul_vec_batch": (lambda: [normal(4), normal(2, 4, 5)], torch.matmul),
    "matmul_batch_vec": (lambda: [normal(2, 3, 4), normal(4)], torch.matmul),
    "sum": (lambda: [normal(3, 4)], lambda x: x.sum()),
    "sum_dims": (lambda: [normal(2, 3, 4)], lambda x: x.sum((0, 2))),
    "sum_keepdim": (lambda: [normal(2, 3, 4)], lambda x: x.sum(1, keepdim=True)),
    "mean": (lambda: [normal(3, 4)], lambda x: x.mean()),
    "mean_dims": (lambda: [normal(2, 3, 4)], lambda x: x.mean((-1,), keepdim=True)),
    "max": (lambda: [ties(3, 4)], lambda x: x.amax()),
    "max_dim": (lambda: [ties(3, 6)], lambda x: x.amax(1)),
    "min_dims": (lambda: [ties(2, 3, 4)], lambda x: x.amin((0, 2), keepdim=True)),
    "logsumexp": (lambda: [normal(3, 4)], lambda x: x.logsumexp(1)),
    "logsumexp_keepdim": (lambda: [normal(2, 3, 4)], lambda x: x.logsumexp((0, 2), keepdim=True)),
    "softmax": (lambda: [normal(3, 5)], lambda x: x.softmax(1)),
    "softmax_dim0": (lambda: [normal(3, 5)], lambda x: x.softmax(0)),
    "log_softmax": (lambda: [normal(3, 5)], lambda x: x.log_softmax(-1)),
    "reshape": (lambda: [normal(3, 4)], lambda x: x.reshape(2, 6)),
    "view": (lambda: [normal(3, 4)], lambda x: x.view(-1)),
    "permute": (lambda: [normal(2, 3, 4)], lambda x: x.permute(2, 0, 1)),
    "transpose": (lambda: [normal(2, 3, 4)], lambda x: x.transpose(0, 2)),
    "t": (lambda: [normal(3, 4)], lambda x: x.t()),
    "expand": (lambda: [normal(3, 1)], lambda x: x.expand(2, 3, 4)),
    "squeeze": (lambda: [normal(3, 1, 4, 1)], lambda x: x.squeeze()),
    "squeeze_dim": (lambda: [normal(3, 1, 4)], lambda x: x.squeeze(1)),
    "unsqueeze": (lambda: [normal(3, 4)], lambda x: x.unsqueeze(1)),
    "flatten": (lambda: [normal(2, 3, 4)], lambda x: x.flatten(1)),
    "cat": (lambda: [normal(2, 3), normal(4, 3), normal(1, 3)], lambda a, b, c: torch.cat([a, b, c], 0)),
    "cat_dim1": (lambda: [normal(2, 3), normal(2, 2)], lambda a, b: torch.cat([a, b], 1)),
    "stack": (lambda: [normal(2, 3), normal(2, 3)], lambda a, b: torch.stack([a, b], 1)),
    "slice": (lambda: [normal(5, 6)], lambda x: x[:, 1:4]),
    "slice_step": (lambda: [normal(7, 3)], lambda x: x[1:6:2]),
    "slice_step_end": (lambda: [normal(3, 10)], lambda x: x[:, 2::3]),
    "slice_negative": (lambda: [normal(8)], lambda x: x[-5:-1]),
    "narrow": (lambda: [normal(4, 6)], lambda x: x.narrow(1, 2, 3)),
    "index_select": (lambda: [normal(5, 3), index(5, 7)], lambda x, i: x.index_select(0, i)),
    "index_select_dim1": (lambda: [normal(2, 5, 3), index(5, 4)], lambda x, i: x.index_select(1, i)),
    "gather": (lambda: [normal(4, 5), index(5, 3, 2)], lambda x, i: x.gather(1, i)),
    "gather_dim0": (lambda: [normal(4, 5), index(4, 6, 5)], lambda x, i: x.gather(0, i)),
    "to_f64": (lambda: [normal(3, 4)], lambda x: x.to(torch.float64).exp().to(torch.float32)),
    "inplace": (lambda: [normal(3, 4), normal(3, 4)], inplace),
    "copy": (lambda: [normal(3, 4), normal(4)], copy),
    "cross_entropy": (lambda: [normal(4, 6), index(6, 4)], cross_entropy),
    "mlp": (lambda: [normal(5, 3), normal(4, 3), normal(4), normal(4, 2)], mlp),
    "reuse": (lambda: [normal(3, 4)], reuse),
    # bf16: each op rounds its result (and its gradient) to bf16.
    "bf16_mul_add": (lambda: [bf16(3, 4), bf16(4)], lambda x, y: x * y + x),
    "bf16_matmul": (lambda: [bf16(3, 8), bf16(8, 5)], torch.matmul),
    "bf16_softmax": (lambda: [bf16(3, 6)], lambda x: x.softmax(1)),
    "bf16_log_softmax": (lambda: [bf16(3, 6)], lambda x: x.log_softmax(1)),
    "bf16_gelu": (lambda: [bf16(4, 5)], F.gelu),
    "bf16_sum_mean": (lambda: [bf16(4, 6)], lambda x: x.sum(1) + x.mean(1)),
    "bf16_to_f32": (lambda: [bf16(3, 4)], lambda x: x.to(torch.float32).tanh()),
}

DTYPES = {torch.bfloat16: "BF16", torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.bool: "BOOL"}


def write_safetensors(path, tensors):
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors:
        raw = t.contiguous()
        if raw.dtype == torch.bfloat16:  # NumPy has no bf16: write the bits
            raw = raw.view(torch.int16)
        data = raw.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    out = []
    for number, (name, (make, fn)) in enumerate(CASES.items()):
        torch.manual_seed(1000 + number)
        inputs = make()
        for t in inputs:
            if t.is_floating_point():
                t.requires_grad_(True)
        result = fn(*inputs)
        w = torch.randn(result.shape, dtype=result.dtype)
        (result * w).sum().backward()
        for i, t in enumerate(inputs):
            out.append((f"{name}.in{i}", t.detach()))
            if t.is_floating_point():
                g = t.grad if t.grad is not None else torch.zeros_like(t)
                out.append((f"{name}.grad{i}", g))
        out.append((f"{name}.w", w))
    write_safetensors(sys.argv[1], out)


if __name__ == "__main__":
    main()
