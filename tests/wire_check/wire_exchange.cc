// wire_exchange: a complete connected iWARP exchange built only from the
// project's wire codecs, carried by a real loopback TCP connection. The
// receiving side of every frame decodes it with the same codecs and checks it
// is what was sent, so the program is also an end-to-end test of the codecs
// over a real byte stream.
//
// Used by tshark_wire_check.py (the independent check with tshark's own iWARP
// dissectors) and by scripts/demo.sh. Protocol with its driver:
//   - prints "PORT <n>" (the listening port on 127.0.0.1) first;
//   - with --wait-go, waits for one line on stdin (the capture has started);
//   - connection 1: MPA v2 Request/Reply with CRC, the zero-length RDMA Write
//     RTR, Send, RDMA Write, Read Request and Response, Atomic Request and
//     Response, and a Terminate carrying the terminated DDP header;
//   - connection 2: MPA again, then a Send whose CRC is corrupted on purpose;
//     the receiver must detect it (kBadCrc) and answers with the LLP CRC-error
//     Terminate;
//   - prints "EXPECT mpa_req" / "EXPECT mpa_rep" / "EXPECT fpdu <opcode> good|bad"
//     for every frame in send order, and a human-readable transcript line.
// Exit status 0 when every frame was decoded as sent, 1 otherwise. Every
// socket operation has a 10 s timeout, so the program cannot hang.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/bytes.h"
#include "wire/error.h"
#include "wire/fpdu.h"
#include "wire/mpa.h"
#include "wire/mpa_negotiate.h"
#include "wire/rdmap.h"
#include "wire/rdmap_atomic.h"
#include "wire/terminate.h"

namespace iwarpx::wire {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::cerr << "wire_exchange: " << what << "\n";
  std::exit(1);
}

void Check(bool ok, const std::string& what) {
  if (!ok) Die(what);
}

template <class T, class E>
T Must(Result<T, E> r, const std::string& what) {
  if (!r.ok()) Die(what + ": " + ToString(r.error()));
  return std::move(r).value();
}

