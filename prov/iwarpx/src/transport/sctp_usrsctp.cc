#include "transport/sctp_usrsctp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>

#include <usrsctp.h>

#include "transport/socket_util.h"
#include "transport/usrsctp_stack.h"
#include "wire/sctp_session.h"

namespace iwarpx::transport {
namespace {

// Holds one UsrsctpStack reference until Keep() hands it to an object.
class StackRef {
 public:
  StackRef() = default;
  ~StackRef() {
    if (held_) UsrsctpStack::Release();
  }
  StackRef(const StackRef&) = delete;
  StackRef& operator=(const StackRef&) = delete;
  Result<uint16_t, IoError> Acquire(uint16_t preferred_port = 0) {
    auto port = UsrsctpStack::Acquire(preferred_port);
    held_ = port.ok();
    return port;
  }
  void Keep() { held_ = false; }

 private:
  bool held_ = false;
};

// Owns a usrsctp socket until released into an object; an error path
// closes it as UsrsctpStack::Close does (an accepted or connecting socket may
// already have an association that receives).
class SocketGuard {
 public:
  explicit SocketGuard(struct socket* so) : so_(so) {}
  ~SocketGuard() {
    if (so_ != nullptr) UsrsctpStack::Close(so_);
  }
  SocketGuard(const SocketGuard&) = delete;
  SocketGuard& operator=(const SocketGuard&) = delete;
  [[nodiscard]] struct socket* get() const { return so_; }
  struct socket* Release() {
    return std::exchange(so_, nullptr);
  }

