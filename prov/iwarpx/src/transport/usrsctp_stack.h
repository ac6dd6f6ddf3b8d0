// The process-wide usrsctp instance and the readiness doorbells of its
// sockets (internal to the transport layer; used by sctp_usrsctp.cc).
//
// Contract
// - UsrsctpStack::Acquire() initialises usrsctp on first use and counts
//   users; Release() by the last user calls usrsctp_finish() (retried for at
//   most ~2 s while usrsctp still holds closing associations; after that the
//   stack stays initialised and the next Acquire reuses it). Every socket
//   object holds one reference for its lifetime. Thread-safe.
// - UDP encapsulation (RFC 6951): usrsctp_init() gets a UDP port that was
//   free on the wildcard address when the stack started (the first user's
//   preferred port if free, else probed with a bind to port 0; a process that races for the same
//   port in between makes usrsctp fail to bind and its associations time out). encaps_port() tells
//   it. Raw-IP SCTP is not used: every association sets its remote UDP port.
// - Receive buffers (the ~0.5 s stalls, docs/design.md "Receive buffers"):
//   at init the encapsulation UDP sockets' SO_RCVBUF is raised from
//   usrsctp's 128 KiB to kEncapsReceiveBuffer (the kernel caps it at
//   net.core.rmem_max; encaps_receive_buffer() is what it granted, as
//   getsockopt reports it: doubled). association_receive_buffer() is the
//   SO_RCVBUF every usrsctp socket then gets (its SCTP receive window):
//   a quarter of the granted UDP buffer, at most kAssociationReceiveBuffer;
//   0 (keep usrsctp's 128 KiB) when that quarter is not larger than 128 KiB,
//   so a window never outgrows the UDP socket that carries it.
// - Doorbells: an eventfd per usrsctp socket, registered under the socket's
//   pointer. The upcall (usrsctp's threads) writes to the eventfd of the
//   socket it is called for, under the registry's mutex, so Unregister()
//   followed by closing the eventfd can never race with a write. Upcalls for
//   a socket no longer registered are ignored.
// - Accept on the stack's thread (usrsctp 0.9.5 race, fixed upstream by
//   sctplab/usrsctp#698 after that release): usrsctp's input thread reads
//   the so_head of a packet's association twice without the accept lock
//   (NULL check, then use), and usrsctp_accept clears so_head under that
//   lock; an accept on another thread between the two reads makes the
//   input thread lock a NULL socket (SEGV, seen in CI under ASan:
//   UsrsctpCloseRaceTest; usrsctp_accept_wakeup_test.cc's stress test hits
//   it in every run without this). So a listener's upcall accepts: after
//   MakeListener(), each upcall on the listener (on the thread that
//   processes the association's packets, after the packet) moves what
//   usrsctp completed into the listener's own queue, at most `backlog`
//   waiting; TakeAccepted() pops from it. An association waiting there has
//   the upcall installed with the listener's doorbell, as usrsctp aimed its
//   upcalls at so_head before. Past the backlog the rest stays in usrsctp's
//   queue (its own backlog then refuses handshakes), the listener is marked
//   `overflowed`, and its owner accepts those from its own thread, the old
//   exposure, only once the queue is empty. Still exposed: an association
//   whose packets come in on the other family's thread (a dual-stack
//   listener with IPv4 and IPv6 handshakes at the same moment).
// - Quiet close (usrsctp 0.9.5 race, upstream sctplab/usrsctp#709): the
//   stack's threads take a reference on a socket for each inbound packet of
//   its association, checking only without a lock that the socket is not
//   closing, so a usrsctp_close() that drops the last reference while a
//   packet is on its way frees the socket twice (seen under ASan). Close()
//   therefore never closes a socket whose association can still send it
//   packets: it unregisters the doorbell, shuts the association down
//   gracefully (SHUT_RDWR: what was queued is still delivered, what
//   arrives is acknowledged and dropped, so a peer still sending cannot
//   hold the SHUTDOWN up; an SCTP peer answers it without its application)
//   and keeps the socket until the association is gone (SCTP_STATUS
//   fails), at most kQuietCloseLimit.
//   A socket without an association past COOKIE-WAIT (a listener, a
//   connect nobody answered, an association already gone) closes at once.
//   Waiting sockets are closed by later stack calls (Acquire, Close) and
//   by the last Release, which waits for them (bounded) before
//   usrsctp_finish().
// - Filtered rings: usrsctp calls the upcall after every inbound packet when
//   the socket is readable or writeable, and a socket with send space is
//   always writeable. The upcall rings only when usrsctp_get_events() shows
//   a readable socket or an error, or send space while the socket's owner
//   asked for it (SetWantWrite(so, true): a send returned EAGAIN, or a
//   connect is pending; the initial state). Without that, a 64 KiB message
//   rang ~75 times per round trip (docs/PERFORMANCE.md, SCTP section).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include <usrsctp.h>

