// The kernel UDP sockets usrsctp encapsulates SCTP in (RFC 6951), seen from
// the process that owns them (internal to the transport layer; used by
// usrsctp_stack.cc).
//
// Why: usrsctp_init() opens one UDP socket per address family on the
// encapsulation port and gives each a 128 KiB SO_RCVBUF (usrsctp's SB_RAW,
// doubled by the kernel to 256 KiB of skb truesize: about 110 loopback
// datagrams of usrsctp's fixed 1500-byte MTU, ~160 KB of SCTP payload),
// shared by every association of the process. A receive window larger than
// that overflows it whenever usrsctp's receive thread is descheduled
// (UdpRcvbufErrors), so the association buffer is sized from what this
// socket really got (UsrsctpStack::association_receive_buffer()).
// usrsctp gives no handle to these sockets; they are found by descriptor.
//
// Contract
// - SocketFds() lists the process's open socket descriptors (from
//   /proc/self/fd; empty when it cannot be read).
// - GrowReceiveBuffers(before, port, bytes): every UDP socket descriptor
//   open now, not in `before` (a SocketFds() taken before usrsctp_init), and
//   bound to `port`, gets SO_RCVBUF `bytes` (the kernel caps it at
//   net.core.rmem_max and doubles it). Returns the smallest SO_RCVBUF read
//   back from them, 0 when none was found (then nothing was changed).
#pragma once

#include <cstdint>
#include <vector>

namespace iwarpx::transport::usrsctp_encaps {

std::vector<int> SocketFds();

int GrowReceiveBuffers(const std::vector<int>& before, uint16_t port, int bytes);

// SO_RCVBUF of the encapsulation sockets now (smallest; 0 when none is
// found): the same search as GrowReceiveBuffers with no change made.
int ReceiveBuffer(const std::vector<int>& before, uint16_t port);

}  // namespace iwarpx::transport::usrsctp_encaps
