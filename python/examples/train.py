"""`podsim train mlp|transformer` in Python, on one device.

The same models, data, initialization, optimizers, schedules and logging as the C++
examples (examples/train/): for the same seed, the same losses. Every step (forward,
cross-entropy, backward, update) is one lazy graph, compiled once; the device loader
cuts the steps.

  mlp          a two-layer perceptron on scikit-learn's 8x8 digits, Adam, cosine warmup
  transformer  a small character-level GPT (causal attention, GELU MLP, pre-norm) on the
               GPL-3 text every Debian has, AdamW, cosine warmup

    PYTHONPATH=build/python /usr/bin/python3 python/examples/train.py mlp --device sim
"""
import argparse
import math
import os
import time


def mlp(podsim, nn, optim, data, args):
    train_raw, test_raw = data.train_test_split(data.load_digits(), 0.2, args.seed)
    scaled = lambda d: data.TensorDataset(d.tensors[0] / 16.0, d.tensors[1])  # pixels 0..16 to [0, 1]
    train_set, test = scaled(train_raw), scaled(test_raw)
    device = podsim.device()
    podsim.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    optimizer = optim.Adam(model.parameters(), lr=args.lr or 1e-2)
    schedule = optim.lr_scheduler.CosineWarmupLR(optimizer, args.steps // 20, args.steps)
    print(f"mlp: digits {len(train_set)} train / {len(test)} test, 64-128-10 on {device.name}, "
          f"{args.steps} steps of batch {args.batch}")

    def finish(losses, compiles):
        model.eval()
        with podsim.no_grad():
            predicted = model(test.tensors[0].to(device)).argmax(1)
            accuracy = (predicted == test.tensors[1].to(device)).float().mean().item()
        print(f"mlp: test accuracy {100 * accuracy:.2f}% after {args.steps} steps ({compiles} compilation(s))")

    return train_set, model, optimizer, schedule, lambda x, y: nn.functional.cross_entropy(model(x), y), finish


def transformer(podsim, nn, optim, data, args):
    block, width, heads, layers = 32, 64, 4, 2

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(width)
            self.attn = nn.MultiheadAttention(width, heads, batch_first=True, causal=True)
            self.ln2 = nn.LayerNorm(width)
            self.fc1 = nn.Linear(width, 4 * width)
            self.fc2 = nn.Linear(4 * width, width)

        def forward(self, x):
            h = self.ln1(x)
            h = x + self.attn(h, h, h)[0]
            return h + self.fc2(podsim.gelu(self.fc1(self.ln2(h)), approximate="tanh"))

    class Gpt(nn.Module):
        def __init__(self, vocab):
            super().__init__()
            self.tokens = nn.Embedding(vocab, width)
            self.positions = nn.Embedding(block, width)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab)

        def forward(self, ids):  # (batch, block) -> (batch, block, vocab)
            positions = podsim.arange(ids.shape[1], dtype=podsim.int64, device=ids.device)
            return self.head(self.ln(self.blocks(self.tokens(ids) + self.positions(positions))))

    text, source = data.load_text_corpus()
    dataset = data.CharTextDataset(text, block)
    vocab = dataset.vocab_size
    device = podsim.device()
    podsim.manual_seed(args.seed)
    model = Gpt(vocab).to(device)
    optimizer = optim.AdamW(model.parameters(), lr=args.lr or 3e-3)
    schedule = optim.lr_scheduler.CosineWarmupLR(optimizer, args.steps // 10, args.steps)
    print(f"transformer: {len(text)} characters from {source}, vocabulary {vocab}; {layers} layers, {heads} heads, "
          f"width {width}, context {block} on {device.name}, {args.steps} steps of batch {args.batch} "
          f"(loss at start ~ ln {vocab} = {math.log(vocab):.2f})")

    def loss(x, y):
        return nn.functional.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))

    def finish(losses, compiles):
        print(f"transformer: loss {losses[0]:.3f} -> {losses[-1]:.3f} after {args.steps} steps "
              f"({compiles} compilation(s))")

    return dataset, model, optimizer, schedule, loss, finish


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["mlp", "transformer"])
    parser.add_argument("--device", default="cpu", choices=["cpu", "sim", "opencl"])
    parser.add_argument("--steps", type=int, default=0, help="default: 300 (mlp), 200 (transformer)")
    parser.add_argument("--batch", type=int, default=0, help="default: 64 (mlp), 16 (transformer)")
    parser.add_argument("--lr", type=float, default=0.0, help="default: 1e-2 (mlp), 3e-3 (transformer)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=0, help="default: a tenth of the steps")
    args = parser.parse_args()
    args.steps = args.steps or (300 if args.workload == "mlp" else 200)
    args.batch = args.batch or (64 if args.workload == "mlp" else 16)
    os.environ["PODSIM_DEVICE"] = args.device.upper()  # read when the first device is used

    import podsim
    from podsim import data, nn, optim

    make = mlp if args.workload == "mlp" else transformer
    dataset, model, optimizer, schedule, loss_of, finish = make(podsim, nn, optim, data, args)
    loader = data.DeviceLoader(data.DataLoader(dataset, args.batch, shuffle=True, seed=args.seed, drop_last=True),
                               podsim.device())
    log_every = args.log_every or max(1, args.steps // 10)
    done, window, losses, last = 0, [], [], time.perf_counter()
    while done < args.steps:
        for x, y in loader:
            if done == args.steps:
                break
            loss = loss_of(x, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            schedule.step()
            window.append(loss.detach())
            done += 1
            if done % log_every == 0 or done == args.steps:
                podsim.mark_step()  # launch the step before reading its loss
                losses.append(sum(t.item() for t in window) / len(window))
                now = time.perf_counter()
                print(f"step {done:>5}/{args.steps}  loss {losses[-1]:.4f}  {len(window) / (now - last):.1f} steps/s",
                      flush=True)
                window, last = [], now
    podsim.mark_step()
    finish(losses, podsim.debug.counter_value("UncachedCompile"))


if __name__ == "__main__":
    main()
