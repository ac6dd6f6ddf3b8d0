#!/usr/bin/python3
"""Wire check of datagram iWARP: tshark + tools/wireshark/iwarpx_dgram.lua decode
what the project's encoder (wire/dgram.h, via dgram_sender) sends over UDP.

Steps: capture on `lo` filtered to a free UDP port, run
`dgram_sender PORT --bad-crc`, stop tshark by its PID, decode the capture with
the Lua dissector, and assert for each of the 7 datagrams: the iwarpx type and
control op, the sequence number, the CRC status (Good for CRC-on datagrams,
"not used" for the CRC-off RESET, Bad for the deliberately corrupted one) and
the RDMAP opcode that Wireshark's built-in iwarp_ddp_rdmap dissector decoded
from the ULPDU (this proves the hand-off). With --demo it also prints tshark's
one-line decode.

Needs root (capture on lo) and tshark with Lua. Fails with a message saying what to install without them.
Exit 0 on pass, 1 on failure. Stops only the processes it started; waits are bounded.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile

from tshark_capture import QUIET_HEURISTICS, CaptureError, TsharkCapture

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LUA = os.path.join(HERE, "..", "..", "tools", "wireshark", "iwarpx_dgram.lua")

# (type, ctrl_op, seq, CRC status prefix, RDMAP opcode or "") per datagram, in
# the order dgram_sender sends them.
EXPECTED = [
    ("1", "0", "0", "Good", "0x03"),  # UD Send "hello"
    ("2", "0", "5", "Good", "0x00"),  # RD RDMA Write, gather-sent
    ("2", "0", "6", "Good", "0x01"),  # RD Read Request
    ("3", "0", "0", "Good", ""),  # RD ack
    ("4", "2", "7", "Good", ""),  # RD PROBE
    ("4", "1", "0", "not used", ""),  # RD RESET, CRC off
    ("1", "0", "0", "Bad", "0x03"),  # UD Send with a corrupted CRC
]
FIELDS = ["iwarpx_dgram.type", "iwarpx_dgram.ctrl_op", "iwarpx_dgram.seq",
          "iwarpx_dgram.crc.status", "iwarp_rdma.opcode"]


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def capture(sender, port, pcap):
    """Runs tshark around one sender run; returns an error string or None."""
    try:
        with TsharkCapture("udp port %d" % port, pcap):
            run = subprocess.run([sender, str(port), "--bad-crc"], timeout=20,
                                 capture_output=True, text=True)
            if run.returncode != 0:
                return "dgram_sender failed (%d): %s" % (run.returncode, run.stderr)
    except CaptureError as e:
        return str(e)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sender", required=True, help="path of the dgram_sender binary")
    ap.add_argument("--lua", default=DEFAULT_LUA, help="the iwarpx_dgram.lua dissector")
    ap.add_argument("--demo", action="store_true", help="also print tshark's decode")
    args = ap.parse_args()

    if shutil.which("tshark") is None:
        print("FAIL: tshark is not installed: run ./autogen.sh as root, or apt-get install tshark")
        return 1
    if os.geteuid() != 0:
        print("FAIL: capturing on lo needs root (or dumpcap capabilities)")
        return 1
    version = subprocess.run(["tshark", "-v"], capture_output=True, text=True, timeout=30).stdout
    if "with Lua" not in version:
        print("FAIL: this tshark has no Lua support (Debian's tshark package has it)")
        return 1

    with tempfile.TemporaryDirectory(prefix="dgram_check_") as tmp:
        pcap = os.path.join(tmp, "dgram.pcap")
        err = capture(args.sender, free_udp_port(), pcap)
        if err:
            print("FAIL:", err)
            return 1
        base = ["tshark", "-X", "lua_script:" + os.path.abspath(args.lua)] + QUIET_HEURISTICS
        if args.demo:
            print(subprocess.run(base + ["-r", pcap], capture_output=True, text=True,
                                 timeout=60).stdout, end="")
        cmd = base + ["-r", pcap, "-T", "fields", "-E", "separator=|"]
        for f in FIELDS:
            cmd += ["-e", f]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            print("FAIL: tshark decode failed:", out.stderr[-500:])
            return 1
        rows = [line.split("|") for line in out.stdout.splitlines() if line.strip()]

    failures = []
    if len(rows) != len(EXPECTED):
        failures.append("captured %d datagrams, expected %d" % (len(rows), len(EXPECTED)))
    for i, (row, want) in enumerate(zip(rows, EXPECTED), start=1):
        got = (row[0], row[1], row[2], row[3], row[4] if len(row) > 4 else "")
        ok = got[:3] == want[:3] and got[3].startswith(want[3]) and got[4] == want[4]
        if not ok:
            failures.append("frame %d: got %s, expected %s" % (i, got, want))
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS: %d datagrams decoded by iwarpx_dgram.lua, CRCs and DDP/RDMAP hand-off as "
          "expected" % len(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
