#!/usr/bin/env python3
"""iWARP over SCTP judged by tshark: Debian's fi_pingpong runs over iwarpx
FI_EP_MSG with FI_IWARPX_LLP=sctp (usrsctp: SCTP in UDP, RFC 6951) on loopback
under a capture, and tshark decodes the UDP payloads as SCTP
(-d udp.port==P,sctp). tools/wireshark/iwarpx_sctp.lua hands PPID 16 to
tshark's own iwarp_ddp_rdmap dissector and shows PPID 17 as iwarpx reads it.

Checked for the association of the run (docs/wire.md §2, §2.0):
  * INIT and INIT-ACK carry the Adaptation Layer Indication with code point 1;
  * every DATA chunk has PPID 16 or 17, stream 0, ordered (the defaults);
  * PPID 17: exactly the Initiate (from the INIT's sender) then the Accept,
    each before any DDP segment of its sender, PD Length = what follows;
  * every PPID-16 message (reassembled when fragmented) is one DDP segment:
    tshark's dissector decodes it, and per direction and MSN the segments'
    MO and length tile the Send exactly (MO 0 .. size, L on the last), so a
    second segment packed into one message would leave a hole;
  * at least 2 * iterations Sends of the requested size (fi_pingpong also
    sends a few short messages of its own); no expert errors.

Processes started here (tshark, the fi_pingpong server and client) are the
only ones stopped, by their handles; every wait is bounded.
Exit status: 0 pass, 1 fail (saying what differed). --demo prints the decode.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from tshark_capture import CaptureError, TsharkCapture, free_tcp_port
from tshark_pingpong_check import run_pingpong

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LUA = os.path.join(HERE, "..", "..", "tools", "wireshark", "iwarpx_sctp.lua")
DDP_UNTAGGED_HEADER = 18  # DDP untagged header (14) + RDMAP Send header (4)


def fail(msg):
    print(f"sctp wire check FAILED: {msg}", file=sys.stderr)
    sys.exit(1)



def udp_ports(pcap):
    res = subprocess.run(["tshark", "-r", pcap, "-T", "fields", "-e", "udp.srcport",
                          "-e", "udp.dstport"], capture_output=True, text=True, timeout=120)
    ports = collections.Counter()
    for line in res.stdout.splitlines():
        for p in line.split():
            ports[p] += 1
    # Every UDP port of the capture is decoded as SCTP (it sees all UDP on lo); only
    # associations that start with an INIT are judged.
    return sorted(ports)


def field(proto, name):
    f = proto.find(f".//field[@name='{name}']")
    return None if f is None else f.get("show")


def decode(pcap, lua, ports):
    """One record per SCTP packet: udp ports, chunk types, INIT adaptation
    indications, and per DATA chunk its PPID, stream, U bit, message length
    and what the PPID's dissector found (ddp / session fields)."""
    args = ["tshark", "-r", pcap, "-X", f"lua_script:{lua}", "-o", "sctp.reassembly:TRUE",
            "-Y", "sctp", "-T", "pdml"]
    for p in ports:
        args += ["-d", f"udp.port=={p},sctp"]
    res = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise CaptureError(f"tshark -r failed: {res.stderr[-800:]}")
    packets = []
    for pkt in ET.fromstring(res.stdout).iter("packet"):
        rec = {"frame": None, "ports": None, "chunk_types": [], "adaptation": [], "data": []}
        chunk = None
        for proto in pkt.findall("proto"):
            name = proto.get("name")
            if name == "geninfo":
                rec["frame"] = int(field(proto, "num"))
            elif name == "udp":
                rec["ports"] = (field(proto, "udp.srcport"), field(proto, "udp.dstport"))
            elif name == "sctp":
                rec["chunk_types"] += [int(f.get("show")) for f in
                                       proto.iter("field") if f.get("name") == "sctp.chunk_type"]
                rec["adaptation"] += [int(f.get("show"), 0) for f in proto.iter("field")
                                      if f.get("name") == "sctp.adaptation_layer_indication"]
                # The DATA chunk of this tree (tshark starts one sctp tree per DATA
                # chunk whose payload it hands on): the container whose chunk type is 0.
                data = [c for c in proto.findall("field")
                        if c.find("field[@name='sctp.chunk_type']") is not None
                        and c.find("field[@name='sctp.chunk_type']").get("show") == "0"]
                if not data:
                    continue
                c = data[-1]
                frags = proto.find(".//field[@name='sctp.fragments']")
                if frags is not None:
                    m = re.search(r"\((\d+) bytes", frags.get("showname", ""))
                    length = int(m.group(1)) if m else None
                elif field(c, "sctp.data_e_bit") == "1" and field(c, "sctp.data_b_bit") == "1":
                    length = int(field(c, "sctp.chunk_length")) - 16
                else:
                    continue  # a fragment; the message is judged where it is reassembled
                chunk = {"ppid": int(field(c, "sctp.data_payload_proto_id")),
                         "sid": int(field(c, "sctp.data_sid"), 0),
                         "u": field(c, "sctp.data_u_bit") == "1", "len": length}
                rec["data"].append(chunk)
            elif name == "iwarp_ddp_rdmap" and chunk is not None:
                chunk["ddp"] = {k: field(proto, f) for k, f in
                                (("last", "iwarp_ddp.last_flag"), ("tagged", "iwarp_ddp.tagged_flag"),
                                 ("qn", "iwarp_ddp.qn"), ("msn", "iwarp_ddp.msn"),
                                 ("mo", "iwarp_ddp.mo"), ("op", "iwarp_rdma.opcode"))}
            elif name == "iwarpx_sctp_session" and chunk is not None:
                chunk["session"] = {"function": int(field(proto, "iwarpx_sctp_session.function")),
                                    "pd_length": int(field(proto,
                                                           "iwarpx_sctp_session.pd_length"))}
        packets.append(rec)
    return packets


