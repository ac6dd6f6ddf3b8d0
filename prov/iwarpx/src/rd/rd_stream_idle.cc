// RdStream::ReleaseIdle (rd_stream.h): the buffers of a stream with nothing
// in flight either way go back to the heap. Each part is made again by the
// branch that grows it on the send or receive path (GrowTx from
// buf_cap_ == 0, SeqRing::Grow from size 0), which a busy stream takes only
// while it grows, never per datagram.
#include "rd/rd_stream.h"

namespace iwarpx::rd {

size_t RdStream::ReleaseIdle() {
  size_t bytes = 0;
  if (tx_head_ == tx_tail_ && buf_used_ == 0 && pending_count_ == 0 && buf_cap_ != 0) {
    bytes += buf_cap_;
    buf_.reset();
    buf_cap_ = 0;
    buf_head_ = buf_tail_ = 0;
    bytes += tx_.Release();
    bytes += pending_.Release();
  }
  bytes += send_.ReleaseIdle();
  if (!inflight_active_ && recv_.backlog() == 0 && !recv_.AnyHeld()) bytes += hold_.Release();
  return bytes;
}

}  // namespace iwarpx::rd
