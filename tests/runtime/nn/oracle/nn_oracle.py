#!/usr/bin/python3
"""PyTorch 1.13 oracle for podsim's nn tests.

usage: nn_oracle.py GROUP OUT.safetensors   (GROUP: layers, conv, attention, losses)

For each case: seeded inputs and parameters (every parameter re-drawn, so that e.g. a
LayerNorm weight is not all ones), the torch forward, and the gradients of
sum(output * cotangent) with respect to every parameter and every floating input.
Written by hand as safetensors (torch 1.13 has no safetensors package): an 8-byte
little-endian header length, a JSON header, the raw little-endian data. Names:
  CASE.input0, CASE.input1, ...   inputs (integer inputs stay int64)
  CASE.param.NAME                 parameters by their state_dict name
  CASE.out, CASE.cotangent        output and the weights of the backward
  CASE.mask                       a fixed mask the case uses (attention)
  CASE.grad.input0, CASE.grad.NAME
"""
import json
import math
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float32)


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


class RMSNorm(nn.Module):  # torch 1.13 has none; torch 2.4's formula
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return rms_norm(x, self.weight, torch.finfo(x.dtype).eps)


class Fn(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *xs):
        return self.f(*xs)


def quantized(*shape):
    """Values on a coarse grid, so that pooling windows have tied maxima."""
    return torch.round(torch.randn(*shape) * 2) / 2


def layers_cases():
    return [
        ("linear", lambda: nn.Linear(5, 4), [torch.randn(3, 5)]),
        ("linear_nobias", lambda: nn.Linear(5, 4, bias=False), [torch.randn(2, 3, 5)]),
        ("embedding", lambda: nn.Embedding(10, 4), [torch.randint(0, 10, (3, 5))]),
        ("layer_norm", lambda: nn.LayerNorm([6]), [torch.randn(4, 6) * 3 + 1]),
        ("layer_norm_2d", lambda: nn.LayerNorm([3, 4]), [torch.randn(2, 3, 4)]),
        ("layer_norm_plain", lambda: nn.LayerNorm([6], elementwise_affine=False),
         [torch.randn(4, 6)]),
        ("rms_norm", lambda: RMSNorm(6), [torch.randn(3, 2, 6)]),
        ("relu", lambda: nn.ReLU(), [torch.randn(4, 5)]),
        ("gelu", lambda: nn.GELU(), [torch.randn(4, 5) * 2]),
        ("gelu_tanh", lambda: nn.GELU(approximate="tanh"), [torch.randn(4, 5) * 2]),
        ("silu", lambda: nn.SiLU(), [torch.randn(4, 5) * 2]),
        ("tanh", lambda: nn.Tanh(), [torch.randn(4, 5)]),
        ("softmax", lambda: nn.Softmax(dim=1), [torch.randn(3, 4, 2)]),
        ("flatten", lambda: nn.Flatten(), [torch.randn(2, 3, 4)]),
        ("mlp", lambda: nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.LayerNorm([8]),
                                      nn.Linear(8, 3)), [torch.randn(5, 6)]),
    ]


def conv_cases():
    return [
        ("conv", lambda: nn.Conv2d(3, 4, 3), [torch.randn(2, 3, 7, 7)]),
        ("conv_stride_pad", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1),
         [torch.randn(2, 3, 8, 8)]),
        ("conv_rect_dilated",
         lambda: nn.Conv2d(2, 3, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
         [torch.randn(1, 2, 9, 7)]),
        ("conv_remainder", lambda: nn.Conv2d(2, 2, 2, stride=2, bias=False),
         [torch.randn(1, 2, 5, 5)]),
        ("max_pool", lambda: nn.MaxPool2d(2), [torch.randn(2, 3, 6, 8)]),
        ("max_pool_ties", lambda: nn.MaxPool2d(2), [quantized(2, 2, 4, 4)]),
        ("max_pool_overlap", lambda: nn.MaxPool2d(3, stride=2, padding=1),
         [torch.randn(2, 2, 7, 7)]),
        ("max_pool_overlap_ties", lambda: nn.MaxPool2d(3, stride=2, padding=1),
         [quantized(1, 2, 6, 6)]),
        ("max_pool_remainder", lambda: nn.MaxPool2d(2), [torch.randn(1, 2, 5, 7)]),
        ("avg_pool", lambda: nn.AvgPool2d(2), [torch.randn(2, 3, 6, 8)]),
        ("avg_pool_overlap", lambda: nn.AvgPool2d(3, stride=2, padding=1),
         [torch.randn(2, 2, 7, 7)]),
        ("cnn", lambda: nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Flatten(), nn.Linear(64, 5)), [torch.randn(2, 1, 8, 8)]),
        ("batch_norm", lambda: nn.BatchNorm2d(3), [torch.randn(4, 3, 5, 5) * 2 + 1]),
        ("batch_norm_eval", batch_norm_eval, [torch.randn(2, 3, 4, 4)]),
        ("cnn_batch_norm", lambda: nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                                 nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 5)),
         [torch.randn(3, 1, 8, 8)]),
    ]