#include "base/result.h"
#include "transport/fd.h"
#include "transport/transport.h"

namespace iwarpx::transport {

class UsrsctpStack {
 public:
  // Initialises usrsctp if needed; errno (e.g. EADDRINUSE from the probe) on
  // failure. `preferred_port`: the UDP port to initialise with when it is
  // free (a listener on a fixed SCTP port asks for the same UDP port, so a
  // peer that assumes "UDP port = SCTP port" reaches it); ignored when the
  // stack already runs. Returns the port in use.
  static Result<uint16_t, IoError> Acquire(uint16_t preferred_port = 0);
  static void Release();
  // The UDP encapsulation port (0 when not initialised).
  static uint16_t encaps_port();

  static constexpr int kEncapsReceiveBuffer = 4 << 20;
  static constexpr int kAssociationReceiveBuffer = 1 << 20;
  static constexpr int kUsrsctpReceiveBuffer = 128 << 10;  // usrsctp's own (SB_RAW)
  // SO_RCVBUF of the encapsulation sockets as granted (0: not initialised,
  // or the sockets were not found).
  static int encaps_receive_buffer();
  // SO_RCVBUF for a new usrsctp socket; 0 = leave usrsctp's default.
  static int association_receive_buffer();
  // The rule above, for a granted UDP buffer (exposed for its unit test).
  static int AssociationBufferFor(int encaps_granted);

  // A new non-blocking, close-on-exec eventfd.
  static Result<UniqueFd, IoError> MakeDoorbell();
  // Routes upcalls for `so` to `doorbell_fd` and installs the upcall.
  static int Register(struct socket* so, int doorbell_fd);
  static void Unregister(struct socket* so);

  // "Accept on the stack's thread". MakeListener: `so` (registered,
  // non-blocking, listening) accepts in its upcall from now on, keeping at
  // most `backlog` (at least 1) connections for TakeAccepted. A socket not
  // registered is left alone (it would stay in usrsctp's queue).
  static void MakeListener(struct socket* so, int backlog);
  struct Accepted {
    struct socket* so = nullptr;  // owned by the caller once taken
    sockaddr_storage from{};
    socklen_t fromlen = 0;
  };
  struct Taken {
    std::optional<Accepted> accepted;  // the oldest waiting connection
    bool overflowed = false;           // usrsctp's queue may hold more (see above)
  };
  static Taken TakeAccepted(struct socket* listener);
  // Whether a connection waits in the listener's queue.
  static bool HasWaiting(struct socket* listener);
  // The listener's owner found usrsctp's queue empty: clears `overflowed`.
  static void ClearOverflow(struct socket* listener);
  // Unregisters the listener; returns the connections nobody took (to Close).
  static std::vector<Accepted> UnregisterListener(struct socket* listener);
  // Whether send space alone rings the doorbell (see "Filtered rings").
  static void SetWantWrite(struct socket* so, bool want);
  // Unregisters `so` and closes it as "Quiet close" says. The caller's
  // stack reference is its own to Release (after this call).
  static void Close(struct socket* so);
  static constexpr std::chrono::milliseconds kQuietCloseLimit{500};
  // SCTP_STATUS of `so`'s association, or errno (EINVAL: none).
  static Result<sctp_status, IoError> Status(struct socket* so);
  // Makes `doorbell_fd` readable.
  static void Ring(int doorbell_fd);
  // Empties `doorbell_fd`.
  static void Drain(int doorbell_fd);
};

}  // namespace iwarpx::transport
