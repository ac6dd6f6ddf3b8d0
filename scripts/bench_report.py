#!/usr/bin/python3
"""bench_report.py OUT SECTION... - writes OUT/REPORT.md and the PNG plots of
scripts/bench_all.sh from what it left in OUT/raw:

    machine.txt        "key: value" lines (date, command, mode, cpus, kernel, versions, load)
    S.md               section S's script output (its tables and notes, unedited)
    S.title, S.cmd     the section's heading and command
    S.status           "ok", "failed: why" or "not available: why"; S.seconds its time

For every section: status, command, the script's tables, its notes, the issue targets with
the ratio computed from the table (scripts/bench_report_sections.py) and the figures
(scripts/bench_plot.py style). Exits 1 if OUT/raw has no machine.txt.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import bench_report_sections  # noqa: E402 (after the bytecode switch)
from bench_plot import write_figure  # noqa: E402
from bench_report_sections import against_floor, extract, floor_values, verdict  # noqa: E402
from bench_tables import notes, parse  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path, default=""):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return default


def machine(raw):
    info = {}
    for line in read(os.path.join(raw, "machine.txt")).splitlines():
        key, _, value = line.partition(": ")
        info[key] = value
    return info


def load_verdict(info):
    """'quiet' or 'loaded' from the 1-minute load average at the start."""
    try:
        load1 = float(info.get("load at start", "").split()[0])
    except (IndexError, ValueError):
        return "unknown"
    if load1 < 0.5:
        return "quiet (1-minute load %.2f before the first run)" % load1
    return ("LOADED (1-minute load %.2f before the first run: other work shared the CPUs; "
            "compare ratios within this report, do not record the figures)" % load1)


def relative(cmd):
    return cmd.replace(ROOT + "/", "")


def section_md(num, name, raw, out):
    """The markdown of one section and its targets as (section, target, ratio, verdict)."""
    status = read(os.path.join(raw, name + ".status"), "not run").strip()
    seconds = read(os.path.join(raw, name + ".seconds")).strip()
    cmd = relative(read(os.path.join(raw, name + ".cmd")).strip())
    text = read(os.path.join(raw, name + ".md"))
    title = read(os.path.join(raw, name + ".title"), name).strip()
    md = ["## %d. %s: %s" % (num, name, title), ""]
    md.append("Status: **%s**%s." % (status, ", %s s" % seconds if seconds else ""))
    md.append("")
    if status.startswith("not available"):
        return md, [], status
    if cmd:
        md += ["Command (from the repository root):", "", "```", cmd, "```", ""]
    tables = parse(text)
    for t in tables:
        if t.caption:
            md += [t.caption + ":", ""]
        md += t.lines + [""]
    if not tables:
        md += ["No table: the script printed none (see logs/%s.log)." % name, ""]
    captions = {t.caption for t in tables}
    script_notes = [n for n in notes(text) if n.rstrip(":") not in captions]
    if script_notes:
        md += ["The script's own lines (dates, exact commands, spreads, failures):", "", "```"]
        md += script_notes + ["```", ""]
    ex = extract(name, text)
    if ex.extra:
        md += ex.extra + [""]
    rows = []
    if ex.targets:
        md += ["| issue | target | measured ratio | verdict |", "|---|---|---:|---|"]
        for t in ex.targets:
            r = "n/a" if t.ratio is None else "%.2f" % t.ratio
            v = verdict(t)
            md.append("| %s | %s %s %.2f | %s | %s |" % (t.issue, t.what, t.op, t.limit, r, v))
            rows.append((name, t, r, v))
        md.append("")
    for fig in ex.figures:
        if write_figure(os.path.join(out, fig.stem + ".png"), fig.panels):
            md += ["![%s](%s.png)" % (fig.caption, fig.stem), ""]
    if name == "osc":  # bench_osc.sh --out drew these
        for png in ("osc_latency.png", "osc_bandwidth.png"):
            if os.path.exists(os.path.join(out, png)):
                md += ["![%s](%s)" % (png[:-4].replace("_", " "), png), ""]
    return md, rows, status


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    raw = os.path.join(out, "raw")
    if not os.path.exists(os.path.join(raw, "machine.txt")):
        print("bench_report.py: %s/machine.txt missing" % raw, file=sys.stderr)
        return 1
    sections = argv[2:] or [s for s in bench_report_sections.EXTRACTORS
                            if os.path.exists(os.path.join(raw, s + ".status"))]
    info = machine(raw)
    body, all_rows, summary = [], [], []
    for num, name in enumerate(sections, 1):
        md, rows, status = section_md(num, name, raw, out)
        body += md
        all_rows += rows
        met = sum(1 for r in rows if r[3] == "met")
        seconds = read(os.path.join(raw, name + ".seconds")).strip()
        summary.append("| %d | %s | %s | %s | %s |" % (
            num, name, status.split(":")[0], seconds + " s" if seconds else "-",
            "%d of %d" % (met, len(rows)) if rows else "-"))
    head = [
        "# iwarpx benchmark report",
        "",
        "Made by `%s` at %s; mode: %s." % (relative(info.get("command", "?")),
                                           info.get("date", "?"), info.get("mode", "?")),
        "",
        "| machine | |",
        "|---|---|",
    ]
    for key in ("cpus", "memory", "kernel", "os", "libfabric", "open mpi", "iwarpx",
                "load at start", "load at end", "total"):
        head.append("| %s | %s |" % (key, info.get(key, "?") or "?"))
    head += ["", "Machine state: %s." % load_verdict(info), "",
             "Ratios are iwarpx (the subject) / the anchor from one run, medians of the runs;",
             "latency: below 1 = iwarpx faster; bandwidth: above 1 = iwarpx faster.", "",
             "## Summary", "", "| # | section | status | time | targets met |",
             "|---|---|---|---|---|"]
    head += summary + [""]
    if all_rows:
        head += ["## Targets", ""]
        if info.get("mode", "").startswith("quick") or load_verdict(info).startswith("LOADED"):
            head += ["These verdicts come from a quick run or a loaded machine: they show that "
                     "the numbers were computed, not where iwarpx stands.", ""]
        floors = floor_values(read(os.path.join(raw, "floor.md")))
        if floors:
            head += ["Column \"raw sockets\": the same ratio for raw kernel sockets alone "
                     "(section floor, scripts/bench_floor.sh) against the same anchor value. "
                     "A latency target below it cannot be met by any transport over this "
                     "machine's sockets; for bandwidth one raw TCP stream is a reference, not "
                     "a bound.", ""]
        head += ["| section | issue | target | measured ratio | verdict |%s" % (
            " raw sockets |" if floors else ""), "|---|---|---|---:|---|%s" % (
            "---|" if floors else "")]
        for name, t, r, v in all_rows:
            line = "| %s | %s | %s %s %.2f | %s | %s |" % (name, t.issue, t.what, t.op, t.limit,
                                                          r, v)
            if floors:
                f = against_floor(t, floors)
                line += " %s |" % (f[1] if f else "-")
            head.append(line)
        head.append("")
    with open(os.path.join(out, "REPORT.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(head + body).rstrip() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
