#include "wire/dgram.h"

#include <algorithm>
#include <cstring>

#include "base/crc32c.h"
#include "wire/dgram_bundle.h"

namespace iwarpx::wire {
namespace {

// Field offsets in the 40-byte header (docs/wire.md, "Datagram iWARP over UDP").
constexpr size_t kOffMagic = 0;
constexpr size_t kOffVersion = 2;
constexpr size_t kOffType = 3;
constexpr size_t kOffFlags = 4;
constexpr size_t kOffUlpduLength = 6;
constexpr size_t kOffCredits = 8;
constexpr size_t kOffCtrlOp = 10;
constexpr size_t kOffReserved = 11;
constexpr size_t kOffDstQpn = 12;
constexpr size_t kOffSrcQpn = 16;
constexpr size_t kOffSession = 20;
constexpr size_t kOffEchoSession = 24;
constexpr size_t kOffSeq = 28;
constexpr size_t kOffAck = 32;
constexpr size_t kOffSack = 36;
static_assert(kOffSack + 4 == kDgramHeaderSize);

// The only DDP knowledge the framing needs (RFC 5041 §4.1, §4.3): for the UD
// rule "one whole DDP message per datagram".
constexpr uint8_t kDdpTaggedBit = 0x80;
constexpr uint8_t kDdpLastBit = 0x40;
constexpr size_t kDdpUntaggedMoOffset = 14;
constexpr size_t kDdpUntaggedHeaderSize = 18;

constexpr uint8_t kZeros[kDgramMaxPad] = {};

bool IsKnownType(uint8_t t) {
  return t >= static_cast<uint8_t>(DgramType::kUdData) &&
         t <= static_cast<uint8_t>(DgramType::kRdControl);
}

bool IsKnownCtrlOp(uint8_t op) {
  return op <= static_cast<uint8_t>(DgramControlOp::kProbe);
}

// The A/S fields shared by RD data, RD ack and PROBE.
bool AckFieldsOk(const DgramHeader& h) {
  if (h.has_sack && !h.has_ack) return false;
  if (h.has_ack) {
    if (h.echo_session == 0) return false;
  } else if (h.credits != 0 || h.echo_session != 0 || h.ack != 0) {
    return false;
  }
  return h.has_sack || h.sack == 0;
}

// Per-type field rules except the ULPDU length. False = a field the type does
// not use is set, a flag is not allowed for the type, or a value is reserved.
bool FieldsOk(const DgramHeader& h) {
  const bool is_control = h.type == DgramType::kRdControl;
  if (!is_control && h.ctrl_op != DgramControlOp::kNone) return false;
  if (h.bundle && h.type != DgramType::kRdData) return false;
  switch (h.type) {
    case DgramType::kUdData:
      return !h.has_ack && !h.has_sack && !h.syn && !h.ack_request && h.credits == 0 &&
             h.session == 0 && h.echo_session == 0 && h.seq == 0 && h.ack == 0 && h.sack == 0;
    case DgramType::kRdData: return h.session != 0 && AckFieldsOk(h);
    case DgramType::kRdAck: return h.session != 0 && h.has_ack && !h.ack_request && AckFieldsOk(h);
    case DgramType::kRdControl:
      if (h.session == 0 || h.ack_request) return false;
      switch (h.ctrl_op) {
        case DgramControlOp::kReset:
          return !h.has_ack && !h.has_sack && !h.syn && h.credits == 0 && h.seq == 0 &&
                 h.ack == 0 && h.sack == 0 && h.echo_session != 0;
        case DgramControlOp::kProbe: return AckFieldsOk(h);
        case DgramControlOp::kNone: return false;
      }
      return false;
  }
  return false;
}

bool UlpduLengthOk(DgramType type, size_t ulpdu_length) {
  if (type == DgramType::kUdData || type == DgramType::kRdData) {
    return ulpdu_length >= kDgramMinDdpSegment;
  }
  return ulpdu_length == 0;
}

// Copies dst.size() bytes starting at `offset` of the concatenated parts.
bool GatherFromParts(std::span<const ByteSpan> parts, size_t offset, MutableByteSpan dst) {
  size_t done = 0;
  for (ByteSpan part : parts) {
    if (done == dst.size()) break;
    if (offset >= part.size()) {
      offset -= part.size();
      continue;
    }
    const size_t n = std::min(part.size() - offset, dst.size() - done);
    std::memcpy(dst.data() + done, part.data() + offset, n);
    done += n;
    offset = 0;
  }
  return done == dst.size();
}

// UD rule: the ULPDU is a whole DDP message (L set; MO 0 if untagged).
// `ctrl` is DDP byte 0, `mo` the untagged MO bytes (nullptr if absent).
bool WholeDdpMessage(uint8_t ctrl, const uint8_t* mo) {
  if ((ctrl & kDdpLastBit) == 0) return false;
  if ((ctrl & kDdpTaggedBit) != 0) return true;
  return mo != nullptr && LoadBe32(mo) == 0;
}

bool UdPartsAreWholeMessage(std::span<const ByteSpan> parts, size_t ulpdu_length) {
  uint8_t ctrl = 0;
  if (!GatherFromParts(parts, 0, MutableByteSpan(&ctrl, 1))) return false;
  uint8_t mo[4] = {};
  const bool have_mo = ulpdu_length >= kDdpUntaggedHeaderSize &&
                       GatherFromParts(parts, kDdpUntaggedMoOffset, MutableByteSpan(mo, 4));
  return WholeDdpMessage(ctrl, have_mo ? mo : nullptr);
}

uint16_t FlagsOf(const DgramHeader& h, bool crc_on) {
  uint16_t f = 0;
  if (crc_on) f |= kDgramFlagCrc;
  if (h.has_ack) f |= kDgramFlagAck;
  if (h.has_sack) f |= kDgramFlagSack;
  if (h.syn) f |= kDgramFlagSyn;
  if (h.ack_request) f |= kDgramFlagAckRequest;
  if (h.bundle) f |= kDgramFlagBundle;
  return f;
}

void WriteHeader(const DgramHeader& h, uint16_t ulpdu_length, bool crc_on, uint8_t* p) {
  StoreBe16(p + kOffMagic, kDgramMagic);
  p[kOffVersion] = kDgramVersion;
  p[kOffType] = static_cast<uint8_t>(h.type);
  StoreBe16(p + kOffFlags, FlagsOf(h, crc_on));
  StoreBe16(p + kOffUlpduLength, ulpdu_length);
  StoreBe16(p + kOffCredits, h.credits);
  p[kOffCtrlOp] = static_cast<uint8_t>(h.ctrl_op);
  p[kOffReserved] = 0;
  StoreBe32(p + kOffDstQpn, h.dst_qpn);
  StoreBe32(p + kOffSrcQpn, h.src_qpn);
  StoreBe32(p + kOffSession, h.session);
  StoreBe32(p + kOffEchoSession, h.echo_session);
  StoreBe32(p + kOffSeq, h.seq);
  StoreBe32(p + kOffAck, h.ack);
  StoreBe32(p + kOffSack, h.sack);
}

// Validates an outgoing header + ULPDU; returns the ULPDU length.
Result<size_t, WireError> CheckOutgoing(const DgramHeader& h, std::span<const ByteSpan> parts) {
  size_t ulpdu_length = 0;
  for (ByteSpan part : parts) {
    if (part.size() > kDgramMaxUlpdu - ulpdu_length) return Err{WireError::kInvalidArgument};
    ulpdu_length += part.size();
  }
  if (!IsKnownType(static_cast<uint8_t>(h.type)) ||
      !IsKnownCtrlOp(static_cast<uint8_t>(h.ctrl_op)) || !FieldsOk(h) ||
      !UlpduLengthOk(h.type, ulpdu_length)) {
    return Err{WireError::kInvalidArgument};
  }
  if (h.type == DgramType::kUdData && !UdPartsAreWholeMessage(parts, ulpdu_length)) {
    return Err{WireError::kInvalidArgument};
  }
  if (h.bundle) {
    // The records in one piece: the walker checks them where they lie.
    ByteSpan records;
    for (ByteSpan part : parts) {
      if (part.empty()) continue;
      if (!records.empty()) return Err{WireError::kInvalidArgument};
      records = part;
    }
    if (!CountBundleRecords(records).ok()) return Err{WireError::kInvalidArgument};
  }
  return ulpdu_length;
}

}  // namespace

Result<size_t, WireError> EncodeDgram(const DgramHeader& header,
                                      std::span<const ByteSpan> ulpdu_parts, bool crc_on,
                                      MutableByteSpan out) {
  const auto checked = CheckOutgoing(header, ulpdu_parts);
  if (!checked) return Err{checked.error()};
  const size_t ulpdu_length = checked.value();
  const size_t pad = DgramPadLength(ulpdu_length);
  const size_t size = DgramSize(ulpdu_length);
  if (out.size() < size) return Err{WireError::kNoSpace};

  uint8_t* p = out.data();
  WriteHeader(header, static_cast<uint16_t>(ulpdu_length), crc_on, p);
  size_t pos = kDgramHeaderSize;
  for (ByteSpan part : ulpdu_parts) {
    // memmove: a ULPDU already built in place at out[40..] is allowed.
    if (!part.empty() && part.data() != p + pos) std::memmove(p + pos, part.data(), part.size());
    pos += part.size();
  }
  std::memset(p + pos, 0, pad + kDgramCrcSize);
  pos += pad;
  const uint32_t crc = crc_on ? Crc32c(ByteSpan(p, pos)) : 0;
  StoreCrcWire(p + pos, crc);
  return size;
}

Result<DgramFraming, WireError> FrameDgram(const DgramHeader& header,
                                           std::span<const ByteSpan> ulpdu_parts, bool crc_on) {
  const auto checked = CheckOutgoing(header, ulpdu_parts);
  if (!checked) return Err{checked.error()};
  const size_t ulpdu_length = checked.value();
  const size_t pad = DgramPadLength(ulpdu_length);

  DgramFraming f;
  WriteHeader(header, static_cast<uint16_t>(ulpdu_length), crc_on, f.header.data());
  f.trailer_size = pad + kDgramCrcSize;
  f.datagram_size = DgramSize(ulpdu_length);
  uint32_t crc = 0;
  if (crc_on) {
    uint32_t state = Crc32cExtend(kCrc32cInit, f.HeaderBytes());
    for (ByteSpan part : ulpdu_parts) state = Crc32cExtend(state, part);
    state = Crc32cExtend(state, ByteSpan(kZeros, pad));
    crc = Crc32cFinalize(state);
  }
  StoreCrcWire(f.trailer.data() + pad, crc);  // pad bytes are already zero
  return f;
}

namespace {

// DecodeDgram and DecodeDgramSplit: the datagram is head ‖ placed ‖ tail.
// placed empty: head is the whole datagram (tail empty). placed not empty:
// the ULPDU is head[40..] ‖ placed and tail is exactly its pad and CRC.
Result<DecodedDgram, WireError> DecodeParts(ByteSpan head, ByteSpan placed, ByteSpan tail,
                                            bool verify_crc) {
  const size_t total = head.size() + placed.size() + tail.size();
  ByteReader r(head);
  uint16_t magic = 0;
  uint8_t version = 0;
  if (!r.ReadBe16(magic)) return Err{WireError::kTruncated};
  if (magic != kDgramMagic) return Err{WireError::kDgramBadMagic};
  if (!r.ReadU8(version)) return Err{WireError::kTruncated};
  if (version != kDgramVersion) return Err{WireError::kDgramBadVersion};
  if (total < kDgramMinSize) return Err{WireError::kTruncated};
  if (total > kDgramMaxSize) return Err{WireError::kDgramBadLength};
  if (head.size() < kDgramHeaderSize) return Err{WireError::kDgramBadLength};  // split only

  uint8_t type = 0, ctrl_op = 0, reserved = 0;
  uint16_t flags = 0, ulpdu_length = 0;
  DecodedDgram d;
  DgramHeader& h = d.header;
  r.ReadU8(type);
  r.ReadBe16(flags);
  r.ReadBe16(ulpdu_length);
  r.ReadBe16(h.credits);
  r.ReadU8(ctrl_op);
  r.ReadU8(reserved);
  r.ReadBe32(h.dst_qpn);
  r.ReadBe32(h.src_qpn);
  r.ReadBe32(h.session);
  r.ReadBe32(h.echo_session);
  r.ReadBe32(h.seq);
  r.ReadBe32(h.ack);
  r.ReadBe32(h.sack);
  if (!r.ok()) return Err{WireError::kTruncated};  // not reached: size >= kDgramMinSize
  if (DgramSize(ulpdu_length) != total) return Err{WireError::kDgramBadLength};

  const size_t pad_length = DgramPadLength(ulpdu_length);
  ByteSpan pad;
  ByteSpan crc_field;
  if (placed.empty()) {
    r.ReadView(ulpdu_length, d.ulpdu);
    r.ReadView(pad_length, pad);
    r.ReadView(kDgramCrcSize, crc_field);
    if (!r.ok() || r.remaining() != 0) return Err{WireError::kDgramBadLength};  // not reached
  } else {
    if (tail.size() != pad_length + kDgramCrcSize) return Err{WireError::kDgramBadLength};
    d.ulpdu = head.subspan(kDgramHeaderSize);
    d.ulpdu_placed = placed;
    pad = tail.first(pad_length);
    crc_field = tail.subspan(pad_length);
  }

  d.crc_present = (flags & kDgramFlagCrc) != 0;
  if (d.crc_present && verify_crc) {
    uint32_t state =
        Crc32cExtend(kCrc32cInit, placed.empty() ? head.first(total - kDgramCrcSize) : head);
    if (!placed.empty()) state = Crc32cExtend(Crc32cExtend(state, placed), pad);
    if (Crc32cFinalize(state) != LoadCrcWire(crc_field.data())) return Err{WireError::kBadCrc};
    d.crc_checked = true;
  }

  if ((flags & kDgramFlagsReserved) != 0 || reserved != 0 || !IsKnownType(type) ||
      !IsKnownCtrlOp(ctrl_op)) {
    return Err{WireError::kDgramReservedBits};
  }
  h.type = static_cast<DgramType>(type);
  h.ctrl_op = static_cast<DgramControlOp>(ctrl_op);
  h.has_ack = (flags & kDgramFlagAck) != 0;
  h.has_sack = (flags & kDgramFlagSack) != 0;
  h.syn = (flags & kDgramFlagSyn) != 0;
  h.ack_request = (flags & kDgramFlagAckRequest) != 0;
  h.bundle = (flags & kDgramFlagBundle) != 0;
  if (!FieldsOk(h)) return Err{WireError::kDgramReservedBits};
  for (uint8_t b : pad) {
    if (b != 0) return Err{WireError::kDgramReservedBits};
  }
  if (!UlpduLengthOk(h.type, ulpdu_length)) return Err{WireError::kDgramBadLength};
  if (h.bundle) {
    // Never received in place (the port's guesses are single Read
    // Responses); every record is checked here, so no reader of a decoded
    // bundle meets a bad one.
    if (!placed.empty() || !CountBundleRecords(d.ulpdu).ok()) {
      return Err{WireError::kDgramBadBundle};
    }
  }

  if (h.type == DgramType::kUdData) {
    // UD datagrams are never received in place: the rule reads the whole
    // ULPDU's first bytes from one view.
    if (!placed.empty()) return Err{WireError::kDgramBadSegment};
    const uint8_t* mo =
        ulpdu_length >= kDdpUntaggedHeaderSize ? d.ulpdu.data() + kDdpUntaggedMoOffset : nullptr;
    if (!WholeDdpMessage(d.ulpdu[0], mo)) return Err{WireError::kDgramBadSegment};
  }
  return d;
}

}  // namespace

Result<DecodedDgram, WireError> DecodeDgram(ByteSpan bytes, bool verify_crc) {
  return DecodeParts(bytes, {}, {}, verify_crc);
}

Result<DecodedDgram, WireError> DecodeDgramSplit(ByteSpan head, ByteSpan placed, ByteSpan tail,
                                                 bool verify_crc) {
  if (placed.empty()) return Err{WireError::kDgramBadLength};
  return DecodeParts(head, placed, tail, verify_crc);
}

}  // namespace iwarpx::wire