 private:
  struct socket* so_;
};

template <class T>
int SetOpt(struct socket* so, int level, int name, const T& value) {
  return usrsctp_setsockopt(so, level, name, &value, sizeof(value)) == 0 ? 0 : errno;
}

// The liveness limits (sctp.h "A dead peer") as the socket's defaults for
// its association (SCTP_FUTURE_ASSOC on a socket not yet connected).
int ApplyLimits(struct socket* so, const SctpLimits& limits) {
  sctp_rtoinfo rto{};
  rto.srto_assoc_id = SCTP_FUTURE_ASSOC;
  rto.srto_initial = limits.rto_initial_ms;
  rto.srto_min = limits.rto_min_ms;
  rto.srto_max = limits.rto_max_ms;
  if (const int e = SetOpt(so, IPPROTO_SCTP, SCTP_RTOINFO, rto); e != 0) return e;
  sctp_assocparams assoc{};
  assoc.sasoc_assoc_id = SCTP_FUTURE_ASSOC;
  assoc.sasoc_asocmaxrxt = limits.assoc_max_retrans;
  if (const int e = SetOpt(so, IPPROTO_SCTP, SCTP_ASSOCINFO, assoc); e != 0) return e;
  sctp_paddrparams paddr{};  // no address: the defaults of every path
  paddr.spp_assoc_id = SCTP_FUTURE_ASSOC;
  paddr.spp_hbinterval = limits.heartbeat_interval_ms;
  paddr.spp_pathmaxrxt = limits.path_max_retrans;
  paddr.spp_flags = limits.heartbeat_interval_ms != 0 ? SPP_HB_ENABLE : 0;
  return SetOpt(so, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, paddr);
}

template <class T>
int GetOpt(struct socket* so, int name, T& value) {
  socklen_t len = sizeof(value);
  return usrsctp_getsockopt(so, IPPROTO_SCTP, name, &value, &len) == 0 ? 0 : errno;
}

// Throughput options (kept apart from the association limits in Configure).
// usrsctp's default max burst of 4 packets also clamps the congestion window
// to flight size + 4 MTUs each time it sends (sysctl
// use_cwnd_based_maxburst), so every message that starts with nothing in
// flight leaves in bursts of 4 packets, one SACK round trip apart: a 64 KiB
// DDP segment is ~45 packets at usrsctp's fixed 1500-byte route MTU, about
// 11 round trips through both stacks' threads. Max burst 0 switches that
// limit off; the window then grows and a message goes out in one pass.
// The receive buffer (the association's receive window) is the stack's
// association_receive_buffer() (usrsctp_stack.h "Receive buffers"): with
// usrsctp's 128 KiB, unordered Read Responses hit a closed window (DATA
// dropped, sctps_datadroprwnd) that only the T3 timer recovers, ~0.6 s each
// (docs/design.md). Set on listeners too: accepted sockets inherit it.
int ConfigureThroughput(struct socket* so) {
  sctp_assoc_value burst{};
  burst.assoc_id = SCTP_FUTURE_ASSOC;
  burst.assoc_value = 0;
  if (const int e = SetOpt(so, IPPROTO_SCTP, SCTP_MAX_BURST, burst); e != 0) return e;
  const int rcvbuf = UsrsctpStack::association_receive_buffer();
  if (rcvbuf == 0) return 0;
  return SetOpt(so, SOL_SOCKET, SO_RCVBUF, rcvbuf);
}

// The options every socket gets (listeners pass them on to accepted ones).
int Configure(struct socket* so, const SctpOptions& options) {
  if (usrsctp_set_non_blocking(so, 1) != 0) return errno;
  if (const int e = SetOpt(so, IPPROTO_SCTP, SCTP_NODELAY, 1); e != 0) return e;
  if (const int e = SetOpt(so, IPPROTO_SCTP, SCTP_RECVRCVINFO, 1); e != 0) return e;
  if (const int e = ConfigureThroughput(so); e != 0) return e;
  sctp_initmsg init{};
  init.sinit_num_ostreams = options.streams;
  init.sinit_max_instreams = options.streams;
  init.sinit_max_attempts = options.max_init_attempts;
  init.sinit_max_init_timeo = options.max_init_timeout_ms;
  if (const int e = SetOpt(so, IPPROTO_SCTP, SCTP_INITMSG, init); e != 0) return e;
  // SCTP_ASSOC_CHANGE notifications: SCTP_SHUTDOWN_COMP is how RecvMsg
  // learns of the end of a gracefully shut-down association (see
  // ReadNotification).
  sctp_event assoc_change{};
  assoc_change.se_assoc_id = SCTP_FUTURE_ASSOC;
  assoc_change.se_type = SCTP_ASSOC_CHANGE;
  assoc_change.se_on = 1;
  if (const int e = SetOpt(so, IPPROTO_SCTP, SCTP_EVENT, assoc_change); e != 0) return e;
  // The peer's Adaptation Layer Indication (sctp.h), queued ahead of data.
  sctp_event adaptation_event = assoc_change;
  adaptation_event.se_type = SCTP_ADAPTATION_INDICATION;
  if (const int e = SetOpt(so, IPPROTO_SCTP, SCTP_EVENT, adaptation_event); e != 0) return e;
  if (options.adaptation_indication) {
    sctp_setadaptation adaptation{};
    adaptation.ssb_adaptation_ind = *options.adaptation_indication;
    if (const int e = SetOpt(so, IPPROTO_SCTP, SCTP_ADAPTATION_LAYER, adaptation); e != 0) {
      return e;
    }
  }
  return ApplyLimits(so, options.limits);
}

// A configured socket of `family` with its doorbell registered. On success
// the caller owns the socket (guard released) and the doorbell.
struct NewSocket {
  struct socket* so = nullptr;
  UniqueFd doorbell;
};

Result<NewSocket, IoError> OpenConfigured(int family, const SctpOptions& options) {
  SocketGuard so(usrsctp_socket(family, SOCK_STREAM, IPPROTO_SCTP, nullptr, nullptr, 0, nullptr));
  if (so.get() == nullptr) return Err{IoError{IoStatus::kError, errno != 0 ? errno : ENOMEM}};
  if (const int e = Configure(so.get(), options); e != 0) return Err{IoError{IoStatus::kError, e}};
  auto bell = UsrsctpStack::MakeDoorbell();
  if (!bell.ok()) return Err{bell.error()};
  if (const int e = UsrsctpStack::Register(so.get(), bell->get()); e != 0) {
    return Err{IoError{IoStatus::kError, e}};
  }
  return NewSocket{so.Release(), std::move(bell).value()};
}

SockAddr FirstAddress(struct socket* so, bool peer) {
  struct sockaddr* addrs = nullptr;
  const int n = peer ? usrsctp_getpaddrs(so, 0, &addrs) : usrsctp_getladdrs(so, 0, &addrs);
  SockAddr out;
  if (n > 0 && addrs != nullptr) {
    const socklen_t len = addrs->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    if (auto a = SockAddr::FromRaw(addrs, len)) out = *a;
  }
  if (addrs != nullptr) {
    if (peer) {
      usrsctp_freepaddrs(addrs);
    } else {
      usrsctp_freeladdrs(addrs);
    }
  }
  return out;
}

// The association's local address the peer most likely sees: of the bound
// addresses (every interface's, for a wildcard bind) the first of the
// peer's family and scope (loopback for a loopback peer, not loopback
// otherwise); else the first one.
SockAddr LocalAddressFacing(struct socket* so, const SockAddr& peer) {
  struct sockaddr* addrs = nullptr;
  const int n = usrsctp_getladdrs(so, 0, &addrs);
  SockAddr first;
  SockAddr best;
  const auto* p = reinterpret_cast<const uint8_t*>(addrs);
  for (int i = 0; i < n && p != nullptr; ++i) {
    const auto* sa = reinterpret_cast<const sockaddr*>(p);
    if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) break;  // packed by family size
    const socklen_t len = sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    if (auto a = SockAddr::FromRaw(sa, len)) {
      if (!first.valid()) first = *a;
      if (peer.valid() && a->family() == peer.family() && a->is_loopback() == peer.is_loopback()) {
        best = *a;
        break;
      }
    }
    p += len;
  }
  if (addrs != nullptr) usrsctp_freeladdrs(addrs);
  return best.valid() ? best : first;
}

// What ReadNotification found: the SCTP_ASSOC_CHANGE state or the
// SCTP_ADAPTATION_INDICATION value; neither for any other notification.
struct Notification {
  std::optional<uint16_t> assoc_state;
  std::optional<uint32_t> adaptation;
};

// A notification whose first `n` bytes are in `head` (`flags` from that
// recvv): reads and drops the rest of it.
//
// Why the end of an association is learnt from SCTP_SHUTDOWN_COMP and not
// only from end of stream (usrsctp 0.9.5, sctp_pcb.c sctp_free_assoc): when
// the SHUTDOWN exchange completes while a send or receive call holds a
// reference on the association (another thread inside usrsctp_sendv, say),
// usrsctp frees it later from its ASOCKILL timer, and that timer calls no
// socket upcall: the socket turns readable (end of stream) and the doorbell
// never rings. The notification is queued while the inbound SHUTDOWN-ACK or
// SHUTDOWN-COMPLETE is processed, and that path does call the upcall.
Notification ReadNotification(struct socket* so, const void* head, size_t n, int flags) {
  std::array<uint8_t, std::max(sizeof(sctp_assoc_change), sizeof(sctp_adaptation_event))> first{};
  size_t have = std::min(n, first.size());
  std::memcpy(first.data(), head, have);
  while ((flags & MSG_EOR) == 0) {  // a buffer smaller than the notification
    std::array<uint8_t, 256> more{};
    sctp_rcvinfo rcv{};
    socklen_t infolen = sizeof(rcv);
    unsigned int infotype = 0;
    sockaddr_storage from{};
    socklen_t fromlen = sizeof(from);
    flags = 0;
    const ssize_t r =
        usrsctp_recvv(so, more.data(), more.size(), reinterpret_cast<sockaddr*>(&from), &fromlen,
                      &rcv, &infolen, &infotype, &flags);
    if (r <= 0) break;  // a notification is queued whole: not reached
    const size_t take = std::min(static_cast<size_t>(r), first.size() - have);
    std::memcpy(first.data() + have, more.data(), take);
    have += take;
  }
  Notification out;
  sctp_notification::sctp_tlv h{};
  if (have < sizeof(h)) return out;
  std::memcpy(&h, first.data(), sizeof(h));
  if (h.sn_type == SCTP_ASSOC_CHANGE &&
      have >= offsetof(sctp_assoc_change, sac_state) + sizeof(uint16_t)) {
    sctp_assoc_change sac{};
    std::memcpy(&sac, first.data(), std::min(have, sizeof(sac)));
    out.assoc_state = sac.sac_state;
  } else if (h.sn_type == SCTP_ADAPTATION_INDICATION &&
             have >= offsetof(sctp_adaptation_event, sai_adaptation_ind) + sizeof(uint32_t)) {
    sctp_adaptation_event sai{};
    std::memcpy(&sai, first.data(), std::min(have, sizeof(sai)));
    out.adaptation = sai.sai_adaptation_ind;
  }
  return out;
}

// Pending socket error (SO_ERROR), 0 when none.
int PendingError(struct socket* so) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (usrsctp_getsockopt(so, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return 0;
  return err;
}

}  // namespace

// ---- UsrsctpConnection --------------------------------------------------

UsrsctpConnection::UsrsctpConnection(struct socket* so, UniqueFd doorbell, bool connected)
    : so_(so), doorbell_(std::move(doorbell)), connected_(connected) {
  // Keep this order (the header's "Accepted connections"): the doorbell is
  // registered (the caller did it), then LearnAssociation's SCTP_STATUS
  // takes the association's lock, so a packet usrsctp began to process
  // before the accept (its upcall aimed at the listener) has queued its
  // data; then the ring reports that data.
  if (connected_) LearnAssociation();
  // Send space matters while connecting; once connected only after EAGAIN.
  WantWrite(!connected_);
  // Anything that happened before the doorbell was registered is reported.
  UsrsctpStack::Ring(doorbell_.get());
}

UsrsctpConnection::~UsrsctpConnection() {
  UsrsctpStack::Close(so_);
  UsrsctpStack::Release();
}

void UsrsctpConnection::LearnAssociation() {
  const SockAddr peer = FirstAddress(so_, true);
  if (peer.valid()) peer_ = peer;
  local_ = LocalAddressFacing(so_, peer_);
  if (auto st = UsrsctpStack::Status(so_); st.ok()) outbound_streams_ = st->sstat_outstrms;
}

void UsrsctpConnection::Rearm() {
  UsrsctpStack::Drain(doorbell_.get());
  const int events = usrsctp_get_events(so_);
  if ((events & (SCTP_EVENT_READ | SCTP_EVENT_ERROR)) != 0 ||
      (want_write_ && (events & SCTP_EVENT_WRITE) != 0)) {
    UsrsctpStack::Ring(doorbell_.get());
  }
}

void UsrsctpConnection::WantWrite(bool want) {
  if (want_write_ == want) return;
  want_write_ = want;
  UsrsctpStack::SetWantWrite(so_, want);
}

Result<std::unique_ptr<UsrsctpConnection>, IoError> UsrsctpConnection::Connect(
    const SockAddr& peer, const SctpOptions& options) {
  if (!peer.valid()) return Err{IoError{IoStatus::kError, EAFNOSUPPORT}};
  StackRef stack;
  if (auto port = stack.Acquire(); !port.ok()) return Err{port.error()};
  auto opened = OpenConfigured(peer.family(), options);
  if (!opened.ok()) return Err{opened.error()};
  NewSocket sock = std::move(opened).value();
  SocketGuard so(sock.so);
  sctp_udpencaps encaps{};
  encaps.sue_address.ss_family = static_cast<sa_family_t>(peer.family());
  encaps.sue_assoc_id = SCTP_FUTURE_ASSOC;
  encaps.sue_port = htons(options.peer_encaps_port != 0 ? options.peer_encaps_port : peer.port());
  if (const int e = SetOpt(so.get(), IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, encaps); e != 0) {
    UsrsctpStack::Unregister(so.get());
    return Err{IoError{IoStatus::kError, e}};
  }
  sockaddr_storage to{};
  std::memcpy(&to, peer.sa(), peer.length());
  bool connected = true;
  if (usrsctp_connect(so.get(), reinterpret_cast<sockaddr*>(&to), peer.length()) != 0) {
    if (errno != EINPROGRESS) {
      const int e = errno;
      UsrsctpStack::Unregister(so.get());
      return Err{IoError{IoStatus::kError, e}};
    }
    connected = false;
  }
  auto conn = std::unique_ptr<UsrsctpConnection>(
      new UsrsctpConnection(so.Release(), std::move(sock.doorbell), connected));
  stack.Keep();
  conn->peer_ = peer;
  return conn;
}

IoResult UsrsctpConnection::FinishConnect() {
  if (connected_) return IoResult::Ok(0);
  if (const int e = PendingError(so_); e != 0) return IoResult::Error(e);
  auto st = UsrsctpStack::Status(so_);
  if (!st.ok()) {
    // No association any more: it was aborted (refused) or timed out.
    return IoResult::Error(st.error().err == EINVAL ? ECONNREFUSED : st.error().err);
  }
  if (st->sstat_state == SCTP_ESTABLISHED) {
    connected_ = true;
    WantWrite(false);
    LearnAssociation();
    return IoResult::Ok(0);
  }
  if (st->sstat_state == SCTP_COOKIE_WAIT || st->sstat_state == SCTP_COOKIE_ECHOED) {
    Rearm();
    return IoResult::WouldBlock();
  }
  return IoResult::Error(ECONNREFUSED);
}

IoResult UsrsctpConnection::SendMsg(std::span<const iovec> iov, const MessageInfo& info) {
  if (!connected_) return IoResult::WouldBlock();
  if (info.stream >= outbound_streams_) return IoResult::Error(EINVAL);
  const size_t total = TotalLength(iov);
  if (total == 0) return IoResult::Ok(0);  // SCTP has no empty messages
  const void* data = nullptr;
  if (iov.size() == 1) {
    data = iov[0].iov_base;
  } else {
    if (send_staging_.size() < total) send_staging_.resize(total);
    size_t off = 0;
    for (const iovec& v : iov) {
      if (v.iov_len == 0) continue;
      std::memcpy(send_staging_.data() + off, v.iov_base, v.iov_len);
      off += v.iov_len;
    }
    data = send_staging_.data();
  }
  sctp_sndinfo snd{};
  snd.snd_sid = info.stream;
  snd.snd_flags = info.unordered ? SCTP_UNORDERED : 0;
  snd.snd_ppid = htonl(info.ppid);
  const ssize_t n =
      usrsctp_sendv(so_, data, total, nullptr, 0, &snd, sizeof(snd), SCTP_SENDV_SNDINFO, 0);
  if (n >= 0) {
    WantWrite(false);
    return IoResult::Ok(static_cast<size_t>(n));
  }
  const int e = errno;
  if (e == EAGAIN || e == EWOULDBLOCK) {
    WantWrite(true);  // before Rearm's check, so no wake-up is lost
    Rearm();
    return IoResult::WouldBlock();
  }
  return IoResult::Error(e);
}

IoResult UsrsctpConnection::RecvMsg(std::span<const iovec> iov, MessageInfo& info) {
  const size_t total = TotalLength(iov);
  if (total == 0) return IoResult::Ok(0);
  if (peer_closed_) return IoResult::Closed();
  if (!connected_) return IoResult::WouldBlock();
  for (;;) {
    // nullopt: a notification was read; look for the next message.
    if (std::optional<IoResult> r = RecvOnce(iov, total, info)) return *r;
  }
}

std::optional<IoResult> UsrsctpConnection::RecvOnce(std::span<const iovec> iov, size_t total,
                                                    MessageInfo& info) {
  void* buf = nullptr;
  size_t len = 0;
  if (iov.size() == 1) {
    buf = iov[0].iov_base;
    len = iov[0].iov_len;
  } else {
    len = std::min(total, kRecvStaging);
    if (recv_staging_.size() < len) recv_staging_.resize(len);
    buf = recv_staging_.data();
  }
  sctp_rcvinfo rcv{};
  socklen_t infolen = sizeof(rcv);
  unsigned int infotype = 0;
  int flags = 0;
  sockaddr_storage from{};
  socklen_t fromlen = sizeof(from);
  const ssize_t n = usrsctp_recvv(so_, buf, len, reinterpret_cast<sockaddr*>(&from), &fromlen, &rcv,
                                  &infolen, &infotype, &flags);
  if (n < 0) {
    const int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK) {
      Rearm();
      return IoResult::WouldBlock();
    }
    return IoResult::Error(e);
  }
  if (n == 0 && (flags & MSG_EOR) == 0) {
    peer_closed_ = true;
    return IoResult::Closed();
  }
  if ((flags & MSG_NOTIFICATION) != 0) {
    // SCTP_ASSOC_CHANGE and SCTP_ADAPTATION_INDICATION are subscribed.
    // SCTP_COMM_LOST and SCTP_CANT_STR_ASSOC come with SO_ERROR set: the next
    // recvv returns it.
    const Notification note = ReadNotification(so_, buf, static_cast<size_t>(n), flags);
    if (note.adaptation) peer_adaptation_ = note.adaptation;
    if (note.assoc_state == SCTP_SHUTDOWN_COMP) {
      peer_closed_ = true;
      return IoResult::Closed();
    }
    return std::nullopt;
  }
  if (infotype == SCTP_RECVV_RCVINFO) {
    info.ppid = ntohl(rcv.rcv_ppid);
    info.stream = rcv.rcv_sid;
    info.unordered = (rcv.rcv_flags & SCTP_UNORDERED) != 0;
  }
  info.end_of_message = (flags & MSG_EOR) != 0;
  const auto bytes = static_cast<size_t>(n);
  if (iov.size() > 1) {
    size_t off = 0;
    for (const iovec& v : iov) {
      if (off == bytes) break;
      const size_t take = std::min(v.iov_len, bytes - off);
      if (take > 0) std::memcpy(v.iov_base, recv_staging_.data() + off, take);
      off += take;
    }
  }
  return IoResult::Ok(bytes);
}

