// rdm_loss: one side of the RDM loss test (tests/netns/rdm_loss_test.sh), a
// libfabric application that opens the iwarpx provider through the public API
// (FI_PROVIDER_PATH) and drives an FI_EP_RDM endpoint through lossy paths.
//
//   rdm_loss server <bind-ip> <port-file>
//   rdm_loss client <bind-ip> <server-ip:port> <count>
//
// The server writes "ip:port" of its endpoint (fi_getname) to <port-file>
// (atomically, by rename) once it can receive. The client sends HELLO (the
// count and its own address), then <count> tagged messages, tag = index, of
// mixed sizes (1 B .. 64 KiB, every 1000th up to 1 MiB; the payload is a
// function of the index) with at most kSendWindow sends outstanding.
//
// The server posts wildcard data receives (they match every tag below bit 62,
// in arrival order), receive k sized for message k plus slack: the k-th
// receive must complete with tag k, length size(k), every byte right and the
// slack untouched. That checks order (matching is in arrival order), exactly
// once (a duplicate would take the next receive and show a wrong tag, or be
// the one completion too many), and the bytes. After the last one it posts
// one more receive and fails if anything completes within 1 s.
//
// RMA: the server registers a 4 MiB region inside a buffer with guard pages,
// all 0x5A, and sends KEY {address, key, length}; the client writes three
// 1 MiB chunks and 64 small pieces at unaligned offsets (fi_write), reads
// each back (fi_read) and compares, then sends DONE. The server compares the
// whole buffer (written bytes, untouched bytes, guards) and answers FIN with
// its verdict; the client's success includes that verdict.
//
// Each prints one summary line and exits 0 only if everything matched; 1 on
// any mismatch, error completion or timeout (no wait is unbounded: a stall of
// kStallSeconds without progress fails), 2 on bad arguments.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

constexpr uint32_t kVersion = FI_VERSION(1, 17);
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kSendWindow = 64;
constexpr size_t kRecvWindow = 256;
constexpr size_t kSlack = 64;  // bytes after each receive buffer that must stay kFill
constexpr uint8_t kFill = 0xEE;
constexpr int kStallSeconds = 30;

// Data tags are indexes (< 2^62); control messages have bit 62 set.
constexpr uint64_t kControl = uint64_t{1} << 62;
constexpr uint64_t kDataIgnore = kControl - 1;
constexpr uint64_t kHelloTag = kControl | 1;
constexpr uint64_t kKeyTag = kControl | 2;
constexpr uint64_t kDoneTag = kControl | 3;
constexpr uint64_t kFinTag = kControl | 4;

// RMA region on the server: kRegion bytes registered, kGuard bytes either side.
constexpr size_t kRegion = 4 * kMiB;
constexpr size_t kGuard = 4096;
constexpr uint8_t kUntouched = 0x5A;

struct Hello {
  uint64_t count = 0;
  sockaddr_in addr{};
};
struct Key {
  uint64_t addr = 0;
  uint64_t key = 0;
  uint64_t len = 0;
};

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Mostly small; both sides of the eager limit (16 KiB - 32 by default);
// every 1000th message 64 KiB .. 1 MiB (rendezvous).
size_t MessageSize(uint64_t i) {
  const uint64_t h = Mix(i);
  const uint64_t r = h >> 8;
  if (i % 1000 == 999) return 65537 + r % (kMiB - 65536);
  switch (h % 100) {
    case 99: return 16385 + r % 49152;
    case 98:
    case 97:
    case 96: return 4097 + r % 12288;
    default: break;
  }
  if (h % 100 >= 80) return 257 + r % 3840;
  return 1 + r % 256;
}

uint8_t PayloadByte(uint64_t i, size_t j) {
  const uint64_t h = Mix(i);
  return static_cast<uint8_t>((h >> ((j & 7) * 8)) ^ (j * 131) ^ (j >> 9));
}

