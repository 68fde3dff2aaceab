"""PyTorch 1.13 oracle for tests/runtime/optim/loss_curve_test.cc: trains two small
classifiers for 20 steps from seeded weights on seeded batches and writes, per run R,
the initial weights (R.init.<name>), the batches (R.x [steps, batch, in], R.y [steps,
batch] int64), the loss of every step (R.loss [steps]) and the final weights
(R.final.<name>) into the safetensors file given as the last argument.
  run "sgd":   Linear-ReLU-Linear, cross-entropy, SGD with momentum 0.9 and Nesterov
  run "adamw": Linear-LayerNorm-GELU(tanh)-Linear, cross-entropy with label smoothing 0.1,
               AdamW (weight decay 0.05), gradients clipped to norm 1.0
"""
import sys

import numpy as np
import torch

from optim_oracle import write_safetensors

STEPS, BATCH, IN, HIDDEN, CLASSES = 20, 16, 12, 24, 5


def model_for(run):
    if run == "sgd":
        return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES))
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.LayerNorm(HIDDEN),
                               torch.nn.GELU(approximate="tanh"), torch.nn.Linear(HIDDEN, CLASSES))


def main():
    out = {}
    for seed, run in enumerate(["sgd", "adamw"]):
        torch.manual_seed(seed)
        model = model_for(run)
        for name, p in model.state_dict().items():
            out[f"{run}.init.{name}"] = p.detach().numpy().copy()
        x = torch.randn(STEPS, BATCH, IN)
        y = torch.randint(0, CLASSES, (STEPS, BATCH))
        out[f"{run}.x"] = x.numpy()
        out[f"{run}.y"] = y.numpy().astype(np.int64)
        if run == "sgd":
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
        else:
            opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05, foreach=False)
        losses = []
        for step in range(STEPS):
            smoothing = 0.0 if run == "sgd" else 0.1
            loss = torch.nn.functional.cross_entropy(model(x[step]), y[step], label_smoothing=smoothing)
            loss.backward()
            if run == "adamw":
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
        out[f"{run}.loss"] = np.array(losses, dtype=np.float32)
        for name, p in model.state_dict().items():
            out[f"{run}.final.{name}"] = p.detach().numpy().copy()
    write_safetensors(sys.argv[-1], out)


if __name__ == "__main__":
    main()