Result<SctpLimits, int> UsrsctpConnection::limits() const {
  if (!connected_) return Err{ENOTCONN};
  sctp_rtoinfo rto{};
  if (const int e = GetOpt(so_, SCTP_RTOINFO, rto); e != 0) return Err{e};
  sctp_assocparams assoc{};
  if (const int e = GetOpt(so_, SCTP_ASSOCINFO, assoc); e != 0) return Err{e};
  sctp_paddrparams
      paddr{};  // the wildcard address of the peer's family: the association's defaults
  paddr.spp_address.ss_family = static_cast<sa_family_t>(peer_.valid() ? peer_.family() : AF_INET);
  if (const int e = GetOpt(so_, SCTP_PEER_ADDR_PARAMS, paddr); e != 0) return Err{e};
  SctpLimits out;
  out.rto_initial_ms = rto.srto_initial;
  out.rto_min_ms = rto.srto_min;
  out.rto_max_ms = rto.srto_max;
  out.assoc_max_retrans = assoc.sasoc_asocmaxrxt;
  out.path_max_retrans = paddr.spp_pathmaxrxt;
  out.heartbeat_interval_ms = (paddr.spp_flags & SPP_HB_ENABLE) != 0 ? paddr.spp_hbinterval : 0;
  return out;
}

