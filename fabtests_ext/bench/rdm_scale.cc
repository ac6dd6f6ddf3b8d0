// rdm_scale: how one reliable-datagram (FI_EP_RDM) endpoint scales with the
// number of peers it talks to (issue 5's scalability benchmark, seed 004 §6):
// memory per peer and the latency to one hot peer while the others are known
// but quiet. Public libfabric API only, so every provider runs it the same way
// (iwarpx with its send-rule chains, "tcp;ofi_rxm" which connects to every
// peer it talks to, "udp;ofi_rxd").
//
//   rdm_scale -p PROV --peers N --procs K [--rounds R] [--iters I] [--warmup W]
//             [--timeout S] [--csv]
//
// One process is the hub (one endpoint); it first forks K workers (before it
// touches libfabric) that open N peer endpoints between them, all in one
// fabric/domain/AV/CQ pair per worker. Names travel over pipes. Then the hub:
//   1. opens its endpoint, inserts the N peers, posts its receives, reads its
//      resident set size (RSS, /proc/self/statm): the baseline;
//   2. "touch": R rounds of one 8-byte ping to every peer in turn, each
//      answered (echoed) before the next, every reply checked;
//   3. reads RSS again: (RSS - baseline) / N is the memory per peer known;
//   4. "hot": W + I ping-pongs of 8 bytes with peer 0 (the peer a chain with
//      thresholds promotes); I of them timed, one-way latency = time / 2I;
//   5. reads RSS a last time (what promoting the hot peer cost), prints one
//      result line, closes the pipes (the workers exit) and reaps them.
// Result: "peers N  rss_base_kib B  per_peer_bytes P  per_peer_after_hot_bytes
// Q  hot_latency_us L" or with --csv
// "rdm_scale,PROV,N,B,P,Q,L" (after a header line).
//
// Contract: every wait is bounded (--timeout seconds per wait; workers give up
// after a bound derived from it); any libfabric failure, a wrong echo or a
// worker that fails exits 1. Workers stop when the hub closes their pipe.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "bench_args.h"
#include "bench_ofi.h"