void FillPayload(uint64_t i, uint8_t* p, size_t n) {
  for (size_t j = 0; j < n; ++j) p[j] = PayloadByte(i, j);
  if (n >= sizeof(i)) std::memcpy(p, &i, sizeof(i));  // the index, for diagnostics
}

// Offset of the first wrong byte, or -1.
int64_t CheckPayload(uint64_t i, const uint8_t* p, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    uint8_t want = PayloadByte(i, j);
    if (n >= sizeof(i) && j < sizeof(i)) want = static_cast<uint8_t>(i >> (8 * j));
    if (p[j] != want) return static_cast<int64_t>(j);
  }
  return -1;
}

// The RMA writes: three 1 MiB chunks and 64 small pieces, none overlapping,
// at unaligned offsets inside the region.
struct Piece {
  size_t offset;
  size_t len;
};
std::vector<Piece> RmaPlan() {
  std::vector<Piece> plan;
  for (size_t k = 0; k < 3; ++k) plan.push_back({k * (kMiB + 4096) + 13, kMiB});
  const size_t base = 3 * kMiB + 16384 + 7;
  for (size_t k = 0; k < 64; ++k) plan.push_back({base + k * 4100, 1 + (k * 997) % 4000});
  return plan;
}
uint8_t RmaByte(size_t offset) {
  return static_cast<uint8_t>((offset * 167) ^ (offset >> 11) ^ 0x3C);
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: rdm_loss server <bind-ip> <port-file>\n"
               "       rdm_loss client <bind-ip> <server-ip:port> <count>\n");
  std::exit(2);
}

bool ParseAddr(const std::string& s, sockaddr_in* out) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  *out = sockaddr_in{};
  out->sin_family = AF_INET;
  char* end = nullptr;
  const unsigned long port = std::strtoul(s.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port == 0 || port > 65535) return false;
  out->sin_port = htons(static_cast<uint16_t>(port));
  return inet_pton(AF_INET, s.substr(0, colon).c_str(), &out->sin_addr) == 1;
}

