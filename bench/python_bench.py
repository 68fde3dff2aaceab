"""Python's costs on podsim, each beside its reference measured in the same run:

  trace/*        recording one op from Python (podsim.Tensor operators) per op, beside
                 the C++ tracing cost of the same ops (lazy_tracing_bench's trace/*)
  bridge/*       the same ops on a podsim.torch tensor (torch dispatch + the Python kernel)
  step/*         a training step (forward, cross-entropy, backward, optimizer, mark_step,
                 wait) of a torch.nn model through podsim.torch on podsim's CPU device,
                 beside torch eager on the CPU; and the MLP in podsim.nn, beside both

    build/bin/bench/python_bench [--quick]
"""
import argparse
import os
import re
import subprocess
import time

import torch

import podsim
import podsim.torch as pt

OPS = 1000


def per_op(fn, repeats):
    """Best of `repeats` timings of fn() (which runs OPS ops), in microseconds per op."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best / OPS * 1e6


def cpp_tracing_costs():
    binary = os.path.join(os.environ.get("PODSIM_BENCH_DIR", "build/bin/bench"), "lazy_tracing_bench")
    if not os.path.exists(binary):
        print(f"({binary} not found: no C++ reference)")
        return {}
    out = subprocess.run([binary, "--benchmark_filter=trace/"], capture_output=True, text=True, check=True).stdout
    # Its summary: "  trace/add_tensor_per_op   184.6 ns  ..." per op.
    return {m[1]: float(m[2]) / 1e3 for m in re.finditer(r"^\s+(trace/\S+)\s+([0-9.]+) ns", out, re.M)}


def tracing(repeats):
    dev = podsim.device()
    w = podsim.ones(64, device=dev)
    x = podsim.full((16, 16), 0.01, device=dev)
    b = podsim.full((16,), 0.1, device=dev)

    def add():
        y = w
        for _ in range(OPS):
            y = y + w

    def mul():
        y = w
        for _ in range(OPS):
            y = y * 0.5

    def layer():
        y = x
        for _ in range(OPS // 3):
            y = (y @ x + b).relu()

    tw, tx, tb = (pt.PodsimTensor(t) for t in (w, x, b))

    def bridge_add():
        y = tw
        for _ in range(OPS):
            y = y + tw

    def bridge_layer():
        y = tx
        for _ in range(OPS // 3):
            y = torch.relu(y @ tx + tb)

    cpp = cpp_tracing_costs()
    rows = [("trace/add_tensor_per_op", per_op(add, repeats), cpp.get("trace/add_tensor_per_op")),
            ("trace/mul_scalar_per_op", per_op(mul, repeats), cpp.get("trace/mul_scalar_per_op")),
            ("trace/matmul_add_relu_per_op", per_op(layer, repeats), cpp.get("trace/matmul_add_relu_per_op")),
            ("bridge/add_tensor_per_op", per_op(bridge_add, repeats), cpp.get("trace/add_tensor_per_op")),
            ("bridge/matmul_add_relu_per_op", per_op(bridge_layer, repeats), cpp.get("trace/matmul_add_relu_per_op"))]
    print(f"{'per traced op':32} {'Python us':>10} {'C++ us':>8} {'ratio':>7}")
    for name, us, ref in rows:
        print(f"{name:32} {us:10.2f} {ref or float('nan'):8.3f} {us / ref if ref else float('nan'):7.1f}")


class Transformer(torch.nn.Module):
    def __init__(self, vocab=65, dim=64, heads=4, block=32):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.Sequential(*[
            torch.nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True) for _ in range(2)])
        self.head = torch.nn.Linear(dim, vocab)
        self.block = block

    def forward(self, tokens):
        return self.head(self.layers(self.embed(tokens)))


def time_steps(step, steps, sync):
    for _ in range(3):  # warm-up: compilation, optimizer state
        step()
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return (time.perf_counter() - start) / steps * 1e3


def torch_step_ms(model, make_batch, device, steps):
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = (t.to(device) for t in make_batch())

    def step():
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if device.type != "cpu":
            pt.mark_step()

    return time_steps(step, steps, pt.sync if device.type != "cpu" else lambda: None)


def podsim_mlp_step_ms(steps):
    from podsim import nn, optim
    dev = podsim.device()
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(dev)
    optimizer = optim.AdamW(model.parameters(), lr=1e-3)
    x, y = podsim.randn(64, 64, device=dev), podsim.zeros(64, dtype=podsim.int64, device=dev)

    def step():
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        podsim.mark_step()

    return time_steps(step, steps, podsim.wait_device_ops)


def training(steps):
    torch.manual_seed(0)
    mlp = lambda: torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    mlp_batch = lambda: (torch.randn(64, 64), torch.randint(0, 10, (64,)))
    gpt_batch = lambda: (torch.randint(0, 65, (16, 32)), torch.randint(0, 65, (16, 32)))
    print(f"\n{'training step (ms)':32} {'podsim.torch':>12} {'torch eager':>12} {'ratio':>7}")
    for name, make_model, make_batch in [("step/mlp_64_128_10_batch64", mlp, mlp_batch),
                                         ("step/transformer_2x64_batch16x32", Transformer, gpt_batch)]:
        torch.manual_seed(0)
        bridged = torch_step_ms(make_model(), make_batch, pt.device(), steps)
        torch.manual_seed(0)
        eager = torch_step_ms(make_model(), make_batch, torch.device("cpu"), steps)
        print(f"{name:32} {bridged:12.2f} {eager:12.2f} {bridged / eager:7.2f}")
    print(f"{'step/mlp in podsim.nn':32} {podsim_mlp_step_ms(steps):12.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and steps")
    args = parser.parse_args()
    print(f"device {podsim.device().name}; torch {torch.__version__} with {torch.get_num_threads()} threads")
    tracing(3 if args.quick else 10)
    training(5 if args.quick else 30)


if __name__ == "__main__":
    main()
