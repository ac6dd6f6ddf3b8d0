// Test-only helpers for the qp layer tests (qp/*_test.cc): a recording CompletionSink, a
// connected pair of QueuePairs over testing::FakeConnection with a
// deterministic pump, and a raw peer that writes and reads FPDUs by hand.
// Never linked into the provider (header-only, included by *_test.cc).
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "base/random.h"
#include "mem/stag_table.h"
#include "qp/completion_sink.h"
#include "qp/queue_pair.h"
#include "testing/fake_connection.h"
#include "testing/fpdu_recorder.h"
#include "wire/fpdu.h"
#include "wire/mpa.h"
#include "wire/mpa_negotiate.h"
#include "wire/rdmap.h"

namespace iwarpx::qp::test {

using ::iwarpx::testing::Bytes;
using ::iwarpx::testing::FakeConnection;

struct Completion {
  enum class Kind : uint8_t { kSend, kRecv, kRdma, kError } kind = Kind::kSend;
  uint64_t context = 0;
  size_t bytes = 0;
  WcOp op = WcOp::kSend;
  WcError error{};
  RecvInfo recv{};
};

class RecordingSink final : public CompletionSink {
 public:
  void OnSendComplete(uint64_t context) override {
    completions.push_back({Completion::Kind::kSend, context, 0, WcOp::kSend, {}});
  }
  void OnRecvComplete(uint64_t context, size_t bytes, const RecvInfo& info) override {
    completions.push_back({Completion::Kind::kRecv, context, bytes, WcOp::kRecv, {}, info});
  }
  void OnRdmaComplete(uint64_t context, WcOp op) override {
    completions.push_back({Completion::Kind::kRdma, context, 0, op, {}});
  }
  void OnError(uint64_t context, WcOp op, const WcError& error) override {
    completions.push_back({Completion::Kind::kError, context, 0, op, error});
  }
  void OnEstablished() override { ++established; }
  // (stag, completions recorded before it): the placement report's position.
  void OnRemoteWrite(uint32_t stag) override {
    remote_writes.emplace_back(stag, completions.size());
    if (on_remote_write) on_remote_write(stag);
  }
  void OnTerminated(wire::TermCause cause, TermOrigin origin) override {
    ++terminated;
    term_cause = cause;
    term_origin = origin;
  }

  [[nodiscard]] size_t Count(Completion::Kind k) const {
    size_t n = 0;
    for (const auto& c : completions) n += c.kind == k ? 1 : 0;
    return n;
  }

  std::vector<Completion> completions;
  std::vector<std::pair<uint32_t, size_t>> remote_writes;
  std::function<void(uint32_t)> on_remote_write;
  int established = 0;
  int terminated = 0;
  wire::TermCause term_cause{};
  TermOrigin term_origin = TermOrigin::kConnectionLost;
};

inline wire::MpaOutcome MakeOutcome(wire::MpaRole role, bool crc, uint16_t ird, uint16_t ord) {
  wire::MpaOutcome o;
  o.role = role;
  o.revision = 2;
  o.enhanced = true;
  o.crc = crc;
  o.ird = ird;
  o.ord = ord;
  o.p2p = true;
  o.rtr = wire::MpaRtr::kWrite;
  o.send_rtr = role == wire::MpaRole::kInitiator;
  o.established_after_rtr = role == wire::MpaRole::kResponder;
  return o;
}

inline constexpr uint32_t kPd = 7;

// One QP over one end of a fake connection pair (FakeConnection, or
// FakeSctpConnection for the message-preserving path).
template <class Conn>
struct BasicSide {
  std::unique_ptr<Conn> conn;
  mem::StagTable stags;
  RecordingSink sink;
  std::unique_ptr<QueuePair> qp;

  BasicSide(std::unique_ptr<Conn> c, uint64_t seed) : conn(std::move(c)), stags(Random(seed), 64) {}