std::string FormatAddr(const sockaddr_in& a) {
  std::array<char, INET_ADDRSTRLEN> ip{};
  inet_ntop(AF_INET, &a.sin_addr, ip.data(), ip.size());
  return std::string(ip.data()) + ":" + std::to_string(ntohs(a.sin_port));
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// One RDM endpoint with its fabric, domain, AV and CQ; reports the first
// failure on stderr and keeps it in `failed`.
class Endpoint {
 public:
  explicit Endpoint(const char* role) : role_(role) {}
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;
  ~Endpoint() {
    if (ep_ != nullptr) fi_close(&ep_->fid);
    if (cq_ != nullptr) fi_close(&cq_->fid);
    if (av_ != nullptr) fi_close(&av_->fid);
    if (domain_ != nullptr) fi_close(&domain_->fid);
    if (fabric_ != nullptr) fi_close(&fabric_->fid);
    fi_freeinfo(info_);
  }

  bool Open(const char* node) {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("iwarpx");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_TAGGED | FI_RMA;
    hints->addr_format = FI_SOCKADDR_IN;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
    const int rc = fi_getinfo(kVersion, node, "0", FI_SOURCE, hints, &info_);
    fi_freeinfo(hints);
    if (rc != 0) return Fail("fi_getinfo", rc);
    if (int r = fi_fabric(info_->fabric_attr, &fabric_, nullptr); r != 0) {
      return Fail("fi_fabric", r);
    }
    if (int r = fi_domain(fabric_, info_, &domain_, nullptr); r != 0) {
      return Fail("fi_domain", r);
    }
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    if (int r = fi_av_open(domain_, &av_attr, &av_, nullptr); r != 0) {
      return Fail("fi_av_open", r);
    }
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_TAGGED;
    cq_attr.size = 4096;
    if (int r = fi_cq_open(domain_, &cq_attr, &cq_, nullptr); r != 0) {
      return Fail("fi_cq_open", r);
    }
    if (int r = fi_endpoint(domain_, info_, &ep_, nullptr); r != 0) {
      return Fail("fi_endpoint", r);
    }
    if (int r = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV); r != 0) {
      return Fail("fi_ep_bind(cq)", r);
    }
    if (int r = fi_ep_bind(ep_, &av_->fid, 0); r != 0) return Fail("fi_ep_bind(av)", r);
    if (int r = fi_enable(ep_); r != 0) return Fail("fi_enable", r);
    size_t len = sizeof(name_);
    if (int r = fi_getname(&ep_->fid, &name_, &len); r != 0) return Fail("fi_getname", r);
    return true;
  }

  bool Insert(const sockaddr_in& peer, fi_addr_t* out) {
    const int n = fi_av_insert(av_, &peer, 1, out, 0, nullptr);
    if (n != 1) return Fail("fi_av_insert", n < 0 ? n : -FI_EINVAL);
    return true;
  }

  // Posts with `post` until it stops saying -FI_EAGAIN (progressing the CQ
  // into `on` meanwhile), bounded by the stall timeout.
  bool Post(const char* what, const std::function<ssize_t()>& post,
            const std::function<bool(const fi_cq_tagged_entry&)>& on) {
    const auto end = Clock::now() + std::chrono::seconds(kStallSeconds);
    for (;;) {
      const ssize_t rc = post();
      if (rc == 0) return true;
      if (rc != -FI_EAGAIN) return Fail(what, static_cast<int>(rc));
      if (Clock::now() > end) return Fail(what, -FI_ETIMEDOUT);
      if (Drain(on) < 0) return false;
    }
  }

  // Reads what the CQ has, handing each completion to `on`; returns the
  // number handled, or -1 after an error completion or a false from `on`.
  // `on_error`, when set, may accept an error entry (returns true).
  int Drain(const std::function<bool(const fi_cq_tagged_entry&)>& on,
            const std::function<bool(const fi_cq_err_entry&)>& on_error = nullptr) {
    std::array<fi_cq_tagged_entry, 16> e{};
    const ssize_t n = fi_cq_read(cq_, e.data(), e.size());
    if (n == -FI_EAGAIN) return 0;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(cq_, &err, 0) != 1) {
        Fail("fi_cq_readerr", -FI_EIO);
        return -1;
      }
      if (on_error && on_error(err)) return 1;
      std::fprintf(stderr,
                   "rdm_loss %s: error completion: err %d (%s) prov_errno %d flags 0x%" PRIx64
                   " tag 0x%" PRIx64 " len %zu olen %zu context %p\n",
                   role_, err.err, fi_strerror(err.err), err.prov_errno, err.flags, err.tag,
                   err.len, err.olen, err.op_context);
      failed = true;
      return -1;
    }
    if (n < 0) {
      Fail("fi_cq_read", static_cast<int>(n));
      return -1;
    }
    for (ssize_t k = 0; k < n; ++k) {
      if (!on(e[static_cast<size_t>(k)])) {
        failed = true;
        return -1;
      }
    }
    return static_cast<int>(n);
  }

  // Drains until `done()` holds; fails after kStallSeconds without a
  // completion.
  bool Until(const char* what, const std::function<bool()>& done,
             const std::function<bool(const fi_cq_tagged_entry&)>& on) {
    auto last = Clock::now();
    while (!done()) {
      const int n = Drain(on);
      if (n < 0) return false;
      if (n > 0) {
        last = Clock::now();
      } else if (Clock::now() - last > std::chrono::seconds(kStallSeconds)) {
        std::fprintf(stderr, "rdm_loss %s: no completion for %d s while %s\n", role_, kStallSeconds,
                     what);
        failed = true;
        return false;
      }
    }
    return true;
  }

  bool Fail(const char* call, int rc) {
    std::fprintf(stderr, "rdm_loss %s: %s failed: %d (%s)\n", role_, call, rc, fi_strerror(-rc));
    failed = true;
    return false;
  }

  fid_domain* domain() const { return domain_; }
  fid_ep* ep() const { return ep_; }
  const sockaddr_in& name() const { return name_; }

  bool failed = false;

 private:
  const char* role_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_ep* ep_ = nullptr;
  sockaddr_in name_{};
};