Result<uint32_t, int> UsrsctpConnection::receive_buffer() const {
  int bytes = 0;
  socklen_t len = sizeof(bytes);
  if (usrsctp_getsockopt(so_, SOL_SOCKET, SO_RCVBUF, &bytes, &len) != 0) return Err{errno};
  return static_cast<uint32_t>(bytes);
}

Result<uint32_t, int> UsrsctpConnection::max_burst() const {
  sctp_assoc_value burst{};
  burst.assoc_id = SCTP_FUTURE_ASSOC;  // one-to-one: the socket's association
  socklen_t len = sizeof(burst);
  if (usrsctp_getsockopt(so_, IPPROTO_SCTP, SCTP_MAX_BURST, &burst, &len) != 0) return Err{errno};
  return burst.assoc_value;
}

Status UsrsctpConnection::ShutdownWrite() {
  if (usrsctp_shutdown(so_, SHUT_WR) == 0 || peer_closed_) return Status{};
  return Status{errno};
}

// ---- UsrsctpListener ------------------------------------------------------

Result<std::unique_ptr<UsrsctpListener>, IoError> UsrsctpListener::Listen(
    const SockAddr& addr, const SctpOptions& options) {
  if (!addr.valid()) return Err{IoError{IoStatus::kError, EAFNOSUPPORT}};
  StackRef stack;
  // A fixed SCTP port asks for the same UDP port (taken only by the
  // process's first usrsctp user; see sctp.h "Addresses under usrsctp").
  auto encaps_port = stack.Acquire(addr.port());
  if (!encaps_port.ok()) return Err{encaps_port.error()};
  auto opened = OpenConfigured(addr.family(), options);
  if (!opened.ok()) return Err{opened.error()};
  NewSocket sock = std::move(opened).value();
  SocketGuard so(sock.so);
  auto fail = [&](int e) -> Result<std::unique_ptr<UsrsctpListener>, IoError> {
    UsrsctpStack::Unregister(so.get());
    return Err{ErrnoError(e)};
  };
  auto bind_to = [&](uint16_t port) {
    SockAddr where = addr;
    where.set_port(port);
    sockaddr_storage ss{};
    std::memcpy(&ss, where.sa(), where.length());
    return usrsctp_bind(so.get(), reinterpret_cast<sockaddr*>(&ss), where.length()) == 0 ? 0
                                                                                         : errno;
  };
  int e = 0;
  if (addr.port() == 0) {
    // The SCTP port equal to the UDP encapsulation port, so that one
    // ip:port names both (sctp.h); any free port otherwise.
    e = bind_to(*encaps_port);
    if (e == EADDRINUSE) e = bind_to(0);
  } else {
    e = bind_to(addr.port());
  }
  if (e != 0) return fail(e);
  if (usrsctp_listen(so.get(), options.backlog) != 0) return fail(errno);
  UsrsctpStack::MakeListener(so.get(), options.backlog);
  const SockAddr local = FirstAddress(so.get(), false);
  auto l = std::unique_ptr<UsrsctpListener>(
      new UsrsctpListener(so.Release(), std::move(sock.doorbell), local.valid() ? local : addr));
  stack.Keep();
  return l;
}

