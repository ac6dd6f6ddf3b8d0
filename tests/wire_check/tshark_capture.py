"""What the tshark wire checks share: a bounded capture on `lo` and the decode
of connected iWARP (MPA/DDP/RDMAP) with tshark's own dissectors.

    with TsharkCapture("tcp port 4791", pcap):   # returns once packets are recorded
        run_the_traffic()
    events = decode_mpa(pcap)                     # [(frame, kind, details)]

The capture stops only the tshark it started (by its Popen handle); every wait
is bounded. Raises CaptureError with tshark's own words when it cannot start.
"""
import signal
import socket
import subprocess
import threading
import time
import xml.etree.ElementTree as ET

# Heuristic dissectors that would claim iWARP payloads for their own protocols.
QUIET_HEURISTICS = ["--disable-heuristic", "rpcrdma_iwarp",
                    "--disable-heuristic", "smb_direct_iwarp"]

OPCODE_NAMES = {
    0x0: "RDMA Write", 0x1: "RDMA Read Request", 0x2: "RDMA Read Response",
    0x3: "Send", 0x4: "Send with Invalidate", 0x5: "Send with SE",
    0x6: "Send with SE and Invalidate", 0x7: "Terminate", 0x8: "Immediate Data",
    0x9: "Immediate Data with SE", 0xA: "Atomic Request", 0xB: "Atomic Response",
}


class CaptureError(Exception):
    pass


class TsharkCapture:
    """tshark -i lo -f FILTER -w PCAP for the duration of a with block."""

    def __init__(self, capture_filter, pcap, settle=1.0):
        self.filter = capture_filter
        self.pcap = pcap
        self.settle = settle
        self.proc = None
        self.stderr_lines = []

    def __enter__(self):
        # -B: a large kernel capture buffer, so bursts of 64 KiB FPDUs are not dropped.
        self.proc = subprocess.Popen(["tshark", "-i", "lo", "-B", "256", "-f", self.filter,
                                      "-w", self.pcap],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        announced = threading.Event()  # "Capturing on 'Loopback: lo'"
        started = threading.Event()  # "Capture started": dumpcap's filter is attached

        def read_stderr():
            for line in self.proc.stderr:
                self.stderr_lines.append(line)
                if "Capturing on" in line:
                    announced.set()
                if "Capture started" in line:
                    started.set()

        self.reader = threading.Thread(target=read_stderr, daemon=True)
        self.reader.start()
        if not announced.wait(30):
            self._stop()
            raise CaptureError("tshark did not start capturing on lo within 30 s (root needed): "
                               + "".join(self.stderr_lines)[-500:])
        # tshark 4.0 prints "Capturing on" before dumpcap has attached its
        # filter; packets sent in between are lost.
        if not started.wait(5):
            time.sleep(1)
        time.sleep(0.3)
        return self

    def __exit__(self, *exc):
        time.sleep(self.settle)  # let the last packets reach the capture file
        self._stop()
        return False

    def _stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if getattr(self, "reader", None) is not None:
            self.reader.join(5)


def free_tcp_port():
    """A TCP port on 127.0.0.1 nobody listens on now (for fi_pingpong's control port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lost_segments(pcap):
    """Frames tshark's TCP analysis marks as following bytes the capture does not have.

    dumpcap drops packets when the machine is busy; tshark then reassembles FPDUs from
    incomplete bytes and reports Bad CRC32 on them. A capture with lost segments shows
    nothing about the provider, so callers capture again instead of judging it."""
    res = subprocess.run(["tshark", "-r", pcap, "-Y",
                          "tcp.analysis.lost_segment || tcp.analysis.ack_lost_segment",
                          "-T", "fields", "-e", "frame.number"],
                         capture_output=True, text=True, timeout=120)
    return len(res.stdout.split())


def decode_mpa(pcap, extra_opts=()):
    """tshark's view of a connected iWARP capture: (frame, kind, details) in order,
    kind in mpa_req, mpa_rep (details: src, res = tshark's "Reserved" flag bits,
    flags & 0x1F, which include RFC 6581's enhanced bit 0x10), fpdu (details: crc
    good/bad/unknown, crc_text, src, opcode) and ddp_without_mpa."""
    # Only packets tshark decoded as iWARP reach the PDML: the capture sees every TCP packet
    # on lo, and unrelated traffic (another job's MPI run) once made the PDML too large to parse.
    res = subprocess.run(["tshark", "-r", pcap, "-Y", "iwarp_mpa || iwarp_ddp_rdmap", "-T", "pdml",
                          *QUIET_HEURISTICS, *extra_opts],
                         capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise CaptureError(f"tshark -r failed: {res.stderr}")
    events = []
    for pkt in ET.fromstring(res.stdout).iter("packet"):
        frame = tcp_src = None
        for proto in pkt.iter("proto"):
            name = proto.get("name")
            if name == "geninfo":
                f = proto.find("field[@name='num']")
                frame = int(f.get("show")) if f is not None else None
            elif name == "tcp":
                f = proto.find("field[@name='tcp.srcport']")
                tcp_src = f.get("show") if f is not None else None
            elif name == "iwarp_mpa":
                names = {fld.get("name") for fld in proto.iter("field")}
                if "iwarp_mpa.ulpdulength" in names and "iwarp_mpa.crc_check" not in names:
                    # An FPDU of a connection that negotiated CRC off: no CRC field shown.
                    events.append((frame, "fpdu", {"crc": "absent", "src": tcp_src,
                                                   "crc_text": "no CRC (negotiated off)"}))
                for fld in proto.iter("field"):
                    n = fld.get("name")
                    if n == "iwarp_mpa.req":
                        events.append((frame, "mpa_req", {"src": tcp_src}))
                    elif n == "iwarp_mpa.rep":
                        events.append((frame, "mpa_rep", {"src": tcp_src}))
                    elif n == "iwarp_mpa.res" and events and events[-1][0] == frame and \
                            events[-1][1] in ("mpa_req", "mpa_rep"):
                        events[-1][2]["res"] = int(fld.get("show"), 0)
                    elif n == "iwarp_mpa.crc_check":
                        show = fld.get("showname", "")
                        status = ("good" if "Good CRC32" in show else
                                  "bad" if "Bad CRC32" in show else "unknown")
                        events.append((frame, "fpdu", {"crc": status, "src": tcp_src,
                                                       "crc_text": show}))
            elif name == "iwarp_ddp_rdmap":
                op = None
                for fld in proto.iter("field"):
                    if fld.get("name") == "iwarp_rdma.opcode":
                        op = int(fld.get("show"), 0)
                        break
                # Attach the opcode to the latest FPDU of this packet without one.
                for ev in reversed(events):
                    if ev[0] == frame and ev[1] == "fpdu" and "opcode" not in ev[2]:
                        ev[2]["opcode"] = op
                        break
                else:
                    events.append((frame, "ddp_without_mpa", {"opcode": op}))
    return events


def expert_errors(pcap):
    """tshark's error-severity expert entries that concern iWARP/MPA."""
    res = subprocess.run(["tshark", "-r", pcap, "-q", "-z", "expert,error", *QUIET_HEURISTICS],
                         capture_output=True, text=True, timeout=300)
    return [l for l in res.stdout.splitlines() if "iwarp" in l.lower() or "mpa" in l.lower()]
