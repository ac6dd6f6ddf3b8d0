#include "wire/terminate.h"

#include <algorithm>

#include "wire/ddp.h"
#include "wire/rdmap.h"

namespace iwarpx::wire {

namespace {

// Size of the terminated DDP header whose first byte is `ctrl`.
size_t TerminatedDdpHeaderSize(uint8_t ctrl) {
  return DdpHeaderSize((ctrl & kDdpFlagTagged) != 0);
}

bool IsVersionError(TermCause c) {
  return c == term::kDdpTaggedBadVersion || c == term::kDdpUntaggedBadVersion ||
         c == term::kRdmapBadVersion;
}

// The consistency rules shared by the decoder and the encoder; returns false
// if the flags do not match the bytes they announce.
bool FlagsMatchContent(const TerminateHeader& t) {
  if (t.m && !t.d) return false;
  if (t.d) {
    if (t.ddp_header.empty()) return false;
    if (t.ddp_header.size() != TerminatedDdpHeaderSize(t.ddp_header[0])) return false;
  } else if (!t.ddp_header.empty() || t.ddp_segment_length != 0) {
    return false;
  }
  if (t.r) {
    if (t.rdmap_header.size() == kTerminatedRdmapHeaderSize) return true;
    // siw: R with only an untagged DDP header (see terminate.h).
    return t.rdmap_header.empty() && t.d && t.ddp_header.size() == kDdpUntaggedHeaderSize;
  }
  return t.rdmap_header.empty();
}

}  // namespace

size_t TerminateHeader::size() const {
  size_t n = kTerminateControlSize;
  if (d) n += kTerminateSegmentLengthSize + ddp_header.size();
  if (r) n += rdmap_header.size();
  return n;
}

Result<TerminateHeader, WireError> DecodeTerminate(ByteSpan body) {
  if (body.size() < kTerminateControlSize) return Err{WireError::kTruncated};
  TerminateHeader t;
  t.cause.layer = static_cast<uint8_t>(body[0] >> 4);
  t.cause.etype = static_cast<uint8_t>(body[0] & 0x0F);
  t.cause.code = body[1];
  const uint8_t flags = body[2];
  if ((flags & kTerminateReservedMask2) != 0 || body[3] != 0) {
    return Err{WireError::kRdmapReservedBits};
  }
  if (!IsKnownTermCause(t.cause)) return Err{WireError::kTerminateBadCause};
  t.m = (flags & kTerminateFlagM) != 0;
  t.d = (flags & kTerminateFlagD) != 0;
  t.r = (flags & kTerminateFlagR) != 0;
  if (t.m && !t.d) return Err{WireError::kTerminateMissingFlags};

  ByteReader rd(body.subspan(kTerminateControlSize));
  if (t.d) {
    if (!rd.ReadBe16(t.ddp_segment_length) || rd.remaining() == 0) {
      return Err{WireError::kTerminateMissingFlags};
    }
    const size_t header_size = TerminatedDdpHeaderSize(rd.rest()[0]);
    if (!rd.ReadView(header_size, t.ddp_header)) return Err{WireError::kTerminateMissingFlags};
  }
  if (t.r) {
    const size_t left = rd.remaining();
    const bool siw_quirk = left == 0 && t.d && t.ddp_header.size() == kDdpUntaggedHeaderSize;
    if (!siw_quirk && !rd.ReadView(kTerminatedRdmapHeaderSize, t.rdmap_header)) {
      return Err{WireError::kTerminateMissingFlags};
    }
  }
  if (rd.remaining() != 0) return Err{WireError::kTerminateMissingFlags};
  return t;
}

Result<size_t, WireError> EncodeTerminate(const TerminateHeader& header, MutableByteSpan out) {
  if (header.cause.layer > 0x0F || header.cause.etype > 0x0F || !IsKnownTermCause(header.cause) ||
      !FlagsMatchContent(header)) {
    return Err{WireError::kInvalidArgument};
  }
  const size_t total = header.size();
  if (out.size() < total) return Err{WireError::kNoSpace};
  ByteWriter w(out);
  w.WriteU8(static_cast<uint8_t>((header.cause.layer << 4) | header.cause.etype));
  w.WriteU8(header.cause.code);
  uint8_t flags = 0;
  if (header.m) flags |= kTerminateFlagM;
  if (header.d) flags |= kTerminateFlagD;
  if (header.r) flags |= kTerminateFlagR;
  w.WriteU8(flags);
  w.WriteU8(0);
  if (header.d) {
    w.WriteBe16(header.ddp_segment_length);
    w.WriteBytes(header.ddp_header);
  }
  if (header.r) w.WriteBytes(header.rdmap_header);
  return w.written();
}

TerminateHeader MakeTerminate(TermCause cause, ByteSpan offending, size_t segment_length) {
  TerminateHeader t;
  t.cause = cause;
  const bool headers_known = (cause.layer == term::kLayerRdmap || cause.layer == term::kLayerDdp) &&
                             cause.etype != 0 && !IsVersionError(cause);
  if (!headers_known || offending.empty()) return t;
  const size_t header_size = TerminatedDdpHeaderSize(offending[0]);
  if (offending.size() < header_size) return t;

  t.m = true;
  t.d = true;
  t.ddp_segment_length = static_cast<uint16_t>(std::min<size_t>(segment_length, 0xFFFF));
  t.ddp_header = offending.first(header_size);

  const bool untagged_read_request =
      header_size == kDdpUntaggedHeaderSize &&
      (offending[1] & kRdmapOpcodeMask) == static_cast<uint8_t>(RdmapOpcode::kRdmaReadRequest);
  if (cause.layer == term::kLayerRdmap && untagged_read_request &&
      offending.size() >= header_size + kTerminatedRdmapHeaderSize) {
    t.r = true;
    t.rdmap_header = offending.subspan(header_size, kTerminatedRdmapHeaderSize);
  }
  return t;
}

Result<size_t, WireError> EncodeTerminateSegment(uint32_t msn, const TerminateHeader& header,
                                                 MutableByteSpan out) {
  auto ddp = EncodeTerminateHeader(msn, out);
  if (!ddp.ok()) return Err{ddp.error()};
  auto body = EncodeTerminate(header, out.subspan(ddp.value()));
  if (!body.ok()) return Err{body.error()};
  return ddp.value() + body.value();
}

}  // namespace iwarpx::wire
