#!/usr/bin/python3
"""bench_osc_plot.py MEDIANS OUTDIR - the figures of scripts/bench_osc.sh.

MEDIANS holds lines "side test sync size value" (side pt2pt or iwarpx; value in us for the
*_latency tests, MB/s for *_bw). Writes OUTDIR/osc_latency.png (put/get latency vs size) and
OUTDIR/osc_bandwidth.png (put/get bandwidth vs size): one panel per synchronisation mode, one
line per component and test, log-log axes, in the style of scripts/bench_plot.py. Needs
Debian's python3-matplotlib (Agg backend, no display). Exits 1 with a message if MEDIANS has no
size-dependent data to plot.
"""
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from collections import defaultdict

from bench_plot import Line, Panel, write_figure  # noqa: E402

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
    return data


def figure(data, kind, ylabel, title, out):
    """One panel per synchronisation mode, one line per component and test (bench_plot.py)."""
    tests = ["put_" + kind, "get_" + kind]
    panels = []
    for sync in SYNCS:
        lines = [Line("osc %s %s" % (side, test.replace("_" + kind, "")), data[(side, test, sync)],
                      STYLE[side], MARK[test.split("_")[0]])
                 for side in ("iwarpx", "pt2pt") for test in tests if (side, test, sync) in data]
        if lines:
            panels.append(Panel("%s, sync %s" % (title, sync), "message size (bytes)", ylabel,
                                lines))
    return write_figure(out, panels)


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
