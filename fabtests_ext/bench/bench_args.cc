// Command line, size lists, iteration counts, patterns and output for the
// connected-endpoint benchmarks. See bench_args.h for the contract.
#include "bench_args.h"

#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>

namespace bench {
namespace {

constexpr size_t kDefaultMinSize = 8;
constexpr size_t kDefaultMaxSize = size_t{4} << 20;
constexpr uint64_t kMinMeasuredIters = 10;
constexpr uint64_t kMaxMeasuredIters = 10'000'000;

[[noreturn]] void Usage(const char* prog, unsigned extras, const std::string& error) {
  if (!error.empty()) fprintf(stderr, "%s: %s\n", prog, error.c_str());
  fprintf(stderr,
          "usage: server: %s [options]\n"
          "       client: %s [options] <server-addr>\n"
          "  -p PROV          provider name (default tcp)\n"
          "  -s ADDR          address to bind: server, RDM client (default: any)\n"
          "  -B PORT          server: port to listen on, 0 = any (default 47592)\n"
          "  -P PORT          client: server's port (default 47592)\n"
          "  --port-file F    server: write the bound port to F once listening\n"
          "  --sizes LIST     e.g. 8:4m (powers of two), 8,64,1k (default 8:4m)\n"
          "  --min-time SEC   measured time per size, adaptive iterations (0.2)\n"
          "  --iters N        fixed measured iterations per size\n"
          "  --warmup N       warm-up iterations per size (10)\n"
          "  --timeout SEC    bound on every single wait (30)\n"
          "  --csv            machine-readable output\n"
          "  -v               print the provider's fi_info summary\n",
          prog, prog);
  if ((extras & (kWindowAndOp | kWindowAndAv | kFloorOp)) != 0) {
    fprintf(stderr, "  -w N             operations in flight (64)\n");
  }
  if ((extras & kWindowAndOp) != 0) {
    fprintf(stderr, "  --op OP          write | read | send (write)\n");
  }
  if ((extras & kFloorOp) != 0) {
    fprintf(
        stderr,
        "  --op OP          udp (datagram ping-pong) | stream | udpstream (TCP / UDP bandwidth)\n");
    fprintf(stderr,
            "  --crc            client, stream ops: CRC32c over every 65000-byte chunk, checked\n"
            "                   by the receiver (what iWARP's datagram and MPA CRC cost)\n"
            "  --splice         client, --op stream: send by vmsplice + splice (no copy at the\n"
            "                   sender; the receiver's copy is the only one)\n");
  }
  if ((extras & kWindowAndAv) != 0) {
    fprintf(stderr, "  --av TYPE        address vector type: table | map (table)\n");
  }
  if ((extras & kCorrupt) != 0) {
    fprintf(stderr,
            "  --corrupt N      client: damage message N (from 1) to test the data check\n");
  }
  if ((extras & kDuration) != 0) {
    fprintf(stderr, "  --seconds SEC    client: run this long, then stop (10)\n");
  }
  if ((extras & kBlocking) != 0) {
    fprintf(stderr, "  --blocking       blocking recv() instead of busy polling\n");
  }
  if ((extras & kScale) != 0) {
    fprintf(stderr,
            "  --peers N        peer endpoints the hub talks to, 1..65536 (64)\n"
            "  --procs K        worker processes holding them, 1..N (2)\n"
            "  --rounds R       pings per peer before the hot-peer phase (1)\n");
  }
  exit(2);
}

bool ParseUnsigned(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || text[0] == '-') return false;
  *out = v;
  return true;
}

bool ParseDouble(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  const double v = strtod(text.c_str(), &end);
  if (*end != '\0' || !(v >= 0.0)) return false;
  *out = v;
  return true;
}

bool ParseSize(const std::string& text, size_t* out) {
  if (text.empty()) return false;
  std::string digits = text;
  size_t shift = 0;
  switch (digits.back()) {
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    default: break;
  }
  if (shift != 0) digits.pop_back();
  uint64_t v = 0;
  if (!ParseUnsigned(digits, &v) || v == 0 || v > (uint64_t{1} << (40 - shift))) return false;
  *out = static_cast<size_t>(v << shift);
  return true;
}

}  // namespace

