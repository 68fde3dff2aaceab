"""PyTorch 1.13 oracle for podsim's optimizers, schedules, gradient clipping and datasets.

torch 1.13 has no safetensors package, so this file reads and writes safetensors by
hand: an 8-byte little-endian header length, a JSON header mapping names to dtype,
shape and data offsets, then the raw little-endian data.

  optim_oracle.py optim  INPUTS.safetensors CASES.json OUT.safetensors
  optim_oracle.py digits OUT.safetensors

optim: INPUTS holds the initial parameters "p<j>" and, per step s, their gradients
"g<s>_<j>" (a missing one means no grad at that step). CASES is a list of
{"name", "kind", ...}; every result is written as "<name>.<what>".
  kind "optimizer": {"optimizer": "SGD"|"Adam"|"AdamW", "kwargs": {...}, "steps": n,
                     "lrs": [lr per step] (optional), "groups": [[j...], ...] (optional,
                     with "group_kwargs": [{...}, ...])}
      -> "<name>.p<j>" parameters after the last step
  kind "train": linear regression "x" [n,k], "y" [n,m], weights "w" [k,m], "b" [m];
      loss = mean((x @ w + b - y)^2); {"optimizer", "kwargs", "steps", "clip"(opt.)}
      -> "<name>.w", "<name>.b", "<name>.loss" (loss per step)
  kind "clip": grads "p<j>" of step 0, {"max_norm", "norm_type"}
      -> "<name>.total", "<name>.g<j>"
  kind "schedule": {"schedule": "StepLR"|"cosine", "lr", "steps", ...}
      -> "<name>.lrs" (f64, the lr at epochs 0..steps)
digits: "images" f32 [1797, 64] and "labels" s64 [1797] from scikit-learn's own loader.
"""
import json
import math
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data[base + begin:base + end], dtype=DTYPES[info["dtype"]])
        out[name] = arr.reshape(info["shape"]).copy()
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr)
        raw = arr.tobytes()
        header[name] = {"dtype": NAMES[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def make_optimizer(case, params):
    cls = getattr(torch.optim, case["optimizer"])
    kwargs = dict(case.get("kwargs", {}))
    if case["optimizer"] in ("Adam", "AdamW"):
        kwargs["foreach"] = False  # the single-tensor path podsim follows
        if "beta1" in kwargs:
            kwargs["betas"] = (kwargs.pop("beta1"), kwargs.pop("beta2"))
    if "groups" in case:
        groups = []
        for indices, extra in zip(case["groups"], case["group_kwargs"]):
            group = {"params": [params[j] for j in indices]}
            group.update(extra)
            groups.append(group)
        return cls(groups, **kwargs)
    return cls(params, **kwargs)


def run_optimizer(case, inputs, out):
    count = len([k for k in inputs if k.startswith("p")])
    params = [torch.tensor(inputs[f"p{j}"], requires_grad=True) for j in range(count)]
    opt = make_optimizer(case, params)
    for s in range(case["steps"]):
        if "lrs" in case:
            for g in opt.param_groups:
                g["lr"] = case["lrs"][s]
        for j, p in enumerate(params):
            key = f"g{s}_{j}"
            p.grad = torch.tensor(inputs[key]) if key in inputs else None
        opt.step()
    for j, p in enumerate(params):
        out[f"{case['name']}.p{j}"] = p.detach().numpy()


def run_train(case, inputs, out):
    x, y = torch.tensor(inputs["x"]), torch.tensor(inputs["y"])
    w = torch.tensor(inputs["w"], requires_grad=True)
    b = torch.tensor(inputs["b"], requires_grad=True)
    opt = make_optimizer(case, [w, b])
    losses = []
    for _ in range(case["steps"]):
        opt.zero_grad()
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        if "clip" in case:
            torch.nn.utils.clip_grad_norm_([w, b], case["clip"])
        opt.step()
        losses.append(loss.item())
    out[f"{case['name']}.w"] = w.detach().numpy()
    out[f"{case['name']}.b"] = b.detach().numpy()
    out[f"{case['name']}.loss"] = np.array(losses, dtype=np.float32)


def run_clip(case, inputs, out):
    count = len([k for k in inputs if k.startswith("p")])
    params = []
    for j in range(count):
        p = torch.zeros(inputs[f"p{j}"].shape, requires_grad=True)
        p.grad = torch.tensor(inputs[f"g0_{j}"])
        params.append(p)
    total = torch.nn.utils.clip_grad_norm_(params, case["max_norm"], case["norm_type"])
    out[f"{case['name']}.total"] = total.detach().numpy().astype(np.float32)
    for j, p in enumerate(params):
        out[f"{case['name']}.g{j}"] = p.grad.numpy()


def run_schedule(case, out):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=case["lr"])
    if case["schedule"] == "StepLR":
        sched = torch.optim.lr_scheduler.StepLR(opt, case["step_size"], case["gamma"])
    else:
        warmup, total = case["warmup"], case["total"]
        cycles = case.get("num_cycles", 0.5)

        # transformers.get_cosine_schedule_with_warmup's lambda.
        def factor(step):
            if step < warmup:
                return float(step) / float(max(1, warmup))
            progress = float(step - warmup) / float(max(1, total - warmup))
            return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(cycles) * 2.0 * progress)))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(case["steps"]):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    out[f"{case['name']}.lrs"] = np.array(lrs, dtype=np.float64)


def main():
    if sys.argv[1] == "digits":
        from sklearn.datasets import load_digits
        digits = load_digits()
        write_safetensors(sys.argv[2], {"images": digits.data.astype(np.float32),
                                        "labels": digits.target.astype(np.int64)})
        return
    inputs = read_safetensors(sys.argv[2])
    with open(sys.argv[3]) as f:
        cases = json.load(f)
    out = {}
    for case in cases:
        kind = case["kind"]
        if kind == "optimizer":
            run_optimizer(case, inputs, out)
        elif kind == "train":
            run_train(case, inputs, out)
        elif kind == "clip":
            run_clip(case, inputs, out)
        elif kind == "schedule":
            run_schedule(case, out)
        else:
            raise ValueError(f"unknown case kind {kind}")
    write_safetensors(sys.argv[4], out)


if __name__ == "__main__":
    main()
