// bench_args: command line, size lists, adaptive iteration counts, data
// patterns and result lines shared by the benchmarks (msg_pingpong, rma_bw,
// tcp_pingpong on connected endpoints, tagged_bw on reliable datagram
// endpoints). No libfabric here, so the raw-socket floor links without it.
//
// Contract:
//   - ParseArgs exits(2) with a usage text on any malformed option; the
//     program passes the options it accepts besides the common ones.
//   - A positional argument makes the process the client (it is the server's
//     address); without one the process is the server.
//   - Result lines: human form "size iters value unit", or with --csv
//     "program,provider,op,size,iters,value,unit" (one header line first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bench {

struct Options {
  std::string program;           // argv[0] basename, for messages and CSV
  std::string provider = "tcp";  // -p
  std::string server;            // positional: client mode when non-empty
  std::string src_addr;          // -s: bind address (server; RDM client) (empty: default)
  std::string port = "47592";    // -B (server) / -P (client)
  std::string port_file;         // --port-file: server writes its bound port here
  std::vector<size_t> sizes;     // --sizes; default 8 B .. 4 MiB, powers of two
  double min_time = 0.2;         // --min-time: seconds per measured size
  uint64_t iters = 0;            // --iters: fixed count (0: adaptive)
  uint64_t warmup = 10;          // --warmup
  double timeout = 30.0;         // --timeout: bound on any single wait (seconds)
  bool csv = false;              // --csv
  bool verbose = false;          // -v
  size_t window = 64;            // -w (rma_bw, tagged_bw)
  std::string op = "write";      // --op: rma_bw write | read | send; raw_floor udp | stream
  bool crc = false;              // --crc (raw_floor stream ops): CRC32c per 65000-byte chunk
  bool splice = false;           // --splice (raw_floor --op stream): vmsplice + splice sends
  bool blocking = false;         // --blocking (tcp_pingpong only)
  std::string av = "table";      // --av (tagged_bw only): table | map
  uint64_t corrupt = 0;          // --corrupt (tagged_bw client): message number, 0 = none
  size_t peers = 64;             // --peers (rdm_scale): peer endpoints of the hub
  size_t procs = 2;              // --procs (rdm_scale): worker processes holding them
  uint64_t rounds = 1;           // --rounds (rdm_scale): pings per peer before the hot phase
  double seconds = 10.0;         // --seconds (soak generators): how long the client runs

  bool is_client() const { return !server.empty(); }
  size_t max_size() const;
};

// Which program-specific options ParseArgs accepts besides the common ones.
enum ExtraOptions : unsigned {
  kNoExtra = 0,
  kWindowAndOp = 1U << 0,  // -w, --op
  kBlocking = 1U << 1,     // --blocking
  kWindowAndAv = 1U << 2,  // -w, --av
  kCorrupt = 1U << 3,      // --corrupt (a test of the data check, not a benchmark option)
  kScale = 1U << 4,        // --peers, --procs, --rounds (rdm_scale)
  kDuration = 1U << 5,     // --seconds (soak_msg, soak_rdm)
  kFloorOp = 1U << 6,      // -w, --op udp|stream|udpstream, --crc, --splice (raw_floor)
};

Options ParseArgs(int argc, char** argv, unsigned extras);

// "8", "4k", "1m" -> bytes; "8:4m" -> powers of two from 8 to 4 MiB;
// comma-separated items combine. Returns false on a malformed list.
bool ParseSizes(const std::string& text, std::vector<size_t>* out);

// Iterations for the measured pass: --iters when given, otherwise enough to
// last min_time at the per-iteration cost seen in the warm-up, within bounds.
uint64_t MeasuredIters(const Options& o, double warmup_seconds, uint64_t warmup_iters);

// Measured pass: runs round(iters) -> seconds, starting from MeasuredIters
// on the warm-up; a round shorter than half of min_time (a noisy warm-up)
// is redone with the count recomputed from it, at most kMaxRemeasure times.
struct Measurement {
  uint64_t iters = 0;
  double seconds = 0.0;
};
inline constexpr int kMaxRemeasure = 3;
template <typename Round>
Measurement Measure(const Options& o, double warmup_seconds, uint64_t warmup_iters,
                    const Round& round) {
  Measurement m{MeasuredIters(o, warmup_seconds, warmup_iters), 0.0};
  for (int attempt = 0;; ++attempt) {
    m.seconds = round(m.iters);
    if (o.iters != 0 || m.seconds >= o.min_time / 2 || attempt == kMaxRemeasure) return m;
    const uint64_t next = MeasuredIters(o, m.seconds, m.iters);
    if (next <= m.iters) return m;
    m.iters = next;
  }
}

double NowSeconds();  // steady clock

// Data pattern: byte j of a size-S message is Pattern(S, j); the first and
// last byte are replaced by a per-message tag so stale buffers are detected.
inline uint8_t Pattern(size_t size, size_t j) {
  return static_cast<uint8_t>(j * 7U + size * 13U + 1U);
}
void FillPattern(uint8_t* buf, size_t size);
// Bytes 1 .. size-2 match Pattern (the tag bytes are checked separately).
bool CheckPattern(const uint8_t* buf, size_t size);
void SetTag(uint8_t* buf, size_t size, uint8_t tag);
bool CheckTag(const uint8_t* buf, size_t size, uint8_t tag);

// Result output (stdout). PrintHeader once, then one PrintResult per size.
void PrintHeader(const Options& o, const char* unit);
void PrintResult(const Options& o, size_t size, uint64_t iters, double value, const char* unit);

// Prints "<program>: <what>" to stderr and exits 1.
[[noreturn]] void Fail(const Options& o, const std::string& what);

// Writes the bound port to o.port_file (atomically: temp file + rename).
void WritePortFile(const Options& o, unsigned port);

}  // namespace bench
