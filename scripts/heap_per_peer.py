#!/usr/bin/env python3
"""Bytes per peer by allocating iwarpx function, from a heaptrack flame graph.

Usage (docs/PERFORMANCE.md, "Where a datagram peer's bytes go"):

  FI_PROVIDER_PATH=build/prov/iwarpx/src/ofi FI_IWARPX_SEND_RULES=any:ud_sr,any:ud_zcopy \\
    heaptrack -o hub build/fabtests_ext/bench/rdm_scale -p iwarpx --peers 1024 --procs 4 \\
    --iters 100 --warmup 10
  heaptrack_print -f hub.zst --print-flamegraph fg.txt --flamegraph-cost-type peak
  scripts/heap_per_peer.py fg.txt --peers 1024

Each flame-graph line is "frame;frame;...;frame cost". The cost is charged to
the innermost frame naming an iwarpx:: function (the one that called new or a
container that allocated), divided by the peer count. Endpoint-wide
allocations (the bounce pool's slabs, the datagram port's buffers) show up too,
divided like the rest: read them as what they are. Heap bytes only; which
pages are touched (RSS) is bench_scale.sh's business.
"""

import argparse
import collections
import re
import sys


def frame_name(frame):
    name = re.sub(r"\(anonymous namespace\)::", "", frame)
    # Template arguments make every container instance a different name.
    return re.sub(r"<[^;]*>", "<>", name)


def attribute(lines):
    costs = collections.Counter()
    for line in lines:
        stack, _, cost = line.rstrip("\n").rpartition(" ")
        if not stack:
            continue
        try:
            value = int(cost)
        except ValueError:
            continue
        owner = "(outside iwarpx)"
        for frame in reversed(stack.split(";")):
            if "iwarpx::" in frame:
                owner = frame_name(frame)
                break
        costs[owner] += value
    return costs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("flamegraph", help="heaptrack_print --print-flamegraph output")
    parser.add_argument("--peers", type=int, required=True, help="peer count of the run")
    parser.add_argument("--top", type=int, default=20, help="rows to print (default 20)")
    args = parser.parse_args()
    if args.peers <= 0:
        parser.error("--peers must be positive")
    with open(args.flamegraph, encoding="utf-8", errors="replace") as f:
        costs = attribute(f)
    if not costs:
        print(f"{args.flamegraph}: no flame-graph lines", file=sys.stderr)
        return 1
    print("| bytes per peer | allocating function |")
    print("|---:|---|")
    for owner, value in costs.most_common(args.top):
        print(f"| {value / args.peers:.1f} | {owner[:140]} |")
    print(f"| {sum(costs.values()) / args.peers:.1f} | total |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
