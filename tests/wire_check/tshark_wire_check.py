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
import subprocess
import sys
import tempfile

from tshark_capture import OPCODE_NAMES, CaptureError, TsharkCapture, decode_mpa, expert_errors

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
        tshark = TsharkCapture(f"tcp port {port}", pcap)
        try:
            tshark.__enter__()
        except CaptureError as e:
            tshark = None
            fail(str(e))
        ex.stdin.write("go\n")
        ex.stdin.flush()
        try:
            out, err = ex.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            ex.kill()
            fail("exchange program did not finish within 60 s")
        if ex.returncode != 0:
            fail(f"exchange program exited {ex.returncode}:\n{err}")
    finally:
        if ex.poll() is None:
            ex.kill()
            ex.wait()
        if tshark is not None:
            tshark.__exit__(None, None, None)
    expects = [l.split()[1:] for l in out.splitlines() if l.startswith("EXPECT ")]
    transcript = [l for l in out.splitlines() if not l.startswith("EXPECT ")]
    return expects, transcript


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
        events = decode_mpa(pcap)
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
