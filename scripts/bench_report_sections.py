"""bench_report_sections.py - what scripts/bench_report.py knows about each section's output
(imported, not run): the series to plot and the issue targets, computed from the numbers.

    extract(section, text) -> Extract(figures, targets, extra)
      figures  [Figure(stem, caption, panels)]: bench_report.py writes OUT/<stem>.png
      targets  [Target(issue, what, ratio, op, limit, anchor, floor)]: ratio None = not
               measured; anchor = the anchor's own value, floor = the key of the floor
               section's measure that bounds the target (None: no floor applies)
      extra    markdown lines for the section (e.g. the scalability ratios)
    verdict(target) -> "met", "not met" or "not measured"
    floor_values(text) -> {key: median} of scripts/bench_floor.sh's table
    against_floor(target, floors) -> (ratio raw sockets reach, what it means) or None

Ratios are subject / anchor of the medians in the tables, rounded to 2 decimals (as the
tables print them); a verdict compares the rounded ratio with the limit.
"""
from collections import namedtuple

from bench_plot import Line, Panel, auto_markers
from bench_tables import number, parse, size_bytes

Figure = namedtuple("Figure", "stem caption panels")
Target = namedtuple("Target", "issue what ratio op limit anchor floor", defaults=(None, None))
Extract = namedtuple("Extract", "figures targets extra")

KIB, MIB = 1 << 10, 1 << 20
SIZE_X = "message size (bytes)"


def ratio(a, b):
    return round(a / b, 2) if a is not None and b is not None and b > 0 else None


def verdict(t):
    if t.ratio is None:
        return "not measured"
    ok = t.ratio <= t.limit if t.op == "<=" else t.ratio >= t.limit
    return "met" if ok else "not met"


def points(table, col, size_col=None):
    """[(bytes, value)] of one column, n/a cells left out."""
    sizes = table.column(size_col or table.header[0])
    out = []
    for s, v in zip(sizes, table.column(col)):
        b, x = size_bytes(s), number(v)
        if b is not None and x is not None:
            out.append((b, x))
    return out


def at(pts, size):
    return next((v for s, v in pts if s == size), None)


def _lines(series):
    """One Line per series, iwarpx's solid and the anchors' dashed, each its own marker."""
    return auto_markers([Line(k, v, "-" if "iwarpx" in k else "--") for k, v in series.items()])


def _latency_and_throughput(stem, title, series):
    """series: {label: [(bytes, us)]} -> latency figure and size/latency figure."""
    lat = Panel(title + ": one-way latency", SIZE_X, "latency (us, half round trip)",
                _lines(series))
    thr = Panel(title + ": ping-pong throughput (size / latency)", SIZE_X, "MB/s (10^6 B/s)",
                _lines({k: [(s, s / us) for s, us in v] for k, v in series.items()}))
    return [Figure(stem + "_latency", title + " latency", [lat]),
            Figure(stem + "_bandwidth", title + " ping-pong throughput", [thr])]


def _pingpong_table(tables):
    """bench_pingpong.sh's table: returns (table, {name: points}, subject name)."""
    t = next((t for t in tables if any(h.endswith(" (µs)") for h in t.header)), None)
    if t is None:
        return None, {}, None
    cols = [h for h in t.header if h.endswith(" (µs)")]
    series = {h[: -len(" (µs)")]: points(t, h) for h in cols}
    return t, series, cols[-1][: -len(" (µs)")]  # the subject is printed after the anchors


def dgram(text):
    _, series, subj = _pingpong_table(parse(text))
    if not series:
        return Extract([], [], [])
    udp = at(series.get("udp", []), 8)
    r = ratio(at(series[subj], 8), udp)
    return Extract(_latency_and_throughput("dgram", "FI_EP_DGRAM", series),
                   [Target(4, "8 B latency iwarpx / udp", r, "<=", 1.0, udp, UDP_ONEWAY)], [])


def sctp(text):
    _, series, subj = _pingpong_table(parse(text))
    if not series:
        return Extract([], [], [])
    anchor = next((k for k in series if k != subj), None)
    extra = ["Ratio %s / %s (latency, below 1: SCTP faster): %s" % (subj, anchor, ", ".join(
        "%s %s" % (_size(s), _fmt(ratio(v, at(series[anchor], s))))
        for s, v in series[subj]) or "none measured"), "",
        "Issue 8 sets no numeric target for SCTP against TCP (item 5: measure and state "
        "where usrsctp limits speed)."]
    return Extract(_latency_and_throughput("sctp", "iWARP over SCTP vs TCP (FI_EP_MSG)", series),
                   [], extra)


