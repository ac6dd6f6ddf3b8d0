"""bench_plot.py - the one plotting style of the benchmark scripts (imported, not run).

Used by scripts/bench_osc_plot.py (bench_osc.sh's figures) and scripts/bench_report.py
(bench_all.sh's report). The style follows the seeds' figures: line plots, message size (or
peer count) on a log2 x-axis, one line per provider or component, markers on the measured
points, a title and labelled axes on every panel.

    Line(label, points, style="-", marker="o")   points: [(x, y), ...], any order
    Panel(title, xlabel, ylabel, lines, logy=True, xbytes=True)
                    xbytes: x ticks read 8, 1K, 64K, 1M (else plain numbers); y ticks are
                    plain numbers either way
    write_figure(path, panels)  one row of panels into a PNG; False if no panel has a point

Needs Debian's python3-matplotlib (Agg backend: no display). Points whose y is not a
positive number are left out (a log axis cannot show them; "n/a" cells never reach here).
"""
from collections import namedtuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend choice)
from matplotlib.ticker import FuncFormatter  # noqa: E402

Line = namedtuple("Line", "label points style marker", defaults=("-", "o"))
Panel = namedtuple("Panel", "title xlabel ylabel lines logy xbytes", defaults=(True, True))

# Markers cycled over the lines of a panel that do not choose one.
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _bytes(value, _pos=None):
    for shift, suffix in ((30, "G"), (20, "M"), (10, "K")):
        if value >= (1 << shift) and value % (1 << shift) == 0:
            return "%d%s" % (value // (1 << shift), suffix)
    return "%g" % value


def _plain(value, _pos=None):
    return "%g" % value


def _usable(points):
    return sorted((x, y) for x, y in points if x > 0 and y is not None and y > 0)


def draw_panel(ax, panel):
    """Draws one Panel on a matplotlib axis; returns the number of lines drawn."""
    drawn = 0
    ys = []
    for line in panel.lines:
        points = _usable(line.points)
        if not points:
            continue
        ys += [p[1] for p in points]
        ax.plot([p[0] for p in points], [p[1] for p in points], line.style, marker=line.marker,
                markersize=4, label=line.label)
        drawn += 1
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_bytes if panel.xbytes else _plain))
    if panel.logy:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(_plain))
        if ys and max(ys) < 100 * min(ys):  # under two decades: label the minor ticks too
            ax.yaxis.set_minor_formatter(FuncFormatter(_plain))
            ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.set_title(panel.title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    if drawn:
        ax.legend(fontsize=8)
    return drawn


def write_figure(path, panels):
    """Writes the panels side by side into the PNG at path. Returns False (and writes
    nothing) when no panel has a single drawable point."""
    panels = [p for p in panels if any(_usable(line.points) for line in p.lines)]
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        draw_panel(ax, panel)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def auto_markers(lines):
    """Gives each Line without an explicit marker choice a distinct marker."""
    return [line._replace(marker=MARKERS[i % len(MARKERS)]) for i, line in enumerate(lines)]
