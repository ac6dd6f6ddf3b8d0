#include "wire/error.h"

namespace iwarpx::wire {

TermCause TerminateCauseFor(WireError e) {
  switch (e) {
    case WireError::kMpaBadKey:
    case WireError::kMpaBadRevision:
    case WireError::kMpaReservedBits:
    case WireError::kMpaPrivateDataTooLong:
    case WireError::kMpaRejectInRequest:
    case WireError::kMpaBadIrdOrd:
    case WireError::kMpaRejected:
    case WireError::kMpaMarkersRefused:
    case WireError::kMpaCrcRefused:
    case WireError::kMpaTrailingBytes:
    case WireError::kSctpSessionBadFunction:
    case WireError::kSctpSessionBadLength:
    case WireError::kSctpSessionPrivateDataTooLong:
    case WireError::kSctpSessionBadIrdOrd:
    case WireError::kSctpSessionReservedBits:
    case WireError::kSctpNoDdpAdaptation: return term::kLlpInvalidReqRep;
    case WireError::kMpaInsufficientIrd: return term::kLlpInsufficientIrd;
    case WireError::kMpaNoMatchingRtr: return term::kLlpNoMatchingRtr;
    case WireError::kFpduTooLong:
    case WireError::kFpduTooShort:
    case WireError::kBadMarker: return term::kLlpMarkerMismatch;
    case WireError::kBadCrc: return term::kLlpCrcError;
    case WireError::kDdpTaggedBadVersion: return term::kDdpTaggedBadVersion;
    case WireError::kDdpUntaggedBadVersion: return term::kDdpUntaggedBadVersion;
    case WireError::kDdpBadQueueNumber: return term::kDdpUntaggedInvalidQn;
    case WireError::kDdpBadMessageOffset: return term::kDdpUntaggedInvalidMo;
    case WireError::kDdpToWrap: return term::kDdpTaggedToWrap;
    case WireError::kRdmapBadVersion: return term::kRdmapBadVersion;
    case WireError::kRdmapBadOpcode: return term::kRdmapUnexpectedOpcode;
    case WireError::kTruncated:
    case WireError::kNoSpace:
    case WireError::kInvalidArgument:
    case WireError::kDdpReservedBits:
    case WireError::kRdmapReservedBits:
    case WireError::kRdmapBadHeaderForOpcode:
    case WireError::kRdmapBadLength:
    case WireError::kTerminateMissingFlags:
    case WireError::kTerminateBadCause:
    case WireError::kAtomicBadOp:
    case WireError::kDgramBadMagic:
    case WireError::kDgramBadVersion:
    case WireError::kDgramReservedBits:
    case WireError::kDgramBadLength:
    case WireError::kDgramBadSegment:
    case WireError::kDgramBadBundle:
    case WireError::kRdmBadVersion:
    case WireError::kRdmBadOp:
    case WireError::kRdmReservedBits:
    case WireError::kRdmBadLength: return term::kRdmapOpUnspecified;
  }
  return term::kRdmapOpUnspecified;
}

const char* ToString(WireError e) {
  switch (e) {
    case WireError::kTruncated: return "truncated";
    case WireError::kNoSpace: return "no space in output buffer";
    case WireError::kInvalidArgument: return "invalid argument";
    case WireError::kMpaBadKey: return "MPA: bad key";
    case WireError::kMpaBadRevision: return "MPA: unsupported revision";
    case WireError::kMpaReservedBits: return "MPA: reserved bits set";
    case WireError::kMpaPrivateDataTooLong: return "MPA: private data too long";
    case WireError::kMpaRejectInRequest: return "MPA: R flag in request";
    case WireError::kMpaBadIrdOrd: return "MPA: missing IRD/ORD block";
    case WireError::kMpaRejected: return "MPA: rejected by peer";
    case WireError::kMpaMarkersRefused: return "MPA: markers refused";
    case WireError::kMpaCrcRefused: return "MPA: CRC refused";
    case WireError::kMpaInsufficientIrd: return "MPA: insufficient IRD";
    case WireError::kMpaNoMatchingRtr: return "MPA: no matching RTR type";
    case WireError::kMpaTrailingBytes: return "MPA: bytes after request before reply";
    case WireError::kFpduTooLong: return "FPDU: ULPDU length too long";
    case WireError::kFpduTooShort: return "FPDU: ULPDU length too short";
    case WireError::kBadCrc: return "FPDU: bad CRC";
    case WireError::kBadMarker: return "FPDU: bad marker";
    case WireError::kDdpTaggedBadVersion: return "DDP: bad version (tagged)";
    case WireError::kDdpUntaggedBadVersion: return "DDP: bad version (untagged)";
    case WireError::kDdpReservedBits: return "DDP: reserved bits set";
    case WireError::kDdpBadQueueNumber: return "DDP: bad queue number";
    case WireError::kDdpBadMessageOffset: return "DDP: bad message offset";
    case WireError::kDdpToWrap: return "DDP: tagged offset wraps";
    case WireError::kRdmapBadVersion: return "RDMAP: bad version";
    case WireError::kRdmapReservedBits: return "RDMAP: reserved bits set";
    case WireError::kRdmapBadOpcode: return "RDMAP: unexpected opcode";
    case WireError::kRdmapBadHeaderForOpcode: return "RDMAP: header does not fit opcode";
    case WireError::kRdmapBadLength: return "RDMAP: bad length for opcode";
    case WireError::kTerminateMissingFlags: return "Terminate: header flags do not match content";
    case WireError::kTerminateBadCause: return "Terminate: unknown layer/type/code";
    case WireError::kAtomicBadOp: return "Atomic: unknown operation";
    case WireError::kDgramBadMagic: return "datagram: bad magic";
    case WireError::kDgramBadVersion: return "datagram: unsupported version";
    case WireError::kDgramReservedBits: return "datagram: reserved bits set";
    case WireError::kDgramBadLength: return "datagram: bad length";
    case WireError::kDgramBadSegment: return "datagram: bad segmentation fields";
    case WireError::kDgramBadBundle: return "datagram: bad bundle record";
    case WireError::kRdmBadVersion: return "RDM message: unknown version";
    case WireError::kRdmBadOp: return "RDM message: unknown op";
    case WireError::kRdmReservedBits: return "RDM message: reserved bits or unused fields set";
    case WireError::kRdmBadLength: return "RDM message: size does not match its bytes";
    case WireError::kSctpSessionBadFunction: return "SCTP session: unknown function code";
    case WireError::kSctpSessionBadLength: return "SCTP session: PD length does not match message";
    case WireError::kSctpSessionPrivateDataTooLong: return "SCTP session: private data too long";
    case WireError::kSctpSessionBadIrdOrd: return "SCTP session: missing IRD/ORD block";
    case WireError::kSctpSessionReservedBits: return "SCTP session: reserved IRD/ORD bits set";
    case WireError::kSctpNoDdpAdaptation:
      return "SCTP: the peer's association setup had no Adaptation Layer Indication 1 (DDP, RFC "
             "5043 section 5.1)";
  }
  return "unknown wire error";
}

bool IsKnownTermCause(TermCause c) {
  switch (c.layer) {
    case term::kLayerRdmap:
      // Local catastrophic: any code (IANA RDDP registry 0x0/0x0/ALL; siw
      // sends 0xFF when a QP enters TERMINATE).
      if (c.etype == 0) return true;
      if (c.etype == 1) return c.code <= 0x04 || c.code == 0x09 || c.code == 0xFF;
      if (c.etype == 2) return (c.code >= 0x05 && c.code <= 0x09) || c.code == 0xFF;
      return false;
    case term::kLayerDdp:
      if (c.etype == 0) return c.code == 0x00;
      if (c.etype == 1) return c.code <= 0x04;
      if (c.etype == 2) return c.code >= 0x01 && c.code <= 0x06;
      return false;
    case term::kLayerLlp: return c.etype == 0 && c.code >= 0x01 && c.code <= 0x07;
    default: return false;
  }
}

const char* ToString(TermCause c) {
  struct Name {
    TermCause cause;
    const char* text;
  };
  static constexpr Name kNames[] = {
      {term::kRdmapInvalidStag, "RDMAP remote protection: invalid STag"},
      {term::kRdmapBaseBounds, "RDMAP remote protection: base or bounds violation"},
      {term::kRdmapAccessRights, "RDMAP remote protection: access rights violation"},
      {term::kRdmapStagNotAssociated,
       "RDMAP remote protection: STag not associated with this stream"},
      {term::kRdmapToWrap, "RDMAP remote protection: tagged offset wrap"},
      {term::kRdmapCannotInvalidateProt, "RDMAP remote protection: STag cannot be invalidated"},
      {term::kRdmapProtUnspecified, "RDMAP remote protection: unspecified error"},
      {term::kRdmapBadVersion, "RDMAP remote operation: invalid RDMAP version"},
      {term::kRdmapUnexpectedOpcode, "RDMAP remote operation: unexpected opcode"},
      {term::kRdmapCatastrophicStream, "RDMAP remote operation: catastrophic error, stream"},
      {term::kRdmapCatastrophicGlobal, "RDMAP remote operation: catastrophic error, global"},
      {term::kRdmapCannotInvalidateOp, "RDMAP remote operation: STag cannot be invalidated"},
      {term::kRdmapOpUnspecified, "RDMAP remote operation: unspecified error"},
      {term::kDdpLocalCatastrophic, "DDP local catastrophic error"},
      {term::kDdpTaggedInvalidStag, "DDP tagged buffer: invalid STag"},
      {term::kDdpTaggedBaseBounds, "DDP tagged buffer: base or bounds violation"},
      {term::kDdpTaggedStagNotAssociated, "DDP tagged buffer: STag not associated with stream"},
      {term::kDdpTaggedToWrap, "DDP tagged buffer: tagged offset wrap"},
      {term::kDdpTaggedBadVersion, "DDP tagged buffer: invalid DDP version"},
      {term::kDdpUntaggedInvalidQn, "DDP untagged buffer: invalid queue number"},
      {term::kDdpUntaggedNoBuffer, "DDP untagged buffer: no receive buffer posted"},
      {term::kDdpUntaggedMsnRange, "DDP untagged buffer: invalid MSN range"},
      {term::kDdpUntaggedInvalidMo, "DDP untagged buffer: invalid message offset"},
      {term::kDdpUntaggedTooLong, "DDP untagged buffer: message too long for the receive"},
      {term::kDdpUntaggedBadVersion, "DDP untagged buffer: invalid DDP version"},
      {term::kLlpStreamLost, "LLP: stream lost (connection closed or reset)"},
      {term::kLlpCrcError, "MPA: CRC error"},
      {term::kLlpMarkerMismatch, "MPA: marker or FPDU length error"},
      {term::kLlpInvalidReqRep, "MPA: invalid Request or Reply frame"},
      {term::kLlpLocalCatastrophic, "MPA: local catastrophic error"},
      {term::kLlpInsufficientIrd, "MPA: insufficient IRD resources"},
      {term::kLlpNoMatchingRtr, "MPA: no matching RTR"},
  };
  for (const Name& n : kNames) {
    if (n.cause == c) return n.text;
  }
  switch (c.layer) {
    case term::kLayerRdmap:
      return c.etype == 0 ? "RDMAP local catastrophic error" : "RDMAP: unknown cause";
    case term::kLayerDdp: return "DDP: unknown cause";
    case term::kLayerLlp: return "LLP: unknown cause";
    default: return "unknown Terminate layer";
  }
}

}  // namespace iwarpx::wire
