#!/usr/bin/python3
"""PyTorch DistributedDataParallel (Gloo) on the same CPU quotas as the Stagecraft workers.

Each rank joins its own cgroup-v1 CPU quota before it starts (run as root), takes an equal
share of the global batch, as DDP does, or with --shares the share it is given (the
speed-weighted peer: each rank's share in proportion to its measured speed), and trains the
same zoo model on random data with SGD. Each rank's loss is summed over its samples and
divided by the global batch times the ranks, so DDP's average of the ranks' gradients is the
gradient of the global batch's mean loss whatever the shares. Prints one JSON object:
{"samples_per_second", "iteration_ms", "ranks", "batch", "shares"}.

    /usr/bin/python3 bench/ddp_baseline.py --model mlp --batch 64 --steps 10 \
        --cgroups sc-bench-0,sc-bench-1,sc-bench-2,sc-bench-3

With --rank R --master HOST:PORT it runs that one rank only (rank 0 prints the JSON), so that
each rank can be started in a network namespace of its own (`ip netns exec`).
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def mlp():
    layers, width = [], 1024
    for _ in range(7):
        layers += [nn.Linear(width, 2048), nn.ReLU()]
        width = 2048
    layers.append(nn.Linear(2048, 10))
    return nn.Sequential(*layers), (1024,)


def vgg11():
    cfg = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]
    layers, channels = [], 3
    for c in cfg:
        if c == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(channels, c, 3, padding=1), nn.ReLU()]
            channels = c
    layers += [nn.Flatten(), nn.Linear(512, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
               nn.Linear(4096, 10)]
    return nn.Sequential(*layers), (3, 32, 32)


MODELS = {"mlp": mlp, "vgg11": vgg11}


def join_cgroup(name):
    if name:
        with open(f"/sys/fs/cgroup/cpu/{name}/tasks", "w") as tasks:
            tasks.write(str(os.getpid()))


def rank_main(rank, args, cgroups, master, shares, results):
    join_cgroup(cgroups[rank] if cgroups else "")
    if args.cpus:
        os.sched_setaffinity(0, {int(args.cpus.split(",")[rank])})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{master}", rank=rank, world_size=args.ranks)
    torch.manual_seed(args.seed)
    model, shape = MODELS[args.model]()
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    share = shares[rank]
    inputs = torch.randn(share, *shape)
    labels = torch.randint(0, 10, (share,))
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    scale = args.ranks / args.batch  # DDP averages over the ranks; the global batch's mean loss

    def step():
        optimizer.zero_grad()
        (loss_fn(ddp(inputs), labels) * scale).backward()
        optimizer.step()

    for _ in range(args.warmup):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    dist.barrier()
    elapsed = time.perf_counter() - start
    if rank == 0:
        results.put(elapsed)
    dist.destroy_process_group()


class Printed:
    """Where a lone rank 0 puts its result: printed at once."""

    def __init__(self, args, shares):
        self.args, self.shares = args, shares

    def put(self, elapsed):
        report(self.args, self.shares, elapsed)


def report(args, shares, elapsed):
    per_step = elapsed / args.steps
    print(json.dumps({"samples_per_second": args.batch / per_step, "iteration_ms": per_step * 1000,
                      "ranks": args.ranks, "batch": args.batch, "model": args.model, "shares": shares}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="mlp")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--port", type=int, default=29517)
    parser.add_argument("--cgroups", default="", help="comma-separated cgroup-v1 cpu groups, one per rank")
    parser.add_argument("--cpus", default="", help="comma-separated CPU each rank is pinned to, one per rank")
    parser.add_argument("--shares", default="",
                        help="comma-separated samples per rank, adding up to --batch (default: an equal split)")
    parser.add_argument("--rank", type=int, help="run this rank only (with --master)")
    parser.add_argument("--master", help="HOST:PORT of rank 0's rendezvous (default 127.0.0.1:--port)")
    args = parser.parse_args()
    cgroups = [c for c in args.cgroups.split(",") if c]
    if args.cpus and len(args.cpus.split(",")) != args.ranks:
        parser.error("--cpus needs one CPU per rank")
    if cgroups and len(cgroups) != args.ranks:
        parser.error("--cgroups needs one group per rank")
    if args.shares:
        shares = [int(x) for x in args.shares.split(",")]
        if len(shares) != args.ranks or sum(shares) != args.batch or min(shares) < 1:
            parser.error("--shares needs one positive share per rank, adding up to --batch")
    elif args.batch % args.ranks:
        parser.error("--batch must divide evenly over the ranks, as DDP requires (or give --shares)")
    else:
        shares = [args.batch // args.ranks] * args.ranks
    master = args.master or f"127.0.0.1:{args.port}"
    if args.rank is not None:
        if not 0 <= args.rank < args.ranks:
            parser.error("--rank must be below --ranks")
        rank_main(args.rank, args, cgroups, master, shares, Printed(args, shares))
        return
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    mp.start_processes(rank_main, args=(args, cgroups, master, shares, results), nprocs=args.ranks,
                       start_method="spawn", join=True)
    report(args, shares, results.get())


if __name__ == "__main__":
    main()
