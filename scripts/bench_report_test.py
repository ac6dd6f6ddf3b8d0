#!/usr/bin/python3
"""bench_report_test.py - unit tests of the report side of scripts/bench_all.sh:
bench_tables.py (reading the scripts' tables back), bench_report_sections.py (series, ratios,
targets) and bench_report.py (REPORT.md and the PNGs) on hand-written script output in the
exact formats the scripts print. No benchmark runs here (ctest label unit)."""
import os
import shutil
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_report  # noqa: E402
import bench_report_sections as sections  # noqa: E402
from bench_tables import number, parse, size_bytes  # noqa: E402

DGRAM = """# scripts/bench_dgram.sh --ep dgram --repeat 1
# 2026-11-25T16:35Z, 2 CPUs, fi_pingpong -e dgram -I 20000, median of 1

| size (B) | udp (µs) | iwarpx (µs) | iwarpx/udp | iwarpx MB/s |
|---:|---:|---:|---:|---:|
| 8 | 2.00 | 2.64 | 9.99 | 3.04 |
| 1024 | 2.18 | 2.90 | 1.33 | 353.31 |
| 8192 | n/a | 6.10 | n/a | 1343.00 |
"""

MSG = """
Command: `scripts/bench_msg.sh` (2026-11-25, 2 CPUs, load average 1.36 1.34 1.77, libfabric 1.17.0)

Ping-pong, one-way latency (half round trip), µs:

| size | iwarpx | tcp | raw TCP | iwarpx/tcp |
|---|---|---|---|---|
| 8 B | 8.50 | 12.05 | 6.99 | 0.71 |
| 1 MiB | 258.21 | 332.10 | 305.25 | 0.78 |

Bandwidth, fi_write (rma_bw --op write), MB/s:

| size | iwarpx | tcp | iwarpx/tcp |
|---|---|---|---|
| 8 B | 1.15 | 1.28 | 0.90 |
| 1 MiB | 5535.17 | 4278.36 | 1.29 |

Target 8 B latency iwarpx/tcp <= 0.80: 0.71
"""

RDM = """# scripts/bench_rdm.sh --repeat 1

# scripts/bench_pingpong.sh --ep rdm
| size (B) | tcp;ofi_rxm (µs) | udp;ofi_rxd (µs) | iwarpx (µs) | iwarpx/tcp;ofi_rxm | iwarpx/udp;ofi_rxd | iwarpx MB/s |
|---:|---:|---:|---:|---:|---:|---:|
| 8 | 4.55 | 4.29 | 3.36 | 0.74 | 0.78 | 2.38 |

# scripts/bench_rdm_bw.sh
| size (B) | tcp;ofi_rxm MB/s | udp;ofi_rxd MB/s | iwarpx MB/s | iwarpx/tcp;ofi_rxm | iwarpx/udp;ofi_rxd |
|---:|---:|---:|---:|---:|---:|
| 8 | 3.648 | 3.332 | 4.047 | 1.11 | 1.21 |
| 1048576 | 4733.706 | n/a | 4173.429 | 0.88 | n/a |

# 1 run(s) failed (see stderr)
"""

SCALE = """# 2026-11-25T20:38Z, 2 CPUs, scripts/bench_scale.sh --peers 64,256, median of 1

| mode | peers | KiB per peer | KiB per peer after hot phase | hot-peer 8 B latency (us) |
|---|---|---|---|---|
| ud | 64 | 148.6 | 148.6 | 4.40 |
| hybrid | 64 | 148.4 | 150.2 | 4.32 |
| rc | 64 | 255.1 | 256.8 | 4.42 |
| tcp-rxm | 64 | skipped | skipped | skipped |
| ud | 256 | 148.2 | 148.2 | 13.39 |
| hybrid | 256 | 170.0 | 148.8 | 7.40 |
| rc | 256 | 256.4 | 256.8 | 7.70 |
| tcp-rxm | 256 | n/a | n/a | n/a |

10 runs, 1 failed
"""

