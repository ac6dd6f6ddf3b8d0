#include "wire/ddp.h"

namespace iwarpx::wire {

uint8_t EncodeDdpControl(DdpControl control) {
  uint8_t byte = kDdpVersion;
  if (control.tagged) byte |= kDdpFlagTagged;
  if (control.last) byte |= kDdpFlagLast;
  return byte;
}

Result<DdpControl, WireError> DecodeDdpControl(uint8_t byte) {
  const bool tagged = (byte & kDdpFlagTagged) != 0;
  // The version comes first: with an unknown version nothing else in the
  // header can be trusted (RFC 5041 §7.2, siw does the same).
  if ((byte & kDdpVersionMask) != kDdpVersion) {
    return Err{tagged ? WireError::kDdpTaggedBadVersion : WireError::kDdpUntaggedBadVersion};
  }
  if ((byte & kDdpReservedMask) != 0) return Err{WireError::kDdpReservedBits};
  return DdpControl{tagged, (byte & kDdpFlagLast) != 0};
}

Result<DdpHeader, WireError> DecodeDdpHeader(ByteSpan segment) {
  if (segment.empty()) return Err{WireError::kTruncated};
  auto control = DecodeDdpControl(segment[0]);
  if (!control.ok()) return Err{control.error()};

  DdpHeader h;
  h.tagged = control->tagged;
  h.last = control->last;
  if (segment.size() < h.size()) return Err{WireError::kTruncated};

  ByteReader r(segment.subspan(1, h.size() - 1));
  r.ReadU8(h.rsvd_ulp0);
  if (h.tagged) {
    r.ReadBe32(h.stag);
    r.ReadBe64(h.to);
  } else {
    r.ReadBe32(h.rsvd_ulp1_4);
    r.ReadBe32(h.qn);
    r.ReadBe32(h.msn);
    r.ReadBe32(h.mo);
  }
  if (!r.ok()) return Err{WireError::kTruncated};  // unreachable: size checked above
  return h;
}

Result<size_t, WireError> EncodeDdpHeader(const DdpHeader& header, MutableByteSpan out) {
  if (out.size() < header.size()) return Err{WireError::kNoSpace};
  ByteWriter w(out);
  w.WriteU8(EncodeDdpControl(header.control()));
  w.WriteU8(header.rsvd_ulp0);
  if (header.tagged) {
    w.WriteBe32(header.stag);
    w.WriteBe64(header.to);
  } else {
    w.WriteBe32(header.rsvd_ulp1_4);
    w.WriteBe32(header.qn);
    w.WriteBe32(header.msn);
    w.WriteBe32(header.mo);
  }
  return w.written();
}

DdpHeaderBytes EncodeDdpHeader(const DdpHeader& header) {
  DdpHeaderBytes out;
  // Cannot fail: the array holds the larger (untagged) header.
  auto written = EncodeDdpHeader(header, MutableByteSpan(out.bytes));
  out.size = written.ok() ? written.value() : 0;
  return out;
}

}  // namespace iwarpx::wire
