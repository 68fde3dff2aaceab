"""podsim.hlo, podsim.profile and podsim.topology: HLO runs against NumPy, profiles of
simulated runs, pod configurations."""
import numpy as np
import pytest

import podsim

DOT = """HloModule dot_{n}
ENTRY main {{
  a = f32[{n},{n}] parameter(0)
  b = f32[{n},{n}] parameter(1)
  d = f32[{n},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT r = f32[{n},{n}] add(d, a)
}}
"""


def inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, n)).astype(np.float32) for _ in range(2)]


def test_hlo_runs_on_cpu_and_sim_match_numpy():
    module = podsim.hlo.parse(DOT.format(n=16))
    assert module.name == "dot_16" and module.parameter_shapes == ["f32[16,16]{1,0}"] * 2 or \
        module.parameter_shapes == ["f32[16,16]"] * 2
    assert "dot(" in module.to_text()
    a, b = inputs(16)
    (cpu,) = podsim.hlo.run(module, [a, b], podsim.device(backend="CPU"))
    np.testing.assert_allclose(cpu, a @ b + a, rtol=1e-5, atol=1e-5)
    (sim,) = podsim.hlo.run(module, [a, b], podsim.device(backend="SIM"))
    # DEFAULT precision on the MXU: f32 inputs rounded to bf16 (relative 2^-8 each).
    np.testing.assert_allclose(sim, a @ b + a, rtol=0, atol=0.02 * np.abs(a).sum(1, keepdims=True).max())


def test_bad_modules_and_inputs_are_errors():
    with pytest.raises(podsim.Error, match="<text>"):
        podsim.hlo.parse("HloModule broken\nENTRY main { ROOT x = f32[2] parameter(0) add }")
    module = podsim.hlo.parse(DOT.format(n=4))
    with pytest.raises(podsim.Error, match="takes 2 inputs, got 1"):
        podsim.hlo.run(module, inputs(4)[:1], podsim.device(backend="CPU"))
    with pytest.raises(podsim.Error, match="input 1 is f32\\[5,5\\]"):
        podsim.hlo.run(module, [inputs(4)[0], inputs(5)[1]], podsim.device(backend="CPU"))


def simulated(n, tmp_path=None):
    podsim.profile.enable()
    podsim.hlo.run(podsim.hlo.parse(DOT.format(n=n)), inputs(n), podsim.device(backend="SIM"))
    return podsim.profile.last_run()


def test_profiles_of_simulated_runs_summarise_save_and_diff(tmp_path):
    small = simulated(64)
    assert small["program"] == "dot_64" and small["cycles"] > 0 and small["chips"] == 1
    summary = small["profile"].summary()
    assert summary.seconds == pytest.approx(small["seconds"], rel=1e-6)
    assert any(op["opcode"] == "dot" for op in summary.ops) and "dot_64" in str(summary)

    path = str(tmp_path / "small.json")
    small["profile"].save(path)
    loaded = podsim.profile.Profile.load(path).summary()
    assert loaded.seconds == pytest.approx(summary.seconds) and len(loaded.ops) == len(summary.ops)

    same = podsim.profile.diff(small["profile"], small["profile"])
    assert not same.regressed and same.total_change == 0
    large = simulated(256)["profile"]
    slower = podsim.profile.diff(small["profile"], large, threshold=0.05, before_label="n64", after_label="n256")
    assert slower.regressed and slower.total_change > 0.05 and "n256" in str(slower)
    assert not podsim.profile.diff(large, small["profile"]).regressed


def test_pods_and_chips():
    pod = podsim.topology.pod("v5e-8")
    assert pod.chip == "v5e" and pod.chips == 8 and pod.dims[0] * pod.dims[1] * pod.dims[2] == 8
    assert pod.shape == "x".join(str(d) for d in pod.dims if d > 1)
    assert pod.ici_link_bandwidth_bytes_per_s > 0 and "v5e" in pod.describe() and "dim_x" in pod.to_toml()
    assert "v5litepod-8" in podsim.topology.pod_presets() and "v4" in podsim.topology.chip_presets()
    assert "v4" in podsim.topology.describe_chip("v4")
    assert podsim.topology.of(podsim.device(backend="CPU")) is None
    with pytest.raises(podsim.Error):
        podsim.topology.pod("v5e-7")