size_t Options::max_size() const {
  return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
}

bool ParseSizes(const std::string& text, std::vector<size_t>* out) {
  std::vector<size_t> sizes;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const size_t colon = item.find(':');
    if (colon == std::string::npos) {
      size_t s = 0;
      if (!ParseSize(item, &s)) return false;
      sizes.push_back(s);
    } else {
      size_t lo = 0;
      size_t hi = 0;
      if (!ParseSize(item.substr(0, colon), &lo) || !ParseSize(item.substr(colon + 1), &hi) ||
          lo > hi) {
        return false;
      }
      for (size_t s = lo; s <= hi; s *= 2) sizes.push_back(s);
    }
    start = comma + 1;
  }
  if (sizes.empty()) return false;
  *out = std::move(sizes);
  return true;
}

Options ParseArgs(int argc, char** argv, unsigned extras) {
  Options o;
  if ((extras & kFloorOp) != 0) o.op = "udp";
  const char* slash = strrchr(argv[0], '/');
  o.program = slash != nullptr ? slash + 1 : argv[0];
  const char* prog = o.program.c_str();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(prog, extras, arg + " needs a value");
      return argv[++i];
    };
    uint64_t n = 0;
    if (arg == "-h" || arg == "--help") {
      Usage(prog, extras, "");
    } else if (arg == "-p") {
      o.provider = value();
    } else if (arg == "-s") {
      o.src_addr = value();
    } else if (arg == "-B" || arg == "-P") {
      o.port = value();
      if (!ParseUnsigned(o.port, &n) || n > 65535) Usage(prog, extras, "bad port " + o.port);
    } else if (arg == "--port-file") {
      o.port_file = value();
    } else if (arg == "--sizes") {
      const std::string list = value();
      if (!ParseSizes(list, &o.sizes)) Usage(prog, extras, "bad size list " + list);
    } else if (arg == "--min-time") {
      const std::string v = value();
      if (!ParseDouble(v, &o.min_time)) Usage(prog, extras, "bad --min-time " + v);
    } else if (arg == "--iters") {
      const std::string v = value();
      if (!ParseUnsigned(v, &o.iters) || o.iters == 0) Usage(prog, extras, "bad --iters " + v);
    } else if (arg == "--warmup") {
      const std::string v = value();
      if (!ParseUnsigned(v, &o.warmup) || o.warmup == 0) Usage(prog, extras, "bad --warmup " + v);
    } else if (arg == "--timeout") {
      const std::string v = value();
      if (!ParseDouble(v, &o.timeout) || o.timeout <= 0.0) {
        Usage(prog, extras, "bad --timeout " + v);
      }
    } else if (arg == "--csv") {
      o.csv = true;
    } else if (arg == "-v") {
      o.verbose = true;
    } else if (arg == "-w" && (extras & (kWindowAndOp | kWindowAndAv | kFloorOp)) != 0) {
      const std::string v = value();
      if (!ParseUnsigned(v, &n) || n == 0 || n > 65536) Usage(prog, extras, "bad -w " + v);
      o.window = static_cast<size_t>(n);
    } else if (arg == "--op" && (extras & kWindowAndOp) != 0) {
      o.op = value();
      if (o.op != "write" && o.op != "read" && o.op != "send") {
        Usage(prog, extras, "bad --op " + o.op);
      }
    } else if (arg == "--op" && (extras & kFloorOp) != 0) {
      o.op = value();
      if (o.op != "udp" && o.op != "stream" && o.op != "udpstream") {
        Usage(prog, extras, "bad --op " + o.op);
      }
    } else if (arg == "--crc" && (extras & kFloorOp) != 0) {
      o.crc = true;
    } else if (arg == "--splice" && (extras & kFloorOp) != 0) {
      o.splice = true;
    } else if (arg == "--av" && (extras & kWindowAndAv) != 0) {
      o.av = value();
      if (o.av != "table" && o.av != "map") Usage(prog, extras, "bad --av " + o.av);
    } else if (arg == "--corrupt" && (extras & kCorrupt) != 0) {
      const std::string v = value();
      if (!ParseUnsigned(v, &o.corrupt) || o.corrupt == 0)
        Usage(prog, extras, "bad --corrupt " + v);
    } else if (arg == "--seconds" && (extras & kDuration) != 0) {
      const std::string v = value();
      if (!ParseDouble(v, &o.seconds) || o.seconds <= 0.0) {
        Usage(prog, extras, "bad --seconds " + v);
      }
    } else if (arg == "--blocking" && (extras & kBlocking) != 0) {
      o.blocking = true;
    } else if ((arg == "--peers" || arg == "--procs") && (extras & kScale) != 0) {
      const std::string v = value();
      if (!ParseUnsigned(v, &n) || n == 0 || n > 65536) Usage(prog, extras, "bad " + arg + " " + v);
      (arg == "--peers" ? o.peers : o.procs) = static_cast<size_t>(n);
    } else if (arg == "--rounds" && (extras & kScale) != 0) {
      const std::string v = value();
      if (!ParseUnsigned(v, &o.rounds) || o.rounds == 0) Usage(prog, extras, "bad --rounds " + v);
    } else if (!arg.empty() && arg[0] == '-') {
      Usage(prog, extras, "unknown option " + arg);
    } else if (o.server.empty()) {
      o.server = arg;
    } else {
      Usage(prog, extras, "more than one server address");
    }
  }
  if (o.sizes.empty()) {
    for (size_t s = kDefaultMinSize; s <= kDefaultMaxSize; s *= 2) o.sizes.push_back(s);
  }
  return o;
}

