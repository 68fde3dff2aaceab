"""Unmodified torch.nn code trained on a podsim device (podsim.torch) against the same
code trained by torch on the CPU: loss per step and final weights.

PODSIM_DEVICE picks the backend (ctest runs this file on CPU and on SIM). On SIM, f32
matmuls round their inputs to bf16 on the MXU, as TPUs do by default: the tolerances
follow (about 2^-8 relative per product, compounding over the steps).
"""
import copy

import numpy as np
import pytest
import torch

import podsim
import podsim.torch as pt

DEVICE = pt.device()
SIM = podsim.device().kind == "SIM"
LOSS_RTOL = 3e-2 if SIM else 1e-4
WEIGHT_ATOL = 3e-2 if SIM else 1e-4


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.GELU(), torch.nn.Linear(32, 5))

    def forward(self, x):
        return self.net(x)


class TinyTransformer(torch.nn.Module):
    def __init__(self, vocab=11, dim=16, heads=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.layer = torch.nn.TransformerEncoderLayer(dim, heads, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.norm = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens):
        return self.head(self.norm(self.layer(self.embed(tokens))))


def train(model, device, batches, make_optimizer, steps):
    model = copy.deepcopy(model).to(device)
    optimizer = make_optimizer(model.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()
    losses, compiles = [], []
    for step, (x, y) in enumerate(batches[:steps]):
        logits = model(x.to(device))
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y.to(device).reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if device.type != "cpu":
            pt.mark_step()
            compiles.append(podsim.debug.counter_value("UncachedCompile"))
        losses.append(loss.item())
    weights = {k: v.detach().to("cpu").float().numpy() for k, v in model.state_dict().items()}
    return losses, weights, compiles


def check(model, batches, make_optimizer, steps=20, skip=lambda name, w: w):
    ref_losses, ref_weights, _ = train(model, torch.device("cpu"), batches, make_optimizer, steps)
    losses, weights, compiles = train(model, DEVICE, batches, make_optimizer, steps)
    np.testing.assert_allclose(losses, ref_losses, rtol=LOSS_RTOL)
    assert ref_losses[-1] < ref_losses[0]  # it learns something
    for name, ref in ref_weights.items():
        np.testing.assert_allclose(skip(name, weights[name]), skip(name, ref), atol=WEIGHT_ATOL, rtol=LOSS_RTOL,
                                   err_msg=name)
    # Compiled during warm-up (the first steps create optimizer state), then cached.
    assert compiles[3] == compiles[-1], compiles


def test_mlp_with_sgd_and_adamw_matches_torch_on_cpu():
    torch.manual_seed(0)
    model = MLP()
    batches = [(torch.randn(16, 12), torch.randint(0, 5, (16,))) for _ in range(20)]
    check(model, batches, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
    check(model, batches, lambda p: torch.optim.AdamW(p, lr=1e-2))


def test_transformer_encoder_layer_matches_torch_on_cpu():
    torch.manual_seed(1)
    model = TinyTransformer()
    batches = []
    for _ in range(20):  # learn to copy the input
        tokens = torch.randint(0, 11, (4, 8))
        batches.append((tokens, tokens))
    # The key projection's bias has no effect on attention (softmax ignores a shift shared
    # by all keys): its gradient is rounding noise, which Adam scales up to full steps.
    dim = model.embed.embedding_dim
    without_key_bias = lambda name, w: np.delete(w, np.s_[dim:2 * dim]) if name.endswith("in_proj_bias") else w
    check(model, batches, lambda p: torch.optim.AdamW(p, lr=1e-2), skip=without_key_bias)


def test_conv2d():
    torch.manual_seed(2)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    x = torch.randn(2, 3, 6, 6, requires_grad=True)
    ours = copy.deepcopy(conv).to(DEVICE)
    xd = x.detach().to(DEVICE).requires_grad_()
    ref = conv(x)
    out = ours(xd)
    ref.square().sum().backward()
    out.square().sum().backward()
    for got, want in [(out, ref), (xd.grad, x.grad), (ours.weight.grad, conv.weight.grad),
                      (ours.bias.grad, conv.bias.grad)]:
        want = want.detach().numpy()
        # On SIM, a sum of bf16-rounded products is off by about 2^-8 of the sum of the
        # terms' magnitudes, not of the result: relative to the largest element.
        atol = 1e-2 * np.abs(want).max() if SIM else 1e-4
        np.testing.assert_allclose(got.detach().cpu().numpy(), want, rtol=LOSS_RTOL, atol=atol)


def test_dropout():
    dropout = torch.nn.Dropout(0.25)
    ones = torch.ones(4000, device=DEVICE, requires_grad=True)
    dropped = dropout(ones)
    dropped.sum().backward()
    kept = dropped.detach().cpu().numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_allclose(dropped.detach().cpu().numpy()[kept], 1 / 0.75, rtol=1e-6)
    np.testing.assert_array_equal(ones.grad.cpu().numpy() != 0, kept)  # the same mask backward


def test_tensors_move_and_factories_land_on_the_device():
    x = torch.arange(6.0).reshape(2, 3)
    d = x.to(DEVICE)
    assert isinstance(d, pt.PodsimTensor) and d.device == DEVICE and d.dtype == torch.float32
    np.testing.assert_array_equal(d.cpu().numpy(), x.numpy())
    z = torch.zeros(2, 2, device=DEVICE)
    assert isinstance(z, pt.PodsimTensor) and z.cpu().sum().item() == 0
    assert (d + 1).to(torch.bfloat16).dtype == torch.bfloat16
    np.testing.assert_array_equal((d * 2).sum(dim=1).cpu().numpy(), (x * 2).sum(dim=1).numpy())
    np.testing.assert_array_equal(d[:, 1:].cpu().numpy(), x[:, 1:].numpy())
    assert d.sum().item() == 15.0


def test_an_op_without_a_kernel_names_it_and_falls_back_when_asked():
    d = torch.arange(5.0).to(DEVICE)
    with pytest.raises(NotImplementedError, match="aten::cumsum"):
        torch.cumsum(d, 0)
    before = podsim.debug.counter_value("aten::cumsum")
    pt.set_cpu_fallback(True)
    try:
        out = torch.cumsum(d, 0)
    finally:
        pt.set_cpu_fallback(False)
    assert isinstance(out, pt.PodsimTensor)
    np.testing.assert_array_equal(out.cpu().numpy(), np.cumsum(np.arange(5.0)))
    assert podsim.debug.counter_value("aten::cumsum") == before + 1


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(4, 8, 3), torch.nn.ReLU(), torch.nn.AvgPool2d(1), torch.nn.AdaptiveAvgPool2d(1))
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def test_cnn_with_batch_norm_and_pooling_matches_torch():
    torch.manual_seed(3)
    model = SmallCnn()
    batches = [(torch.randn(8, 1, 8, 8), torch.randint(0, 3, (8,))) for _ in range(20)]
    check(model, batches, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9))
    # The running statistics follow torch's too (train() above updated them in place).
    ref = copy.deepcopy(model)
    ours = copy.deepcopy(model).to(DEVICE)
    x = batches[0][0]
    ref(x), ours(x.to(DEVICE))
    np.testing.assert_allclose(ours.features[1].running_var.cpu().numpy(), ref.features[1].running_var.numpy(),
                               rtol=LOSS_RTOL if SIM else 1e-5)
    ref.eval(), ours.eval()
    np.testing.assert_allclose(ours(x.to(DEVICE)).detach().cpu().numpy(), ref(x).detach().numpy(),
                               rtol=LOSS_RTOL if SIM else 1e-4, atol=WEIGHT_ATOL if SIM else 1e-5)


def test_max_pool_indices_match_torch():
    x = torch.randn(2, 3, 7, 9)
    x[0, 0, :2, :2] = 5.0  # a tie: the first maximum wins
    for kernel, stride, padding in [(2, 2, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 0))]:
        ref_out, ref_idx = torch.nn.functional.max_pool2d(x, kernel, stride, padding, return_indices=True)
        out, idx = torch.nn.functional.max_pool2d(x.to(DEVICE), kernel, stride, padding, return_indices=True)
        np.testing.assert_array_equal(out.cpu().numpy(), ref_out.numpy())
        np.testing.assert_array_equal(idx.cpu().numpy(), ref_idx.numpy())