def batch_norm_eval():
    bn = nn.BatchNorm2d(3)
    bn.running_mean.normal_()
    bn.running_var.uniform_(0.5, 2.0)
    return bn.eval()


def causal_float_mask(length):
    return torch.triu(torch.full((length, length), float("-inf")), diagonal=1)


class Mha(nn.Module):
    """nn.MultiheadAttention returning only the output, with a fixed mask."""

    def __init__(self, *args, mask=None, self_attention=True, **kwargs):
        super().__init__()
        self.attn = nn.MultiheadAttention(*args, **kwargs)
        self.mask = mask
        self.self_attention = self_attention

    def forward(self, *xs):
        q, k, v = (xs[0], xs[0], xs[0]) if self.self_attention else xs
        return self.attn(q, k, v, attn_mask=self.mask, need_weights=False)[0]

    def state_dict(self, *args, **kwargs):
        return self.attn.state_dict(*args, **kwargs)


class GptBlock(nn.Module):
    """A pre-norm causal transformer block (podsim's test builds the same)."""

    def __init__(self, e, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(e)
        self.attn = nn.MultiheadAttention(e, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(e)
        self.fc1 = nn.Linear(e, 4 * e)
        self.fc2 = nn.Linear(4 * e, e)

    def forward(self, x):
        h = self.ln1(x)
        mask = causal_float_mask(x.shape[1])
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    """Token and position embeddings, one block, a final norm, an LM head, the mean loss."""

    def __init__(self, vocab, length, e, heads):
        super().__init__()
        self.tok = nn.Embedding(vocab, e)
        self.pos = nn.Parameter(torch.zeros(length, e))
        self.block = GptBlock(e, heads)
        self.ln_f = nn.LayerNorm(e)
        self.head = nn.Linear(e, vocab, bias=False)

    def forward(self, tokens, targets):
        logits = self.head(self.ln_f(self.block(self.tok(tokens) + self.pos)))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                               label_smoothing=0.1)


def sdpa(q, k, v, mask=None, causal=False):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        scores = scores + causal_float_mask(q.shape[-2])
    if mask is not None and mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask, float("-inf"))
    elif mask is not None:
        scores = scores + mask
    return torch.softmax(scores, -1) @ v


def attention_cases():
    torch.manual_seed(1234)
    bool_mask = torch.rand(4, 6) < 0.3  # True = masked out (torch's MultiheadAttention)
    bool_mask[:, 0] = False  # every query keeps at least one key
    sdpa_mask = torch.rand(5, 5) < 0.7
    sdpa_mask[:, 0] = True
    float_mask = torch.randn(5, 5)
    return [
        ("mha", lambda: Mha(8, 2), [torch.randn(5, 3, 8)]),
        ("mha_causal_batch_first",
         lambda: Mha(8, 4, batch_first=True, mask=causal_float_mask(5)), [torch.randn(2, 5, 8)]),
        ("mha_cross_bool_mask", lambda: Mha(8, 2, mask=bool_mask, self_attention=False),
         [torch.randn(4, 2, 8), torch.randn(6, 2, 8), torch.randn(6, 2, 8)], {"mask": bool_mask}),
        ("mha_nobias", lambda: Mha(6, 3, bias=False, batch_first=True), [torch.randn(2, 4, 6)]),
        ("sdpa_causal", lambda: Fn(lambda q, k, v: sdpa(q, k, v, causal=True)),
         [torch.randn(2, 3, 5, 4), torch.randn(2, 3, 5, 4), torch.randn(2, 3, 5, 6)]),
        ("sdpa_bool_mask", lambda: Fn(lambda q, k, v: sdpa(q, k, v, mask=sdpa_mask)),
         [torch.randn(2, 5, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 3)], {"mask": sdpa_mask}),
        ("sdpa_float_mask", lambda: Fn(lambda q, k, v: sdpa(q, k, v, mask=float_mask)),
         [torch.randn(2, 5, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 3)], {"mask": float_mask}),
        ("gpt_block", lambda: GptBlock(8, 2), [torch.randn(2, 5, 8)]),
        ("gpt", lambda: Gpt(11, 6, 8, 2), [torch.randint(0, 11, (2, 6)), torch.randint(0, 11, (2, 6))]),
        ("tril", lambda: Fn(lambda x: torch.tril(x, 1)), [torch.randn(2, 4, 5)]),
        ("triu", lambda: Fn(lambda x: torch.triu(x, -1)), [torch.randn(2, 4, 5)]),
    ]