SCTP = """# scripts/bench_pingpong.sh --ep msg --subject iwarpx+sctp --anchors iwarpx+tcp

| size (B) | iwarpx+tcp (µs) | iwarpx+sctp (µs) | iwarpx+sctp/iwarpx+tcp | iwarpx+sctp MB/s |
|---:|---:|---:|---:|---:|
| 8 | 8.00 | 12.00 | 1.50 | 0.67 |
| 1024 | 10.00 | n/a | n/a | n/a |
"""

FLOOR = """# scripts/bench_floor.sh --repeat 3
# 2026-11-26T17:00Z, 2 CPUs, load: 0.50 0.40 0.30, raw_floor --min-time 0.5, median of 3

Raw kernel sockets on 127.0.0.1 (no libfabric):

| measure | size | median | min | max | unit | what it is |
|---|---:|---:|---:|---:|---|---|
| udp_oneway_us | 8 | 1.70 | 1.66 | 1.80 | us | UDP ping-pong, half round trip |
| udp_rtt_us | 8 | 3.40 | 3.32 | 3.60 | us | UDP round trip: the least a remote completion costs |
| tcp_w64_mbs | 1m | 5000 | 4900 | 5100 | MB/s | one TCP stream, 64 distinct buffers (cold) |
| tcp_w1_mbs | 1m | n/a | n/a | n/a | MB/s | one TCP stream, one buffer (hot) |
| udp_w64_mbs | 1m | 6000 | 5900 | 6100 | MB/s | one UDP flow, 64 distinct buffers (cold) |
"""

CEILINGS = FLOOR + """
Ceilings, raw sockets / anchor within each round (latency: raw time / anchor time, a bound):

| issue | target | anchor median | raw / anchor per round: median (min-max) | verdict |
|---|---|---:|---|---|
| 7 | MPI_Put 8 B lock/flush latency / osc pt2pt <= 0.30 | 14.07 | 0.49 (0.48-0.59), 9 rounds | cannot be met here: sockets alone take more |
"""

OSC = """# scripts/bench_osc.sh --repeat 1

| test | sync | size (B) | unit | osc pt2pt | osc iwarpx | ratio |
|---|---|---:|---|---:|---:|---:|
| put_latency | lock | 8 | us | 8.00 | 7.00 | 0.88 |
| get_bw | lock | 1048576 | MB/s | 5000 | 8000 | 1.60 |
"""

BTL = """# scripts/bench_btl.sh --repeat 1
# tcp:    mpirun ...
# iwarpx: mpirun ...
# latency: half round trip (us), lower is better; bandwidth: MB/s (10^6 B/s); ratio = iwarpx / tcp

| size (B) | tcp lat (us) | iwarpx lat (us) | ratio | tcp MB/s | iwarpx MB/s | ratio |
|---:|---:|---:|---:|---:|---:|---:|
| 8 | 10.00 | 7.00 | 0.70 | 2.00 | 2.50 | 1.25 |
| 1048576 | 300.00 | 250.00 | 0.83 | 4000.00 | 6000.00 | 1.50 |
"""

BTL_MODES = """# scripts/bench_btl.sh --p2p datagram,sctp --repeat 1
# tcp:    mpirun ...
# iwarpx_datagram: mpirun ...
# iwarpx_sctp: mpirun ...
# latency: half round trip (us), lower is better; bandwidth: MB/s (10^6 B/s); each ratio = the iwarpx column left of it / tcp

| size (B) | tcp lat (us) | iwarpx datagram lat (us) | ratio | iwarpx sctp lat (us) | ratio | tcp MB/s | iwarpx datagram MB/s | ratio | iwarpx sctp MB/s | ratio |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| 8 | 10.00 | 9.00 | 0.90 | 30.00 | 3.00 | 2.00 | 2.50 | 1.25 | 0.50 | 0.25 |
| 1048576 | 300.00 | 250.00 | 0.83 | n/a | n/a | 4000.00 | 5600.00 | 1.40 | 900.00 | 0.23 |
"""

