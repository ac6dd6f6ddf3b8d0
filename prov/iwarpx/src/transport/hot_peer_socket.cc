#include "transport/hot_peer_socket.h"

#include <cerrno>
#include <utility>

namespace iwarpx::transport {

Result<std::unique_ptr<HotPeerSocket>, IoError> HotPeerSocket::Create(
    std::unique_ptr<UdpSocket> main) {
  if (main == nullptr) return Err{IoError{IoStatus::kError, EINVAL}};
  if (const Status s = main->ShareAddress(); !s.ok()) return Err{IoError{IoStatus::kError, s.err}};
  return std::unique_ptr<HotPeerSocket>(new HotPeerSocket(std::move(main)));
}

Status HotPeerSocket::Connect(const SockAddr& peer) {
  if (hot_ != nullptr) return Status{EALREADY};
  auto hot = UdpSocket::BindConnected(main_->local_address(), peer);
  if (!hot.ok()) return Status{hot.error().err};
  // Best effort, as for the main socket: a smaller buffer costs retransmissions.
  if (send_buffer_ > 0) (void)hot.value()->SetSendBufferSize(send_buffer_);
  if (recv_buffer_ > 0) (void)hot.value()->SetRecvBufferSize(recv_buffer_);
  hot_ = std::move(hot).value();
  peer_ = peer;
  hot_blocked_ = false;
  return Status{};
}

void HotPeerSocket::Disconnect() {
  hot_.reset();
  peer_ = SockAddr{};
  hot_blocked_ = false;
}

IoResult HotPeerSocket::SendTo(const SockAddr& to, std::span<const iovec> iov) {
  if (!ToHot(to)) {
    const IoResult r = main_->SendTo(to, iov);
    main_blocked_ = r.status == IoStatus::kWouldBlock;
    return r;
  }
  const IoResult r = hot_->SendTo(to, iov);
  hot_blocked_ = r.status == IoStatus::kWouldBlock;
  if (r.status == IoStatus::kError && r.err == ECONNREFUSED) return IoResult::Ok(TotalLength(iov));
  return r;
}

BatchResult HotPeerSocket::SendBatch(std::span<DgramMessage> msgs) {
  if (msgs.empty()) return {};
  const bool hot = ToHot(msgs[0].addr);
  size_t run = 1;
  while (run < msgs.size() && ToHot(msgs[run].addr) == hot) ++run;
  if (!hot) {
    const BatchResult r = main_->SendBatch(msgs.first(run));
    main_blocked_ = r.status == IoStatus::kWouldBlock;
    return r;
  }
  const BatchResult r = hot_->SendBatch(msgs.first(run));
  hot_blocked_ = r.status == IoStatus::kWouldBlock;
  if (r.status == IoStatus::kError && r.err == ECONNREFUSED) {
    msgs[0].bytes = TotalLength(msgs[0].iov);
    msgs[0].truncated = false;
    return {1, IoStatus::kOk, 0};
  }
  return r;
}

BatchResult HotPeerSocket::RecvBatch(std::span<DgramMessage> msgs) {
  if (hot_ == nullptr || msgs.empty()) return main_->RecvBatch(msgs);
  BatchResult first = hot_->RecvBatch(msgs);
  if (first.status == IoStatus::kError && first.err == ECONNREFUSED)
    first = {0, IoStatus::kWouldBlock, 0};
  if (first.status == IoStatus::kError) return first;
  if (first.count == msgs.size() || hot_only_) return first;
  const BatchResult rest = main_->RecvBatch(msgs.subspan(first.count));
  if (first.count == 0) return rest;
  // The main socket's error, if any, shows up on the next call.
  return {first.count + (rest.ok() ? rest.count : 0), IoStatus::kOk, 0};
}

Result<int, IoError> HotPeerSocket::SetSendBufferSize(int bytes) {
  send_buffer_ = bytes;
  if (hot_ != nullptr) (void)hot_->SetSendBufferSize(bytes);
  return main_->SetSendBufferSize(bytes);
}

Result<int, IoError> HotPeerSocket::SetRecvBufferSize(int bytes) {
  recv_buffer_ = bytes;
  if (hot_ != nullptr) (void)hot_->SetRecvBufferSize(bytes);
  return main_->SetRecvBufferSize(bytes);
}

}  // namespace iwarpx::transport