  void Create(wire::MpaRole role, bool crc, QpConfig cfg, uint16_t ird, uint16_t ord,
              bool markers = false, bool send_imm = false) {
    created = {role, crc, cfg, ird, ord, markers};
    wire::MpaOutcome o = MakeOutcome(role, crc, ird, ord);
    o.markers_tx = o.markers_rx = markers;  // both sides asked for markers
    o.send_imm = send_imm;                  // iwarpx Send with Immediate Data agreed
    CreateWith(o, cfg);
  }
  // The QP for an explicit negotiated outcome (qp stays null if refused);
  // `early`: what session setup received before its answer (QueuePair::Create).
  void CreateWith(const wire::MpaOutcome& o, QpConfig cfg,
                  transport::SctpMessageQueue&& early = {}) {
    cfg.role = o.role;
    qp.reset();
    auto r = QueuePair::Create(*conn, stags, kPd, o, cfg, sink, std::move(early));
    if (r.ok()) qp = std::move(r).value();
  }
  // Creates the QP again (before Start: nothing was sent yet) as if the MPA
  // exchange had or had not agreed on Send with Immediate Data.
  void Recreate(bool send_imm) {
    Create(created.role, created.crc, created.cfg, created.ird, created.ord, created.markers,
           send_imm);
  }

  struct CreateArgs {
    wire::MpaRole role = wire::MpaRole::kInitiator;
    bool crc = false;
    QpConfig cfg;
    uint16_t ird = 0;
    uint16_t ord = 0;
    bool markers = false;
  } created;

  uint32_t Register(Bytes& buf, uint32_t access, uint64_t base_to = 0x1000) {
    return RegisterRaw(buf.data(), buf.size(), access, base_to);
  }
  // `len` bytes at `host` (0 if the table refuses them).
  uint32_t RegisterRaw(void* host, size_t len, uint32_t access, uint64_t base_to = 0) {
    mem::RegionSpec spec;
    spec.host = static_cast<uint8_t*>(host);
    spec.length = len;
    spec.base_to = base_to;
    spec.access = access;
    spec.pd = kPd;
    auto r = stags.Register(spec);
    return r.ok() ? *r : 0;
  }
};

using Side = BasicSide<FakeConnection>;

// Initiator `a` and responder `b` over one fake connection pair.
template <class Conn>
struct BasicQpPair {
  BasicSide<Conn> a;
  BasicSide<Conn> b;

  explicit BasicQpPair(std::pair<std::unique_ptr<Conn>, std::unique_ptr<Conn>> conns)
      : a(std::move(conns.first), 11), b(std::move(conns.second), 22) {}

  void Start() {
    a.qp->Start();
    b.qp->Start();
  }

  // Drives both QPs until neither can make progress. Returns the rounds used.
  int Pump(int max_rounds = 1 << 22) {
    int rounds = 0;
    for (; rounds < max_rounds; ++rounds) {
      bool any = false;
      for (BasicSide<Conn>* s : {&a, &b}) {
        if (s->qp->wants_write()) {
          s->qp->OnWritable();
          any = true;
        }
        if ((s->qp->wants_read() && s->conn->pending() > 0) || s->qp->wants_progress()) {
          s->qp->OnReadable();
          any = true;
        }
      }
      if (!any) break;
      // A write that makes no progress (peer window full) and nothing to read.
      if (!(a.conn->pending() > 0 && a.qp->wants_read()) &&
          !(b.conn->pending() > 0 && b.qp->wants_read()) && !a.qp->wants_write() &&
          !b.qp->wants_write() && !a.qp->wants_progress() && !b.qp->wants_progress()) {
        break;
      }
    }
    // Let each side observe an end of stream (twice: one side's close may
    // follow from the other's).
    for (int i = 0; i < 2; ++i) {
      for (BasicSide<Conn>* s : {&a, &b}) {
        if (s->qp->wants_read()) s->qp->OnReadable();
      }
    }
    return rounds;
  }
};

struct QpPair : BasicQpPair<FakeConnection> {
  QpPair(size_t max_per_call, bool crc, QpConfig cfg = {}, uint16_t ird = 4, uint16_t ord = 4,
         bool markers = false)
      : QpPair(::iwarpx::testing::MakeFakeConnectionPair(max_per_call), crc, cfg, ird, ord,
               markers) {}

  QpPair(std::pair<std::unique_ptr<FakeConnection>, std::unique_ptr<FakeConnection>> conns,
         bool crc, QpConfig cfg, uint16_t ird, uint16_t ord, bool markers = false)
      : BasicQpPair(std::move(conns)) {
    a.Create(wire::MpaRole::kInitiator, crc, cfg, ird, ord, markers);
    b.Create(wire::MpaRole::kResponder, crc, cfg, ird, ord, markers);
  }
};

// A QP (`side`, responder unless told) facing a hand-driven raw peer end.
struct RawPeer {
  std::unique_ptr<FakeConnection> raw;
  Side side;
  bool crc;

