#include "progress/dgram_channel.h"

#include <cerrno>
#include <new>
#include <utility>

#include "transport/poller.h"

namespace iwarpx::progress {

Result<std::unique_ptr<DgramChannel>, transport::IoError> DgramChannel::Open(
    Engine& engine, const transport::SockAddr& local, const rd::PortConfig& port,
    const rd::UdConfig& qp, rd::UdSink& sink, const transport::FaultSpec& faults) {
  auto ch = OpenShared(engine, local, port, faults);
  if (ch.ok() && (*ch)->AddQp(qp, sink) == nullptr) {
    return Err{transport::IoError{transport::IoStatus::kError, ENOMEM}};
  }
  return ch;
}

Result<std::unique_ptr<DgramChannel>, transport::IoError> DgramChannel::OpenShared(
    Engine& engine, const transport::SockAddr& local, const rd::PortConfig& port,
    const transport::FaultSpec& faults) {
  auto socket = transport::UdpSocket::Bind(local);
  if (!socket.ok()) return Err{socket.error()};
  std::unique_ptr<DgramChannel> ch(new DgramChannel(engine));
  if (faults.any()) {
    auto injector = std::make_unique<transport::FaultInjector>(std::move(socket).value(), faults);
    ch->faults_ = injector.get();
    ch->socket_ = std::move(injector);
  } else {
    ch->socket_ = std::move(socket).value();
  }
  ch->port_ = std::make_unique<rd::DgramPort>(*ch->socket_, port);
  if (const transport::Status s = engine.Add(*ch); !s.ok()) {
    return Err{transport::IoError{transport::IoStatus::kError, s.err}};
  }
  return ch;
}

DgramChannel::~DgramChannel() {
  engine_.Remove(*this);
  qps_.clear();  // they detach from the port before the port goes
}

rd::UdQp* DgramChannel::AddQp(const rd::UdConfig& config, rd::UdSink& sink) {
  auto qp = std::unique_ptr<rd::UdQp>(new (std::nothrow) rd::UdQp(*port_, config, sink));
  if (qp == nullptr || (config.receives && !qp->attached())) return nullptr;
  qps_.push_back(std::move(qp));
  return qps_.back().get();
}

void DgramChannel::RemoveQp(rd::UdQp* qp) {
  std::erase_if(qps_, [qp](const std::unique_ptr<rd::UdQp>& q) { return q.get() == qp; });
  engine_.Update(*this);
}

uint32_t DgramChannel::interest() const {
  uint32_t want = transport::Poller::kReadable;
  for (const auto& qp : qps_) {
    if (qp->wants_write()) return want | transport::Poller::kWritable;
  }
  return want;
}

void DgramChannel::OnReady(uint32_t events) {
  if ((events & transport::Poller::kWritable) != 0) {
    for (const auto& qp : qps_) qp->OnWritable();
  }
  if ((events & (transport::Poller::kReadable | transport::Poller::kError)) != 0) {
    port_->OnReadable(kReadBudget);
  }
}

void DgramChannel::AfterPost() {
  engine_.Update(*this);
}

void DgramChannel::CollectStats(EndpointStats* out) const {
  AddPort(port_->counters(), out);
  if (faults_ != nullptr) AddFaults(faults_->counters(), out);
  for (const auto& qp : qps_) AddUd(qp->counters(), out);
}

}  // namespace iwarpx::progress
