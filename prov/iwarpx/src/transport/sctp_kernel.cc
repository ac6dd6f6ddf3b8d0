#include "transport/sctp_kernel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
// After <sys/socket.h>: the kernel's SCTP socket API definitions.
#include <linux/sctp.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "transport/socket_util.h"
#include "wire/sctp_session.h"

namespace iwarpx::transport {
namespace {

template <class T>
int SetOpt(int fd, int name, const T& value) {
  return ::setsockopt(fd, IPPROTO_SCTP, name, &value, sizeof(value)) == 0 ? 0 : errno;
}

template <class T>
int GetOpt(int fd, int name, T& value) {
  socklen_t len = sizeof(value);
  return ::getsockopt(fd, IPPROTO_SCTP, name, &value, &len) == 0 ? 0 : errno;
}

// The liveness limits (sctp.h "A dead peer") as the socket's defaults for
// its association (assoc id 0 = SCTP_FUTURE_ASSOC before it connects).
int ApplyLimits(int fd, const SctpLimits& limits) {
  sctp_rtoinfo rto{};
  rto.srto_initial = limits.rto_initial_ms;
  rto.srto_min = limits.rto_min_ms;
  rto.srto_max = limits.rto_max_ms;
  if (const int e = SetOpt(fd, SCTP_RTOINFO, rto); e != 0) return e;
  sctp_assocparams assoc{};
  assoc.sasoc_asocmaxrxt = limits.assoc_max_retrans;
  if (const int e = SetOpt(fd, SCTP_ASSOCINFO, assoc); e != 0) return e;
  sctp_paddrparams paddr{};  // no address: the defaults of every path
  paddr.spp_hbinterval = limits.heartbeat_interval_ms;
  paddr.spp_pathmaxrxt = limits.path_max_retrans;
  paddr.spp_flags = limits.heartbeat_interval_ms != 0 ? SPP_HB_ENABLE : 0;
  return SetOpt(fd, SCTP_PEER_ADDR_PARAMS, paddr);
}

// SCTP_ADAPTATION_INDICATION notifications on (sctp.h
// peer_adaptation_indication), the other subscriptions as they were.
int SubscribeAdaptation(int fd) {
  sctp_event_subscribe events{};
  if (const int e = GetOpt(fd, SCTP_EVENTS, events); e != 0) return e;
  events.sctp_adaptation_layer_event = 1;
  return SetOpt(fd, SCTP_EVENTS, events);
}

int Configure(int fd, const SctpOptions& options) {
  if (const int e = SetIntOption(fd, IPPROTO_SCTP, SCTP_NODELAY, 1); e != 0) return e;
  if (const int e = SetIntOption(fd, IPPROTO_SCTP, SCTP_RECVRCVINFO, 1); e != 0) return e;
  sctp_initmsg init{};
  init.sinit_num_ostreams = options.streams;
  init.sinit_max_instreams = options.streams;
  init.sinit_max_attempts = options.max_init_attempts;
  init.sinit_max_init_timeo = options.max_init_timeout_ms;
  if (const int e = SetOpt(fd, SCTP_INITMSG, init); e != 0) return e;
  if (const int e = SubscribeAdaptation(fd); e != 0) return e;
  if (options.adaptation_indication) {
    // Linux sends no indication when it is 0: a test asking for 0 gets none.
    sctp_setadaptation adaptation{};
    adaptation.ssb_adaptation_ind = *options.adaptation_indication;
    if (const int e = SetOpt(fd, SCTP_ADAPTATION_LAYER, adaptation); e != 0) return e;
  }
  return ApplyLimits(fd, options.limits);
}

// The first bytes of a message received into `iov` (`n` of them), gathered.
sctp_adaptation_event GatherAdaptation(std::span<const iovec> iov, size_t n, size_t& have) {
  sctp_adaptation_event sai{};
  auto* out = reinterpret_cast<uint8_t*>(&sai);
  have = 0;
  for (const iovec& v : iov) {
    const size_t take = std::min({v.iov_len, n - have, sizeof(sai) - have});
    std::memcpy(out + have, v.iov_base, take);
    have += take;
    if (have == sizeof(sai) || have == n) break;
  }
  return sai;
}

Result<UniqueFd, IoError> OpenConfigured(int family, const SctpOptions& options) {
  auto sock = OpenSocket(family, SOCK_STREAM, IPPROTO_SCTP);
  if (!sock.ok()) return Err{sock.error()};
  if (const int e = Configure(sock->get(), options); e != 0) {
    return Err{IoError{IoStatus::kError, e}};
  }
  return std::move(sock).value();
}

}  // namespace

int KernelSctpAvailable() {
  auto sock = OpenSocket(AF_INET, SOCK_STREAM, IPPROTO_SCTP);
  return sock.ok() ? 0 : sock.error().err;
}

// ---- KernelSctpConnection -----------------------------------------------

KernelSctpConnection::KernelSctpConnection(UniqueFd fd, bool connected)
    : fd_(std::move(fd)), connected_(connected) {
  if (connected_) LearnAssociation();
}

void KernelSctpConnection::LearnAssociation() {
  local_ = LocalAddressOf(fd_.get());
  peer_ = PeerAddressOf(fd_.get());
  sctp_status st{};
  socklen_t len = sizeof(st);
  if (::getsockopt(fd_.get(), IPPROTO_SCTP, SCTP_STATUS, &st, &len) == 0) {
    outbound_streams_ = st.sstat_outstrms;
  }
}

Result<std::unique_ptr<KernelSctpConnection>, IoError> KernelSctpConnection::Connect(
    const SockAddr& peer, const SctpOptions& options) {
  if (!peer.valid()) return Err{IoError{IoStatus::kError, EAFNOSUPPORT}};
  auto fd = OpenConfigured(peer.family(), options);
  if (!fd.ok()) return Err{fd.error()};
  int rc = 0;
  do {
    rc = ::connect(fd->get(), peer.sa(), peer.length());
  } while (rc != 0 && errno == EINTR);
  bool connected = true;
  if (rc != 0) {
    if (errno != EINPROGRESS) return Err{IoError{IoStatus::kError, errno}};
    connected = false;
  }
  auto conn = std::unique_ptr<KernelSctpConnection>(
      new KernelSctpConnection(std::move(fd).value(), connected));
  if (!connected) {
    conn->peer_ = peer;
    conn->local_ = LocalAddressOf(conn->fd_.get());
  }
  return conn;
}

IoResult KernelSctpConnection::FinishConnect() {
  if (connected_) return IoResult::Ok(0);
  const IoResult progress = ConnectProgress(fd_.get());
  if (!progress.ok()) return progress;
  connected_ = true;
  LearnAssociation();
  return IoResult::Ok(0);
}

IoResult KernelSctpConnection::SendMsg(std::span<const iovec> iov, const MessageInfo& info) {
  if (TotalLength(iov) == 0) return IoResult::Ok(0);  // SCTP has no empty messages
  if (connected_ && info.stream >= outbound_streams_) return IoResult::Error(EINVAL);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(sctp_sndinfo))] = {};
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov.data());  // sendmsg does not write through it
  msg.msg_iovlen = CappedIovCount(iov.size());
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = IPPROTO_SCTP;
  c->cmsg_type = SCTP_SNDINFO;
  c->cmsg_len = CMSG_LEN(sizeof(sctp_sndinfo));
  sctp_sndinfo snd{};
  snd.snd_sid = info.stream;
  snd.snd_flags = info.unordered ? SCTP_UNORDERED : 0;
  snd.snd_ppid = htonl(info.ppid);
  std::memcpy(CMSG_DATA(c), &snd, sizeof(snd));
  for (;;) {
    const ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
    if (n >= 0) return IoResult::Ok(static_cast<size_t>(n));
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult::WouldBlock();
    if (errno == ENOTCONN && !connected_) return IoResult::WouldBlock();
    return IoResult::Error(errno);
  }
}

