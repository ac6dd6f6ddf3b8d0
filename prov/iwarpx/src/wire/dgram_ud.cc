#include "wire/dgram_ud.h"

#include <cstring>

#include "base/crc32c.h"
#include "wire/rdmap.h"

namespace iwarpx::wire {
namespace {

// Bytes 0..3: magic, version, type UD data.
constexpr uint32_t kUdLead = (uint32_t{kDgramMagic} << 16) | (uint32_t{kDgramVersion} << 8) |
                             static_cast<uint8_t>(DgramType::kUdData);
// DDP control byte of a whole untagged message (T=0, L=1, DV=1).
constexpr uint8_t kUdDdpControl = kDdpFlagLast | kDdpVersion;
constexpr uint8_t RdmapControl(RdmapOpcode op) {
  return static_cast<uint8_t>((kRdmapVersion << kRdmapVersionShift) | static_cast<uint8_t>(op));
}
constexpr uint8_t kSendControl = RdmapControl(RdmapOpcode::kSend);
constexpr uint8_t kSendSeControl = RdmapControl(RdmapOpcode::kSendWithSe);
static_assert(kQnSend == 0, "the fast layout has QN 0");

// Offsets inside the 58-byte header block.
constexpr size_t kOffFlags = 4;
constexpr size_t kOffUlpduLength = 6;
constexpr size_t kOffCredits = 8;  // credits, ctrl_op, reserved: 4 zero bytes
constexpr size_t kOffDstQpn = 12;
constexpr size_t kOffSrcQpn = 16;
constexpr size_t kOffSession = 20;  // session .. sack: 20 zero bytes
constexpr size_t kOffDdp = kDgramHeaderSize;
constexpr size_t kOffRdmap = kOffDdp + 1;
constexpr size_t kOffInvalidate = kOffDdp + 2;  // Invalidate STag, then QN: 8 zero bytes
constexpr size_t kOffMsn = kOffDdp + 10;
constexpr size_t kOffMo = kOffDdp + 14;

void Store64Be(uint8_t* p, uint64_t v) {
  const uint64_t be = __builtin_bswap64(v);
  std::memcpy(p, &be, sizeof be);
}

uint64_t Load64(const uint8_t* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}
uint32_t Load32(const uint8_t* p) {
  uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

Result<size_t, WireError> EncodeUdSend(const UdSendFields& fields,
                                       std::span<const ByteSpan> payload_parts, bool crc_on,
                                       MutableByteSpan out) {
  size_t payload = 0;
  for (const ByteSpan part : payload_parts) {
    if (part.size() > kUdSendMaxPayload - payload) return Err{WireError::kInvalidArgument};
    payload += part.size();
  }
  const size_t ulpdu = kDdpUntaggedHeaderSize + payload;
  const size_t size = DgramSize(ulpdu);
  if (out.size() < size) return Err{WireError::kNoSpace};

  // The 58 header bytes as seven 64-bit words and one 16-bit word, zero
  // fields included (one store each instead of a memset and field stores).
  uint8_t* p = out.data();
  const uint64_t flags = crc_on ? kDgramFlagCrc : 0;
  Store64Be(p, (uint64_t{kUdLead} << 32) | (flags << 16) | ulpdu);
  Store64Be(p + 8, fields.dst_qpn);                   // credits, ctrl_op, reserved: 0
  Store64Be(p + 16, uint64_t{fields.src_qpn} << 32);  // then session 0
  Store64Be(p + 24, 0);                               // echo_session, seq
  Store64Be(p + 32, 0);                               // ack, sack
  const uint8_t rdmap = fields.solicited ? kSendSeControl : kSendControl;
  // DDP ctrl, RDMAP ctrl, Invalidate STag 0, QN 0, MSN, MO 0.
  Store64Be(p + kOffDdp, (uint64_t{kUdDdpControl} << 56) | (uint64_t{rdmap} << 48));
  Store64Be(p + kOffDdp + 8, uint64_t{fields.msn} << 16);
  StoreBe16(p + kOffDdp + 16, 0);
  static_assert(kOffMsn == kOffDdp + 10 && kOffMo == kOffDdp + 14);
  size_t pos = kUdSendHeaderSize;
  for (const ByteSpan part : payload_parts) {
    if (!part.empty()) std::memcpy(p + pos, part.data(), part.size());
    pos += part.size();
  }
  const size_t body = size - kDgramCrcSize;  // header, ULPDU, pad
  StoreBe32(p + pos, 0);                     // the 0..3 pad bytes (and CRC bytes written next)
  StoreCrcWire(p + body, crc_on ? Crc32c(ByteSpan(p, body)) : 0);
  return size;
}

std::optional<UdSendView> DecodeUdSend(ByteSpan bytes, bool verify_crc) {
  const size_t size = bytes.size();
  if (size < UdSendSize(0) || size > kDgramMaxSize) return std::nullopt;
  const uint8_t* p = bytes.data();
  const uint16_t flags = LoadBe16(p + kOffFlags);
  const size_t ulpdu = LoadBe16(p + kOffUlpduLength);
  // One test per group of fixed bytes: lead, flags, length, the zero fields
  // of the datagram header, the DDP/RDMAP control bytes, the zero fields of
  // the DDP header.
  if (LoadBe32(p) != kUdLead || (flags & ~kDgramFlagCrc) != 0 || ulpdu < kDdpUntaggedHeaderSize ||
      DgramSize(ulpdu) != size ||
      (Load32(p + kOffCredits) | Load64(p + kOffSession) | Load64(p + kOffSession + 8) |
       Load32(p + kOffSession + 16)) != 0 ||
      p[kOffDdp] != kUdDdpControl ||
      (p[kOffRdmap] != kSendControl && p[kOffRdmap] != kSendSeControl) ||
      (Load64(p + kOffInvalidate) | Load32(p + kOffMo)) != 0) {
    return std::nullopt;
  }
  const size_t body = size - kDgramCrcSize;
  for (size_t i = kDgramHeaderSize + ulpdu; i < body; ++i) {
    if (p[i] != 0) return std::nullopt;  // pad
  }
  UdSendView v;
  v.crc_present = (flags & kDgramFlagCrc) != 0;
  if (v.crc_present && verify_crc) {
    if (Crc32c(bytes.first(body)) != LoadCrcWire(p + body)) return std::nullopt;
    v.crc_checked = true;
  }
  v.fields.dst_qpn = LoadBe32(p + kOffDstQpn);
  v.fields.src_qpn = LoadBe32(p + kOffSrcQpn);
  v.fields.msn = LoadBe32(p + kOffMsn);
  v.fields.solicited = p[kOffRdmap] == kSendSeControl;
  v.payload = bytes.subspan(kUdSendHeaderSize, ulpdu - kDdpUntaggedHeaderSize);
  return v;
}

std::optional<UdSendView> DecodeUdSendGeneric(ByteSpan bytes, bool verify_crc) {
  const auto d = DecodeDgram(bytes, verify_crc);
  if (!d.ok() || d->header.type != DgramType::kUdData) return std::nullopt;
  const auto seg = ParseSegment(d->ulpdu);
  if (!seg.ok() || (seg->opcode != RdmapOpcode::kSend && seg->opcode != RdmapOpcode::kSendWithSe)) {
    return std::nullopt;
  }
  UdSendView v;
  v.fields.dst_qpn = d->header.dst_qpn;
  v.fields.src_qpn = d->header.src_qpn;
  v.fields.msn = seg->ddp.msn;
  v.fields.solicited = seg->opcode == RdmapOpcode::kSendWithSe;
  v.payload = seg->payload;
  v.crc_present = d->crc_present;
  v.crc_checked = d->crc_checked;
  return v;
}

}  // namespace iwarpx::wire
