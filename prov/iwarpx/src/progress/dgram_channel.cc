#include "progress/dgram_channel.h"

#include <utility>

#include "transport/poller.h"

namespace iwarpx::progress {

Result<std::unique_ptr<DgramChannel>, transport::IoError> DgramChannel::Open(
    Engine& engine, const transport::SockAddr& local, const rd::PortConfig& port,
    const rd::UdConfig& qp, rd::UdSink& sink, const transport::FaultSpec& faults) {
  auto socket = transport::UdpSocket::Bind(local);
  if (!socket.ok()) return Err{socket.error()};
  std::unique_ptr<DgramChannel> ch(new DgramChannel(engine));
  if (faults.any()) {
    ch->socket_ = std::make_unique<transport::FaultInjector>(std::move(socket).value(), faults);
  } else {
    ch->socket_ = std::move(socket).value();
  }
  ch->port_ = std::make_unique<rd::DgramPort>(*ch->socket_, port);
  ch->qp_ = std::make_unique<rd::UdQp>(*ch->port_, qp, sink);
  if (const transport::Status s = engine.Add(*ch); !s.ok()) {
    return Err{transport::IoError{transport::IoStatus::kError, s.err}};
  }
  return ch;
}

DgramChannel::~DgramChannel() {
  engine_.Remove(*this);
  qp_.reset();  // detaches from the port before the port goes
}

uint32_t DgramChannel::interest() const {
  uint32_t want = transport::Poller::kReadable;
  if (qp_->wants_write()) want |= transport::Poller::kWritable;
  return want;
}

void DgramChannel::OnReady(uint32_t events) {
  if ((events & transport::Poller::kWritable) != 0) qp_->OnWritable();
  if ((events & (transport::Poller::kReadable | transport::Poller::kError)) != 0) {
    port_->OnReadable(kReadBudget);
  }
}

void DgramChannel::AfterPost() {
  engine_.Update(*this);
}

void DgramChannel::CollectStats(EndpointStats* out) const {
  AddPort(port_->counters(), out);
  AddUd(qp_->counters(), out);
}

}  // namespace iwarpx::progress