PNG = b"\x89PNG\r\n\x1a\n"


class TablesTest(unittest.TestCase):
    def test_numbers_and_sizes(self):
        self.assertEqual(number(" 3.14 "), 3.14)
        self.assertIsNone(number("n/a"))
        self.assertIsNone(number("skipped"))
        self.assertEqual(size_bytes("8"), 8)
        self.assertEqual(size_bytes("64 KiB"), 65536)
        self.assertEqual(size_bytes("1 MiB"), 1 << 20)
        self.assertIsNone(size_bytes("lock"))

    def test_captions_and_rows(self):
        tables = parse(MSG)
        self.assertEqual(len(tables), 2)
        self.assertTrue(tables[0].caption.startswith("Ping-pong"))
        self.assertTrue(tables[1].caption.startswith("Bandwidth, fi_write"))
        self.assertEqual(tables[0].column("raw TCP"), ["6.99", "305.25"])
        self.assertEqual(parse(DGRAM)[0].caption, "")  # comment lines are no caption


class SectionsTest(unittest.TestCase):
    def test_dgram_ratio_from_the_medians(self):
        ex = sections.extract("dgram", DGRAM)
        self.assertEqual([t.ratio for t in ex.targets], [1.32])  # 2.64 / 2.00, not the cell
        self.assertEqual(sections.verdict(ex.targets[0]), "not met")
        self.assertEqual([f.stem for f in ex.figures], ["dgram_latency", "dgram_bandwidth"])
        udp = ex.figures[0].panels[0].lines[0]
        self.assertEqual(udp.label, "udp")
        self.assertEqual(udp.points, [(8, 2.0), (1024, 2.18)])  # the n/a cell is no point

    def test_msg_targets(self):
        ex = sections.extract("msg", MSG)
        self.assertEqual([(t.ratio, sections.verdict(t)) for t in ex.targets],
                         [(0.71, "met"), (1.29, "not met")])

    def test_missing_anchor_is_not_measured_never_met(self):
        ex = sections.extract("rdm", RDM)
        got = [(t.ratio, sections.verdict(t)) for t in ex.targets]
        self.assertEqual(got, [(0.74, "not met"), (0.88, "not met"), (None, "not measured")])

    def test_scale_ratios_at_the_largest_count(self):
        ex = sections.extract("scale", SCALE)
        self.assertIn("| 256 | 1.15 | 0.66 | 0.96 |", ex.extra)
        self.assertEqual([t.ratio for t in ex.targets], [1.15, 0.66, 0.96])
        self.assertEqual([sections.verdict(t) for t in ex.targets], ["not met", "not met", "met"])
        self.assertIn("at 256 peers", ex.targets[0].what)

    def test_sctp_subject_is_sctp_and_no_target(self):
        ex = sections.extract("sctp", SCTP)
        self.assertEqual(ex.targets, [])
        self.assertIn("Ratio iwarpx+sctp / iwarpx+tcp (latency, below 1: SCTP faster): 8 B 1.50",
                      ex.extra)
        labels = [line.label for line in ex.figures[0].panels[0].lines]
        self.assertEqual(labels, ["iwarpx+tcp", "iwarpx+sctp"])

    def test_btl_one_mode(self):
        ex = sections.extract("btl", BTL)
        self.assertEqual([(t.what, t.ratio) for t in ex.targets],
                         [("8 B latency btl iwarpx / btl tcp", 0.7),
                          ("1 MiB bandwidth btl iwarpx / btl tcp", 1.5)])
        labels = [line.label for line in ex.figures[0].panels[0].lines]
        self.assertEqual(labels, ["btl tcp", "btl iwarpx"])

    def test_btl_modes_side_by_side_targets_are_the_datagram_mode(self):
        ex = sections.extract("btl", BTL_MODES)
        self.assertEqual([(t.what, t.ratio, sections.verdict(t)) for t in ex.targets],
                         [("8 B latency btl iwarpx datagram / btl tcp", 0.9, "not met"),
                          ("1 MiB bandwidth btl iwarpx datagram / btl tcp", 1.4, "met")])
        lat = {line.label: line.points for line in ex.figures[0].panels[0].lines}
        self.assertEqual(list(lat), ["btl tcp", "btl iwarpx datagram", "btl iwarpx sctp"])
        self.assertEqual(lat["btl iwarpx sctp"], [(8, 30.0)])  # the n/a cell is no point
        bw = {line.label: line.points for line in ex.figures[1].panels[0].lines}
        self.assertEqual(bw["btl iwarpx sctp"], [(8, 0.5), (1048576, 900.0)])

    def test_floor_values_leave_out_missing_cells(self):
        self.assertEqual(sections.floor_values(FLOOR),
                         {"udp_oneway_us": 1.7, "udp_rtt_us": 3.4, "tcp_w64_mbs": 5000.0,
                          "udp_w64_mbs": 6000.0})
        self.assertEqual(sections.floor_values("no table"), {})

    def test_the_ceilings_table_keeps_its_caption_and_leaves_the_floor_alone(self):
        self.assertEqual(sections.floor_values(CEILINGS), sections.floor_values(FLOOR))
        caps = [t.caption for t in parse(CEILINGS)]
        self.assertEqual(len(caps), 2)
        self.assertTrue(caps[1].startswith("Ceilings, raw sockets / anchor within each round"),
                        caps[1])
        self.assertIn("The Ceilings table", sections.extract("floor", CEILINGS).extra[0])
        self.assertNotIn("Ceilings", sections.extract("floor", FLOOR).extra[0])

    def test_targets_against_the_floor(self):
        floors = sections.floor_values(FLOOR)
        put, get = sections.extract("osc", OSC).targets
        self.assertEqual((put.ratio, put.anchor, put.floor), (0.88, 8.0, "udp_rtt_us"))
        r, text = sections.against_floor(put, floors)  # 3.40 / 8.00: above the 0.3 limit
        self.assertEqual(r, 0.42)
        self.assertTrue(text.startswith("cannot be met here: raw UDP round trip"), text)
        self.assertIsNone(sections.against_floor(get, floors))  # its floor was not measured
        dgram = sections.extract("dgram", DGRAM).targets[0]  # 1.70 / 2.00
        self.assertEqual(sections.against_floor(dgram, floors)[0], 0.85)
        self.assertTrue(sections.against_floor(dgram, floors)[1].startswith("reachable"))
        rxm = sections.extract("rdm", RDM).targets[1]  # the better flow: 6000 / 4733.706
        self.assertEqual(sections.against_floor(rxm, floors)[0], 1.27)
        del floors["udp_w64_mbs"]  # TCP alone: 5000 / 4733.706
        self.assertEqual(sections.against_floor(rxm, floors)[0], 1.06)
        rxd = sections.extract("rdm", RDM).targets[2]  # no rxd anchor: nothing to compare
        self.assertIsNone(sections.against_floor(rxd, floors))
        big = rxm._replace(limit=2.0)
        self.assertIn("a reference, not a bound", sections.against_floor(big, floors)[1])

    def test_limits_are_inclusive(self):
        t = sections.Target(4, "x", 0.8, "<=", 0.8)
        self.assertEqual(sections.verdict(t), "met")
        self.assertEqual(sections.verdict(t._replace(ratio=0.81)), "not met")
        self.assertEqual(sections.verdict(t._replace(op=">=", ratio=0.79)), "not met")


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.out = tempfile.mkdtemp(prefix="bench_report_test.")
        raw = os.path.join(self.out, "raw")
        os.makedirs(raw)
        files = {
            "machine.txt": "date: 2026-11-25T22:00:00Z\ncommand: scripts/bench_all.sh --quick\n"
                           "mode: quick\ncpus: 2 (x)\nkernel: Linux 6.1\nlibfabric: 1.17.0\n"
                           "load at start: 3.10 2.00 1.00\n",
            "dgram.md": DGRAM, "dgram.status": "ok\n", "dgram.seconds": "21\n",
            "dgram.cmd": bench_report.ROOT + "/scripts/bench_dgram.sh --repeat 1\n",
            "dgram.title": "FI_EP_DGRAM ping-pong: iwarpx vs udp\n",
            "sctp.status": "not available: no FI_IWARPX_LLP parameter\n",
            "btl.status": "failed: exit 1: mpirun timed out\n", "btl.md": "",
        }
        for name, text in files.items():
            with open(os.path.join(raw, name), "w", encoding="utf-8") as f:
                f.write(text)

    def tearDown(self):
        shutil.rmtree(self.out)

    def test_report(self):
        argv = ["bench_report.py", self.out, "dgram", "btl", "sctp"]
        self.assertEqual(bench_report.main(argv), 0)
        with open(os.path.join(self.out, "REPORT.md"), encoding="utf-8") as f:
            report = f.read()
        self.assertIn("Machine state: LOADED (1-minute load 3.10", report)
        self.assertIn("| 1 | dgram | ok | 21 s | 0 of 1 |", report)
        self.assertIn("| 2 | btl | failed | - | - |", report)
        self.assertIn("| 3 | sctp | not available | - | - |", report)
        self.assertIn("| dgram | 4 | 8 B latency iwarpx / udp <= 1.00 | 1.32 | not met |", report)
        self.assertIn("\nscripts/bench_dgram.sh --repeat 1\n", report)  # relative to the root
        self.assertIn("**not available: no FI_IWARPX_LLP parameter**", report)
        self.assertIn("## 1. dgram: FI_EP_DGRAM ping-pong: iwarpx vs udp", report)
        for stem in ("dgram_latency", "dgram_bandwidth"):
            self.assertIn("(%s.png)" % stem, report)
            with open(os.path.join(self.out, stem + ".png"), "rb") as f:
                self.assertEqual(f.read(8), PNG)
        self.assertFalse(os.path.exists(os.path.join(self.out, "btl_latency.png")))

    def test_floor_column(self):
        for name, text in (("floor.md", FLOOR), ("floor.status", "ok\n"), ("osc.md", OSC),
                           ("osc.status", "ok\n")):
            with open(os.path.join(self.out, "raw", name), "w", encoding="utf-8") as f:
                f.write(text)
        self.assertEqual(bench_report.main(["bench_report.py", self.out, "dgram", "osc",
                                            "floor"]), 0)
        with open(os.path.join(self.out, "REPORT.md"), encoding="utf-8") as f:
            report = f.read()
        self.assertIn("| section | issue | target | measured ratio | verdict | raw sockets |",
                      report)
        self.assertIn("| osc | 7 | MPI_Put 8 B lock/flush latency osc iwarpx / osc pt2pt <= 0.30 "
                      "| 0.88 | not met | cannot be met here: raw UDP round trip alone is 0.42x "
                      "the anchor |", report)
        self.assertIn("| 1.60 | not met | - |", report)  # no hot-stream figure
        self.assertIn("## 3. floor: ", report)

    def test_no_floor_no_column(self):
        self.assertEqual(bench_report.main(["bench_report.py", self.out, "dgram"]), 0)
        with open(os.path.join(self.out, "REPORT.md"), encoding="utf-8") as f:
            self.assertNotIn("raw sockets", f.read())

    def test_no_machine_file_is_an_error(self):
        os.remove(os.path.join(self.out, "raw", "machine.txt"))
        self.assertEqual(bench_report.main(["bench_report.py", self.out]), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
