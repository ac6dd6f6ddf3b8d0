// SctpMessageQueue (see the header for the contract).
#include "transport/sctp_message_queue.h"

#include <algorithm>
#include <cstring>

namespace iwarpx::transport {

void SctpMessageQueue::Begin(const MessageInfo& info) {
  if (open_) return;
  Entry e;
  e.info = info;
  e.offset = data_.size();
  entries_.push_back(e);
  open_ = true;
  reserved_ = 0;
  charged_ += kOverheadPerMessage;
}

MutableByteSpan SctpMessageQueue::Reserve(size_t n) {
  if (!open_) return {};
  const Entry& e = entries_.back();
  const size_t end = e.offset + e.length;
  data_.resize(end + n);
  reserved_ = n;
  return {data_.data() + end, n};
}

void SctpMessageQueue::Commit(size_t k) {
  if (!open_) return;
  Entry& e = entries_.back();
  k = std::min(k, reserved_);
  e.length += k;
  charged_ += k;
  reserved_ = 0;
  data_.resize(e.offset + e.length);
}

void SctpMessageQueue::Append(ByteSpan bytes) {
  const MutableByteSpan room = Reserve(bytes.size());
  if (room.size() != bytes.size()) return;
  if (!bytes.empty()) std::memcpy(room.data(), bytes.data(), bytes.size());
  Commit(bytes.size());
}

void SctpMessageQueue::End() {
  if (!open_) return;
  Commit(0);
  open_ = false;
}

ByteSpan SctpMessageQueue::front() const {
  if (empty()) return {};
  const Entry& e = entries_.front();
  return {data_.data() + e.offset, e.length};
}

MessageInfo SctpMessageQueue::front_info() const {
  return empty() ? MessageInfo{} : entries_.front().info;
}

void SctpMessageQueue::Pop() {
  if (empty()) return;
  charged_ -= kOverheadPerMessage + entries_.front().length;
  entries_.pop_front();
  if (entries_.empty()) {
    data_.clear();
    data_.shrink_to_fit();
  }
}

}  // namespace iwarpx::transport