ByteSpan AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// One end of a TCP connection with bounded blocking I/O.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {
    const timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(fd_); }

  void WriteAll(ByteSpan bytes) const {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      Check(n > 0, std::string("send: ") + std::strerror(errno));
      bytes = bytes.subspan(static_cast<size_t>(n));
    }
  }
  void ReadExact(MutableByteSpan out) const {
    while (!out.empty()) {
      const ssize_t n = recv(fd_, out.data(), out.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      Check(n > 0, n == 0 ? "peer closed early" : std::string("recv: ") + std::strerror(errno));
      out = out.subspan(static_cast<size_t>(n));
    }
  }
  // Reads whatever is available (at least one byte).
  size_t ReadSome(MutableByteSpan out) const {
    for (;;) {
      const ssize_t n = recv(fd_, out.data(), out.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      Check(n > 0, n == 0 ? "peer closed early" : std::string("recv: ") + std::strerror(errno));
      return static_cast<size_t>(n);
    }
  }

 private:
  int fd_;
};

struct Listener {
  int fd = -1;
  uint16_t port = 0;
};

Listener Listen() {
  Listener l;
  l.fd = socket(AF_INET, SOCK_STREAM, 0);
  Check(l.fd >= 0, "socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Check(bind(l.fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0, "bind");
  Check(listen(l.fd, 4) == 0, "listen");
  socklen_t len = sizeof(a);
  Check(getsockname(l.fd, reinterpret_cast<sockaddr*>(&a), &len) == 0, "getsockname");
  l.port = ntohs(a.sin_port);
  return l;
}

int Connect(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  Check(fd >= 0, "socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  Check(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0, "connect");
  return fd;
}

void Say(const std::string& who, const std::string& what) {
  std::cout << who << ": " << what << "\n";
}
void Expect(const std::string& what) {
  std::cout << "EXPECT " << what << "\n";
}

// Sends an MPA frame and receives it on the other side with the incremental
// header-then-body read an engine would do.
MpaFrame SendMpa(const Socket& from, const Socket& to, const MpaFrame& frame,
                 std::vector<uint8_t>& rx_storage) {
  std::array<uint8_t, kMpaMaxFrameSize> tx{};
  const size_t n = Must(EncodeMpaFrame(frame, tx), "encode MPA frame");
  from.WriteAll(ByteSpan(tx.data(), n));
  rx_storage.assign(kMpaMaxFrameSize, 0);
  to.ReadExact(MutableByteSpan(rx_storage.data(), kMpaHeaderSize));
  const auto info = Must(DecodeMpaHeader(ByteSpan(rx_storage.data(), kMpaHeaderSize), frame.kind),
                         "decode MPA header");
  to.ReadExact(MutableByteSpan(rx_storage.data() + kMpaHeaderSize, info.pd_length));
  const auto decoded = Must(
      DecodeMpaFrame(ByteSpan(rx_storage.data(), info.frame_length), frame.kind), "decode MPA");
  Check(decoded.consumed == n, "MPA frame length mismatch");
  return decoded.frame;
}

// Collects the ULPDUs the stream parser delivers.
class Collector : public FpduVisitor {
 public:
  void OnFpdu(ByteSpan ulpdu) override { ulpdus.emplace_back(ulpdu.begin(), ulpdu.end()); }
  void OnError(WireError e) override { error = e; }
  std::vector<std::vector<uint8_t>> ulpdus;
  std::optional<WireError> error;
};

// One direction of an FPDU stream: frames on send, parses on receive.
class Direction {
 public:
  Direction(const Socket& from, const Socket& to, bool crc, std::string name)
      : from_(from), to_(to), crc_(crc), name_(std::move(name)), parser_(FpduRxConfig{crc}) {}

  // Frames `header + payload` as one FPDU (gathered like sendmsg would, then
  // written), optionally corrupting its CRC, and returns what the other side
  // decoded (or the parser's error).
  Result<Segment, WireError> Send(ByteSpan header, ByteSpan payload, bool corrupt_crc = false) {
    const std::array<ByteSpan, 2> parts{header, payload};
    const FpduFraming framing = Must(FrameFpdu(parts, crc_), "frame FPDU");
    std::vector<uint8_t> wire;
    for (ByteSpan p : {framing.prefix(), header, payload, framing.trailer()}) {
      wire.insert(wire.end(), p.begin(), p.end());
    }
    if (corrupt_crc) wire.back() ^= 0x5a;
    from_.WriteAll(wire);
    return Receive();
  }

 private:
  Result<Segment, WireError> Receive() {
    std::array<uint8_t, 4096> buf{};
    while (collector_.ulpdus.empty() && !collector_.error) {
      parser_.Feed(ByteSpan(buf.data(), to_.ReadSome(buf)), collector_);
    }
    if (collector_.error) return Err{*collector_.error};
    last_ = std::move(collector_.ulpdus.front());
    collector_.ulpdus.erase(collector_.ulpdus.begin());
    return ParseSegment(last_);
  }

  const Socket& from_;
  const Socket& to_;
  bool crc_;
  std::string name_;
  FpduStreamParser parser_;
  Collector collector_;
  std::vector<uint8_t> last_;
};

std::string OpName(RdmapOpcode op) {
  return GetOpcodeInfo(op).name;
}

void ExpectSegment(const Result<Segment, WireError>& got, RdmapOpcode op, ByteSpan payload,
                   const std::string& what) {
  if (!got.ok()) Die(what + ": receiver could not decode it: " + ToString(got.error()));
  Check(got->opcode == op, what + ": wrong opcode decoded");
  Check(got->payload.size() == payload.size() &&
            std::equal(payload.begin(), payload.end(), got->payload.begin()),
        what + ": payload differs");
}

struct Connection {
  Socket client;
  Socket server;
  MpaOutcome client_outcome;
  MpaOutcome server_outcome;
};

// MPA v2 negotiation with CRC: the initiator's Request, the responder's Reply.
void Negotiate(Connection& c) {
  const MpaPolicy policy;  // rev 2, CRC, P2P, Write|Read RTR, IRD/ORD 16
  std::vector<uint8_t> rx;
  const MpaFrame req = Must(MakeMpaRequest(policy, AsBytes("iwarpx wire check")), "request");
  const MpaFrame got_req = SendMpa(c.client, c.server, req, rx);
  Expect("mpa_req");
  Say("client -> server", "MPA Request rev " + std::to_string(got_req.revision) +
                              (got_req.crc ? " CRC" : "") +
                              (got_req.ird_ord && got_req.ird_ord->p2p ? " P2P" : ""));
  const MpaResponse resp =
      Must(RespondToMpaRequest(policy, got_req, AsBytes("welcome")), "respond");
  Check(resp.accepted, std::string("responder rejected: ") + ToString(resp.reason));
  c.server_outcome = resp.outcome;
  std::vector<uint8_t> rx2;
  const MpaFrame got_rep = SendMpa(c.server, c.client, resp.reply, rx2);
  Expect("mpa_rep");
  c.client_outcome = Must(ProcessMpaReply(policy, got_rep), "process reply");
  Check(c.client_outcome.crc && c.server_outcome.crc, "CRC was not negotiated");
  Check(c.client_outcome.send_rtr && c.client_outcome.rtr == MpaRtr::kWrite,
        "expected the zero-length RDMA Write RTR");
  Say("server -> client", "MPA Reply rev " + std::to_string(got_rep.revision) +
                              " accepted, CRC on, RTR = zero-length RDMA Write");
}

Connection Open(const Listener& l) {
  const int cfd = Connect(l.port);
  const int sfd = accept(l.fd, nullptr, nullptr);
  Check(sfd >= 0, "accept");
  return Connection{Socket(cfd), Socket(sfd), {}, {}};
}

void GoodExchange(const Listener& l) {
  Connection c = Open(l);
  Negotiate(c);
  Direction c2s(c.client, c.server, true, "client -> server");
  Direction s2c(c.server, c.client, true, "server -> client");
  std::array<uint8_t, 128> hdr{};
  auto header = [&](Result<size_t, WireError> r) {
    return ByteSpan(hdr.data(), Must(std::move(r), "encode header"));
  };
  auto fpdu = [&](Direction& d, const std::string& who, ByteSpan h, ByteSpan payload,
                  RdmapOpcode op, const std::string& detail) {
    ExpectSegment(d.Send(h, payload), op, payload, detail);
    Expect("fpdu " + std::to_string(static_cast<int>(op)) + " good");
    Say(who, OpName(op) + " " + detail);
  };

  // RTR: zero-length RDMA Write; STag 1 / TO 0 as Linux siw sends (never validated).
  fpdu(c2s, "client -> server", header(EncodeWriteHeader(1, 0, true, hdr)), {},
       RdmapOpcode::kRdmaWrite, "(zero-length RTR)");

  const std::string hello = "hello over iWARP";
  fpdu(c2s, "client -> server", header(EncodeSendHeader(SendParams{}, hdr)), AsBytes(hello),
       RdmapOpcode::kSend, "MSN 1, " + std::to_string(hello.size()) + " bytes");

  std::vector<uint8_t> block(64);
  for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<uint8_t>(i * 7);
  fpdu(c2s, "client -> server", header(EncodeWriteHeader(0x00c0ffee, 0x10000, true, hdr)), block,
       RdmapOpcode::kRdmaWrite, "STag 0x00c0ffee TO 0x10000, 64 bytes");

  const ReadRequestBody rr{0x0000beef, 0x2000, 32, 0x00c0ffee, 0x10000};
  auto got_rr = c2s.Send(header(EncodeReadRequest(1, rr, hdr)), {});
  ExpectSegment(got_rr, RdmapOpcode::kRdmaReadRequest, {}, "Read Request");
  Check(std::get<ReadRequestBody>(got_rr->body) == rr, "Read Request body differs");
  Expect("fpdu 1 good");
  Say("client -> server", "RDMA Read Request sink 0xbeef/0x2000 <- source 0xc0ffee/0x10000, 32 B");

  AtomicRequestBody ar;
  ar.op = AtomicOp::kFetchAdd;
  ar.request_id = 7;
  ar.remote_stag = 0x00c0ffee;
  ar.remote_to = 0x10040;
  ar.add_or_swap_data = 5;
  ar.add_or_swap_mask = ~0ULL;
  auto got_ar = c2s.Send(header(EncodeAtomicRequest(2, ar, hdr)), {});
  ExpectSegment(got_ar, RdmapOpcode::kAtomicRequest, {}, "Atomic Request");
  Check(std::get<AtomicRequestBody>(got_ar->body) == ar, "Atomic Request body differs");
  Expect("fpdu 10 good");
  Say("client -> server", "Atomic Request FetchAdd +5 at 0xc0ffee/0x10040 (id 7)");

  fpdu(s2c, "server -> client",
       header(EncodeReadResponseHeader(rr.sink_stag, rr.sink_to, true, hdr)),
       ByteSpan(block.data(), rr.read_size), RdmapOpcode::kRdmaReadResponse,
       "to sink 0xbeef/0x2000, 32 bytes");

  const AtomicResponseBody aresp{7, 42};
  auto got_aresp = s2c.Send(header(EncodeAtomicResponse(1, aresp, hdr)), {});
  ExpectSegment(got_aresp, RdmapOpcode::kAtomicResponse, {}, "Atomic Response");
  Check(std::get<AtomicResponseBody>(got_aresp->body) == aresp, "Atomic Response body differs");
  Expect("fpdu 11 good");
  Say("server -> client", "Atomic Response id 7, original value 42");

  // A Terminate that carries the offending segment's DDP header (D flag).
  std::array<uint8_t, 32> offending{};
  const size_t off_len = Must(EncodeSendHeader(SendParams{.msn = 9}, offending), "offending");
  const TerminateHeader th =
      MakeTerminate(term::kDdpUntaggedMsnRange, ByteSpan(offending.data(), off_len));
  auto got_term = s2c.Send(header(EncodeTerminateSegment(1, th, hdr)), {});
  ExpectSegment(got_term, RdmapOpcode::kTerminate, {}, "Terminate");
  const auto decoded_th =
      Must(DecodeTerminate(std::get<TerminateBodyView>(got_term->body).bytes), "decode Terminate");
  Check(decoded_th.cause == term::kDdpUntaggedMsnRange && decoded_th.d, "Terminate differs");
  Expect("fpdu 7 good");
  Say("server -> client", "Terminate DDP/untagged/0x03 (MSN out of range), with DDP header");
}

void CorruptExchange(const Listener& l) {
  Connection c = Open(l);
  Negotiate(c);
  Direction c2s(c.client, c.server, true, "client -> server");
  Direction s2c(c.server, c.client, true, "server -> client");
  std::array<uint8_t, 128> hdr{};
  // The initiator's first FPDU is always the negotiated RTR (RFC 6581).
  const size_t rtr = Must(EncodeWriteHeader(1, 0, true, hdr), "RTR header");
  ExpectSegment(c2s.Send(ByteSpan(hdr.data(), rtr), {}), RdmapOpcode::kRdmaWrite, {}, "RTR");
  Expect("fpdu 0 good");
  Say("client -> server", "RDMA Write (zero-length RTR)");
  const size_t n = Must(EncodeSendHeader(SendParams{}, hdr), "send header");
  auto got = c2s.Send(ByteSpan(hdr.data(), n), AsBytes("this CRC will be wrong"), true);
  Check(!got.ok() && got.error() == WireError::kBadCrc, "corrupted CRC was not detected");
  Expect("fpdu 3 bad");
  Say("client -> server", "Send with a deliberately corrupted CRC: receiver reports bad CRC");
  const TermCause cause = TerminateCauseFor(WireError::kBadCrc);
  const size_t tn = Must(EncodeTerminateSegment(1, MakeTerminate(cause), hdr), "terminate");
  auto got_term = s2c.Send(ByteSpan(hdr.data(), tn), {});
  ExpectSegment(got_term, RdmapOpcode::kTerminate, {}, "CRC Terminate");
  Expect("fpdu 7 good");
  Say("server -> client", "Terminate LLP/MPA/0x02 (CRC error), then close");
}

}  // namespace
}  // namespace iwarpx::wire

int main(int argc, char** argv) {
  using namespace iwarpx::wire;
  const bool wait_go = argc > 1 && std::string_view(argv[1]) == "--wait-go";
  const Listener l = Listen();
  std::cout << "PORT " << l.port << std::endl;
  if (wait_go) {
    std::string line;
    if (!std::getline(std::cin, line)) Die("no go line on stdin");
  }
  GoodExchange(l);
  CorruptExchange(l);
  close(l.fd);
  std::cout << std::flush;
  return 0;
}
