"""podsim's Python module: tensors, ops and execution against NumPy and PyTorch.

Run by `make test` (one ctest per file, PYTHONPATH=build/python); alone:
    PYTHONPATH=build/python /usr/bin/python3 -m pytest python/tests
"""
import threading
import time

import numpy as np
import pytest
import torch

import podsim


@pytest.fixture
def dev():
    return podsim.device()


def test_numpy_round_trip_keeps_dtype_and_values():
    rng = np.random.default_rng(0)
    for dtype in ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]:
        a = (rng.standard_normal((3, 4, 5)) * 50).astype(dtype)
        t = podsim.from_numpy(a)
        assert t.shape == a.shape
        assert str(t.dtype) == "podsim." + dtype
        back = t.numpy()
        assert back.dtype == a.dtype
        np.testing.assert_array_equal(back, a)


def test_non_contiguous_arrays_are_read_in_their_logical_order():
    a = np.arange(24, dtype=np.float32).reshape(4, 6).T[::2]
    np.testing.assert_array_equal(podsim.from_numpy(a).numpy(), a)


def test_tensor_follows_torch_defaults_for_python_data():
    assert podsim.tensor([1.5, 2.0]).dtype == podsim.float32
    assert podsim.tensor([[1, 2], [3, 4]]).dtype == podsim.int64
    assert podsim.tensor([True, False]).dtype == podsim.bool
    assert podsim.tensor(np.zeros(2, np.float64)).dtype == podsim.float64
    assert podsim.tensor(3.5).shape == () and podsim.from_numpy(np.array(7)).shape == ()  # 0-d stays 0-d
    assert podsim.tensor([1, 2], dtype=podsim.bfloat16).dtype == podsim.bfloat16
    with pytest.raises(TypeError, match="bfloat16"):
        podsim.tensor([1.0], dtype=podsim.bfloat16).numpy()
    np.testing.assert_array_equal(podsim.tensor([1.5, 2.25], dtype=podsim.bfloat16).float().numpy(), [1.5, 2.25])


def test_arithmetic_with_broadcasting_and_python_numbers_matches_numpy(dev):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 1, 3)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    ta, tb = podsim.tensor(a, device=dev), podsim.tensor(b, device=dev)
    cases = {
        "a + b": (ta + tb, a + b),
        "a - b * 2": (ta - tb * 2, a - b * 2),
        "3 - a / b": (3 - ta / tb, 3 - a / b),
        "2.5 * a": (2.5 * ta, 2.5 * a),
        "1 / (1 + b ** 2)": (1 / (1 + tb ** 2), 1 / (1 + b ** 2)),
        "-a.abs()": (-ta.abs(), -np.abs(a)),
        "exp(b) + log(|a|)": (podsim.exp(tb) + podsim.log(podsim.abs(ta)), np.exp(b) + np.log(np.abs(a))),
    }
    for name, (got, want) in cases.items():
        assert got.device == dev, name
        assert got.shape == want.shape, name
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_comparisons_give_bool_tensors(dev):
    a = np.array([1.0, 2.0, 3.0], np.float32)
    t = podsim.tensor(a, device=dev)
    np.testing.assert_array_equal((t > 1.5).numpy(), a > 1.5)
    np.testing.assert_array_equal((2 < t).numpy(), 2 < a)
    np.testing.assert_array_equal((t == 2).numpy(), a == 2)
    np.testing.assert_array_equal((t != t).numpy(), a != a)
    assert (t >= 1).dtype == podsim.bool
    assert podsim.where(t > 1.5, t, 0.0).tolist() == [0.0, 2.0, 3.0]


def test_matmul_reductions_and_softmax_match_torch(dev):
    torch.manual_seed(0)
    x, w = torch.randn(2, 8, 16), torch.randn(16, 4)
    tx, tw = podsim.tensor(x.numpy(), device=dev), podsim.tensor(w.numpy(), device=dev)
    close = lambda got, want: np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    close(tx @ tw, x @ w)
    close(podsim.matmul(tx, tw).sum(dim=(0, 2)), (x @ w).sum(dim=(0, 2)))
    close(tx.mean(dim=-1, keepdim=True), x.mean(dim=-1, keepdim=True))
    close(tx.softmax(-1), x.softmax(-1))
    close(podsim.log_softmax(tx, dim=1), torch.log_softmax(x, dim=1))
    close(tx.logsumexp(dim=2), x.logsumexp(dim=2))
    values, indices = tx.max(dim=1)
    close(values, x.max(dim=1).values)
    np.testing.assert_array_equal(indices.numpy(), x.max(dim=1).indices.numpy())
    assert tx.argmax().item() == x.argmax().item()
    assert abs(tx.sum().item() - x.sum().item()) < 1e-3