bool IsRecv(const fi_cq_tagged_entry& e) {
  return (e.flags & FI_RECV) != 0;
}

// ---- server ---------------------------------------------------------------

struct RecvSlot {
  uint64_t index = 0;
  Bytes buf;
  bool busy = false;
};

int Server(const char* bind_ip, const std::string& port_file) {
  Endpoint ep("server");
  if (!ep.Open(bind_ip)) return 1;
  const auto no_completion = [](const fi_cq_tagged_entry& e) {
    std::fprintf(stderr, "rdm_loss server: unexpected completion tag 0x%" PRIx64 "\n", e.tag);
    return false;
  };

  Hello hello;
  Bytes done_msg(16);
  bool got_hello = false;
  bool got_done = false;
  const auto control = [&](const fi_cq_tagged_entry& e) {
    if (e.op_context == &hello) {
      got_hello = e.len == sizeof(hello) && e.tag == kHelloTag;
      if (!got_hello) std::fprintf(stderr, "rdm_loss server: bad HELLO (len %zu)\n", e.len);
      return got_hello;
    }
    if (e.op_context == &done_msg) {
      got_done = e.tag == kDoneTag;
      return got_done;
    }
    return false;
  };
  if (!ep.Post(
          "fi_trecv(HELLO)",
          [&] {
            return fi_trecv(ep.ep(), &hello, sizeof(hello), nullptr, FI_ADDR_UNSPEC, kHelloTag, 0,
                            &hello);
          },
          no_completion) ||
      !ep.Post(
          "fi_trecv(DONE)",
          [&] {
            return fi_trecv(ep.ep(), done_msg.data(), done_msg.size(), nullptr, FI_ADDR_UNSPEC,
                            kDoneTag, 0, &done_msg);
          },
          no_completion)) {
    return 1;
  }

  {
    const std::string tmp = port_file + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    const std::string text = FormatAddr(ep.name()) + "\n";
    if (f == nullptr || std::fputs(text.c_str(), f) < 0 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), port_file.c_str()) != 0) {
      std::perror("rdm_loss server: port file");
      return 1;
    }
    std::printf("rdm_loss server: ready at %s\n", FormatAddr(ep.name()).c_str());
    std::fflush(stdout);
  }

  // HELLO: the client may take a while to start.
  {
    const auto end = Clock::now() + std::chrono::seconds(60);
    while (!got_hello) {
      if (ep.Drain(control) < 0) return 1;
      if (Clock::now() > end) {
        std::fprintf(stderr, "rdm_loss server: no HELLO within 60 s\n");
        return 1;
      }
    }
  }
  const uint64_t count = hello.count;
  fi_addr_t client = FI_ADDR_UNSPEC;
  if (!ep.Insert(hello.addr, &client)) return 1;
  std::printf("rdm_loss server: client %s, %" PRIu64 " messages\n", FormatAddr(hello.addr).c_str(),
              count);
  std::fflush(stdout);

  // Data phase.
  const auto start = Clock::now();
  std::vector<RecvSlot> slots(kRecvWindow);
  uint64_t posted = 0;
  uint64_t completed = 0;
  uint64_t bytes = 0;
  uint64_t mismatches = 0;
  const auto on_data = [&](const fi_cq_tagged_entry& e) {
    if (e.op_context == &done_msg) {
      std::fprintf(stderr, "rdm_loss server: DONE before all data arrived\n");
      return false;
    }
    auto* s = static_cast<RecvSlot*>(e.op_context);
    if (!IsRecv(e) || s < slots.data() || s >= slots.data() + slots.size() || !s->busy) {
      std::fprintf(stderr,
                   "rdm_loss server: stray completion flags 0x%" PRIx64 " tag %" PRIu64 "\n",
                   e.flags, e.tag);
      return false;
    }
    const size_t want = MessageSize(s->index);
    const int64_t bad = e.len == want ? CheckPayload(s->index, s->buf.data(), want) : -1;
    bool slack_ok = true;
    for (size_t j = want; j < s->buf.size(); ++j) slack_ok = slack_ok && s->buf[j] == kFill;
    if (e.tag != s->index || e.len != want || bad >= 0 || !slack_ok || (e.flags & FI_TAGGED) == 0) {
      ++mismatches;
      uint64_t seen = 0;
      if (e.len >= sizeof(seen)) std::memcpy(&seen, s->buf.data(), sizeof(seen));
      std::fprintf(stderr,
                   "rdm_loss server: receive #%" PRIu64 " got tag %" PRIu64
                   " len %zu (want %zu)"
                   " first wrong byte %" PRId64 " slack %s embedded index %" PRIu64 "\n",
                   s->index, e.tag, e.len, want, bad, slack_ok ? "ok" : "OVERWRITTEN", seen);
      if (mismatches >= 10) return false;
    }
    bytes += e.len;
    s->busy = false;
    ++completed;
    return true;
  };
  const auto post_one = [&](RecvSlot& s) {
    s.index = posted;
    s.buf.assign(MessageSize(posted) + kSlack, kFill);
    s.busy = true;
    ++posted;
    return ep.Post(
        "fi_trecv(data)",
        [&] {
          return fi_trecv(ep.ep(), s.buf.data(), s.buf.size(), nullptr, FI_ADDR_UNSPEC, 0,
                          kDataIgnore, &s);
        },
        on_data);
  };
  for (auto& s : slots) {
    if (posted < count && !post_one(s)) return 1;
  }
  auto last = Clock::now();
  while (completed < count) {
    const int n = ep.Drain(on_data);
    if (n < 0) return 1;
    if (n == 0) {
      if (Clock::now() - last > std::chrono::seconds(kStallSeconds)) {
        std::fprintf(stderr,
                     "rdm_loss server: no message for %d s: %" PRIu64 " of %" PRIu64 " arrived\n",
                     kStallSeconds, completed, count);
        return 1;
      }
      continue;
    }
    last = Clock::now();
    for (auto& s : slots) {
      if (!s.busy && posted < count && !post_one(s)) return 1;
    }
  }
  const double data_secs = Seconds(start);

  // Nothing more may arrive: one more receive stays empty for 1 s.
  RecvSlot extra;
  extra.buf.assign(kMiB + kSlack, kFill);
  extra.busy = true;
  uint64_t extra_completions = 0;
  bool extra_cancelled = false;
  const auto on_extra = [&](const fi_cq_tagged_entry& e) {
    if (e.op_context == &done_msg) {
      std::fprintf(stderr, "rdm_loss server: DONE before KEY\n");
      return false;
    }
    ++extra_completions;
    std::fprintf(stderr,
                 "rdm_loss server: extra completion after the last message: tag %" PRIu64
                 " len %zu\n",
                 e.tag, e.len);
    return false;
  };
  const auto accept_cancel = [&](const fi_cq_err_entry& err) {
    extra_cancelled = err.op_context == &extra && err.err == FI_ECANCELED;
    return extra_cancelled;
  };
  if (!ep.Post(
          "fi_trecv(extra)",
          [&] {
            return fi_trecv(ep.ep(), extra.buf.data(), extra.buf.size(), nullptr, FI_ADDR_UNSPEC, 0,
                            kDataIgnore, &extra);
          },
          on_extra)) {
    return 1;
  }
  {
    const auto end = Clock::now() + std::chrono::seconds(1);
    while (Clock::now() < end) {
      if (ep.Drain(on_extra) < 0) return 1;
    }
    if (const ssize_t rc = fi_cancel(&ep.ep()->fid, &extra); rc != 0) {
      ep.Fail("fi_cancel", static_cast<int>(rc));
      return 1;
    }
    const auto cend = Clock::now() + std::chrono::seconds(5);
    while (!extra_cancelled && Clock::now() < cend) {
      if (ep.Drain(on_extra, accept_cancel) < 0) return 1;
    }
    if (!extra_cancelled) {
      std::fprintf(stderr, "rdm_loss server: the extra receive was not cancelled within 5 s\n");
      return 1;
    }
  }

  // RMA phase.
  Bytes region(kGuard + kRegion + kGuard, kUntouched);
  fid_mr* mr = nullptr;
  if (int r = fi_mr_reg(ep.domain(), region.data() + kGuard, kRegion,
                        FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, nullptr);
      r != 0) {
    ep.Fail("fi_mr_reg", r);
    return 1;
  }
  Key key{reinterpret_cast<uint64_t>(region.data() + kGuard), fi_mr_key(mr), kRegion};
  bool key_sent = false;
  const auto on_rma = [&](const fi_cq_tagged_entry& e) {
    if (e.op_context == &key) return key_sent = true;
    return control(e);
  };
  if (!ep.Post(
          "fi_tsend(KEY)",
          [&] { return fi_tsend(ep.ep(), &key, sizeof(key), nullptr, client, kKeyTag, &key); },
          on_rma) ||
      !ep.Until(
          "waiting for DONE", [&] { return key_sent && got_done; }, on_rma)) {
    fi_close(&mr->fid);
    return 1;
  }
  // The whole buffer: written pieces, untouched bytes, guards.
  Bytes expect(region.size(), kUntouched);
  uint64_t rma_bytes = 0;
  for (const Piece& p : RmaPlan()) {
    for (size_t j = 0; j < p.len; ++j) expect[kGuard + p.offset + j] = RmaByte(p.offset + j);
    rma_bytes += p.len;
  }
  uint64_t rma_wrong = 0;
  size_t first_wrong = 0;
  for (size_t j = 0; j < region.size(); ++j) {
    if (region[j] != expect[j]) {
      if (rma_wrong++ == 0) first_wrong = j;
    }
  }
  if (rma_wrong != 0) {
    std::fprintf(stderr,
                 "rdm_loss server: %" PRIu64
                 " wrong bytes in the RMA buffer, first at region "
                 "offset %" PRId64 " (0x%02x, want 0x%02x)\n",
                 rma_wrong, static_cast<int64_t>(first_wrong) - static_cast<int64_t>(kGuard),
                 region[first_wrong], expect[first_wrong]);
  }

  // FIN with the verdict; then keep the endpoint alive a while so that its
  // retransmission (if FIN is lost) still happens.
  const bool ok = mismatches == 0 && rma_wrong == 0 && !ep.failed;
  uint8_t fin = ok ? 1 : 0;
  bool fin_sent = false;
  const auto on_fin = [&](const fi_cq_tagged_entry& e) {
    if (e.op_context == &fin) return fin_sent = true;
    return false;
  };
  if (!ep.Post(
          "fi_tsend(FIN)",
          [&] { return fi_tsend(ep.ep(), &fin, sizeof(fin), nullptr, client, kFinTag, &fin); },
          on_fin) ||
      !ep.Until(
          "sending FIN", [&] { return fin_sent; }, on_fin)) {
    fi_close(&mr->fid);
    return 1;
  }
  {
    const auto end = Clock::now() + std::chrono::seconds(2);
    while (Clock::now() < end) {
      if (ep.Drain(on_fin) < 0) break;
    }
  }
  fi_close(&mr->fid);
  std::printf("rdm_loss server: %s: %" PRIu64 " of %" PRIu64 " messages (%" PRIu64
              " bytes) in %.1f s, %" PRIu64 " mismatches, %" PRIu64
              " completions after the last; RMA %" PRIu64 " bytes written, %" PRIu64
              " wrong bytes in the %zu-byte buffer (guards included)\n",
              ok ? "OK" : "FAILED", completed, count, bytes, data_secs, mismatches,
              extra_completions, rma_bytes, rma_wrong, region.size());
  return ok ? 0 : 1;
}