def targets(n, classes, shape=None, ignore=0):
    t = torch.randint(0, classes, shape or (n,))
    if ignore:
        t.view(-1)[:ignore] = -100
    return t


def losses_cases():
    ce = F.cross_entropy
    return [
        ("ce_mean", lambda: Fn(lambda x, t: ce(x, t)), [torch.randn(6, 5), targets(6, 5)]),
        ("ce_sum", lambda: Fn(lambda x, t: ce(x, t, reduction="sum")),
         [torch.randn(6, 5), targets(6, 5)]),
        ("ce_none", lambda: Fn(lambda x, t: ce(x, t, reduction="none")),
         [torch.randn(6, 5), targets(6, 5)]),
        ("ce_smoothing", lambda: Fn(lambda x, t: ce(x, t, label_smoothing=0.1)),
         [torch.randn(6, 5) * 3, targets(6, 5)]),
        ("ce_ignore", lambda: Fn(lambda x, t: ce(x, t, label_smoothing=0.2)),
         [torch.randn(7, 4), targets(7, 4, ignore=2)]),
        ("ce_spatial", lambda: Fn(lambda x, t: ce(x, t)),
         [torch.randn(2, 4, 3, 2), targets(2, 4, shape=(2, 3, 2))]),
        ("ce_unbatched", lambda: Fn(lambda x, t: ce(x, t)),
         [torch.randn(5), torch.tensor(3)]),
        ("nll_mean", lambda: Fn(lambda x, t: F.nll_loss(x, t)),
         [torch.log_softmax(torch.randn(6, 5), 1), targets(6, 5)]),
        ("nll_ignore_sum", lambda: Fn(lambda x, t: F.nll_loss(x, t, reduction="sum")),
         [torch.log_softmax(torch.randn(6, 5), 1), targets(6, 5, ignore=1)]),
        ("mse_mean", lambda: Fn(lambda x, y: F.mse_loss(x, y)),
         [torch.randn(3, 4), torch.randn(3, 4)]),
        ("mse_sum", lambda: Fn(lambda x, y: F.mse_loss(x, y, reduction="sum")),
         [torch.randn(3, 4), torch.randn(3, 4)]),
        ("mse_none", lambda: Fn(lambda x, y: F.mse_loss(x, y, reduction="none")),
         [torch.randn(3, 4), torch.randn(3, 4)]),
    ]


GROUPS = {"layers": layers_cases, "conv": conv_cases, "attention": attention_cases,
          "losses": losses_cases}


def run_case(name, make_module, inputs, out, extras):
    for key, value in extras.items():
        out[f"{name}.{key}"] = value
    module = make_module()
    with torch.no_grad():  # every parameter re-drawn (LayerNorm weight not all ones)
        for p in module.parameters():
            p.copy_(torch.randn(p.shape) * 0.5)
    xs = []
    for i, x in enumerate(inputs):
        out[f"{name}.input{i}"] = x
        if x.is_floating_point():
            x = x.clone().requires_grad_(True)
        xs.append(x)
    for pname, p in module.state_dict().items():
        out[f"{name}.param.{pname}"] = p.clone()  # buffers change in place in the forward
    y = module(*xs)
    for bname, b in module.named_buffers():  # as the forward left them (running statistics)
        out[f"{name}.after.{bname}"] = b.clone()
    cotangent = torch.randn(y.shape)
    out[f"{name}.out"] = y.detach()
    out[f"{name}.cotangent"] = cotangent
    (y * cotangent).sum().backward()
    params = dict(module.named_parameters())
    buffers = dict(module.named_buffers())
    for pname in module.state_dict():
        if pname in buffers:
            continue
        key = pname if pname in params else "attn." + pname
        out[f"{name}.grad.{pname}"] = params[key].grad
    for i, x in enumerate(xs):
        if x.requires_grad:
            out[f"{name}.grad.input{i}"] = x.grad


DTYPES = {torch.float32: ("F32", np.float32), torch.int64: ("I64", np.int64),
          torch.bool: ("BOOL", np.bool_)}


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        code, np_type = DTYPES[t.dtype]
        data = np.ascontiguousarray(t.detach().numpy().astype(np_type)).astype(
            np.dtype(np_type).newbyteorder("<")).tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    group, path = sys.argv[1], sys.argv[2]
    out = {}
    torch.manual_seed(0)
    for index, (name, make_module, inputs, *extras) in enumerate(GROUPS[group]()):
        torch.manual_seed(1000 + index)
        run_case(name, make_module, inputs, out, extras[0] if extras else {})
    write_safetensors(path, out)


if __name__ == "__main__":
    main()
