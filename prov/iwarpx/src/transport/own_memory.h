// CopyOwnMemory: copies bytes of this process's own memory through the
// kernel, so that a source no longer mapped (an application that unmapped a
// buffer it had registered, then a retransmission from it) is reported as
// false instead of faulting. Used only off the fast path: resending or
// reclaiming a lent RDMA Read Response payload (rd/rd_stream.h).
//
// Contract: on true, dst[0, len) holds src[0, len); on false (EFAULT: some
// source byte is unmapped, or the kernel refused both methods) dst is
// unspecified. Thread-safe; a few system calls per call (process_vm_readv on
// this process, or a pipe where seccomp forbids that call).
#pragma once

#include <cstddef>

namespace iwarpx::transport {

[[nodiscard]] bool CopyOwnMemory(void* dst, const void* src, size_t len);

}  // namespace iwarpx::transport
