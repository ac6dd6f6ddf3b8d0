#!/usr/bin/python3
"""Traffic for netns_selftest.sh: a TCP echo pair and a counting UDP echo pair.

  tcp-server PORT             accept one connection, echo one message prefixed "echo:", exit
  tcp-client ADDR PORT        send a message, exit 0 when the echo is right
  udp-echo PORT SECONDS       echo every datagram until TERM or SECONDS; then print one JSON
                              line {"received", "sent"}
  udp-client ADDR PORT COUNT  send COUNT numbered datagrams in batches, collect the echoes;
                              print one JSON line {"sent", "echoed", "duplicates", "alien"}

Servers print READY once they listen. Every blocking call has a timeout, so nothing here can
hang past its bound. Only the standard library, so Debian's /usr/bin/python3 runs it.
"""

import json
import signal
import socket
import struct
import sys
import time

MESSAGE = b"iwarpx-netns-selftest"
BATCH = 100        # datagrams in flight at most: far below the receive buffers below
BATCH_IDLE = 0.05  # seconds without an echo that end a batch (the rest counts as lost)
FINAL_IDLE = 1.0   # the last batch waits longer for echoes of a slow (descheduled) server
RCVBUF = 4 << 20
DATAGRAM = 64


def big_rcvbuf(sock):
    # SO_RCVBUFFORCE ignores net.core.rmem_max (root); SO_RCVBUF is the fallback.
    force = getattr(socket, "SO_RCVBUFFORCE", 33)
    try:
        sock.setsockopt(socket.SOL_SOCKET, force, RCVBUF)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)


def tcp_server(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", port))
        srv.listen(1)
        srv.settimeout(20)
        print("READY", flush=True)
        conn, peer = srv.accept()
        with conn:
            conn.settimeout(10)
            data = conn.recv(256)
            conn.sendall(b"echo:" + data)
        print(f"served {peer[0]}", flush=True)
    return 0


def tcp_client(addr, port):
    with socket.create_connection((addr, port), timeout=5) as conn:
        conn.sendall(MESSAGE)
        got = b""
        while len(got) < len(MESSAGE) + 5:
            chunk = conn.recv(256)
            if not chunk:
                break
            got += chunk
    if got != b"echo:" + MESSAGE:
        print(f"tcp-client: unexpected reply {got!r}", file=sys.stderr)
        return 1
    return 0


def udp_echo(port, seconds):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    received = sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        big_rcvbuf(sock)
        sock.bind(("0.0.0.0", port))
        sock.settimeout(0.1)
        print("READY", flush=True)
        end = time.monotonic() + seconds
        while not stop and time.monotonic() < end:
            try:
                data, peer = sock.recvfrom(2048)
            except socket.timeout:
                continue
            received += 1
            sock.sendto(data, peer)
            sent += 1
    print(json.dumps({"received": received, "sent": sent}), flush=True)
    return 0


def udp_client(addr, port, count):
    echoed = set()
    duplicates = alien = sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        big_rcvbuf(sock)
        sock.connect((addr, port))

        def drain(idle):
            nonlocal duplicates, alien
            sock.settimeout(idle)
            while len(echoed) < sent:
                try:
                    data = sock.recv(2048)
                except socket.timeout:
                    return
                if len(data) != DATAGRAM:
                    alien += 1
                    continue
                seq = struct.unpack_from("!I", data)[0]
                if seq >= count:
                    alien += 1
                elif seq in echoed:
                    duplicates += 1
                else:
                    echoed.add(seq)

        for base in range(0, count, BATCH):
            for seq in range(base, min(base + BATCH, count)):
                sock.send(struct.pack("!I", seq).ljust(DATAGRAM, b"."))
                sent += 1
            drain(BATCH_IDLE)
        drain(FINAL_IDLE)
    print(json.dumps({"sent": sent, "echoed": len(echoed), "duplicates": duplicates,
                      "alien": alien}), flush=True)
    return 0


def main(argv):
    usage = __doc__.split("\n\n")[1]
    try:
        mode = argv[1]
        if mode == "tcp-server":
            return tcp_server(int(argv[2]))
        if mode == "tcp-client":
            return tcp_client(argv[2], int(argv[3]))
        if mode == "udp-echo":
            return udp_echo(int(argv[2]), float(argv[3]))
        if mode == "udp-client":
            return udp_client(argv[2], int(argv[3]), int(argv[4]))
    except (IndexError, ValueError):
        pass
    print("usage:\n" + usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
