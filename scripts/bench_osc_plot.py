#!/usr/bin/python3
"""bench_osc_plot.py MEDIANS OUTDIR - the figures of scripts/bench_osc.sh.

MEDIANS holds lines "side test sync size value" (side pt2pt or iwarpx; value in us for the
*_latency tests, MB/s for *_bw). Writes OUTDIR/osc_latency.png (put/get latency vs size) and
OUTDIR/osc_bandwidth.png (put/get bandwidth vs size): one panel per synchronisation mode, one
line per component and test, log-log axes. Needs Debian's python3-matplotlib (Agg backend, no
display). Exits 1 with a message if MEDIANS has no size-dependent data to plot.
"""
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend choice)

SYNCS = ["lock", "fence", "pscw"]
STYLE = {"iwarpx": "-", "pt2pt": "--"}
MARK = {"put": "o", "get": "s"}


def load(path):
    data = defaultdict(list)  # (side, test, sync) -> [(size, value)]
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) != 5:
                continue
            side, test, sync, size, value = parts
            data[(side, test, sync)].append((int(size), float(value)))
    for points in data.values():
        points.sort()
    return data


def figure(data, kind, ylabel, title, out):
    tests = [t for t in ("put_" + kind, "get_" + kind)]
    syncs = [s for s in SYNCS if any((side, t, s) in data for side in STYLE for t in tests)]
    if not syncs:
        return False
    fig, axes = plt.subplots(1, len(syncs), figsize=(5.2 * len(syncs), 4.2), squeeze=False)
    for ax, sync in zip(axes[0], syncs):
        for side in ("iwarpx", "pt2pt"):
            for test in tests:
                points = data.get((side, test, sync))
                if not points or len(points) < 1:
                    continue
                xs = [p[0] for p in points]
                ys = [p[1] for p in points]
                ax.plot(xs, ys, STYLE[side], marker=MARK[test.split("_")[0]], markersize=4,
                        label="osc %s %s" % (side, test.replace("_" + kind, "")))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(ylabel)
        ax.set_title("%s, sync %s" % (title, sync))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    data = load(argv[1])
    out = argv[2].rstrip("/")
    ok_lat = figure(data, "latency", "latency (us, op + sync)", "MPI_Put / MPI_Get latency",
                    out + "/osc_latency.png")
    ok_bw = figure(data, "bw", "bandwidth (MB/s)", "MPI_Put / MPI_Get bandwidth",
                   out + "/osc_bandwidth.png")
    if not (ok_lat or ok_bw):
        print("bench_osc_plot.py: no put/get data in %s" % argv[1], file=sys.stderr)
        return 1
    for name, ok in (("osc_latency.png", ok_lat), ("osc_bandwidth.png", ok_bw)):
        if ok:
            print("bench_osc_plot.py: wrote %s/%s" % (out, name), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
