"""`podsim train mlp` in Python: a two-layer perceptron on scikit-learn's 8x8 digits.

The same model, data split, shuffling, initialization, Adam with a cosine warmup
schedule and logging as the C++ example (examples/train/mlp_digits.cc): for the same
seed it prints the same losses. Every step (forward, cross-entropy, backward, update)
is one lazy graph, compiled once and cut by the device loader.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/train_mlp.py --device cpu
"""
import argparse
import os
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "sim", "opencl"])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=0, help="default: a tenth of the steps")
    args = parser.parse_args()
    os.environ["PODSIM_DEVICE"] = args.device.upper()  # read when the first device is used

    import podsim
    from podsim import nn, optim
    from podsim.data import DataLoader, DeviceLoader, TensorDataset, load_digits, train_test_split

    train_raw, test_raw = train_test_split(load_digits(), 0.2, args.seed)
    scaled = lambda d: TensorDataset(d.tensors[0] / 16.0, d.tensors[1])  # pixels 0..16 to [0, 1]
    train_set, test = scaled(train_raw), scaled(test_raw)
    device = podsim.device()

    podsim.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    schedule = optim.lr_scheduler.CosineWarmupLR(optimizer, args.steps // 20, args.steps)
    print(f"mlp: digits {len(train_set)} train / {len(test)} test, 64-128-10 on {device.name}, "
          f"{args.steps} steps of batch {args.batch}")

    loader = DeviceLoader(DataLoader(train_set, args.batch, shuffle=True, seed=args.seed, drop_last=True), device)
    log_every = args.log_every or max(1, args.steps // 10)
    done, window, last = 0, [], time.perf_counter()
    while done < args.steps:
        for x, y in loader:
            if done == args.steps:
                break
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            schedule.step()
            window.append(loss.detach())
            done += 1
            if done % log_every == 0 or done == args.steps:
                podsim.mark_step()  # launch the step before reading its loss
                mean = sum(t.item() for t in window) / len(window)
                now = time.perf_counter()
                print(f"step {done:>5}/{args.steps}  loss {mean:.4f}  {len(window) / (now - last):.1f} steps/s", flush=True)
                window, last = [], now
    podsim.mark_step()
    compiles = podsim.debug.counter_value("UncachedCompile")

    model.eval()
    with podsim.no_grad():
        predicted = model(test.tensors[0].to(device)).argmax(1)
        accuracy = (predicted == test.tensors[1].to(device)).float().mean().item()
    print(f"mlp: test accuracy {100 * accuracy:.2f}% after {done} steps ({compiles} compilation(s))")


if __name__ == "__main__":
    main()
