#include "progress/msg_listener.h"

#include <algorithm>
#include <cerrno>

#include "transport/poller.h"
#include "transport/tcp.h"

namespace iwarpx::progress {

MsgListener::MsgListener(Engine& engine, std::unique_ptr<transport::Listener> listener,
                         const ChannelConfig& config, ListenerSink& sink)
    : engine_(engine), listener_(std::move(listener)), config_(config), sink_(sink) {}

MsgListener::~MsgListener() {
  engine_.Remove(*this);
  channels_.clear();
}

Result<std::unique_ptr<MsgListener>, int> MsgListener::Listen(Engine& engine,
                                                              const transport::SockAddr& addr,
                                                              const ChannelConfig& config,
                                                              int backlog, ListenerSink& sink) {
  if (config.llp == Llp::kSctp) {
    transport::SctpOptions options = config.sctp;
    options.backlog = backlog;
    auto l = transport::SctpListen(config.sctp_backend, addr, options);
    if (!l.ok()) return Err{l.error().err != 0 ? l.error().err : EIO};
    std::unique_ptr<MsgListener> ml(new MsgListener(
        engine, std::unique_ptr<transport::Listener>(std::move(l).value()), config, sink));
    if (const transport::Status s = engine.Add(*ml); !s.ok()) return Err{s.err};
    return ml;
  }
  auto bound = transport::TcpBoundSocket::Bind(addr);
  if (!bound.ok()) return Err{bound.error().err != 0 ? bound.error().err : EIO};
  return ListenOn(engine, std::move(bound).value(), config, backlog, sink);
}

Result<std::unique_ptr<MsgListener>, int> MsgListener::ListenOn(Engine& engine,
                                                                transport::TcpBoundSocket source,
                                                                const ChannelConfig& config,
                                                                int backlog, ListenerSink& sink) {
  if (config.llp != Llp::kTcp) return Err{EPROTONOSUPPORT};
  auto l = transport::TcpListener::ListenOn(std::move(source), backlog);
  if (!l.ok()) return Err{l.error().err != 0 ? l.error().err : EIO};
  std::unique_ptr<MsgListener> ml(new MsgListener(engine, std::move(l).value(), config, sink));
  if (const transport::Status s = engine.Add(*ml); !s.ok()) return Err{s.err};
  return ml;
}

uint32_t MsgListener::interest() const {
  return transport::Poller::kReadable;
}

void MsgListener::OnReady(uint32_t /*events*/) {
  Reap();
  // A bounded batch per pass, so one busy listener cannot starve the rest.
  for (int i = 0; i < 16; ++i) {
    auto c = listener_->Accept();
    if (!c.ok()) {
      if (c.error().status == transport::IoStatus::kWouldBlock) return;
      continue;  // that one connection failed (ECONNABORTED...); keep accepting
    }
    auto ch = MsgChannel::Respond(engine_, config_, std::move(c).value(), *this);
    if (!ch.ok()) continue;  // the connection is closed as it goes out of scope
    channels_.push_back(std::move(ch).value());
  }
}

void MsgListener::OnRequest(MsgChannel& channel) {
  sink_.OnRequest(channel);
}

void MsgListener::OnUnacceptedDone(MsgChannel& channel) {
  sink_.OnRequestGone(channel);
  done_.push_back(&channel);
  engine_.Update(*this);
}

void MsgListener::Reap() {
  for (MsgChannel* ch : done_) {
    std::erase_if(channels_, [ch](const std::unique_ptr<MsgChannel>& c) { return c.get() == ch; });
  }
  done_.clear();
}

std::unique_ptr<MsgChannel> MsgListener::Take(MsgChannel* channel) {
  if (std::find(done_.begin(), done_.end(), channel) != done_.end()) return nullptr;
  const auto it = std::find_if(channels_.begin(), channels_.end(),
                               [channel](const auto& c) { return c.get() == channel; });
  if (it == channels_.end()) return nullptr;
  std::unique_ptr<MsgChannel> out = std::move(*it);
  channels_.erase(it);
  return out;
}

bool MsgListener::Owns(const MsgChannel* channel) const {
  return std::any_of(channels_.begin(), channels_.end(),
                     [channel](const auto& c) { return c.get() == channel; });
}

}  // namespace iwarpx::progress