uint64_t MeasuredIters(const Options& o, double warmup_seconds, uint64_t warmup_iters) {
  if (o.iters != 0) return o.iters;
  const double per_iter = warmup_seconds / static_cast<double>(std::max<uint64_t>(warmup_iters, 1));
  if (!(per_iter > 0.0)) return kMaxMeasuredIters;
  const double wanted = std::ceil(o.min_time / per_iter);
  if (wanted >= static_cast<double>(kMaxMeasuredIters)) return kMaxMeasuredIters;
  return std::max(kMinMeasuredIters, static_cast<uint64_t>(wanted));
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void FillPattern(uint8_t* buf, size_t size) {
  for (size_t j = 0; j < size; ++j) buf[j] = Pattern(size, j);
}

bool CheckPattern(const uint8_t* buf, size_t size) {
  for (size_t j = 1; j + 1 < size; ++j) {
    if (buf[j] != Pattern(size, j)) return false;
  }
  return true;
}

void SetTag(uint8_t* buf, size_t size, uint8_t tag) {
  buf[0] = tag;
  buf[size - 1] = static_cast<uint8_t>(tag ^ 0x5aU);
}

bool CheckTag(const uint8_t* buf, size_t size, uint8_t tag) {
  return buf[0] == tag && buf[size - 1] == static_cast<uint8_t>(tag ^ 0x5aU);
}

void PrintHeader(const Options& o, const char* unit) {
  if (o.csv) {
    printf("program,provider,op,size,iters,value,unit\n");
  } else {
    printf("# %s provider=%s op=%s\n%10s %10s %14s\n", o.program.c_str(), o.provider.c_str(),
           o.op.c_str(), "size", "iters", unit);
  }
  fflush(stdout);
}

void PrintResult(const Options& o, size_t size, uint64_t iters, double value, const char* unit) {
  if (o.csv) {
    printf("%s,%s,%s,%zu,%llu,%.3f,%s\n", o.program.c_str(), o.provider.c_str(), o.op.c_str(), size,
           static_cast<unsigned long long>(iters), value, unit);
  } else {
    printf("%10zu %10llu %14.3f\n", size, static_cast<unsigned long long>(iters), value);
  }
  fflush(stdout);
}

void Fail(const Options& o, const std::string& what) {
  fprintf(stderr, "%s: %s\n", o.program.c_str(), what.c_str());
  exit(1);
}

void WritePortFile(const Options& o, unsigned port) {
  if (o.port_file.empty()) return;
  const std::string tmp = o.port_file + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << port << "\n";
    if (!f.good()) Fail(o, "cannot write " + tmp);
  }
  if (rename(tmp.c_str(), o.port_file.c_str()) != 0) {
    Fail(o, "rename " + tmp + " -> " + o.port_file + ": " + strerror(errno));
  }
}

}  // namespace bench
