#!/usr/bin/env python3
"""NumPy oracle for podsim's reference evaluator.

Writes test cases to --out: CASE.hlo (an HLO module in XLA's text format) and
CASE.safetensors (inputs arg0, arg1, ...; expected outputs out0, out1, ... with tuple
results flattened depth-first; per-device tensors r{d}.argN / r{d}.outN when the
metadata sets "replicas"/"partitions"; tolerances "ulps", "rtol", "atol" and per-output
overrides "outN.ulps" etc. in __metadata__). evaluator_numpy_integration_test runs them.

Expected values come from NumPy and Python integers following XLA's operation
semantics; see oracle/*.py. Every opcode of compiler/ir/opcodes.def must be covered by
some case or listed in NOT_COVERED with the reason.
"""
import argparse
import os
import re
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # runs at build time: leave the source tree alone
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from oracle import (cases_collective, cases_control, cases_convert, cases_elementwise,  # noqa: E402
                    cases_indexing, cases_linalg, cases_norm, cases_precision, cases_reduce, cases_rng,
                    cases_shape, cases_topk)
from oracle.case import Context  # noqa: E402
from oracle.hlo import USED_OPCODES  # noqa: E402

GENERATORS = [cases_elementwise, cases_convert, cases_shape, cases_reduce, cases_linalg, cases_indexing,
              cases_control, cases_collective, cases_rng, cases_norm, cases_topk,
              cases_precision]

NOT_COVERED = {}

OPCODES_DEF = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'compiler', 'ir',
                           'opcodes.def')


def check_coverage():
    if not os.path.exists(OPCODES_DEF):
        print(f'numpy_oracle: {OPCODES_DEF} not found; opcode coverage not checked', file=sys.stderr)
        return True
    with open(OPCODES_DEF) as f:
        opcodes = re.findall(r'^PODSIM_OPCODE\(\w+, "([^"]+)"', f.read(), re.M)
    missing = [op for op in opcodes if op not in USED_OPCODES and op not in NOT_COVERED]
    if missing:
        print('numpy_oracle: no case covers opcode(s): ' + ', '.join(missing), file=sys.stderr)
        return False
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', required=True, help='output directory (its old cases are removed)')
    parser.add_argument('--seed', type=int, default=1234)
    args = parser.parse_args()
    start = time.time()
    ctx = Context(np.random.default_rng(args.seed))
    for gen in GENERATORS:
        gen.generate(ctx)
    if not check_coverage():
        return 1
    ctx.write(args.out)
    print(f'numpy_oracle: wrote {len(ctx.cases)} cases to {args.out} in {time.time() - start:.1f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