def rdm(text):
    tables = parse(text)
    _, lat, subj = _pingpong_table(tables)
    bw_t = next((t for t in tables if not any(h.endswith(" (µs)") for h in t.header)
                 and any(h.endswith(" MB/s") for h in t.header)), None)
    bw = {}
    if bw_t is not None:
        bw = {h[: -len(" MB/s")]: points(bw_t, h) for h in bw_t.header
              if h.endswith(" MB/s") and "/" not in h[: -len(" MB/s")]}  # not the ratios
    figures = []
    if lat:
        figures.append(Figure("rdm_latency", "FI_EP_RDM latency", [Panel(
            "FI_EP_RDM: one-way latency (fi_pingpong)", SIZE_X, "latency (us, half round trip)",
            _lines(lat))]))
    if bw:
        figures.append(Figure("rdm_bandwidth", "FI_EP_RDM tagged bandwidth", [Panel(
            "FI_EP_RDM: streaming tagged bandwidth (tagged_bw)", SIZE_X, "MB/s (10^6 B/s)",
            _lines(bw))]))
    subj = subj or "iwarpx"
    rxm_lat = at(lat.get("tcp;ofi_rxm", []), 8)
    rxm_bw, rxd_bw = at(bw.get("tcp;ofi_rxm", []), MIB), at(bw.get("udp;ofi_rxd", []), MIB)
    targets = [
        Target(4, "8 B latency iwarpx / tcp;ofi_rxm", ratio(at(lat.get(subj, []), 8), rxm_lat),
               "<=", 0.7, rxm_lat, UDP_ONEWAY),
        Target(4, "1 MiB tagged bandwidth iwarpx / tcp;ofi_rxm",
               ratio(at(bw.get("iwarpx", []), MIB), rxm_bw), ">=", 1.0, rxm_bw, COLD),
        Target(4, "1 MiB tagged bandwidth iwarpx / udp;ofi_rxd",
               ratio(at(bw.get("iwarpx", []), MIB), rxd_bw), ">=", 10.0, rxd_bw, COLD),
    ]
    return Extract(figures, targets, [])


def msg(text):
    tables = parse(text)
    lat_t = next((t for t in tables if t.caption.startswith("Ping-pong")), None)
    bw_ts = [t for t in tables if t.caption.startswith("Bandwidth, fi_")]
    figures, lat, bw = [], {}, {}
    if lat_t is not None:
        lat = {h: points(lat_t, h) for h in lat_t.header[1:] if "/" not in h}
        figures.append(Figure("msg_latency", "FI_EP_MSG latency", [Panel(
            "FI_EP_MSG: one-way latency (msg_pingpong)", SIZE_X, "latency (us, half round trip)",
            _lines(lat))]))
    for t in bw_ts:
        op = t.caption.split("fi_")[1].split()[0]
        for h in t.header[1:]:
            if "/" not in h:
                bw["%s %s" % (h, op)] = points(t, h)
    if bw:
        figures.append(Figure("msg_bandwidth", "FI_EP_MSG RMA bandwidth", [Panel(
            "FI_EP_MSG: RMA bandwidth (rma_bw)", SIZE_X, "MB/s (10^6 B/s)",
            _lines(bw))]))
    tcp_lat, tcp_bw = at(lat.get("tcp", []), 8), at(bw.get("tcp write", []), MIB)
    targets = [
        Target(3, "8 B latency iwarpx / tcp", ratio(at(lat.get("iwarpx", []), 8), tcp_lat),
               "<=", 0.8, tcp_lat, UDP_ONEWAY),
        Target(3, "1 MiB RMA write bandwidth iwarpx / tcp",
               ratio(at(bw.get("iwarpx write", []), MIB), tcp_bw), ">=", 1.3, tcp_bw, HOT),
    ]
    return Extract(figures, targets, [])


# bench_btl.sh's iwarpx columns: "iwarpx" with one --p2p mode, "iwarpx <mode>" per mode with
# several (the issue 6 targets are the default mode's, datagram).
BTL_IWARPX = ("iwarpx", "iwarpx datagram", "iwarpx sctp")


