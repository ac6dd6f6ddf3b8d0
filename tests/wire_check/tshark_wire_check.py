#!/usr/bin/env python3
"""Independent wire check: tshark's iWARP dissectors decode what our codecs send.

Runs the exchange program (tests/wire_check/wire_exchange.cc), which performs a
complete connected iWARP exchange over a loopback TCP connection using only the
project's codecs, captures it with tshark on `lo` (filtered to the program's
port), then decodes the capture with tshark's own `iwarp_mpa` and
`iwarp_ddp_rdmap` dissectors and asserts that:
  * every frame the program says it sent (its EXPECT lines) is recognised, in
    order: MPA Request, MPA Reply, and each FPDU with the expected RDMAP opcode;
  * every FPDU shows "Good CRC32", except the deliberately corrupted one, which
    shows "Bad CRC32";
  * tshark's expert info has no error-severity entry other than the ones known
    for MPA v2 (WIRE.md: Wireshark 4.0 knows rev 1 only and warns on rev 2).
With --demo it prints tshark's decode as a table instead of only checking it.

Stops only the processes it started, by PID; every wait is bounded.
Exit status: 0 pass, 1 fail (with a message saying what differed).
"""
import argparse
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

TSHARK_DECODE_OPTS = [
    "--disable-heuristic", "rpcrdma_iwarp",
    "--disable-heuristic", "smb_direct_iwarp",
]
OPCODE_NAMES = {
    0x0: "RDMA Write", 0x1: "RDMA Read Request", 0x2: "RDMA Read Response",
    0x3: "Send", 0x4: "Send with Invalidate", 0x5: "Send with SE",
    0x6: "Send with SE and Invalidate", 0x7: "Terminate", 0x8: "Immediate Data",
    0x9: "Immediate Data with SE", 0xA: "Atomic Request", 0xB: "Atomic Response",
}


