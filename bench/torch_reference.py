"""PyTorch eager reference for bench/cpu_fusion_bench.cc: times the same 10-op
elementwise chain on n float32 values with the given thread count and prints one JSON
line {"torch": version, "threads": t, "median_s": ..., "min_s": ..., "checksum": ...}.
Exits with status 3 (and a message) when torch is not installed."""
import argparse
import json
import sys
import time


def chain(x, y):
    # Must match the chain in cpu_fusion_bench.cc op for op.
    v = x * 1.5
    v = v + y
    v = v.clamp_min(0.0)
    v = v * v
    v = v - x
    v = v.abs()
    v = v.clamp_max(4.0)
    v = v * 0.5
    v = v + 0.25
    return v - y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--n', type=int, required=True)
    parser.add_argument('--threads', type=int, required=True)
    parser.add_argument('--reps', type=int, default=10)
    args = parser.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f'torch is not available: {e}', file=sys.stderr)
        sys.exit(3)
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(args.n, generator=g, dtype=torch.float32) * 4 - 2
    y = torch.rand(args.n, generator=g, dtype=torch.float32) * 4 - 2
    with torch.no_grad():
        for _ in range(2):
            out = chain(x, y)
        times = []
        for _ in range(args.reps):
            start = time.perf_counter()
            out = chain(x, y)
            times.append(time.perf_counter() - start)
    times.sort()
    print(json.dumps({'torch': torch.__version__, 'threads': torch.get_num_threads(),
                      'median_s': times[len(times) // 2], 'min_s': times[0],
                      'checksum': float(out.double().sum())}))


if __name__ == '__main__':
    main()
