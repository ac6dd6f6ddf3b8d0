// raw_socket: plain kernel sockets for the floor programs (tcp_pingpong,
// raw_floor): what any socket-based transport on this machine must at least
// pay, measured without libfabric.
//
// Contract:
//   - Every failing system call ends the process through bench::Fail with the
//     call's name and strerror: a floor that silently measured nothing would
//     make every ratio against it meaningless.
//   - Busy-polling receives (the default) use MSG_DONTWAIT and give up after
//     Options::timeout seconds; --blocking receives use SO_RCVTIMEO for the
//     same bound. No wait is unbounded.
//   - Servers bind Options::src_addr (default: any) and Options::port (0: the
//     kernel picks), print "<program>: listening on port N" on stderr and
//     write N to --port-file, so scripts never guess a free port.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

#include "bench_args.h"

namespace bench {

[[noreturn]] void SysFail(const Options& o, const char* call);

// A connected stream socket with TCP_NODELAY set, closed on destruction.
class TcpSocket {
 public:
  TcpSocket(const Options& o, int fd);
  ~TcpSocket();
  TcpSocket(const TcpSocket&) = delete;
  TcpSocket& operator=(const TcpSocket&) = delete;

  void SendAll(const void* data, size_t len);
  // SendAll without the copy into socket buffers: vmsplice hands the pages of
  // `data` to a pipe, splice moves them to the socket, and the receiver's
  // recv copies from them. The pages are referenced, not copied: the caller
  // must not change them until the peer has received them (raw_floor's stream
  // changes a slot only after the window's acknowledgement).
  void SpliceAll(const void* data, size_t len);
  // Exactly len bytes; a closed peer or the timeout fails the process.
  void RecvAll(void* data, size_t len);

 private:
  const Options& o_;
  int fd_;
  int pipe_[2] = {-1, -1};  // SpliceAll's, made on first use
};

// Client side: connects to o.server:o.port. Returns the descriptor.
int ConnectTcp(const Options& o);
// Server side: listens (port reported as above), accepts one connection
// within o.timeout, closes the listener. Returns the descriptor.
int AcceptTcp(const Options& o);

// A UDP socket: the server's is bound as above; the client's is connected to
// o.server:o.port. Returns the descriptor (the caller closes it).
int BindUdp(const Options& o);
int ConnectUdp(const Options& o);

// Busy-polls recvfrom(MSG_DONTWAIT) until one datagram arrives or o.timeout
// passes (fails the process). Returns its length; *from (may be null) gets
// the sender's address.
size_t RecvDatagram(const Options& o, int fd, void* buf, size_t cap, sockaddr_storage* from,
                    socklen_t* from_len);

}  // namespace bench
