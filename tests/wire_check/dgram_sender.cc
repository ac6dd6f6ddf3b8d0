// dgram_sender: sends a fixed set of datagram-iWARP datagrams (wire/dgram.h)
// over UDP to 127.0.0.1:<port>, for the tshark check of the Lua dissector
// tools/wireshark/iwarpx_dgram.lua (see docs/wire.md, "Checking with tshark").
//
// Usage: dgram_sender PORT [--bad-crc]
// Sends, in order: a UD Send ("hello", CRC on, copied with EncodeDgram); an
// RD RDMA Write segment with a piggybacked ack/SACK, SYN and ack request
// (gather-sent with FrameDgram + sendmsg); an RD RDMA Read Request; an RD
// ack; an RD PROBE; an RD RESET with CRC off; and with --bad-crc a UD Send
// whose CRC is corrupted. Exits 0 if every datagram was sent.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "testing/hex.h"
#include "wire/dgram.h"

namespace {

using iwarpx::ByteSpan;
using iwarpx::testing::FromHex;
using namespace iwarpx::wire;  // NOLINT(google-build-using-namespace): a small tool

constexpr uint32_t kSessionA = 0xA1B2C3D4;
constexpr uint32_t kSessionB = 0x01020304;

bool SendBytes(int fd, const sockaddr_in& to, ByteSpan bytes) {
  const ssize_t n =
      sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof(to));
  return n == static_cast<ssize_t>(bytes.size());
}

bool SendEncoded(int fd, const sockaddr_in& to, const DgramHeader& h, ByteSpan ulpdu, bool crc_on,
                 bool corrupt_crc = false) {
  std::vector<uint8_t> out(kDgramMaxSize);
  const std::array<ByteSpan, 1> parts{ulpdu};
  const auto n = EncodeDgram(h, parts, crc_on, out);
  if (!n.ok()) {
    std::fprintf(stderr, "encode failed: %s\n", ToString(n.error()));
    return false;
  }
  out.resize(n.value());
  if (corrupt_crc) out.back() ^= 0xFF;
  return SendBytes(fd, to, out);
}

// Gather send: header and trailer from FrameDgram, the ULPDU parts in place.
bool SendGathered(int fd, const sockaddr_in& to, const DgramHeader& h,
                  const std::vector<ByteSpan>& parts, bool crc_on) {
  const auto f = FrameDgram(h, parts, crc_on);
  if (!f.ok()) {
    std::fprintf(stderr, "framing failed: %s\n", ToString(f.error()));
    return false;
  }
  std::vector<iovec> iov;
  auto add = [&](ByteSpan s) { iov.push_back(iovec{const_cast<uint8_t*>(s.data()), s.size()}); };
  add(f.value().HeaderBytes());
  for (ByteSpan part : parts) add(part);
  add(f.value().TrailerBytes());
  msghdr msg{};
  msg.msg_name = const_cast<sockaddr_in*>(&to);
  msg.msg_namelen = sizeof(to);
  msg.msg_iov = iov.data();
  msg.msg_iovlen = iov.size();
  return sendmsg(fd, &msg, 0) == static_cast<ssize_t>(f.value().datagram_size);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PORT [--bad-crc]\n", argv[0]);
    return 2;
  }
  const long port = std::strtol(argv[1], nullptr, 10);
  if (port <= 0 || port > 65535) {
    std::fprintf(stderr, "bad port %s\n", argv[1]);
    return 2;
  }
  const bool bad_crc = argc > 2 && std::strcmp(argv[2], "--bad-crc") == 0;

  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    std::perror("socket");
    return 1;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

  // RFC 5041/5040 segments, written out by hand.
  const std::vector<uint8_t> send_hello =
      FromHex("4143 00000000 00000000 00000001 00000000 68656c6c6f");  // Send, MSN 1
  const std::vector<uint8_t> write_hdr =
      FromHex("c140 12345678 0000000000001000");  // RDMA Write, L=1
  const std::vector<uint8_t> write_payload = FromHex("0001020304050607 08090a0b0c0d0e0f");
  const std::vector<uint8_t> read_request = FromHex(
      "4141 00000000 00000001 00000001 00000000"  // QN 1, MSN 1
      " 11111111 0000000000002000 00001000 22222222 0000000000003000");

  bool ok = true;

  DgramHeader ud;
  ud.type = DgramType::kUdData;
  ud.dst_qpn = 7;
  ud.src_qpn = 3;
  ok &= SendEncoded(fd, to, ud, send_hello, true);

  DgramHeader rd;
  rd.type = DgramType::kRdData;
  rd.has_ack = rd.has_sack = rd.syn = rd.ack_request = true;
  rd.credits = 64;
  rd.dst_qpn = 0x11;
  rd.src_qpn = 0x22;
  rd.session = kSessionA;
  rd.echo_session = kSessionB;
  rd.seq = 5;
  rd.ack = 9;
  rd.sack = 0x5;
  ok &= SendGathered(fd, to, rd, {ByteSpan(write_hdr), ByteSpan(write_payload)}, true);

  DgramHeader rr = rd;
  rr.has_sack = rr.syn = rr.ack_request = false;
  rr.sack = 0;
  rr.seq = 6;
  ok &= SendEncoded(fd, to, rr, read_request, true);

  DgramHeader ack;
  ack.type = DgramType::kRdAck;
  ack.has_ack = ack.has_sack = true;
  ack.credits = 32;
  ack.dst_qpn = 0x22;
  ack.src_qpn = 0x11;
  ack.session = kSessionB;
  ack.echo_session = kSessionA;
  ack.seq = 0;
  ack.ack = 6;
  ack.sack = 0x1;
  ok &= SendEncoded(fd, to, ack, {}, true);

  DgramHeader probe;
  probe.type = DgramType::kRdControl;
  probe.ctrl_op = DgramControlOp::kProbe;
  probe.dst_qpn = 0x11;
  probe.src_qpn = 0x22;
  probe.session = kSessionA;
  probe.seq = 7;
  ok &= SendEncoded(fd, to, probe, {}, true);

  DgramHeader reset;
  reset.type = DgramType::kRdControl;
  reset.ctrl_op = DgramControlOp::kReset;
  reset.dst_qpn = 0x22;
  reset.src_qpn = 0x11;
  reset.session = kSessionB;
  reset.echo_session = 0xDEADBEEF;
  ok &= SendEncoded(fd, to, reset, {}, false);

  if (bad_crc) ok &= SendEncoded(fd, to, ud, send_hello, true, /*corrupt_crc=*/true);

  close(fd);
  if (!ok) {
    std::fprintf(stderr, "a datagram could not be built or sent\n");
    return 1;
  }
  return 0;
}
