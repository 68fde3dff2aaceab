"""Run an HLO module on a simulated chip or pod and look at its profile.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/run_hlo.py examples/hlo/mlp_forward.hlo \\
        [--topology v5e-8] [--profile out.json] [--baseline base.json --threshold 5%]

Random inputs (seeded) of the module's parameter shapes; the summary of the simulated
run (time per op, MXU and HBM use, collectives); the profile saved as Chrome trace JSON
(Perfetto UI, `podsim profile summary`); against a baseline profile, the op-by-op diff,
exiting 2 when the run got slower than the threshold allows (a CI gate).
"""
import argparse
import os
import re
import sys

import numpy as np


def random_input(shape_text, rng):
    dtype, dims = re.match(r"(\w+)\[([\d,]*)\]", shape_text).groups()
    shape = tuple(int(d) for d in dims.split(",") if d)
    numpy_dtype = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "s32": np.int32, "s64": np.int64,
                   "s8": np.int8, "u8": np.uint8, "pred": np.bool_}.get(dtype)
    if numpy_dtype is None:
        sys.exit(f"run_hlo: no random inputs of {dtype} (parameter {shape_text})")
    if numpy_dtype is np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(numpy_dtype, np.integer):
        return rng.integers(0, 8, shape).astype(numpy_dtype)
    return rng.standard_normal(shape).astype(numpy_dtype)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hlo")
    parser.add_argument("--topology", default="v5e", help="a chip or pod (v5e, v4, v5e-8, v5e:4x4, FILE.toml)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", help="write the profile here (Chrome trace JSON)")
    parser.add_argument("--baseline", help="a profile to compare with")
    parser.add_argument("--threshold", default="5%", help="slow-down that fails against the baseline")
    args = parser.parse_args()
    os.environ["PODSIM_DEVICE"] = "SIM"
    os.environ["PODSIM_TOPOLOGY"] = args.topology  # read when the SIM backend starts

    import podsim

    module = podsim.hlo.load(args.hlo)
    rng = np.random.default_rng(args.seed)
    inputs = [random_input(shape, rng) for shape in module.parameter_shapes]
    device = podsim.device()
    pod = podsim.topology.of(device)
    print(f"{module.name} on " + (f"{pod.name} ({pod.chips} chip(s), {pod.shape})" if pod else device.name))
    podsim.profile.enable()
    outputs = podsim.hlo.run(module, inputs, device)
    for i, out in enumerate(outputs):
        stats = f"min {out.min():.4g} max {out.max():.4g} mean {out.mean():.4g}" if out.size else "empty"
        print(f"output {i}: {out.dtype}{list(out.shape)} {stats}")
    run = podsim.profile.last_run()
    print(f"simulated {run['cycles']} cycles, {run['seconds'] * 1e6:.2f} us on {run['chips']} chip(s); "
          f"ICI {run['ici_bytes']:.0f} bytes, DCN {run['dcn_bytes']:.0f} bytes\n")
    profile = run["profile"]
    print(profile.summary())
    if args.profile:
        profile.save(args.profile)
        print(f"profile written to {args.profile}")
    if args.baseline:
        threshold = float(args.threshold.rstrip("%")) / (100 if args.threshold.endswith("%") else 1)
        diff = podsim.profile.diff(podsim.profile.Profile.load(args.baseline), profile, threshold,
                                   os.path.basename(args.baseline), args.profile or "this run")
        print(diff)
        if diff.regressed:
            sys.exit(2)


if __name__ == "__main__":
    main()