def btl(text):
    def iwarpx_titles(t):
        return [w for w in BTL_IWARPX if f"{w} lat (us)" in t.header or f"{w} MB/s" in t.header]
    t = next((t for t in parse(text) if iwarpx_titles(t)), None)
    if t is None:
        return Extract([], [], [])
    def col(name):
        return points(t, name) if name in t.header else []
    titles = iwarpx_titles(t)
    lat = {"btl tcp": col("tcp lat (us)")}
    bw = {"btl tcp": col("tcp MB/s")}
    for w in titles:
        lat[f"btl {w}"] = col(f"{w} lat (us)")
        bw[f"btl {w}"] = col(f"{w} MB/s")
    subject = "btl iwarpx" if "iwarpx" in titles else "btl iwarpx datagram"
    lat.setdefault(subject, [])
    bw.setdefault(subject, [])
    figures = [
        Figure("btl_latency", "Open MPI point-to-point latency", [Panel(
            "MPI point-to-point: latency (mpi_bench)", SIZE_X, "latency (us, half round trip)",
            _lines(lat))]),
        Figure("btl_bandwidth", "Open MPI point-to-point bandwidth", [Panel(
            "MPI point-to-point: bandwidth (mpi_bench)", SIZE_X, "MB/s (10^6 B/s)",
            _lines(bw))]),
    ]
    tcp_lat, tcp_bw = at(lat["btl tcp"], 8), at(bw["btl tcp"], MIB)
    targets = [
        Target(6, f"8 B latency {subject} / btl tcp", ratio(at(lat[subject], 8), tcp_lat),
               "<=", 0.8, tcp_lat, UDP_ONEWAY),
        Target(6, f"1 MiB bandwidth {subject} / btl tcp", ratio(at(bw[subject], MIB), tcp_bw),
               ">=", 1.3, tcp_bw, COLD),
    ]
    return Extract(figures, targets, [])


def osc(text):
    """bench_osc.sh draws its own figures (osc_latency.png, osc_bandwidth.png)."""
    t = next((t for t in parse(text) if "osc iwarpx" in t.header), None)
    def cells(test, size):
        """(osc iwarpx, osc pt2pt) of one lock row, None where absent."""
        for row in t.rows if t is not None else []:
            if row[:3] == [test, "lock", str(size)]:
                return number(row[t.index("osc iwarpx")]), number(row[t.index("osc pt2pt")])
        return None, None
    put, get = cells("put_latency", 8), cells("get_bw", MIB)
    return Extract([], [
        Target(7, "MPI_Put 8 B lock/flush latency osc iwarpx / osc pt2pt", ratio(*put), "<=",
               0.3, put[1], UDP_RTT),
        Target(7, "MPI_Get 1 MiB lock/flush bandwidth osc iwarpx / osc pt2pt", ratio(*get),
               ">=", 2.0, get[1], HOT)], [])


# bench_scale.sh's modes as the plots and ratios name them.
SCALE_MODES = {"ud": "iwarpx ud", "hybrid": "iwarpx hybrid", "rc": "iwarpx rc",
               "tcp-rxm": "tcp;ofi_rxm", "udp-rxd": "udp;ofi_rxd"}


def scale(text):
    t = next((t for t in parse(text) if t.header[:2] == ["mode", "peers"]), None)
    if t is None:
        return Extract([], [], [])
    mem, hot, lat = {}, {}, {}
    for row in t.rows:
        mode, n = row[0], int(row[1])
        mode = SCALE_MODES.get(mode, mode)
        for store, col in ((mem, 2), (hot, 3), (lat, 4)):
            v = number(row[col])
            if v is not None:
                store.setdefault(mode, []).append((n, v))
    peers_x = "peers (N)"
    figures = [
        Figure("scale_memory", "memory per peer vs N", [
            Panel("Memory per peer after one ping to each", peers_x, "KiB per peer",
                  _lines(mem), True, False),
            Panel("Memory per peer after the hot-peer phase", peers_x, "KiB per peer",
                  _lines(hot), True, False)]),
        Figure("scale_latency", "hot-peer latency vs N", [
            Panel("Hot-peer 8 B one-way latency", peers_x, "latency (us)",
                  _lines(lat), True, False)]),
    ]
    ns = sorted({int(row[1]) for row in t.rows})
    extra = ["| peers | hybrid / ud memory | hybrid / rc memory | hybrid / rc hot-peer latency |",
             "|---:|---:|---:|---:|"]
    for n in ns:
        extra.append("| %d | %s | %s | %s |" % (n, _fmt(ratio(at(mem.get(HYB, []), n), at(
            mem.get(UD, []), n))), _fmt(ratio(at(mem.get(HYB, []), n), at(mem.get(RC, []), n))),
            _fmt(ratio(at(lat.get(HYB, []), n), at(lat.get(RC, []), n)))))
    n = 1024 if 1024 in ns else (ns[-1] if ns else 0)
    where = "" if n == 1024 else " (at %d peers; the issue asks at 1024)" % n
    targets = [
        Target(5, "memory per peer hybrid / ud" + where,
               ratio(at(mem.get(HYB, []), n), at(mem.get(UD, []), n)), "<=", 1.1),
        Target(5, "memory per peer hybrid / rc (connect to everyone)" + where,
               ratio(at(mem.get(HYB, []), n), at(mem.get(RC, []), n)), "<=", 0.2),
        Target(5, "hot-peer 8 B latency hybrid / rc (within 10 % of the connected path)" + where,
               ratio(at(lat.get(HYB, []), n), at(lat.get(RC, []), n)), "<=", 1.1),
    ]
    return Extract(figures, targets, extra)


