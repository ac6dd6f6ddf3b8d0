// SctpPeerProcess: the usrsctp echo server of sctp_test.cc
// (DISABLED_SctpPeerProcess.EchoServer) started as a child process, so that
// a test talks to a second usrsctp stack (its own UDP port) it can kill.
// Test-only, header-only (included by *_test.cc of this directory).
//
// Start() runs this binary again with that test filter and waits (at most
// kTestTimeoutMs) for the child to report its port (the SCTP port, equal to
// its UDP encapsulation port). pid() is for signals (SIGSTOP). Kill() SIGKILLs and reaps it;
// WaitExit() reaps a child that ends by itself. The destructor kills a child still running. Errors
// are returned as text for the test's assertion message.
#pragma once

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "transport/test_util.h"

namespace iwarpx::transport {

class SctpPeerProcess {
 public:
  SctpPeerProcess() = default;
  SctpPeerProcess(const SctpPeerProcess&) = delete;
  SctpPeerProcess& operator=(const SctpPeerProcess&) = delete;
  ~SctpPeerProcess() { Kill(); }

  // Empty on success, else why not.
  std::string Start() {
    int fds[2];
    if (::pipe(fds) != 0) return "pipe failed";
    const std::string env = "IWARPX_SCTP_PEER_FD=" + std::to_string(fds[1]);
    char self[4096];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) return "readlink /proc/self/exe failed";
    self[n] = 0;
    char filter[] = "--gtest_filter=DISABLED_SctpPeerProcess.EchoServer";
    char disabled[] = "--gtest_also_run_disabled_tests";
    char* argv[] = {self, filter, disabled, nullptr};
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
    envp.push_back(const_cast<char*>(env.c_str()));
    envp.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, self, nullptr, nullptr, argv, envp.data());
    ::close(fds[1]);
    if (rc != 0) {
      pid_ = -1;
      ::close(fds[0]);
      return "posix_spawn failed";
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const bool ready = ::poll(&pfd, 1, kTestTimeoutMs) == 1 &&
                       ::read(fds[0], &port_, sizeof(port_)) == static_cast<ssize_t>(sizeof(port_));
    ::close(fds[0]);
    if (!ready || port_ == 0) return "the child did not report its port";
    return {};
  }

  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // Reaps the child if it exits within `timeout_ms`: its wait status, or -1.
  int WaitExit(int timeout_ms) {
    int status = 0;
    for (int i = 0; i < timeout_ms / 10 && pid_ > 0; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      ::usleep(10000);
    }
    return -1;
  }

  [[nodiscard]] uint16_t port() const { return port_; }
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

}  // namespace iwarpx::transport