def expert_errors(pcap, lua, ports, pair):
    """tshark's error-severity expert entries for the packets of one association."""
    args = ["tshark", "-r", pcap, "-X", f"lua_script:{lua}", "-o", "sctp.reassembly:TRUE", "-q",
            "-z", f"expert,error,udp.port=={pair[0]} && udp.port=={pair[1]}"]
    for p in ports:
        args += ["-d", f"udp.port=={p},sctp"]
    res = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise CaptureError(f"tshark -z expert failed: {res.stderr[-800:]}")
    return [l for l in res.stdout.splitlines()
            if re.match(r"\s*\d+\s+\w", l) and ("sctp" in l.lower() or "iwarp" in l.lower())]


def associations(packets):
    """Packets grouped by UDP port pair, only the pairs that start with an INIT."""
    groups = collections.defaultdict(list)
    for rec in packets:
        if rec["ports"] is not None:
            groups[tuple(sorted(rec["ports"]))].append(rec)
    return {k: v for k, v in groups.items() if any(1 in r["chunk_types"] for r in v)}


def judge(recs, size, iterations):
    """Problems found in one association's packets (empty: conformant)."""
    problems = []
    init = next(r for r in recs if 1 in r["chunk_types"])
    initiator = init["ports"][0]
    init_ack = [r for r in recs if 2 in r["chunk_types"]]
    if init["adaptation"] != [1]:
        problems.append(f"INIT adaptation indication {init['adaptation']}, want [1]")
    if not init_ack or init_ack[0]["adaptation"] != [1]:
        problems.append(f"INIT-ACK adaptation indication "
                        f"{init_ack[0]['adaptation'] if init_ack else 'missing'}, want [1]")
    session = []  # (sender, function, pd_length, len)
    ddp_seen = set()  # senders that sent a DDP segment already
    tiles = collections.defaultdict(list)  # (sender, msn) -> [(mo, payload, last)]
    sends = 0
    for r in recs:
        sender = r["ports"][0]
        for c in r["data"]:
            if c["ppid"] not in (16, 17):
                problems.append(f"frame {r['frame']}: PPID {c['ppid']}")
                continue
            if c["sid"] != 0 or c["u"]:
                problems.append(f"frame {r['frame']}: stream {c['sid']} unordered {c['u']}")
            if c["ppid"] == 17:
                s = c.get("session")
                if s is None:
                    problems.append(f"frame {r['frame']}: PPID 17 not decoded")
                    continue
                if sender in ddp_seen:
                    problems.append(f"frame {r['frame']}: session message after a DDP segment")
                if s["pd_length"] != c["len"] - 4:
                    problems.append(f"frame {r['frame']}: PD Length {s['pd_length']} in a "
                                    f"{c['len']}-byte message")
                session.append((sender, s["function"]))
                continue
            d = c.get("ddp")
            if d is None or d["op"] is None:
                problems.append(f"frame {r['frame']}: PPID-16 message not decoded as DDP/RDMAP")
                continue
            ddp_seen.add(sender)
            if d["tagged"] == "0" and int(d["op"], 0) == 0x3:
                tiles[(sender, int(d["msn"]))].append(
                    (int(d["mo"]), c["len"] - DDP_UNTAGGED_HEADER, d["last"] == "1"))
    # Another job's association may have one UDP port at both ends.
    responder = next((p for p in init["ports"] if p != initiator), initiator)
    want = [(initiator, 5), (responder, 6)]
    if session != want:
        problems.append(f"session messages {session}, want Enhanced Initiate then Accept {want}")
    for (sender, msn), segs in sorted(tiles.items()):
        segs.sort()
        at = 0
        for i, (mo, payload, last) in enumerate(segs):
            if mo != at or last != (i == len(segs) - 1):
                problems.append(f"Send MSN {msn} from {sender}: segments {segs} do not tile it")
                break
            at += payload
        else:
            # fi_pingpong's own short messages (its 4-byte finish) tile too.
            sends += at == size
    if sends < 2 * iterations:
        problems.append(f"{sends} whole Sends of {size} B decoded, want at least {2 * iterations}")
    return problems, session, sends, sum(len(v) for v in tiles.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pingpong", default=shutil.which("fi_pingpong"))
    ap.add_argument("--provider-dir", required=True, help="directory of libiwarpx-fi.so")
    ap.add_argument("--lua", default=DEFAULT_LUA)
    ap.add_argument("--size", type=int, default=64, help="fi_pingpong -S (default 64)")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--demo", action="store_true", help="print tshark's decode")
    args = ap.parse_args()
    if args.pingpong is None or shutil.which("tshark") is None:
        fail("fi_pingpong (libfabric-bin) and tshark are needed: run ./autogen.sh as root")
    if os.geteuid() != 0:
        fail("capturing on lo needs root (or dumpcap capabilities)")
    env = dict(os.environ, FI_PROVIDER_PATH=args.provider_dir, FI_IWARPX_LLP="sctp",
               FI_IWARPX_SCTP_BACKEND="usrsctp")
    env.pop("FI_PROVIDER", None)
    port = free_tcp_port()
    with tempfile.TemporaryDirectory(prefix="iwarpx-sctp-") as tmp:
        pcap = os.path.join(tmp, "sctp.pcapng")
        try:
            # All UDP on lo: usrsctp's encapsulation ports are chosen at run time.
            with TsharkCapture("udp", pcap):
                run_pingpong(args.pingpong, port, str(args.size), args.iterations, env)
            ports = udp_ports(pcap)
            packets = decode(pcap, args.lua, ports)
            assocs = associations(packets)
            judged = {k: judge(v, args.size, args.iterations) for k, v in assocs.items()}
            # Ours: the associations with DDP session messages (PPID 17).
            # Another job's SCTP traffic on lo may be in the capture too; it is not judged.
            ours = {k: j for k, j in judged.items() if j[1]}
            experts = {k: expert_errors(pcap, args.lua, ports, k) for k in ours}
        except CaptureError as e:
            fail(str(e))
    if args.demo:
        for k, (problems, session, sends, segments) in ours.items():
            print(f"association on UDP ports {k[0]} <-> {k[1]}: session {session}, "
                  f"{segments} DDP segments, {sends} whole Sends, problems: {problems or 'none'}")
    if not ours:
        fail(f"no iWARP/SCTP association found among {len(assocs)} SCTP associations "
             f"({len(packets)} SCTP packets decoded)")
    for k, (problems, _, _, _) in ours.items():
        if problems:
            fail(f"association {k}:\n  " + "\n  ".join(problems[:20]))
    for k, errors in experts.items():
        if errors:
            fail(f"tshark expert info reports errors on {k}:\n" + "\n".join(errors))
    for k, (_, session, sends, segments) in ours.items():
        print(f"sctp wire check passed: UDP {k[0]} <-> {k[1]}, adaptation indication 1 both "
              f"ways, session {session}, {segments} DDP segments in as many SCTP messages "
              f"(PPID 16, stream 0, ordered), {sends} Sends of {args.size} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
