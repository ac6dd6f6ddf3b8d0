// SctpMessageQueue: SCTP messages received from an association ahead of the
// layer that will consume them, kept whole and in arrival order, each with
// its MessageInfo. Its user: the DDP segments that reach an initiator before
// the session's Accept (cm/sctp_cep.h) and that its QP then receives before
// anything else from the association (qp/sctp_framing.h; docs/wire.md §2.0).
//
// Contract
// - A message is built from the pieces of a (possibly partial) delivery:
//   Begin(info), then Reserve(n) / Commit(k) (receive straight into the
//   queue) or Append(bytes) for each piece, then End(). Only ended messages
//   are visible to front() / Pop(); at most one message is open at a time.
// - bytes() charges every message (the open one included) its payload plus
//   kOverheadPerMessage, so a caller that bounds bytes() bounds the memory
//   whatever the message sizes (a flood of 1-byte messages included). The
//   queue itself sets no limit.
// - Misuse (Begin while open, Commit more than reserved, End or Append with
//   nothing open, front()/Pop() when empty()) is a caller bug: the calls
//   ignore it (front() then returns an empty span).
// Value type, movable; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "base/bytes.h"
#include "transport/sctp.h"

namespace iwarpx::transport {

class SctpMessageQueue {
 public:
  static constexpr size_t kOverheadPerMessage = 32;

  void Begin(const MessageInfo& info);
  // Room for up to `n` more bytes of the open message (empty if none is
  // open); Commit(k <= n) keeps the first k of them.
  MutableByteSpan Reserve(size_t n);
  void Commit(size_t k);
  void Append(ByteSpan bytes);
  void End();

  [[nodiscard]] bool open() const { return open_; }
  // The open message's info and length so far (open() only).
  [[nodiscard]] const MessageInfo& open_info() const { return entries_.back().info; }
  [[nodiscard]] size_t open_length() const { return open_ ? entries_.back().length : 0; }

  // Ended messages.
  [[nodiscard]] size_t messages() const { return entries_.size() - (open_ ? 1 : 0); }
  [[nodiscard]] bool empty() const { return messages() == 0; }
  [[nodiscard]] size_t bytes() const { return charged_; }
  // The oldest ended message and its info.
  [[nodiscard]] ByteSpan front() const;
  [[nodiscard]] MessageInfo front_info() const;
  void Pop();

 private:
  struct Entry {
    MessageInfo info;
    size_t offset = 0;  // into data_
    size_t length = 0;
  };
  std::vector<uint8_t> data_;  // payloads back to back; freed when the queue empties
  std::deque<Entry> entries_;  // oldest first; the last one is open when open_
  bool open_ = false;
  size_t reserved_ = 0;  // bytes of data_ past the open message handed out by Reserve
  size_t charged_ = 0;
};

}  // namespace iwarpx::transport