IoResult KernelSctpConnection::RecvMsg(std::span<const iovec> iov, MessageInfo& info) {
  if (TotalLength(iov) == 0) return IoResult::Ok(0);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(sctp_rcvinfo))] = {};
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov.data());  // recvmsg writes only into the buffers
  msg.msg_iovlen = CappedIovCount(iov.size());
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  for (;;) {
    const ssize_t n = ::recvmsg(fd_.get(), &msg, 0);
    if (n > 0 && (msg.msg_flags & MSG_NOTIFICATION) != 0) {
      // Only SCTP_ADAPTATION_INDICATION is subscribed: keep its value, drop
      // the rest of the notification, and look for the next message.
      size_t have = 0;
      const sctp_adaptation_event sai = GatherAdaptation(iov, static_cast<size_t>(n), have);
      if (have == sizeof(sai) && sai.sai_type == SCTP_ADAPTATION_INDICATION) {
        peer_adaptation_ = sai.sai_adaptation_ind;
      }
      while ((msg.msg_flags & MSG_EOR) == 0) {
        std::array<uint8_t, 256> rest{};
        iovec r{rest.data(), rest.size()};
        msghdr more{};
        more.msg_iov = &r;
        more.msg_iovlen = 1;
        if (::recvmsg(fd_.get(), &more, 0) <= 0) break;  // queued whole: not reached
        msg.msg_flags = more.msg_flags;
      }
      msg.msg_controllen = sizeof(control);
      msg.msg_flags = 0;
      continue;
    }
    if (n > 0) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == IPPROTO_SCTP && c->cmsg_type == SCTP_RCVINFO &&
            c->cmsg_len >= CMSG_LEN(sizeof(sctp_rcvinfo))) {
          sctp_rcvinfo rcv{};
          std::memcpy(&rcv, CMSG_DATA(c), sizeof(rcv));
          info.ppid = ntohl(rcv.rcv_ppid);
          info.stream = rcv.rcv_sid;
          info.unordered = (rcv.rcv_flags & SCTP_UNORDERED) != 0;
        }
      }
      info.end_of_message = (msg.msg_flags & MSG_EOR) != 0;
      return IoResult::Ok(static_cast<size_t>(n));
    }
    if (n == 0) {
      peer_closed_ = true;
      return IoResult::Closed();
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult::WouldBlock();
    if (errno == ENOTCONN && !connected_) return IoResult::WouldBlock();
    return IoResult::Error(errno);
  }
}

