"""podsim.distributed from Python: a launch over 4 CPU devices, the collectives against
NumPy, data-parallel training against one device, and SPMD sharding (in a process of
its own, since SPMD mode must be chosen before the first device is used)."""
import os
import subprocess
import sys
import textwrap

os.environ.setdefault("PODSIM_CPU_DEVICES", "4")  # before the CPU backend starts

import numpy as np
import pytest

import podsim
from podsim import distributed as dist
from podsim import nn, optim

pytestmark = pytest.mark.skipif(podsim.device_count() < 4, reason="needs PODSIM_CPU_DEVICES=4 from process start")
N = 4


def run_replicas(fn):
    results = [None] * N

    def replica(rank):
        results[rank] = fn(rank)

    dist.launch(replica)
    return results


def test_collectives_match_numpy():
    values = [np.arange(8, dtype=np.float32).reshape(4, 2) * (r + 1) for r in range(N)]

    def replica(rank):
        assert dist.world_size() == N and dist.ordinal() == rank
        x = podsim.tensor(values[rank], device=podsim.device())
        out = {
            "sum": dist.all_reduce(x),
            "mean": dist.all_reduce(x, "mean"),
            "max_pairs": dist.all_reduce(x, "max", groups=[[0, 1], [2, 3]]),
            "gather": dist.all_gather(x, dim=1),
            "scatter": dist.reduce_scatter(x, "sum", dim=0),
            "a2a": dist.all_to_all(x, dim=0),
            "ring": dist.collective_permute(x, [(r, (r + 1) % N) for r in range(N)]),
        }
        podsim.mark_step()
        return {k: v.numpy() for k, v in out.items()}

    results = run_replicas(replica)
    total = sum(values)
    for rank, got in enumerate(results):
        np.testing.assert_allclose(got["sum"], total)
        np.testing.assert_allclose(got["mean"], total / N)
        pair = [0, 1] if rank < 2 else [2, 3]
        np.testing.assert_allclose(got["max_pairs"], np.maximum(values[pair[0]], values[pair[1]]))
        np.testing.assert_allclose(got["gather"], np.concatenate(values, axis=1))
        np.testing.assert_allclose(got["scatter"], total[rank:rank + 1])
        np.testing.assert_allclose(got["a2a"], np.concatenate([v[rank:rank + 1] for v in values]))
        np.testing.assert_allclose(got["ring"], values[(rank - 1) % N])


def test_data_parallel_training_matches_one_device_on_the_whole_batch():
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((N * 8, 6)).astype(np.float32), rng.integers(0, 3, N * 8)

    def make(device):
        podsim.manual_seed(5)
        model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).to(device)
        return model, optim.SGD(model.parameters(), lr=0.5)

    def step(model, opt, x, y, all_reduce):
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        dist.optimizer_step(opt) if all_reduce else opt.step()
        opt.zero_grad()
        podsim.mark_step()

    # Seeding is process-wide: build the replicas one after another before the launch (as
    # podsim train does), not on their threads, where the draws would interleave.
    replicas_models = [make(podsim.device(rank)) for rank in range(N)]

    def replica(rank):
        device = podsim.device()
        model, opt = replicas_models[rank]
        part = slice(rank * 8, rank * 8 + 8)
        for _ in range(3):
            step(model, opt, podsim.tensor(xs[part], device=device), podsim.tensor(ys[part], device=device), True)
        return {k: v.numpy() for k, v in model.state_dict().items()}

    replicas = run_replicas(replica)
    model, opt = make(podsim.device())
    for _ in range(3):
        step(model, opt, podsim.tensor(xs, device=podsim.device()), podsim.tensor(ys, device=podsim.device()), False)
    for name, value in model.state_dict().items():
        for rank in range(N):
            np.testing.assert_allclose(replicas[rank][name], value.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_errors_in_a_replica_reach_the_caller():
    def replica(rank):
        if rank == 2:
            raise ValueError("replica 2 failed")

    with pytest.raises(ValueError, match="replica 2 failed"):
        dist.launch(replica)


def test_spmd_sharding_in_its_own_process():
    script = textwrap.dedent("""
        import numpy as np, podsim
        from podsim import distributed as dist
        dist.use_spmd()
        mesh = dist.Mesh.create([2, 2], ["data", "model"])
        assert dist.is_spmd() and dist.global_device_count() == 4 and mesh.shape == [2, 2]
        a = np.arange(32, dtype=np.float32).reshape(8, 4)
        w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
        x = dist.distribute(podsim.tensor(a), mesh, ("data", None))
        assert dist.sharding_spec(x) != "" and [s.shape for s in dist.local_shards(x)] == [(4, 4)] * 4
        y = x @ podsim.tensor(w, device=podsim.device())
        dist.mark_sharding(y, mesh, ("data", None))
        podsim.mark_step()
        np.testing.assert_allclose(y.numpy(), a @ w, rtol=1e-5)
        print("spmd ok")
    """)
    env = dict(os.environ, PODSIM_CPU_DEVICES="4")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "spmd ok" in out.stdout, out.stderr
