#!/usr/bin/env python3
"""The provider's own traffic, judged by tshark: Debian's fi_pingpong runs over
iwarpx FI_EP_MSG on loopback under a tshark capture, and tshark's iWARP
dissectors must find the MPA Request and Reply, the zero-length RDMA Write
that is the MPA v2 RTR, and the Send FPDUs of the ping-pong, every FPDU with
"Good CRC32" (with FI_IWARPX_MPA_CRC=0 both sides negotiate CRC off, and
every FPDU must then be one tshark shows without a CRC check).

Processes started here (tshark, the fi_pingpong server and client) are the
only ones stopped, by their handles; every wait is bounded.
Exit status: 0 pass, 1 fail (saying what differed). --demo prints the decode.
"""
import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time

from tshark_capture import (OPCODE_NAMES, CaptureError, TsharkCapture, decode_mpa, expert_errors,
                            free_tcp_port, lost_segments)


def fail(msg):
    print(f"pingpong wire check FAILED: {msg}", file=sys.stderr)
    sys.exit(1)



def run_pingpong(pingpong, port, sizes, iterations, env):
    common = [pingpong, "-p", "iwarpx", "-e", "msg", "-c", "-S", sizes, "-I", str(iterations)]
    server = subprocess.Popen(common + ["-B", str(port)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        # Until the server's control port listens (a probe connection would be taken
        # as fi_pingpong's one control connection, so ask the kernel instead).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            ss = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True,
                                text=True, timeout=10)
            if "LISTEN" in ss.stdout:
                break
            time.sleep(0.1)
        client = subprocess.run(common + ["-P", str(port), "127.0.0.1"], env=env,
                                capture_output=True, text=True, timeout=120)
        out, _ = server.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        fail("fi_pingpong did not finish within its time limit")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    if client.returncode != 0 or server.returncode != 0:
        fail(f"fi_pingpong exited {client.returncode}/{server.returncode}:\n"
             f"client: {client.stdout}{client.stderr}\nserver: {out}")
    return client.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pingpong", default=shutil.which("fi_pingpong"))
    ap.add_argument("--provider-dir", required=True, help="directory of libiwarpx-fi.so")
    ap.add_argument("--sizes", default="64", help="fi_pingpong -S (default 64)")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--demo", action="store_true", help="print tshark's decode")
    args = ap.parse_args()
    if args.pingpong is None or shutil.which("tshark") is None:
        fail("fi_pingpong (libfabric-bin) and tshark are needed: run ./autogen.sh as root")
    if os.geteuid() != 0:
        fail("capturing on lo needs root (or dumpcap capabilities)")
    env = dict(os.environ, FI_PROVIDER_PATH=args.provider_dir)
    env.pop("FI_PROVIDER", None)
    crc_on = env.get("FI_IWARPX_MPA_CRC", "1").lower() not in ("0", "false", "no", "off")
    attempts = 3
    for attempt in range(1, attempts + 1):
        port = free_tcp_port()
        with tempfile.TemporaryDirectory(prefix="iwarpx-pp-") as tmp:
            pcap = os.path.join(tmp, "pingpong.pcapng")
            try:
                # Loopback TCP: fi_pingpong's control connection (not iWARP, ignored by the
                # dissectors) and the MSG connection on ports chosen at run time.
                with TsharkCapture("tcp", pcap):
                    client_out = run_pingpong(args.pingpong, port, args.sizes, args.iterations,
                                              env)
                lost = lost_segments(pcap)
                if lost == 0:
                    events = decode_mpa(pcap)
                    errors = expert_errors(pcap)
            except CaptureError as e:
                fail(str(e))
        if lost == 0:
            break
        # Not a verdict on the provider: fi_pingpong -c checked its data, the capture
        # missed packets (a busy machine). Capture again; never judge an incomplete one.
        print(f"capture {attempt} missed packets ({lost} frames after lost segments): "
              f"{'capturing again' if attempt < attempts else 'giving up'}", file=sys.stderr)
    if lost != 0:
        fail(f"every one of {attempts} captures missed packets: no complete capture to check")

    fpdus = [d for _, kind, d in events if kind == "fpdu"]
    kinds = collections.Counter(kind for _, kind, _ in events)
    ops = collections.Counter(d.get("opcode") for d in fpdus)
    crcs = collections.Counter(d["crc"] for d in fpdus)
    if args.demo:
        print("fi_pingpong (client side):")
        print("  " + client_out.strip().replace("\n", "\n  "))
        print("\nWhat tshark's iWARP dissectors decoded from the provider's traffic:")
        print(f"  MPA Requests {kinds['mpa_req']}, MPA Replies {kinds['mpa_rep']}, "
              f"FPDUs {len(fpdus)}")
        for op, n in sorted(ops.items(), key=lambda kv: (kv[0] is None, kv[0])):
            print(f"    {OPCODE_NAMES.get(op, f'opcode {op}'):28} {n}")
        for status, n in sorted(crcs.items()):
            print(f"    CRC {status:8} {n}")
        shown = 0
        for frame, kind, d in events:
            if shown == 8:
                break
            name = {"mpa_req": "MPA Request", "mpa_rep": "MPA Reply"}.get(kind)
            if name is None and kind == "fpdu":
                name = f"FPDU {OPCODE_NAMES.get(d.get('opcode'), '?'):20} {d['crc_text']}"
            print(f"  frame {frame:4}  {name}")
            shown += 1

    if kinds["mpa_req"] < 1 or kinds["mpa_rep"] < 1:
        fail(f"no MPA Request/Reply decoded (saw {dict(kinds)})")
    # Default connections are plain iWARP: the iwarpx "Send with Immediate Data"
    # flag (0x01, docs/wire.md section 1.1) and the other reserved bits stay zero.
    mpa = [d for _, kind, d in events if kind in ("mpa_req", "mpa_rep")]
    if any("res" not in d for d in mpa):
        fail("tshark showed no Reserved flag bits for an MPA Request/Reply")
    if any(d["res"] & 0x0F for d in mpa):
        fail(f"MPA frames carry reserved flag bits: {[hex(d['res']) for d in mpa]}")
    if kinds["ddp_without_mpa"]:
        fail(f"{kinds['ddp_without_mpa']} DDP segments were not inside an MPA FPDU")
    if ops.get(0x3, 0) < 2 * args.iterations:
        fail(f"expected at least {2 * args.iterations} Send FPDUs, tshark decoded {ops.get(3, 0)}")
    if ops.get(0x0, 0) < 1:
        fail("no RDMA Write decoded (the MPA v2 RTR is a zero-length RDMA Write)")
    if None in ops:
        fail(f"{ops[None]} FPDUs without an RDMAP opcode")
    if crcs.get("bad", 0):
        fail(f"{crcs['bad']} FPDUs with Bad CRC32")
    if crc_on and crcs.get("good", 0) != len(fpdus):
        fail(f"not every FPDU has Good CRC32: {dict(crcs)}")
    if not crc_on and crcs.get("absent", 0) != len(fpdus):
        fail(f"FI_IWARPX_MPA_CRC=0, yet FPDUs carry a checked CRC: {dict(crcs)}")
    if errors:
        fail("tshark expert info reports errors:\n" + "\n".join(errors))
    print(f"pingpong wire check passed: {kinds['mpa_req']} MPA Request(s), {kinds['mpa_rep']} "
          f"Reply(s), {len(fpdus)} FPDUs ({ops.get(3, 0)} Send, {ops.get(0, 0)} RDMA Write), "
          f"CRC {dict(crcs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
