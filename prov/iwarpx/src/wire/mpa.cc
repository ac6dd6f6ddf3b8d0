#include "wire/mpa.h"

#include <algorithm>
#include <array>

namespace iwarpx::wire {
namespace {

constexpr std::array<uint8_t, kMpaKeySize> kRequestKey = {'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R',
                                                          'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e'};
constexpr std::array<uint8_t, kMpaKeySize> kReplyKey = {'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R',
                                                        'e', 'p', ' ', 'F', 'r', 'a', 'm', 'e'};

bool KeyEquals(ByteSpan got, ByteSpan want) {
  return std::equal(got.begin(), got.end(), want.begin(), want.end());
}

MpaIrdOrd UnpackIrdOrd(uint16_t word0, uint16_t word1) {
  MpaIrdOrd b;
  b.p2p = (word0 & kMpaP2pBit) != 0;
  b.ird = static_cast<uint16_t>(word0 & kMpaIrdOrdMask);
  b.ord = static_cast<uint16_t>(word1 & kMpaIrdOrdMask);
  if ((word0 & kMpaSendRtrBit) != 0) b.rtr |= RtrBit(MpaRtr::kSend);
  if ((word1 & kMpaWriteRtrBit) != 0) b.rtr |= RtrBit(MpaRtr::kWrite);
  if ((word1 & kMpaReadRtrBit) != 0) b.rtr |= RtrBit(MpaRtr::kRead);
  return b;
}

uint16_t PackWord0(const MpaIrdOrd& b) {
  uint16_t w = b.ird;
  if (b.p2p) w |= kMpaP2pBit;
  if ((b.rtr & RtrBit(MpaRtr::kSend)) != 0) w |= kMpaSendRtrBit;
  return w;
}

uint16_t PackWord1(const MpaIrdOrd& b) {
  uint16_t w = b.ord;
  if ((b.rtr & RtrBit(MpaRtr::kWrite)) != 0) w |= kMpaWriteRtrBit;
  if ((b.rtr & RtrBit(MpaRtr::kRead)) != 0) w |= kMpaReadRtrBit;
  return w;
}

}  // namespace

ByteSpan MpaKey(MpaFrameKind kind) {
  return kind == MpaFrameKind::kRequest ? ByteSpan(kRequestKey) : ByteSpan(kReplyKey);
}

uint16_t MpaPrivateDataLimit(const MpaLimits& limits) {
  return std::min(limits.max_private_data, kMpaMaxPrivateData);
}

Result<MpaHeaderInfo, WireError> DecodeMpaHeader(ByteSpan bytes, MpaFrameKind expected,
                                                 const MpaLimits& limits) {
  ByteReader r(bytes);
  ByteSpan key;
  MpaHeaderInfo h;
  if (!r.ReadView(kMpaKeySize, key) || !r.ReadU8(h.flags) || !r.ReadU8(h.revision) ||
      !r.ReadBe16(h.pd_length)) {
    return Err{WireError::kTruncated};
  }
  if (!KeyEquals(key, MpaKey(expected))) return Err{WireError::kMpaBadKey};
  if (h.revision != kMpaRevision1 && h.revision != kMpaRevision2) {
    return Err{WireError::kMpaBadRevision};
  }
  if (expected == MpaFrameKind::kRequest && (h.flags & kMpaFlagReject) != 0) {
    return Err{WireError::kMpaRejectInRequest};
  }
  const uint8_t reserved =
      h.revision == kMpaRevision1 ? kMpaReservedFlagsRev1 : kMpaReservedFlagsRev2;
  if ((h.flags & reserved) != 0) return Err{WireError::kMpaReservedBits};
  if (h.pd_length > MpaPrivateDataLimit(limits)) return Err{WireError::kMpaPrivateDataTooLong};
  if ((h.flags & kMpaFlagEnhanced) != 0 && h.pd_length < kMpaIrdOrdSize) {
    return Err{WireError::kMpaBadIrdOrd};
  }
  h.frame_length = kMpaHeaderSize + h.pd_length;
  return h;
}

Result<MpaDecoded, WireError> DecodeMpaFrame(ByteSpan bytes, MpaFrameKind expected,
                                             const MpaLimits& limits) {
  auto header = DecodeMpaHeader(bytes, expected, limits);
  if (!header.ok()) return Err{header.error()};
  const MpaHeaderInfo& h = header.value();

  ByteReader r(bytes);
  ByteSpan pd;
  if (!r.Skip(kMpaHeaderSize) || !r.ReadView(h.pd_length, pd)) {
    return Err{WireError::kTruncated};
  }

  MpaDecoded out;
  out.consumed = h.frame_length;
  MpaFrame& f = out.frame;
  f.kind = expected;
  f.markers = (h.flags & kMpaFlagMarkers) != 0;
  f.crc = (h.flags & kMpaFlagCrc) != 0;
  f.reject = (h.flags & kMpaFlagReject) != 0;
  f.revision = h.revision;
  // DecodeMpaHeader refused the bit in rev 1 (it is reserved there).
  f.send_imm = (h.flags & kMpaFlagSendImm) != 0;
  if ((h.flags & kMpaFlagEnhanced) != 0) {
    // DecodeMpaHeader guaranteed pd.size() >= kMpaIrdOrdSize.
    f.ird_ord = UnpackIrdOrd(LoadBe16(pd.data()), LoadBe16(pd.data() + 2));
    pd = pd.subspan(kMpaIrdOrdSize);
  }
  f.private_data = pd;
  return out;
}

size_t MpaFrameSize(const MpaFrame& frame) {
  return kMpaHeaderSize + (frame.ird_ord ? kMpaIrdOrdSize : 0) + frame.private_data.size();
}

Result<size_t, WireError> EncodeMpaFrame(const MpaFrame& frame, MutableByteSpan out) {
  if (frame.revision != kMpaRevision1 && frame.revision != kMpaRevision2) {
    return Err{WireError::kInvalidArgument};
  }
  if (frame.reject && frame.kind == MpaFrameKind::kRequest) {
    return Err{WireError::kInvalidArgument};
  }
  if (frame.send_imm && frame.revision != kMpaRevision2) return Err{WireError::kInvalidArgument};
  if (frame.ird_ord) {
    const MpaIrdOrd& b = *frame.ird_ord;
    if (frame.revision != kMpaRevision2 || b.ird > kMpaIrdOrdMask || b.ord > kMpaIrdOrdMask ||
        (b.rtr & ~kMpaRtrAll) != 0) {
      return Err{WireError::kInvalidArgument};
    }
  }
  const size_t pd_length = MpaFrameSize(frame) - kMpaHeaderSize;
  if (pd_length > kMpaMaxPrivateData) return Err{WireError::kMpaPrivateDataTooLong};

  uint8_t flags = 0;
  if (frame.markers) flags |= kMpaFlagMarkers;
  if (frame.crc) flags |= kMpaFlagCrc;
  if (frame.reject) flags |= kMpaFlagReject;
  if (frame.ird_ord) flags |= kMpaFlagEnhanced;
  if (frame.send_imm) flags |= kMpaFlagSendImm;

  ByteWriter w(out);
  w.WriteBytes(MpaKey(frame.kind));
  w.WriteU8(flags);
  w.WriteU8(frame.revision);
  w.WriteBe16(static_cast<uint16_t>(pd_length));
  if (frame.ird_ord) {
    w.WriteBe16(PackWord0(*frame.ird_ord));
    w.WriteBe16(PackWord1(*frame.ird_ord));
  }
  w.WriteBytes(frame.private_data);
  if (!w.ok()) return Err{WireError::kNoSpace};
  return w.written();
}

}  // namespace iwarpx::wire
