// mem_probe: do the first two CPUs this process may run on share a path to
// memory? The answer says which of this host's two speeds a loopback
// bandwidth run had (docs/PERFORMANCE.md, "The host's two speeds are where
// its two vCPUs sit").
//
//   mem_probe [--time SEC] [--threshold R]   (0 < SEC <= 60, 0 < R <= 1)
//
// One thread copies cold memory (a 64 MiB source in 64 KiB pieces into a
// 4 MiB ring, as a socket flow's copies go) alone for SEC seconds (default
// 0.15), then two threads, one pinned to each of the first two CPUs of the
// affinity mask, copy at the same time for SEC seconds, then one alone again:
// a trial, whose ratio is what the two moved on average over the better of
// the two runs alone. Of three trials the median one decides: below R
// (default 0.85) the CPUs share the path (on this project's VMs: the same L3
// cache, where one process's writes reach the other's reads through that
// cache, and 1 MiB loopback streams run at ~4-5 GB/s); otherwise they are
// apart (~1.6-2.5 GB/s for every provider: the slow phase). Prints one line,
// the median trial's figures and the verdict last:
//   mem_probe: alone 21.0 GB/s, together 15.5 and 15.9 GB/s, ratio 0.75: shared
// With fewer than two CPUs in the mask the verdict is "n/a" (exit 0); bad
// arguments exit 2. The probe takes about 9 x SEC plus ~0.1 s to touch
// 2 x 68 MiB.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kSource = size_t{64} << 20;
constexpr size_t kRing = size_t{4} << 20;
constexpr size_t kPiece = size_t{64} << 10;
constexpr int kTrials = 3;  // the verdict is the median trial's

struct Copier {
  std::vector<uint8_t> src = std::vector<uint8_t>(kSource);
  std::vector<uint8_t> ring = std::vector<uint8_t>(kRing);
  Copier() {
    for (size_t i = 0; i < src.size(); i += 4096) src[i] = static_cast<uint8_t>(i >> 12);
    std::memset(ring.data(), 1, ring.size());
  }
  // Copies the source once (page tables and TLB warm, the caches not), then
  // for `seconds`; GB/s (10^9 B/s) of the timed part.
  double Run(double seconds) {
    for (size_t s = 0; s < kSource; s += kPiece) {
      std::memcpy(ring.data() + s % kRing, src.data() + s, kPiece);
    }
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    size_t bytes = 0;
    size_t s = 0;
    size_t d = 0;
    auto now = start;
    while (now < end) {
      for (int k = 0; k < 16; ++k) {
        std::memcpy(ring.data() + d, src.data() + s, kPiece);
        s = (s + kPiece) % kSource;
        d = (d + kPiece) % kRing;
        bytes += kPiece;
      }
      now = Clock::now();
    }
    return static_cast<double>(bytes) / std::chrono::duration<double>(now - start).count() / 1e9;
  }
};

bool Pin(std::thread& t, size_t cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(t.native_handle(), sizeof(set), &set) == 0;
}

int Usage(const char* why) {
  std::fprintf(stderr, "mem_probe: %s\nusage: mem_probe [--time SEC] [--threshold R]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0.15;
  double threshold = 0.85;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--time" || a == "--threshold") && i + 1 < argc) {
      char* end = nullptr;
      const double v = std::strtod(argv[++i], &end);
      const double most = a == "--time" ? 60 : 1;  // a ratio above 1 would call every host shared
      if (end == argv[i] || *end != '\0' || !(v > 0) || v > most) return Usage("bad value");
      (a == "--time" ? seconds : threshold) = v;
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: mem_probe [--time SEC] [--threshold R] (see the source's header)\n");
      return 0;
    } else {
      return Usage(("unknown argument " + a).c_str());
    }
  }
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return Usage("sched_getaffinity failed");
  std::vector<size_t> cpus;
  for (size_t c = 0; c < static_cast<size_t>(CPU_SETSIZE) && cpus.size() < 2; ++c) {
    if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  }
  if (cpus.size() < 2) {
    std::printf("mem_probe: fewer than two CPUs: n/a\n");
    return 0;
  }
  Copier a;
  Copier b;
  // Each run starts once its threads are pinned.
  std::atomic<bool> go{false};
  auto run = [&](Copier& c, double& out) {
    while (!go.load()) std::this_thread::yield();
    out = c.Run(seconds);
  };
  bool pinned = true;
  auto solo = [&] {
    double v = 0;
    go.store(false);
    std::thread t([&] { run(a, v); });
    pinned = pinned && Pin(t, cpus[0]);
    go.store(true);
    t.join();
    return v;
  };
  struct Trial {
    double alone, ga, gb, ratio;
  };
  std::vector<Trial> trials;
  for (int k = 0; k < kTrials; ++k) {
    Trial t{};
    const double before = solo();
    go.store(false);
    std::thread ta([&] { run(a, t.ga); });
    std::thread tb([&] { run(b, t.gb); });
    pinned = pinned && Pin(ta, cpus[0]) && Pin(tb, cpus[1]);
    go.store(true);
    ta.join();
    tb.join();
    t.alone = std::max(before, solo());  // the better of two: one may be disturbed
    t.ratio = t.alone > 0 ? (t.ga + t.gb) / 2 / t.alone : 0;
    trials.push_back(t);
  }
  if (!pinned) {
    std::printf("mem_probe: could not pin the threads: n/a\n");
    return 0;
  }
  std::sort(trials.begin(), trials.end(),
            [](const Trial& x, const Trial& y) { return x.ratio < y.ratio; });
  const Trial& m = trials[trials.size() / 2];
  std::printf("mem_probe: alone %.1f GB/s, together %.1f and %.1f GB/s, ratio %.2f: %s\n", m.alone,
              m.ga, m.gb, m.ratio, m.ratio < threshold ? "shared" : "apart");
  return 0;
}