  RawPeer(bool crc_on, QpConfig cfg = {}, uint16_t ird = 4, uint16_t ord = 4,
          wire::MpaRole role = wire::MpaRole::kResponder)
      : RawPeer(::iwarpx::testing::MakeFakeConnectionPair(0), crc_on, cfg, ird, ord, role) {}

  RawPeer(std::pair<std::unique_ptr<FakeConnection>, std::unique_ptr<FakeConnection>> conns,
          bool crc_on, QpConfig cfg, uint16_t ird, uint16_t ord, wire::MpaRole role)
      : raw(std::move(conns.first)), side(std::move(conns.second), 33), crc(crc_on) {
    side.Create(role, crc, cfg, ird, ord);
  }

  void WriteBytes(const Bytes& b) {
    const iovec v{const_cast<uint8_t*>(b.data()), b.size()};
    (void)raw->SendV(std::span<const iovec>(&v, 1));
  }
  static Bytes Fpdu(const Bytes& ulpdu, bool crc_on) {
    Bytes out(wire::FpduWireLength(ulpdu.size()));
    auto n = wire::EncodeFpdu(ulpdu, crc_on, out);
    if (!n.ok()) out.clear();
    return out;
  }
  void WriteUlpdu(const Bytes& ulpdu) { WriteBytes(Fpdu(ulpdu, crc)); }

  // Everything the QP wrote so far, as ULPDUs.
  std::vector<Bytes> ReadUlpdus() { return Parse(ReadRaw()); }

  // Everything the QP wrote so far, raw.
  Bytes ReadRaw() {
    Bytes all;
    uint8_t buf[4096];
    for (;;) {
      const iovec v{buf, sizeof(buf)};
      const transport::IoResult r = raw->RecvV(std::span<const iovec>(&v, 1));
      if (!r.ok() || r.bytes == 0) break;
      all.insert(all.end(), buf, buf + r.bytes);
    }
    return all;
  }

  [[nodiscard]] std::vector<Bytes> Parse(const Bytes& all) const {
    wire::FpduRxConfig cfg;
    cfg.crc = crc;
    wire::FpduStreamParser parser(cfg);
    ::iwarpx::testing::FpduRecorder rec;
    parser.Feed(all, rec);
    return rec.fpdus;
  }

  void Drive(int rounds = 64) {
    for (int i = 0; i < rounds; ++i) {
      if (side.qp->wants_write()) side.qp->OnWritable();
      if (side.qp->wants_read()) side.qp->OnReadable();
    }
  }
};

// A signaled RDMA Read of `len` bytes: remote (rstag, rto) into local (lstag, lto).
inline ReadWr MakeRead(uint64_t context, uint32_t lstag, uint64_t lto, size_t len, uint32_t rstag,
                       uint64_t rto) {
  ReadWr rd;
  rd.context = context;
  rd.local_stag = lstag;
  rd.local_to = lto;
  rd.length = static_cast<uint32_t>(len);
  rd.remote_stag = rstag;
  rd.remote_to = rto;
  return rd;
}

// ULPDUs a RawPeer feeds by hand: the RFC 6581 RTR (zero-length RDMA Write,
// STag 1) and one untagged Send segment with `payload` bytes of `fill`.
inline Bytes Rtr() {
  Bytes rtr(14);
  (void)wire::EncodeWriteHeader(1, 0, true, rtr);
  return rtr;
}

inline Bytes SendSegment(uint32_t msn, uint32_t mo, bool last, size_t payload, uint8_t fill = 0x42,
                         bool imm_follows = false) {
  Bytes b(18 + payload, fill);
  wire::SendParams p;
  p.msn = msn;
  p.mo = mo;
  p.last = last;
  p.imm_follows = imm_follows;
  (void)wire::EncodeSendHeader(p, b);
  return b;
}

// An RFC 7306 Immediate Data ULPDU (QN 0, `msn`) carrying `data`.
inline Bytes ImmediateSegment(uint32_t msn, uint64_t data) {
  Bytes b(18 + wire::kImmediateDataBodySize);
  (void)wire::EncodeImmediateData(false, msn, data, b);
  return b;
}

}  // namespace iwarpx::qp::test
