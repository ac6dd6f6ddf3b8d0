#include "transport/usrsctp_stack.h"

#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <usrsctp.h>

#include "transport/sock_addr.h"
#include "transport/socket_util.h"
#include "transport/usrsctp_encaps.h"

namespace iwarpx::transport {
namespace {

// A closed socket whose association may still receive packets ("Quiet close").
struct Closing {
  struct socket* so = nullptr;
  std::chrono::steady_clock::time_point deadline;
};

struct StackState {
  std::mutex mu;
  int users = 0;
  bool initialised = false;
  uint16_t port = 0;
  int encaps_rcvbuf = 0;
  std::vector<Closing> closing;
};

StackState& State() {
  static StackState* s = new StackState();  // never destroyed: usrsctp threads may outlive main
  return *s;
}

struct Doorbell {
  int fd = -1;
  bool want_write = true;
  bool listener = false;  // has an AcceptQueue in Registry::listeners
};

// A listener's own accept queue (usrsctp_stack.h "Accept on the stack's thread").
struct AcceptQueue {
  size_t backlog = 1;
  std::deque<UsrsctpStack::Accepted> waiting;
  bool overflowed = false;
};

struct Registry {
  std::mutex mu;
  std::unordered_map<struct socket*, Doorbell> doorbells;
  std::unordered_map<struct socket*, AcceptQueue> listeners;
};

Registry& Doorbells() {
  static Registry* r = new Registry();  // never destroyed (see State)
  return *r;
}

// A UDP port free on the wildcard address right now: `wanted` if it is,
// else (wanted 0 or taken) one the kernel picks.
Result<uint16_t, IoError> ProbeUdpPort(uint16_t wanted) {
  auto sock = OpenSocket(AF_INET, SOCK_DGRAM);
  if (!sock.ok()) return Err{sock.error()};
  if (wanted != 0) {
    const SockAddr at = SockAddr::Any4(wanted);
    if (::bind(sock->get(), at.sa(), at.length()) == 0) return wanted;
    sock = OpenSocket(AF_INET, SOCK_DGRAM);
    if (!sock.ok()) return Err{sock.error()};
  }
  const SockAddr any = SockAddr::Any4(0);
  if (::bind(sock->get(), any.sa(), any.length()) != 0) {
    return Err{IoError{IoStatus::kError, errno}};
  }
  const uint16_t port = LocalAddressOf(sock->get()).port();
  if (port == 0) return Err{IoError{IoStatus::kError, EADDRNOTAVAIL}};
  return port;
}

void Upcall(struct socket* so, void* arg, int flags);

constexpr int kMaxAcceptsPerUpcall = 64;

// Moves what usrsctp completed on `listener` into `q`, each connection with
// the upcall and the listener's doorbell `fd`; true when it moved any.
// Caller holds r.mu: usrsctp calls upcalls with none of its locks held, and
// nothing holding r.mu waits for usrsctp, so taking usrsctp's locks here
// cannot deadlock; usrsctp_accept calls no upcall.
bool AcceptWaiting(Registry& r, struct socket* listener, AcceptQueue& q, int fd) {
  bool moved = false;
  // Bounded: a peer that keeps connecting cannot hold usrsctp's thread here.
  for (int attempt = 0; attempt < kMaxAcceptsPerUpcall && q.waiting.size() < q.backlog; ++attempt) {
    UsrsctpStack::Accepted a;
    a.fromlen = sizeof(a.from);
    a.so = usrsctp_accept(listener, reinterpret_cast<sockaddr*>(&a.from), &a.fromlen);
    if (a.so == nullptr) {
      if (errno == ECONNABORTED) continue;  // that one died in the queue; others may follow
      // EWOULDBLOCK (the listener is non-blocking): usrsctp's queue is empty.
      q.overflowed = false;
      return moved;
    }
    r.doorbells[a.so] = Doorbell{fd, false};
    (void)usrsctp_set_upcall(a.so, Upcall, nullptr);
    q.waiting.push_back(a);
    moved = true;
  }
  q.overflowed = true;  // full, or out of attempts: usrsctp's queue may hold more
  return moved;
}

void Upcall(struct socket* so, void* /*arg*/, int /*flags*/) {
  // Read before taking the registry lock: no lock order between the
  // registry and usrsctp's socket lock.
  const int events = usrsctp_get_events(so);
  Registry& r = Doorbells();
  std::lock_guard lock(r.mu);
  auto it = r.doorbells.find(so);
  if (it == r.doorbells.end()) return;
  const int fd = it->second.fd;  // AcceptWaiting may rehash r.doorbells
  bool ring = events < 0 || (events & (SCTP_EVENT_READ | SCTP_EVENT_ERROR)) != 0 ||
              (it->second.want_write && (events & SCTP_EVENT_WRITE) != 0);
  if (it->second.listener) {  // a connection's upcall (every packet) needs no second lookup
    if (auto l = r.listeners.find(so); l != r.listeners.end()) {
      ring = AcceptWaiting(r, so, l->second, fd) || ring;
    }
  }
  if (ring) UsrsctpStack::Ring(fd);
}

// Whether usrsctp may still hand `so` a packet of its association: one
// that got past COOKIE-WAIT and is not gone.
bool MayReceive(struct socket* so) {
  auto st = UsrsctpStack::Status(so);
  return st.ok() && st->sstat_state != SCTP_CLOSED && st->sstat_state != SCTP_COOKIE_WAIT;
}

// Closes the waiting sockets that are quiet or out of time (all of them
// when `all`). Caller holds s.mu.
void SweepClosing(StackState& s, bool all) {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(s.closing, [&](const Closing& c) {
    if (!all && now < c.deadline && MayReceive(c.so)) return false;
    usrsctp_close(c.so);
    return true;
  });
}

}  // namespace

Result<uint16_t, IoError> UsrsctpStack::Acquire(uint16_t preferred_port) {
  StackState& s = State();
  std::lock_guard lock(s.mu);
  if (!s.initialised) {
    auto port = ProbeUdpPort(preferred_port);
    if (!port.ok()) return Err{port.error()};
    const std::vector<int> before = usrsctp_encaps::SocketFds();
    usrsctp_init(*port, nullptr, nullptr);  // opens the UDP sockets before it returns
    s.initialised = true;
    s.port = *port;
    s.encaps_rcvbuf = usrsctp_encaps::GrowReceiveBuffers(before, *port, kEncapsReceiveBuffer);
  }
  SweepClosing(s, false);
  ++s.users;
  return s.port;
}

void UsrsctpStack::Release() {
  StackState& s = State();
  std::lock_guard lock(s.mu);
  if (s.users == 0) return;
  if (--s.users > 0) return;
  // The waiting sockets first: their shutdowns take a round trip or two.
  while (!s.closing.empty()) {
    SweepClosing(s, false);
    if (!s.closing.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // usrsctp_finish() refuses (-1) while closed associations are still being
  // shut down; give them a bounded time.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (usrsctp_finish() != 0) {
    if (std::chrono::steady_clock::now() >= deadline) return;  // stays initialised
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  s.initialised = false;
  s.port = 0;
  s.encaps_rcvbuf = 0;
}

uint16_t UsrsctpStack::encaps_port() {
  StackState& s = State();
  std::lock_guard lock(s.mu);
  return s.port;
}

int UsrsctpStack::encaps_receive_buffer() {
  StackState& s = State();
  std::lock_guard lock(s.mu);
  return s.encaps_rcvbuf;
}

int UsrsctpStack::AssociationBufferFor(int encaps_granted) {
  const int quarter = std::min(encaps_granted / 4, kAssociationReceiveBuffer);
  return quarter > kUsrsctpReceiveBuffer ? quarter : 0;
}

int UsrsctpStack::association_receive_buffer() {
  return AssociationBufferFor(encaps_receive_buffer());
}

Result<UniqueFd, IoError> UsrsctpStack::MakeDoorbell() {
  UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!fd.valid()) return Err{IoError{IoStatus::kError, errno}};
  return fd;
}

void UsrsctpStack::Close(struct socket* so) {
  Unregister(so);
  StackState& s = State();
  std::lock_guard lock(s.mu);
  if (MayReceive(so)) {
    // Refused when a shutdown is already under way (the peer's, or an
    // earlier ShutdownWrite): the association still ends by itself.
    (void)usrsctp_shutdown(so, SHUT_RDWR);
    s.closing.push_back(Closing{so, std::chrono::steady_clock::now() + kQuietCloseLimit});
  } else {
    usrsctp_close(so);
  }
  SweepClosing(s, false);
}

Result<sctp_status, IoError> UsrsctpStack::Status(struct socket* so) {
  sctp_status st{};
  socklen_t len = sizeof(st);
  if (usrsctp_getsockopt(so, IPPROTO_SCTP, SCTP_STATUS, &st, &len) != 0) {
    return Err{IoError{IoStatus::kError, errno}};
  }
  return st;
}

int UsrsctpStack::Register(struct socket* so, int doorbell_fd) {
  {
    Registry& r = Doorbells();
    std::lock_guard lock(r.mu);
    r.doorbells[so] = Doorbell{doorbell_fd, true};
  }
  if (usrsctp_set_upcall(so, Upcall, nullptr) != 0) {
    const int e = errno != 0 ? errno : EINVAL;
    Unregister(so);
    return e;
  }
  return 0;
}

void UsrsctpStack::Unregister(struct socket* so) {
  Registry& r = Doorbells();
  std::lock_guard lock(r.mu);
  r.doorbells.erase(so);
  r.listeners.erase(so);  // a listener's waiting connections: UnregisterListener took them
}

void UsrsctpStack::MakeListener(struct socket* so, int backlog) {
  Registry& r = Doorbells();
  std::lock_guard lock(r.mu);
  auto it = r.doorbells.find(so);
  if (it == r.doorbells.end()) return;  // not registered: nothing would reach its upcall
  it->second.listener = true;
  r.listeners[so].backlog = static_cast<size_t>(std::max(backlog, 1));
}

UsrsctpStack::Taken UsrsctpStack::TakeAccepted(struct socket* listener) {
  Registry& r = Doorbells();
  std::lock_guard lock(r.mu);
  Taken out;
  auto l = r.listeners.find(listener);
  if (l == r.listeners.end()) return out;
  AcceptQueue& q = l->second;
  if (!q.waiting.empty()) {
    out.accepted = q.waiting.front();
    q.waiting.pop_front();
  }
  out.overflowed = q.overflowed;
  return out;
}

bool UsrsctpStack::HasWaiting(struct socket* listener) {
  Registry& r = Doorbells();
  std::lock_guard lock(r.mu);
  auto l = r.listeners.find(listener);
  return l != r.listeners.end() && !l->second.waiting.empty();
}

void UsrsctpStack::ClearOverflow(struct socket* listener) {
  Registry& r = Doorbells();
  std::lock_guard lock(r.mu);
  if (auto l = r.listeners.find(listener); l != r.listeners.end()) l->second.overflowed = false;
}

std::vector<UsrsctpStack::Accepted> UsrsctpStack::UnregisterListener(struct socket* listener) {
  Registry& r = Doorbells();
  std::lock_guard lock(r.mu);
  r.doorbells.erase(listener);
  std::vector<Accepted> left;
  if (auto l = r.listeners.find(listener); l != r.listeners.end()) {
    left.assign(l->second.waiting.begin(), l->second.waiting.end());
    r.listeners.erase(l);
  }
  return left;
}

void UsrsctpStack::SetWantWrite(struct socket* so, bool want) {
  Registry& r = Doorbells();
  std::lock_guard lock(r.mu);
  auto it = r.doorbells.find(so);
  if (it != r.doorbells.end()) it->second.want_write = want;
}

void UsrsctpStack::Ring(int doorbell_fd) {
  const uint64_t one = 1;
  // EAGAIN (counter at its maximum) still leaves the eventfd readable.
  [[maybe_unused]] const ssize_t n = ::write(doorbell_fd, &one, sizeof(one));
}

void UsrsctpStack::Drain(int doorbell_fd) {
  uint64_t value = 0;
  [[maybe_unused]] const ssize_t n = ::read(doorbell_fd, &value, sizeof(value));
}

}  // namespace iwarpx::transport