namespace {

using bench::Check;
using bench::Options;

constexpr size_t kMsg = 8;
constexpr size_t kNameMax = 256;
constexpr size_t kRecvsPerEp = 2;

// Resident set size in bytes.
size_t Rss() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0;
  unsigned long resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

bool WriteAll(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    b += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    const ssize_t r = read(fd, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    b += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// A name with its length, as fi_getname gives it.
struct Name {
  size_t len = 0;
  uint8_t bytes[kNameMax] = {};
};

// The objects one process opens: one fabric, domain, AV and CQ pair shared by
// its endpoints. `count` endpoints, each with kRecvsPerEp 8-byte receives.
class Node {
 public:
  // `blocking`: receive waits sleep in fi_cq_sread (workers: only the hot
  // peer's process should compete with the hub for the CPUs).
  Node(const Options& o, size_t count, bool blocking) : o_(o), blocking_(blocking) {
    fi_info* hints = fi_allocinfo();
    if (hints == nullptr) bench::Fail(o, "fi_allocinfo failed");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = static_cast<int>(bench::kMrModesHandled);
    hints->domain_attr->av_type = FI_AV_TABLE;
    hints->fabric_attr->prov_name = strdup(o.provider.c_str());
    Check(o, fi_getinfo(bench::kFiVersion, "127.0.0.1", "0", FI_SOURCE, hints, &info_),
          "fi_getinfo");
    fi_freeinfo(hints);
    Check(o, fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
    Check(o, fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    Check(o, fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_CONTEXT;
    cq_attr.size = count * (kRecvsPerEp + 2) + 64;
    Check(o, fi_cq_open(domain_, &cq_attr, &tx_cq_, nullptr), "fi_cq_open (tx)");
    if (blocking_) {
      // A wait object lets a quiet worker sleep in fi_cq_sread, which still
      // drives the provider's progress (handshakes, acks) as events arrive.
      cq_attr.wait_obj = FI_WAIT_UNSPEC;
      waitable_ = fi_cq_open(domain_, &cq_attr, &rx_cq_, nullptr) == 0;
    }
    if (!waitable_) OpenRxCqWithoutWait(cq_attr);
    eps_.resize(count);
    names_.resize(count);
    ctx_.resize(count * kRecvsPerEp);
    bufs_.resize(count * kRecvsPerEp * kMsg);
    for (size_t i = 0; i < count; ++i) {
      // Each endpoint binds its own port: the info's source port is 0.
      int bound = OpenEp(i);
      if (bound != 0 && i == 0 && waitable_) {
        // Some providers (udp;ofi_rxd) open a CQ with a wait object but
        // refuse to bind it: start again without one.
        fi_close(&eps_[i]->fid);
        fi_close(&rx_cq_->fid);
        waitable_ = false;
        OpenRxCqWithoutWait(cq_attr);
        bound = OpenEp(i);
      }
      Check(o, bound, "fi_ep_bind (rx cq)");
      Check(o, fi_enable(eps_[i]), "fi_enable");
      names_[i].len = kNameMax;
      Check(o, fi_getname(&eps_[i]->fid, names_[i].bytes, &names_[i].len), "fi_getname");
    }
  }
  ~Node() {
    for (fid_ep* e : eps_) fi_close(&e->fid);
    if (rx_cq_ != nullptr) fi_close(&rx_cq_->fid);
    if (tx_cq_ != nullptr) fi_close(&tx_cq_->fid);
    if (av_ != nullptr) fi_close(&av_->fid);
    if (domain_ != nullptr) fi_close(&domain_->fid);
    if (fabric_ != nullptr) fi_close(&fabric_->fid);
    if (info_ != nullptr) fi_freeinfo(info_);
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::vector<Name>& names() const { return names_; }
  fi_addr_t Insert(const Name& n) {
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    if (fi_av_insert(av_, n.bytes, 1, &a, 0, nullptr) != 1) bench::Fail(o_, "fi_av_insert failed");
    return a;
  }
  void PostAllRecvs() {
    for (size_t slot = 0; slot < ctx_.size(); ++slot) PostRecv(slot);
  }
  // Receive slot `slot` belongs to endpoint slot / kRecvsPerEp.
  void PostRecv(size_t slot) {
    fid_ep* ep = eps_[slot / kRecvsPerEp];
    bench::PostRetry(
        o_,
        [&] {
          return fi_recv(ep, &bufs_[slot * kMsg], kMsg, nullptr, FI_ADDR_UNSPEC, &ctx_[slot]);
        },
        [&] { DrainTx(); }, "fi_recv");
  }
  void Send(size_t ep, fi_addr_t to, const uint8_t* msg) {
    bench::PostRetry(
        o_, [&] { return fi_inject(eps_[ep], msg, kMsg, to); }, [&] { DrainTx(); }, "fi_inject");
  }
  // One receive completion's slot, or -1 when none is ready. Drives progress.
  // A `blocking` node busy-polls for kSpinSeconds after its last completion
  // (the hot peer answers at once); after that it is idle: it sleeps in
  // fi_cq_sread for up to kSleepMillis per call when its CQ has a wait
  // object, else (a provider without CQ wait objects; manual progress needs
  // the polls) it naps kNapMicros every 64 empty polls. Idle workers must
  // not take CPU from the hub and the hot peer's worker.
  long Poll() {
    DrainTx();
    fi_cq_entry e{};
    const bool idle = blocking_ && bench::NowSeconds() - last_done_ > kSpinSeconds;
    const ssize_t n = idle && waitable_ ? fi_cq_sread(rx_cq_, &e, 1, nullptr, kSleepMillis)
                                        : fi_cq_read(rx_cq_, &e, 1);
    if (n == 1) {
      if (blocking_) last_done_ = bench::NowSeconds();
      return static_cast<fi_context2*>(e.op_context) - ctx_.data();
    }
    if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT) bench::CqFail(o_, rx_cq_, "receive");
    idle_ = idle;
    if (idle && !waitable_ && ++idle_polls_ % 64 == 0) usleep(kNapMicros);
    return -1;
  }
  // The last Poll found nothing and the node is past its spin period.
  bool idle() const { return idle_; }
  // The slot of the next receive completion, waiting at most --timeout.
  size_t WaitRecv(const char* what) {
    long slot = -1;
    bench::PollUntil(
        o_, [&] { return slot >= 0; }, [&] { slot = Poll(); }, what);
    return static_cast<size_t>(slot);
  }
  const uint8_t* Buf(size_t slot) const { return &bufs_[slot * kMsg]; }

 private:
  // Opens endpoint i and binds its AV and transmit CQ (failures exit);
  // returns fi_ep_bind's result for the receive CQ.
  int OpenEp(size_t i) {
    Check(o_, fi_endpoint(domain_, info_, &eps_[i], nullptr), "fi_endpoint");
    Check(o_, fi_ep_bind(eps_[i], &av_->fid, 0), "fi_ep_bind (av)");
    Check(o_, fi_ep_bind(eps_[i], &tx_cq_->fid, FI_TRANSMIT), "fi_ep_bind (tx cq)");
    return fi_ep_bind(eps_[i], &rx_cq_->fid, FI_RECV);
  }
  void OpenRxCqWithoutWait(fi_cq_attr& attr) {
    attr.wait_obj = FI_WAIT_NONE;
    Check(o_, fi_cq_open(domain_, &attr, &rx_cq_, nullptr), "fi_cq_open (rx)");
  }
  void DrainTx() {
    fi_cq_entry e{};
    const ssize_t n = fi_cq_read(tx_cq_, &e, 1);
    if (n < 0 && n != -FI_EAGAIN) bench::CqFail(o_, tx_cq_, "transmit");
  }

  static constexpr double kSpinSeconds = 0.005;
  static constexpr unsigned kNapMicros = 200;
  static constexpr int kSleepMillis = 20;

  const Options& o_;
  bool blocking_;
  bool waitable_ = false;  // the receive CQ has a wait object (fi_cq_sread)
  bool idle_ = false;
  double last_done_ = 0.0;
  uint64_t idle_polls_ = 0;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* tx_cq_ = nullptr;
  fid_cq* rx_cq_ = nullptr;
  std::vector<fid_ep*> eps_;
  std::vector<Name> names_;
  std::vector<fi_context2> ctx_;
  std::vector<uint8_t> bufs_;
};

// A worker: `count` peer endpoints that echo every message back to the hub
// until the hub closes `in` (EOF) or the bound passes.
int Worker(const Options& o, size_t count, int out, int in) {
  Node node(o, count, true);
  for (const Name& n : node.names()) {
    if (!WriteAll(out, &n, sizeof(n))) return 1;
  }
  Name hub;
  if (!ReadAll(in, &hub, sizeof(hub))) return 1;
  const fi_addr_t to = node.Insert(hub);
  node.PostAllRecvs();
  if (!WriteAll(out, "R", 1)) return 1;  // receives posted
  fcntl(in, F_SETFL, O_NONBLOCK);
  const double give_up = bench::NowSeconds() + o.timeout * 4 + 600;
  for (unsigned spins = 1;; ++spins) {
    const long slot = node.Poll();
    if (slot >= 0) {
      uint8_t msg[kMsg];
      std::memcpy(msg, node.Buf(static_cast<size_t>(slot)), kMsg);
      node.PostRecv(static_cast<size_t>(slot));
      node.Send(static_cast<size_t>(slot) / kRecvsPerEp, to, msg);
      continue;
    }
    if (spins % 64 != 0 && !node.idle()) continue;
    char c = 0;
    if (read(in, &c, 1) == 0) return 0;  // the hub is done
    if (bench::NowSeconds() > give_up) return 1;
  }
}

struct WorkerProc {
  pid_t pid = -1;
  int from = -1;  // worker -> hub
  int to = -1;    // hub -> worker
  size_t count = 0;
};

// 8-byte message: peer index (32 bits) and sequence number (32 bits).
void Encode(uint8_t* m, uint32_t peer, uint32_t seq) {
  std::memcpy(m, &peer, 4);
  std::memcpy(m + 4, &seq, 4);
}

int Hub(const Options& o, std::vector<WorkerProc>& workers) {
  std::vector<Name> peers;
  for (WorkerProc& w : workers) {
    for (size_t i = 0; i < w.count; ++i) {
      Name n;
      if (!ReadAll(w.from, &n, sizeof(n))) {
        int status = 0;
        const pid_t r = waitpid(w.pid, &status, 0);
        std::string why = "pipe closed";
        if (r == w.pid && WIFEXITED(status)) why = "exit " + std::to_string(WEXITSTATUS(status));
        if (r == w.pid && WIFSIGNALED(status)) why = "signal " + std::to_string(WTERMSIG(status));
        bench::Fail(o, "a worker did not send its names (" + why + ")");
      }
      peers.push_back(n);
    }
  }
  Node hub(o, 1, false);
  std::vector<fi_addr_t> addr;
  addr.reserve(peers.size());
  for (const Name& n : peers) addr.push_back(hub.Insert(n));
  for (WorkerProc& w : workers) {
    char ready = 0;
    if (!WriteAll(w.to, &hub.names()[0], sizeof(Name)) || !ReadAll(w.from, &ready, 1)) {
      bench::Fail(o, "a worker did not start");
    }
  }
  hub.PostAllRecvs();
  const size_t base = Rss();
  uint32_t seq = 0;
  auto ping = [&](uint32_t peer) {
    uint8_t m[kMsg];
    Encode(m, peer, ++seq);
    hub.Send(0, addr[peer], m);
    const size_t slot = hub.WaitRecv("an echo");
    if (std::memcmp(hub.Buf(slot), m, kMsg) != 0) {
      bench::Fail(o, "peer " + std::to_string(peer) + " echoed the wrong bytes");
    }
    hub.PostRecv(slot);
  };
  for (uint64_t r = 0; r < o.rounds; ++r) {
    for (uint32_t p = 0; p < peers.size(); ++p) ping(p);
  }
  const size_t touched = Rss();
  for (uint64_t i = 0; i < o.warmup; ++i) ping(0);
  const uint64_t iters = o.iters != 0 ? o.iters : 10000;
  const double t0 = bench::NowSeconds();
  for (uint64_t i = 0; i < iters; ++i) ping(0);
  const double latency_us = (bench::NowSeconds() - t0) * 1e6 / (2.0 * static_cast<double>(iters));
  const size_t after_hot = Rss();
  const double n = static_cast<double>(peers.size());
  const double per_peer = (static_cast<double>(touched) - static_cast<double>(base)) / n;
  const double per_peer_hot = (static_cast<double>(after_hot) - static_cast<double>(base)) / n;
  if (o.csv) {
    std::printf(
        "program,provider,peers,rss_base_kib,per_peer_bytes,per_peer_after_hot_bytes,"
        "hot_latency_us\n");
    std::printf("rdm_scale,%s,%zu,%zu,%.0f,%.0f,%.3f\n", o.provider.c_str(), peers.size(),
                base / 1024, per_peer, per_peer_hot, latency_us);
  } else {
    std::printf(
        "peers %zu  rss_base_kib %zu  per_peer_bytes %.0f  per_peer_after_hot_bytes %.0f  "
        "hot_latency_us %.3f\n",
        peers.size(), base / 1024, per_peer, per_peer_hot, latency_us);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = bench::ParseArgs(argc, argv, bench::kScale);
  if (o.peers == 0 || o.procs == 0 || o.procs > o.peers) {
    std::fprintf(stderr, "%s: need 1 <= --procs <= --peers\n", o.program.c_str());
    return 2;
  }
  // Workers first: nothing of libfabric exists in this process yet.
  std::vector<WorkerProc> workers(o.procs);
  for (size_t w = 0; w < o.procs; ++w) {
    int up[2];
    int down[2];
    if (pipe(up) != 0 || pipe(down) != 0) bench::Fail(o, "pipe failed");
    workers[w].count = o.peers / o.procs + (w < o.peers % o.procs ? 1 : 0);
    const pid_t pid = fork();
    if (pid < 0) bench::Fail(o, "fork failed");
    if (pid == 0) {
      close(up[0]);
      close(down[1]);
      for (size_t k = 0; k < w; ++k) {  // the earlier workers' pipe ends are not ours
        close(workers[k].from);
        close(workers[k].to);
      }
      std::_Exit(Worker(o, workers[w].count, up[1], down[0]));
    }
    close(up[1]);
    close(down[0]);
    workers[w].pid = pid;
    workers[w].from = up[0];
    workers[w].to = down[1];
  }
  std::signal(SIGPIPE, SIG_IGN);
  const int rc = Hub(o, workers);
  int failed = 0;
  for (WorkerProc& w : workers) close(w.to);  // EOF: the workers stop
  const double deadline = bench::NowSeconds() + o.timeout;
  for (WorkerProc& w : workers) {
    int status = 0;
    pid_t r = 0;
    while ((r = waitpid(w.pid, &status, WNOHANG)) == 0 && bench::NowSeconds() < deadline) {
      usleep(10000);
    }
    if (r == 0) {
      kill(w.pid, SIGKILL);
      waitpid(w.pid, &status, 0);
      ++failed;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
    }
    close(w.from);
  }
  if (failed != 0) {
    std::fprintf(stderr, "%s: %d worker(s) failed\n", o.program.c_str(), failed);
    return 1;
  }
  return rc;
}
