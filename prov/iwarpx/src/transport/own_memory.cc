#include "transport/own_memory.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace iwarpx::transport {
namespace {

// The kernel reads src while writing it into a pipe: an unmapped page is
// EFAULT there too. Chunks stay below the pipe's default capacity.
bool CopyThroughPipe(uint8_t* dst, const uint8_t* src, size_t len) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  constexpr size_t kChunk = 4096;
  bool ok = true;
  for (size_t done = 0; ok && done < len;) {
    const size_t n = std::min(kChunk, len - done);
    const ssize_t w = write(fds[1], src + done, n);
    if (w <= 0) {
      ok = false;
      break;
    }
    for (size_t got = 0; got < static_cast<size_t>(w);) {
      const ssize_t r = read(fds[0], dst + done + got, static_cast<size_t>(w) - got);
      if (r <= 0) {
        ok = false;
        break;
      }
      got += static_cast<size_t>(r);
    }
    done += static_cast<size_t>(w);
  }
  close(fds[0]);
  close(fds[1]);
  return ok;
}

}  // namespace

bool CopyOwnMemory(void* dst, const void* src, size_t len) {
  if (len == 0) return true;
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  size_t done = 0;
  while (done < len) {
    iovec local{d + done, len - done};
    iovec remote{const_cast<uint8_t*>(s + done), len - done};
    const ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
      return CopyThroughPipe(d + done, s + done, len - done);
    }
    return false;  // EFAULT: unmapped (a short read stops at the first bad page)
  }
  return true;
}

}  // namespace iwarpx::transport
