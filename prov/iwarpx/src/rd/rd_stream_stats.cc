// RdStream::stats (rd_stream.h): the per-datagram counters the stream keeps
// inline, laid over the block of the others (made at their first count).
#include "rd/rd_stream.h"

namespace iwarpx::rd {

RdStreamStats RdStream::stats() const {
  RdStreamStats s = rare_ != nullptr ? *rare_ : RdStreamStats{};
  s.data_sent = stats_.data_sent;
  s.acks_sent = stats_.acks_sent;
  s.data_received = stats_.data_received;
  return s;
}

}  // namespace iwarpx::rd