// ---- client ---------------------------------------------------------------

struct SendSlot {
  uint64_t index = 0;
  Bytes buf;
  bool busy = false;
};

int Client(const char* bind_ip, const std::string& server_text, uint64_t count) {
  sockaddr_in server_addr{};
  if (!ParseAddr(server_text, &server_addr)) Usage();
  Endpoint ep("client");
  if (!ep.Open(bind_ip)) return 1;
  fi_addr_t server = FI_ADDR_UNSPEC;
  if (!ep.Insert(server_addr, &server)) return 1;

  Key key;
  uint8_t fin = 0;
  bool got_key = false;
  bool got_fin = false;
  const auto control = [&](const fi_cq_tagged_entry& e) {
    if (e.op_context == &key) {
      got_key = e.tag == kKeyTag && e.len == sizeof(key);
      return got_key;
    }
    if (e.op_context == &fin) {
      got_fin = e.tag == kFinTag && e.len == sizeof(fin);
      return got_fin;
    }
    return false;
  };
  const auto post_control = [&] {
    return ep.Post(
               "fi_trecv(KEY)",
               [&] {
                 return fi_trecv(ep.ep(), &key, sizeof(key), nullptr, FI_ADDR_UNSPEC, kKeyTag, 0,
                                 &key);
               },
               control) &&
           ep.Post(
               "fi_trecv(FIN)",
               [&] {
                 return fi_trecv(ep.ep(), &fin, sizeof(fin), nullptr, FI_ADDR_UNSPEC, kFinTag, 0,
                                 &fin);
               },
               control);
  };
  if (!post_control()) return 1;

  Hello hello{count, ep.name()};
  bool hello_sent = false;
  std::vector<SendSlot> slots(kSendWindow);
  uint64_t completed = 0;
  uint64_t bytes = 0;
  const auto on_send = [&](const fi_cq_tagged_entry& e) {
    if (e.op_context == &hello) return hello_sent = true;
    if (e.op_context == &key || e.op_context == &fin) return control(e);
    auto* s = static_cast<SendSlot*>(e.op_context);
    if (IsRecv(e) || s < slots.data() || s >= slots.data() + slots.size() || !s->busy) {
      std::fprintf(stderr, "rdm_loss client: stray completion flags 0x%" PRIx64 "\n", e.flags);
      return false;
    }
    s->busy = false;
    ++completed;
    return true;
  };
  if (!ep.Post(
          "fi_tsend(HELLO)",
          [&] {
            return fi_tsend(ep.ep(), &hello, sizeof(hello), nullptr, server, kHelloTag, &hello);
          },
          on_send)) {
    return 1;
  }

  const auto start = Clock::now();
  uint64_t next = 0;
  auto last = Clock::now();
  while (completed < count) {
    for (auto& s : slots) {
      if (s.busy || next >= count) continue;
      s.index = next;
      s.buf.resize(MessageSize(next));
      FillPayload(next, s.buf.data(), s.buf.size());
      const ssize_t rc = fi_tsend(ep.ep(), s.buf.data(), s.buf.size(), nullptr, server, next, &s);
      if (rc == -FI_EAGAIN) break;
      if (rc != 0) {
        ep.Fail("fi_tsend", static_cast<int>(rc));
        return 1;
      }
      s.busy = true;
      bytes += s.buf.size();
      ++next;
    }
    const int n = ep.Drain(on_send);
    if (n < 0) return 1;
    if (n > 0) {
      last = Clock::now();
    } else if (Clock::now() - last > std::chrono::seconds(kStallSeconds)) {
      std::fprintf(
          stderr, "rdm_loss client: no send completion for %d s: %" PRIu64 " of %" PRIu64 " done\n",
          kStallSeconds, completed, count);
      return 1;
    }
  }
  const double data_secs = Seconds(start);
  if (!ep.Until(
          "waiting for HELLO's completion and KEY", [&] { return hello_sent && got_key; },
          on_send)) {
    return 1;
  }
  if (key.len != kRegion) {
    std::fprintf(stderr, "rdm_loss client: KEY says %" PRIu64 " bytes\n", key.len);
    return 1;
  }

  // RMA: write every piece, then read each back.
  const std::vector<Piece> plan = RmaPlan();
  std::vector<Bytes> out(plan.size());
  std::vector<Bytes> back(plan.size());
  size_t rma_done = 0;
  const auto on_rma = [&](const fi_cq_tagged_entry& e) {
    const auto* b = static_cast<const Bytes*>(e.op_context);
    const bool write = b >= out.data() && b < out.data() + out.size();
    const bool read = b >= back.data() && b < back.data() + back.size();
    if (!write && !read) return control(e);
    ++rma_done;
    return true;
  };
  uint64_t rma_bytes = 0;
  for (size_t k = 0; k < plan.size(); ++k) {
    out[k].resize(plan[k].len);
    for (size_t j = 0; j < plan[k].len; ++j) out[k][j] = RmaByte(plan[k].offset + j);
    rma_bytes += plan[k].len;
    if (!ep.Post(
            "fi_write",
            [&] {
              return fi_write(ep.ep(), out[k].data(), out[k].size(), nullptr, server,
                              key.addr + plan[k].offset, key.key, &out[k]);
            },
            on_rma)) {
      return 1;
    }
  }
  if (!ep.Until(
          "waiting for fi_write", [&] { return rma_done == plan.size(); }, on_rma))
    return 1;
  for (size_t k = 0; k < plan.size(); ++k) {
    back[k].assign(plan[k].len, kFill);
    if (!ep.Post(
            "fi_read",
            [&] {
              return fi_read(ep.ep(), back[k].data(), back[k].size(), nullptr, server,
                             key.addr + plan[k].offset, key.key, &back[k]);
            },
            on_rma)) {
      return 1;
    }
  }
  if (!ep.Until(
          "waiting for fi_read", [&] { return rma_done == 2 * plan.size(); }, on_rma)) {
    return 1;
  }
  size_t read_wrong = 0;
  for (size_t k = 0; k < plan.size(); ++k) {
    if (back[k] != out[k]) {
      ++read_wrong;
      std::fprintf(stderr,
                   "rdm_loss client: read back of piece %zu (offset %zu, %zu bytes) differs\n", k,
                   plan[k].offset, plan[k].len);
    }
  }

  uint8_t done = read_wrong == 0 ? 1 : 0;
  bool done_sent = false;
  const auto on_done = [&](const fi_cq_tagged_entry& e) {
    if (e.op_context == &done) return done_sent = true;
    return control(e);
  };
  if (!ep.Post(
          "fi_tsend(DONE)",
          [&] { return fi_tsend(ep.ep(), &done, sizeof(done), nullptr, server, kDoneTag, &done); },
          on_done) ||
      !ep.Until(
          "waiting for FIN", [&] { return done_sent && got_fin; }, on_done)) {
    return 1;
  }
  const bool ok = read_wrong == 0 && fin == 1 && !ep.failed;
  std::printf("rdm_loss client: %s: %" PRIu64 " messages (%" PRIu64
              " bytes) sent and completed in %.1f s; RMA %zu writes (%" PRIu64
              " bytes), %zu reads back, %zu differ; server verdict %s\n",
              ok ? "OK" : "FAILED", completed, bytes, data_secs, plan.size(), rma_bytes,
              plan.size(), read_wrong, fin == 1 ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) Usage();
  const std::string role = argv[1];
  if (role == "server" && argc == 4) return Server(argv[2], argv[3]);
  if (role == "client" && argc == 5) {
    char* end = nullptr;
    const uint64_t count = std::strtoull(argv[4], &end, 10);
    if (*end != '\0' || count == 0) Usage();
    return Client(argv[2], argv[3], count);
  }
  Usage();
}
