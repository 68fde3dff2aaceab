"""podsim.nn, podsim.optim and podsim.data against torch: the same model, weights and
batches give the same losses and weights; the Python example matches the C++ one."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import podsim
from podsim import nn, optim

ROOT = Path(__file__).resolve().parents[2]


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)
        self.scale = nn.Parameter(podsim.ones(dim))
        self.register_buffer("steps", podsim.zeros(1, dtype=podsim.int64))
        self.layers = nn.ModuleList([nn.Linear(dim, dim, bias=False) for _ in range(2)])

    def forward(self, x):
        h = self.fc(self.norm(x)).relu() * self.scale
        for layer in self.layers:
            h = layer(h)
        return x + h


class TorchBlock(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.fc = torch.nn.Linear(dim, dim)
        self.scale = torch.nn.Parameter(torch.ones(dim))
        self.register_buffer("steps", torch.zeros(1, dtype=torch.int64))
        self.layers = torch.nn.ModuleList([torch.nn.Linear(dim, dim, bias=False) for _ in range(2)])

    def forward(self, x):
        h = torch.relu(self.fc(self.norm(x))) * self.scale
        for layer in self.layers:
            h = layer(h)
        return x + h


def to_podsim(state, device=None):
    return {k: podsim.tensor(v.detach().numpy(), device=device) for k, v in state.items()}


def test_names_and_shapes_follow_torch():
    ours, theirs = Block(6), TorchBlock(6)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    for (name, ours_t), theirs_t in zip(ours.state_dict().items(), theirs.state_dict().values()):
        assert ours_t.shape == tuple(theirs_t.shape), name
    missing, unexpected = ours.load_state_dict({"fc.weight": podsim.zeros(6, 6), "extra": podsim.zeros(1)}, strict=False)
    assert "fc.bias" in missing and "layers.1.weight" in missing and unexpected == ["extra"]
    with pytest.raises(podsim.Error, match="missing keys"):
        ours.load_state_dict({})
    assert ours.training and not ours.eval().norm.training


@pytest.mark.parametrize("make", [
    lambda p: (optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3), lambda q: torch.optim.SGD(q, lr=0.1, momentum=0.9, weight_decay=1e-3)),
    lambda p: (optim.AdamW(p, lr=1e-2), lambda q: torch.optim.AdamW(q, lr=1e-2)),
], ids=["sgd", "adamw"])
def test_training_matches_torch_step_by_step(make):
    torch.manual_seed(0)
    reference = TorchBlock(8)
    model = Block(8)
    model.load_state_dict(to_podsim(reference.state_dict()))
    model.to(podsim.device())
    ours, torch_optimizer = make(model.parameters())
    theirs = torch_optimizer(reference.parameters())
    head_w = torch.randn(4, 8)
    for step in range(20):
        x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
        loss_ref = torch.nn.functional.cross_entropy(reference(x) @ head_w.T, y)
        theirs.zero_grad()
        loss_ref.backward()
        theirs.step()
        dev = podsim.device()
        logits = model(podsim.tensor(x.numpy(), device=dev)) @ podsim.tensor(head_w.numpy(), device=dev).T
        loss = nn.functional.cross_entropy(logits, podsim.tensor(y.numpy(), device=dev))
        ours.zero_grad()
        loss.backward()
        ours.step()
        podsim.mark_step()
        assert abs(loss.item() - loss_ref.item()) < 1e-4 * max(1, abs(loss_ref.item())), step
    for name, value in reference.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[name].numpy(), value.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_cnn_with_batch_norm_matches_torch_step_by_step():
    def layers(lib):
        return [lib.Conv2d(1, 4, 3, padding=1), lib.BatchNorm2d(4), lib.ReLU(), lib.MaxPool2d(2), lib.Flatten(),
                lib.Linear(16, 3)]
    torch.manual_seed(1)
    reference = torch.nn.Sequential(*layers(torch.nn))
    model = nn.Sequential(*layers(nn))
    assert list(model.state_dict()) == list(reference.state_dict())
    model.load_state_dict(to_podsim(reference.state_dict()))
    model.to(podsim.device())
    ours, theirs = optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(reference.parameters(), lr=0.1)
    dev = podsim.device()
    for step in range(8):
        x, y = torch.randn(6, 1, 4, 4), torch.randint(0, 3, (6,))
        loss_ref = torch.nn.functional.cross_entropy(reference(x), y)
        theirs.zero_grad()
        loss_ref.backward()
        theirs.step()
        loss = nn.functional.cross_entropy(model(podsim.tensor(x.numpy(), device=dev)), podsim.tensor(y.numpy(), device=dev))
        ours.zero_grad()
        loss.backward()
        ours.step()
        podsim.mark_step()
        assert abs(loss.item() - loss_ref.item()) < 1e-4 * max(1, abs(loss_ref.item())), step
    for name, value in reference.state_dict().items():  # the running statistics included
        np.testing.assert_allclose(model.state_dict()[name].numpy(), value.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    x = torch.randn(2, 1, 4, 4)
    np.testing.assert_allclose(model.eval()(podsim.tensor(x.numpy(), device=dev)).numpy(),
                               reference.eval()(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_param_groups_and_schedules():
    w = podsim.zeros(3, requires_grad=True)
    b = podsim.zeros(1, requires_grad=True)
    opt = optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.5, "betas": (0.8, 0.9)}], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["betas"] == (0.8, 0.9)
    opt.param_groups[0]["lr"] = 0.2
    assert opt.param_groups[0]["lr"] == 0.2
    with pytest.raises(KeyError):
        opt.param_groups[0]["momentum"] = 0.9
    schedule = optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1.0 / (epoch + 1))
    for _ in range(3):
        schedule.step()
    assert schedule.get_last_lr() == pytest.approx([0.2 / 4, 0.5 / 4])
    with pytest.raises(podsim.Error):
        optim.SGD([w], lr=-1)


def test_data_loader_batches_follow_the_seeded_order():
    x = podsim.arange(20).reshape(10, 2)
    y = podsim.arange(10)
    loader = podsim.data.DataLoader(podsim.data.TensorDataset(x, y), batch_size=4, shuffle=True, seed=7, drop_last=True)
    batches = [yb.tolist() for _, yb in loader]
    order = loader.epoch_order(0)
    assert sorted(order) == list(range(10)) and order != list(range(10)) and order != loader.epoch_order(1)
    assert len(loader) == 2 and batches == [order[0:4], order[4:8]]
    assert [xb.tolist() for xb, _ in loader] == [[[2 * i, 2 * i + 1] for i in b] for b in (loader.epoch_order(1)[:4],
                                                                                         loader.epoch_order(1)[4:8])]
    device_batches = list(podsim.data.DeviceLoader(loader, podsim.device()))
    assert len(device_batches) == 2 and device_batches[0][0].device == podsim.device()


@pytest.mark.parametrize("workload", ["mlp", "transformer"])
def test_the_python_examples_print_the_cpp_examples_losses(workload):
    podsim_cli = os.environ.get("PODSIM_CLI")
    if not podsim_cli:
        pytest.skip("PODSIM_CLI (the podsim program) is not set; ctest sets it")
    args = ["--steps", "10", "--batch", "8", "--seed", "1"]
    cpp = subprocess.run([podsim_cli, "train", workload, "--device", "cpu", "--quiet", *args],
                         capture_output=True, text=True, check=True).stdout
    py = subprocess.run([sys.executable, str(ROOT / "python/examples/train.py"), workload, "--device", "cpu", *args],
                        capture_output=True, text=True, check=True).stdout
    losses = lambda out: re.findall(r"step +(\d+)/\d+ +loss ([0-9.]+)", out)
    summary = lambda out: re.search(r"(test accuracy [0-9.]+%|loss [0-9.]+ -> [0-9.]+)", out).group(1)
    assert len(losses(cpp)) == 10 and losses(py) == losses(cpp)
    assert summary(py) == summary(cpp)