def test_shapes_and_indexing_match_numpy(dev):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    t = podsim.tensor(a, device=dev)
    np.testing.assert_array_equal(t.reshape(4, 15).numpy(), a.reshape(4, 15))
    np.testing.assert_array_equal(t.view((5, -1)).numpy(), a.reshape(5, -1))
    np.testing.assert_array_equal(t.permute(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(t.transpose(0, 2).numpy(), a.swapaxes(0, 2))
    np.testing.assert_array_equal(t.T.numpy(), a.T)
    np.testing.assert_array_equal(t.flatten(1).numpy(), a.reshape(3, 20))
    np.testing.assert_array_equal(t.unsqueeze(1).numpy(), a[:, None])
    for key in [1, -1, (0, 2), (slice(None), 1), (slice(1, None), slice(None, None, 2), -2), (Ellipsis, 3),
                (None, 0), (1, Ellipsis, slice(1, 4))]:
        np.testing.assert_array_equal(t[key].numpy(), a[key], err_msg=repr(key))
    index = podsim.tensor([2, 0, 2], device=dev)
    np.testing.assert_array_equal(t[index].numpy(), a[[2, 0, 2]])
    np.testing.assert_array_equal(podsim.cat([t, t], dim=1).numpy(), np.concatenate([a, a], axis=1))
    np.testing.assert_array_equal(podsim.stack([t[0], t[1]]).numpy(), np.stack([a[0], a[1]]))
    with pytest.raises(IndexError):
        t[3]
    with pytest.raises(IndexError):
        t[0, 0, 0, 0]
    with pytest.raises(TypeError, match="do not alias"):
        t[0] = 1.0


def test_item_repr_len_and_conversions(dev):
    t = podsim.tensor([[1.5, 2.0]], device=dev)
    assert t.sum().item() == 3.5 and isinstance(t.sum().item(), float)
    assert isinstance(podsim.tensor([3]).sum().item(), int)
    assert float(t[0, 0]) == 1.5 and int(podsim.tensor(7)) == 7 and bool(podsim.tensor(True))
    assert len(t) == 1 and t.ndim == 2 and t.numel() == 2 and t.size(1) == 2 and t.size() == (1, 2)
    text = repr(t)
    assert "1.5" in text and dev.name in text
    assert np.asarray(t).shape == (1, 2)


def test_creation_ops(dev):
    z = podsim.zeros(2, 3, device=dev)
    assert z.shape == (2, 3) and z.dtype == podsim.float32 and z.device == dev
    assert podsim.ones((4,), dtype=podsim.int32).tolist() == [1, 1, 1, 1]
    assert podsim.full((2,), 7, dtype=podsim.int64).tolist() == [7, 7]
    assert podsim.arange(5).tolist() == list(range(5))
    np.testing.assert_allclose(podsim.arange(0, 1, 0.25).numpy(), np.arange(0, 1, 0.25))
    assert podsim.zeros_like(z).shape == (2, 3) and podsim.ones_like(z, dtype=podsim.int8).dtype == podsim.int8
    podsim.manual_seed(3)
    r1 = podsim.rand(1000, device=dev).numpy()
    podsim.manual_seed(3)
    r2 = podsim.rand(1000, device=dev).numpy()
    np.testing.assert_array_equal(r1, r2)
    assert 0 <= r1.min() and r1.max() < 1 and abs(r1.mean() - 0.5) < 0.05
    n = podsim.randn(4000, device=dev).numpy()
    assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1


def test_autograd_matches_torch(dev):
    torch.manual_seed(1)
    x, w = torch.randn(3, 4), torch.randn(4, 2, requires_grad=True)
    loss = torch.tanh(x @ w).pow(2).mean()
    loss.backward()
    tw = podsim.tensor(w.detach().numpy(), device=dev, requires_grad=True)
    tloss = podsim.tanh(podsim.tensor(x.numpy(), device=dev) @ tw).pow(2).mean()
    assert tw.is_leaf and tw.requires_grad and tw.grad is None
    tloss.backward()
    np.testing.assert_allclose(tw.grad.numpy(), w.grad.numpy(), rtol=1e-4, atol=1e-6)
    with podsim.no_grad():
        assert not podsim.is_grad_enabled()
        assert not (tw * 2).requires_grad
    assert podsim.is_grad_enabled()
    tw.grad = None
    assert tw.grad is None


def test_in_place_ops_change_every_handle(dev):
    t = podsim.tensor([1.0, 2.0], device=dev)
    alias = t
    t += 1
    t *= podsim.tensor([2.0, 3.0], device=dev)
    assert alias.tolist() == [4.0, 9.0]


def test_errors_are_podsim_errors_naming_the_python_line(dev):
    a, b = podsim.zeros(2, 3, device=dev), podsim.zeros(4, device=dev)
    with pytest.raises(podsim.Error) as error:
        a + b  # the line the message names
    assert isinstance(error.value, RuntimeError)
    line = error.traceback[-1].lineno + 1  # pytest counts lines from 0
    assert f"test_tensor.py:{line}:" in str(error.value)
    assert "[2,3]" in str(error.value).replace(" ", "") or "2, 3" in str(error.value)
    with pytest.raises(TypeError, match="operands must be tensors or Python numbers"):
        podsim.add(a, "x")


def test_lazy_steps_compile_once(dev):
    podsim.mark_step()  # whatever earlier tests left pending
    podsim.wait_device_ops()
    podsim.debug.clear_metrics()
    w = podsim.tensor(np.ones((8, 8), np.float32), device=dev)
    x = podsim.tensor(np.ones((4, 8), np.float32), device=dev)
    for step in range(5):
        y = (x @ w).relu()
        assert y.is_pending
        x = y / 8.0
        podsim.mark_step()
    podsim.wait_device_ops()
    np.testing.assert_allclose(x.numpy(), np.ones((4, 8)))
    assert podsim.debug.counter_value("UncachedCompile") == 1
    assert podsim.debug.counter_value("CachedCompile") == 4
    assert podsim.debug.counter_value("MarkStep") == 5
    assert "UncachedCompile" in podsim.debug.counter_names()
    samples, total, percentiles = podsim.debug.metric_data("CompileTime")
    assert samples == 1 and total > 0 and percentiles
    assert "MarkStep" in podsim.debug.metrics_report()


def test_devices():
    devices = podsim.devices()
    assert podsim.device_count() == len(devices) >= 1
    assert podsim.device() == devices[0] and podsim.device(0) == devices[0]
    assert devices[0].index == 0 and devices[0].kind in {"CPU", "SIM", "OPENCL"}
    assert repr(devices[0]) == f"device('{devices[0].name}')"
    assert set(devices[0].memory_stats()) == {"bytes_in_use", "peak_bytes_in_use", "bytes_limit"}
    with pytest.raises(podsim.Error):
        podsim.device(10_000)


def test_waiting_for_the_device_releases_the_gil(dev):
    a = podsim.randn(1536, 1536, device=dev)
    podsim.wait_device_ops()
    inside, done, seconds = threading.Event(), threading.Event(), []

    def work():
        b = a
        for _ in range(6):
            b = (b @ a) / 1536.0
        inside.set()
        start = time.perf_counter()
        b.cpu()  # runs the graph and waits for it
        seconds.append(time.perf_counter() - start)
        done.set()

    thread = threading.Thread(target=work)
    thread.start()
    inside.wait()
    spins = 0
    while not done.is_set():
        spins += 1
    thread.join()
    assert seconds[0] > 0.05, "the graph ran too quickly to tell"
    # Had the call kept the GIL, this thread could not have run while it waited.
    assert spins > 1000, (seconds, spins)


def test_debug_reports_name_the_python_frames(dev, monkeypatch, capfd):
    monkeypatch.setenv("PODSIM_DEBUG", "2")  # read at each step
    x = podsim.tensor([1.0, 2.0, 3.0], device=dev)
    y = (x * 7.5).exp().sum()  # a graph no earlier test compiled
    podsim.mark_step()  # the line the report names
    line = test_debug_reports_name_the_python_frames.__code__.co_firstlineno + 4
    podsim.wait_device_ops()
    err = capfd.readouterr().err
    assert "Compilation Analysis:   user mark_step" in err
    assert "Python Frame Triggered Execution:" in err
    assert f"test_debug_reports_name_the_python_frames (" in err and f"test_tensor.py:{line})" in err
    assert y.item() == pytest.approx(np.exp(7.5 * np.array([1.0, 2.0, 3.0])).sum(), rel=1e-5)
