// MsgListener: a passive endpoint. Accepts TCP connections or SCTP
// associations (ChannelConfig::llp), runs the responder side of the setup on
// each (MsgChannel: MPA, or the RFC 5043 session Initiate), and reports every
// complete Request to its owner, which accepts or rejects it. Under usrsctp
// the SCTP port follows transport/sctp.h "Addresses under usrsctp".
//
// Contract
// - Channels belong to the listener until Take() hands one to the endpoint
//   that accepts it. A channel that is rejected or that fails before the
//   owner decides (the initiator left, the Request timed out or was not MPA)
//   is destroyed by the listener the next time it runs or when it is
//   destroyed; the owner learns of it through ListenerSink::OnRequestGone.
// - Every call needs the engine lock; the sink is called with it held.
#pragma once

#include <memory>
#include <vector>

#include "base/result.h"
#include "progress/engine.h"
#include "progress/msg_channel.h"
#include "transport/sock_addr.h"
#include "transport/tcp.h"
#include "transport/transport.h"

namespace iwarpx::progress {

class ListenerSink {
 public:
  virtual ~ListenerSink() = default;
  // A Request arrived on `channel` (kAwaitingDecision): its private data is
  // channel.peer_private_data().
  virtual void OnRequest(MsgChannel& channel) = 0;
  // A channel reported by OnRequest ended before it was taken; it is
  // destroyed right after this call returns (at the latest on the next pass).
  virtual void OnRequestGone(MsgChannel& channel) = 0;
};

class MsgListener final : public Pollable, private RequestObserver {
 public:
  // Listens on `addr` (port 0: ephemeral) with config.llp. errno on failure.
  static Result<std::unique_ptr<MsgListener>, int> Listen(Engine& engine,
                                                          const transport::SockAddr& addr,
                                                          const ChannelConfig& config, int backlog,
                                                          ListenerSink& sink);
  // Listens on a reserved TCP address (consumed; closed on failure);
  // EPROTONOSUPPORT when config.llp is SCTP.
  static Result<std::unique_ptr<MsgListener>, int> ListenOn(Engine& engine,
                                                            transport::TcpBoundSocket source,
                                                            const ChannelConfig& config,
                                                            int backlog, ListenerSink& sink);
  ~MsgListener() override;

  // Transfers ownership of a channel this listener reported; nullptr if it is
  // not (or no longer) one of its channels.
  std::unique_ptr<MsgChannel> Take(MsgChannel* channel);
  // True while `channel` is one of this listener's channels.
  [[nodiscard]] bool Owns(const MsgChannel* channel) const;

  [[nodiscard]] transport::SockAddr local_address() const { return listener_->local_address(); }
  [[nodiscard]] size_t channels() const { return channels_.size(); }

  // Pollable.
  [[nodiscard]] int fd() const override { return listener_->fd(); }
  [[nodiscard]] uint32_t interest() const override;
  void OnReady(uint32_t events) override;
  [[nodiscard]] bool has_pending_work() const override { return !done_.empty(); }
  void OnPendingWork() override { Reap(); }

 private:
  MsgListener(Engine& engine, std::unique_ptr<transport::Listener> listener,
              const ChannelConfig& config, ListenerSink& sink);
  void OnRequest(MsgChannel& channel) override;
  void OnUnacceptedDone(MsgChannel& channel) override;
  void Reap();

  Engine& engine_;
  std::unique_ptr<transport::Listener> listener_;
  ChannelConfig config_;
  ListenerSink& sink_;
  std::vector<std::unique_ptr<MsgChannel>> channels_;
  std::vector<MsgChannel*> done_;  // ended, destroyed by Reap()
};

}  // namespace iwarpx::progress