Result<SctpLimits, int> KernelSctpConnection::limits() const {
  if (!connected_) return Err{ENOTCONN};
  sctp_rtoinfo rto{};
  if (const int e = GetOpt(fd_.get(), SCTP_RTOINFO, rto); e != 0) return Err{e};
  sctp_assocparams assoc{};
  if (const int e = GetOpt(fd_.get(), SCTP_ASSOCINFO, assoc); e != 0) return Err{e};
  sctp_paddrparams paddr{};  // no address: the association's defaults
  if (const int e = GetOpt(fd_.get(), SCTP_PEER_ADDR_PARAMS, paddr); e != 0) return Err{e};
  SctpLimits out;
  out.rto_initial_ms = rto.srto_initial;
  out.rto_min_ms = rto.srto_min;
  out.rto_max_ms = rto.srto_max;
  out.assoc_max_retrans = assoc.sasoc_asocmaxrxt;
  out.path_max_retrans = paddr.spp_pathmaxrxt;
  out.heartbeat_interval_ms = (paddr.spp_flags & SPP_HB_ENABLE) != 0 ? paddr.spp_hbinterval : 0;
  return out;
}

Status KernelSctpConnection::ShutdownWrite() {
  if (::shutdown(fd_.get(), SHUT_WR) == 0 || peer_closed_) return Status{};
  return Status{errno};
}

// ---- KernelSctpListener ---------------------------------------------------

Result<std::unique_ptr<KernelSctpListener>, IoError> KernelSctpListener::Listen(
    const SockAddr& addr, const SctpOptions& options) {
  if (!addr.valid()) return Err{IoError{IoStatus::kError, EAFNOSUPPORT}};
  auto fd = OpenConfigured(addr.family(), options);
  if (!fd.ok()) return Err{fd.error()};
  if (const int e = SetIntOption(fd->get(), SOL_SOCKET, SO_REUSEADDR, 1); e != 0) {
    return Err{IoError{IoStatus::kError, e}};
  }
  if (::bind(fd->get(), addr.sa(), addr.length()) != 0) return Err{ErrnoError(errno)};
  if (::listen(fd->get(), options.backlog) != 0) return Err{ErrnoError(errno)};
  const SockAddr local = LocalAddressOf(fd->get());
  return std::unique_ptr<KernelSctpListener>(new KernelSctpListener(std::move(fd).value(), local));
}

Result<std::unique_ptr<SctpConnection>, IoError> KernelSctpListener::AcceptSctp() {
  for (;;) {
    UniqueFd fd(::accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR) continue;
      return Err{ErrnoError(errno)};
    }
    // SCTP_RECVRCVINFO and SCTP_NODELAY are per socket; set them on the
    // accepted one too.
    if (const int e = SetIntOption(fd.get(), IPPROTO_SCTP, SCTP_NODELAY, 1); e != 0) {
      return Err{IoError{IoStatus::kError, e}};
    }
    if (const int e = SetIntOption(fd.get(), IPPROTO_SCTP, SCTP_RECVRCVINFO, 1); e != 0) {
      return Err{IoError{IoStatus::kError, e}};
    }
    return std::unique_ptr<SctpConnection>(new KernelSctpConnection(std::move(fd), true));
  }
}

}  // namespace iwarpx::transport