HYB, UD, RC = SCALE_MODES["hybrid"], SCALE_MODES["ud"], SCALE_MODES["rc"]


def _fmt(r):
    return "n/a" if r is None else "%.2f" % r


def _size(b):
    for unit, name in ((MIB, "MiB"), (KIB, "KiB")):
        if b >= unit and b % unit == 0:
            return "%d %s" % (b // unit, name)
    return "%d B" % b


# scripts/bench_floor.sh's measures (raw kernel sockets on loopback, no libfabric). A bandwidth
# floor is the better of one raw TCP stream and one raw UDP flow with the same buffers.
UDP_ONEWAY, UDP_RTT = "udp_oneway_us", "udp_rtt_us"
COLD, HOT = ("tcp_w64_mbs", "udp_w64_mbs"), ("tcp_w1_mbs", "udp_w1_mbs")
FLOOR_TEXT = {UDP_ONEWAY: "raw UDP one-way", UDP_RTT: "raw UDP round trip",
              COLD: "one raw socket flow, 64 buffers", HOT: "one raw socket flow, 1 buffer"}


def floor_values(text):
    """{measure: median} from bench_floor.sh's table (n/a cells left out)."""
    t = next((t for t in parse(text) if t.header[:2] == ["measure", "size"]), None)
    out = {}
    for row in t.rows if t is not None else []:
        v = number(row[t.index("median")])
        if v is not None:
            out[row[0]] = v
    return out


def against_floor(t, floors):
    """What raw sockets alone reach against the target's anchor, or None (no floor applies or
    a value is missing): (ratio, text). A latency target below the floor's ratio cannot be met
    by any transport over this machine's sockets (an answer needs at least what the raw
    socket pays); a bandwidth ratio above the better raw flow (TCP or UDP, one copy each way)
    is a reference, not a proof (several flows or fewer copies could beat it)."""
    keys = t.floor if isinstance(t.floor, tuple) else (t.floor,)
    values = [floors[k] for k in keys if k in floors]
    value = max(values) if values else None
    if value is None or not t.anchor:
        return None
    r = round(value / t.anchor, 2)
    name = FLOOR_TEXT.get(t.floor, t.floor)
    if t.op == "<=":
        if r > t.limit:
            return r, "cannot be met here: %s alone is %.2fx the anchor" % (name, r)
        return r, "reachable: %s is %.2fx the anchor" % (name, r)
    if r < t.limit:
        return r, "beyond %s (%.2fx the anchor; a reference, not a bound)" % (name, r)
    return r, "%s reaches %.2fx the anchor" % (name, r)


def floor(text):
    notes = []
    if floor_values(text):
        notes.append("The issue targets are set against these in the report's target table "
                     "(column \"raw sockets\").")
    if any(t.header[:2] == ["issue", "target"] for t in parse(text)):
        notes.append("The Ceilings table (--anchors) sets the same targets against the raw "
                     "sockets within each round, seconds apart, so a slow or fast phase of the "
                     "host mostly hits both sides of a ratio.")
    return Extract([], [], [" ".join(notes)] if notes else [])


EXTRACTORS = {"dgram": dgram, "rdm": rdm, "msg": msg, "btl": btl, "osc": osc, "sctp": sctp,
              "scale": scale, "floor": floor}


def extract(section, text):
    return EXTRACTORS[section](text)
