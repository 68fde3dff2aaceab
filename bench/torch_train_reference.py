"""PyTorch eager reference for bench/train_step_bench.cc: times training steps of the
same two models (an MLP with Adam, one pre-norm transformer block with AdamW) and prints
one JSON line {"torch": version, "threads": t, "mlp_step_s": ..., "block_step_s": ...}
with the median seconds per step. Exits with status 3 when torch is not installed."""
import argparse
import json
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--threads', type=int, required=True)
    parser.add_argument('--steps', type=int, default=50)
    args = parser.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f'torch is not available: {e}', file=sys.stderr)
        sys.exit(3)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    # Must match train_step_bench.cc: sizes, layers, losses, optimizers.
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    mlp_opt = torch.optim.Adam(mlp.parameters(), lr=1e-3)
    x = torch.rand(64, 64)
    y = torch.randint(0, 10, (64,))

    def mlp_step():
        loss = torch.nn.functional.cross_entropy(mlp(x), y)
        loss.backward()
        mlp_opt.step()
        mlp_opt.zero_grad(set_to_none=True)
        return loss

    class Block(torch.nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1 = torch.nn.LayerNorm(d)
            self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
            self.ln2 = torch.nn.LayerNorm(d)
            self.fc1 = torch.nn.Linear(d, 4 * d)
            self.fc2 = torch.nn.Linear(4 * d, d)

        def forward(self, h, mask):
            a = self.ln1(h)
            h = h + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
            return h + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(h)), approximate='tanh'))

    block = Block(64, 4)
    block_opt = torch.optim.AdamW(block.parameters(), lr=1e-3)
    hx = torch.randn(16, 32, 64)
    mask = torch.triu(torch.ones(32, 32, dtype=torch.bool), diagonal=1)

    def block_step():
        loss = block(hx, mask).square().mean()
        loss.backward()
        block_opt.step()
        block_opt.zero_grad(set_to_none=True)
        return loss

    def median_step(step):
        for _ in range(5):
            step()
        times = []
        for _ in range(args.steps):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        times.sort()
        return times[len(times) // 2]

    print(json.dumps({'torch': torch.__version__, 'threads': args.threads,
                      'mlp_step_s': median_step(mlp_step), 'block_step_s': median_step(block_step)}))


if __name__ == '__main__':
    main()