def fail(msg):
    print(f"wire check FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def readline_timeout(stream, seconds):
    ready, _, _ = select.select([stream], [], [], seconds)
    if not ready:
        return None
    return stream.readline()


def capture(exchange_bin, exchange_args, pcap):
    """Runs the exchange under a tshark capture; returns its EXPECT lines."""
    ex = subprocess.Popen([exchange_bin, "--wait-go", *exchange_args], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tshark = None
    try:
        line = readline_timeout(ex.stdout, 10)
        if not line or not line.startswith("PORT "):
            fail(f"exchange program did not announce its port (got {line!r})")
        port = int(line.split()[1])
        tshark = subprocess.Popen(
            ["tshark", "-i", "lo", "-f", f"tcp port {port}", "-w", pcap],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # tshark prints "Capturing on 'lo'" before dumpcap has attached its
        # filter, then "Capture started" once packets are really recorded.
        announced = started = False
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            l = readline_timeout(tshark.stderr, min(3.0, deadline - time.monotonic()))
            if l is None and announced:
                break  # this tshark does not log "Capture started": go on after a pause
            if l == "":
                break
            if l and "Capturing on" in l:
                announced = True
            if l and "Capture started" in l:
                started = True
                break
        if not (started or announced):
            fail("tshark did not start capturing on lo within 30 s (are you root?)")
        time.sleep(0.5)
        # Keep draining tshark's stderr so it never blocks on a full pipe.
        threading.Thread(target=tshark.stderr.read, daemon=True).start()
        ex.stdin.write("go\n")
        ex.stdin.flush()
        try:
            out, err = ex.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            ex.kill()
            fail("exchange program did not finish within 60 s")
        if ex.returncode != 0:
            fail(f"exchange program exited {ex.returncode}:\n{err}")
        time.sleep(1.0)  # let the last packets reach the capture file
    finally:
        if ex.poll() is None:
            ex.kill()
            ex.wait()
        if tshark is not None and tshark.poll() is None:
            tshark.send_signal(signal.SIGINT)
            try:
                tshark.wait(timeout=15)
            except subprocess.TimeoutExpired:
                tshark.kill()
                tshark.wait()
    expects = [l.split()[1:] for l in out.splitlines() if l.startswith("EXPECT ")]
    transcript = [l for l in out.splitlines() if not l.startswith("EXPECT ")]
    return expects, transcript


def decode(pcap):
    """Returns tshark's view: a list of (frame, kind, detail dict) in order."""
    res = subprocess.run(["tshark", "-r", pcap, "-T", "pdml", *TSHARK_DECODE_OPTS],
                         capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        fail(f"tshark -r failed: {res.stderr}")
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
                for fld in proto.iter("field"):
                    n = fld.get("name")
                    if n == "iwarp_mpa.req":
                        events.append((frame, "mpa_req", {"src": tcp_src}))
                    elif n == "iwarp_mpa.rep":
                        events.append((frame, "mpa_rep", {"src": tcp_src}))
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
    res = subprocess.run(["tshark", "-r", pcap, "-q", "-z", "expert,error",
                          *TSHARK_DECODE_OPTS], capture_output=True, text=True, timeout=120)
    return [l for l in res.stdout.splitlines() if "iwarp" in l.lower() or "mpa" in l.lower()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exchange", required=True, help="path of the wire_exchange program")
    ap.add_argument("--demo", action="store_true", help="print tshark's decode as a table")
    ap.add_argument("--keep", help="copy the capture to this path")
    args, exchange_args = ap.parse_known_args()
    if shutil.which("tshark") is None:
        fail("tshark is not installed: run ./autogen.sh as root, or apt-get install tshark")
    if os.geteuid() != 0:
        fail("capturing on lo needs root (or dumpcap capabilities)")
    with tempfile.TemporaryDirectory(prefix="iwarpx-wire-") as tmp:
        pcap = os.path.join(tmp, "exchange.pcapng")
        expects, transcript = capture(args.exchange, exchange_args, pcap)
        if args.keep:
            shutil.copy(pcap, args.keep)
        events = decode(pcap)
        errors = expert_errors(pcap)

    if args.demo:
        print("What the codecs sent (the exchange program's transcript):")
        for l in transcript:
            print("  " + l)
        print("\nWhat tshark's own iWARP dissectors decoded from the capture:")
        for frame, kind, d in events:
            if kind == "fpdu":
                opn = OPCODE_NAMES.get(d.get("opcode"), f"opcode {d.get('opcode')}")
                print(f"  frame {frame:3}  FPDU  {opn:28} {d['crc_text']}")
            else:
                print(f"  frame {frame:3}  {'MPA Request' if kind == 'mpa_req' else 'MPA Reply'}")

    got = []
    for _, kind, d in events:
        if kind == "fpdu":
            got.append(["fpdu", str(d.get("opcode")), d["crc"]])
        else:
            got.append([kind])
    want = [[e[0]] if e[0] != "fpdu" else ["fpdu", str(int(e[1], 0)), e[2]] for e in expects]
    if not want:
        fail("the exchange program announced no frames")
    if got != want:
        lines = [f"  want {w!s:40} got {g!s}" for w, g in
                 zip(want + [None] * len(got), got + [None] * len(want))
                 if w is not None or g is not None]
        fail("tshark's decode differs from what was sent:\n" + "\n".join(lines))
    needed = {"0", "1", "2", "3", "7"}
    seen = {g[1] for g in got if g[0] == "fpdu"}
    if not needed <= seen:
        fail(f"exchange lacks opcodes {sorted(needed - seen)} (needs Write, Read Req/Resp, Send, Terminate)")
    if not any(g[0] == "fpdu" and g[2] == "bad" for g in got):
        fail("no deliberately corrupted FPDU was reported as Bad CRC32")
    if errors:
        fail("tshark expert info reports errors:\n" + "\n".join(errors))
    n_good = sum(1 for g in got if g[0] == "fpdu" and g[2] == "good")
    print(f"wire check passed: {len(got)} frames decoded by tshark as sent; "
          f"{n_good} FPDUs Good CRC32, the corrupted one Bad CRC32")
    return 0


if __name__ == "__main__":
    sys.exit(main())