constexpr int kMaxBacklogDrain = 1024;

UsrsctpListener::~UsrsctpListener() {
  // What the upcall accepted and nobody took closes quietly. What usrsctp
  // completed past the listener's backlog is accepted here first: usrsctp's
  // threads also take a reference on the listener, through so_head, for
  // each packet of an association still queued on it, without checking
  // that the listener is closing (usrsctp_stack.h "Quiet close"), and
  // accept clears so_head. Only a handshake finishing during the close is
  // still exposed (to both races). Bounded: a peer that keeps connecting
  // cannot hold the close up.
  for (const UsrsctpStack::Accepted& a : UsrsctpStack::UnregisterListener(so_)) {
    UsrsctpStack::Close(a.so);
  }
  for (int i = 0; i < kMaxBacklogDrain; ++i) {
    struct socket* queued = usrsctp_accept(so_, nullptr, nullptr);
    if (queued == nullptr) break;
    UsrsctpStack::Close(queued);
  }
  UsrsctpStack::Close(so_);
  UsrsctpStack::Release();
}

Result<std::unique_ptr<SctpConnection>, IoError> UsrsctpListener::AcceptSctp() {
  // The upcall accepted, on usrsctp's thread (usrsctp_stack.h "Accept on
  // the stack's thread"); this thread accepts only past the backlog.
  UsrsctpStack::Taken taken = UsrsctpStack::TakeAccepted(so_);
  if (!taken.accepted && taken.overflowed) {
    UsrsctpStack::Accepted a;
    a.fromlen = sizeof(a.from);
    a.so = usrsctp_accept(so_, reinterpret_cast<sockaddr*>(&a.from), &a.fromlen);
    if (a.so != nullptr) {
      taken.accepted = a;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      UsrsctpStack::ClearOverflow(so_);
      taken.overflowed = false;
    } else {
      return Err{ErrnoError(errno)};
    }
  }
  if (!taken.accepted) {
    // Empty the doorbell, then ring it again if a connection came meanwhile
    // (the upcall rings after it queued one) or the listener has an error.
    UsrsctpStack::Drain(doorbell_.get());
    const int events = usrsctp_get_events(so_);
    if (UsrsctpStack::HasWaiting(so_) || (events & SCTP_EVENT_ERROR) != 0 ||
        (taken.overflowed && (events & SCTP_EVENT_READ) != 0)) {
      UsrsctpStack::Ring(doorbell_.get());
    }
    return Err{ErrnoError(EAGAIN)};
  }
  SocketGuard so(taken.accepted->so);
  StackRef stack;
  if (auto port = stack.Acquire(); !port.ok()) return Err{port.error()};
  // Inherited from the listener: the SCTP options; set again what a
  // connection needs on its own socket.
  if (usrsctp_set_non_blocking(so.get(), 1) != 0) return Err{IoError{IoStatus::kError, errno}};
  auto bell = UsrsctpStack::MakeDoorbell();
  if (!bell.ok()) return Err{bell.error()};
  if (const int e = UsrsctpStack::Register(so.get(), bell->get()); e != 0) {
    return Err{IoError{IoStatus::kError, e}};
  }
  auto conn = std::unique_ptr<UsrsctpConnection>(
      new UsrsctpConnection(so.Release(), std::move(bell).value(), true));
  stack.Keep();
  if (!conn->peer_.valid()) {
    const auto* from = reinterpret_cast<const sockaddr*>(&taken.accepted->from);
    if (auto a = SockAddr::FromRaw(from, taken.accepted->fromlen)) conn->peer_ = *a;
  }
  return std::unique_ptr<SctpConnection>(std::move(conn));
}

}  // namespace iwarpx::transport
