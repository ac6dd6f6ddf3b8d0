// soak_pattern: what the soak traffic generators (soak_msg, soak_rdm) send
// and how the receiving side proves every byte: message sizes, payloads and
// the totals both sides print. Header only, no libfabric.
//
// Contract:
//   - Message number `seq` (from 0, per run) has MsgSize(seq, sizes) bytes:
//     one of the --sizes list, picked by a hash of seq, so sizes mix in an
//     order that does not repeat with any window length.
//   - Byte j of message `seq` is PayloadByte(seq, j); it depends on seq in
//     every position, so a lost, duplicated, misrouted or stale message fails
//     FirstWrong, not only a damaged byte. RMA rounds use seq = kRmaSeqBase + round.
//   - PrintTotals writes one line "soak: <program> <side> <status> k=v ...";
//     scripts/soak.sh parses exactly these keys.
#pragma once

#include <stdio.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace soak {

inline constexpr uint64_t kRmaSeqBase = uint64_t{1} << 62;

// splitmix64: a cheap, well-mixed hash of a 64-bit number.
inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline size_t MsgSize(uint64_t seq, const std::vector<size_t>& sizes) {
  return sizes[Mix(seq) % sizes.size()];
}

inline uint8_t PayloadByte(uint64_t mixed, size_t j) {
  return static_cast<uint8_t>((mixed >> ((j & 7U) * 8U)) + (j >> 3U) * 31U);
}

inline void Fill(uint8_t* buf, size_t len, uint64_t seq) {
  const uint64_t mixed = Mix(seq);
  for (size_t j = 0; j < len; ++j) buf[j] = PayloadByte(mixed, j);
}

// Offset of the first byte that differs from message seq's payload; len when
// all of them match.
inline size_t FirstWrong(const uint8_t* buf, size_t len, uint64_t seq) {
  const uint64_t mixed = Mix(seq);
  for (size_t j = 0; j < len; ++j) {
    if (buf[j] != PayloadByte(mixed, j)) return j;
  }
  return len;
}

// What one side moved and verified.
struct Totals {
  uint64_t rounds = 0;
  uint64_t msgs = 0;  // two-sided messages (tagged or untagged), each verified
  uint64_t msg_bytes = 0;
  uint64_t writes = 0;  // RMA writes whose data was verified (read back and at the target)
  uint64_t write_bytes = 0;
  uint64_t reads = 0;
  uint64_t read_bytes = 0;
  uint64_t atomics = 0;  // atomic operations, the counter checked after each round
};

inline void PrintTotals(const char* program, const char* side, const char* status, double seconds,
                        const Totals& t) {
  printf(
      "soak: %s %s %s seconds=%.1f rounds=%llu msgs=%llu msg_bytes=%llu writes=%llu "
      "write_bytes=%llu reads=%llu read_bytes=%llu atomics=%llu\n",
      program, side, status, seconds, static_cast<unsigned long long>(t.rounds),
      static_cast<unsigned long long>(t.msgs), static_cast<unsigned long long>(t.msg_bytes),
      static_cast<unsigned long long>(t.writes), static_cast<unsigned long long>(t.write_bytes),
      static_cast<unsigned long long>(t.reads), static_cast<unsigned long long>(t.read_bytes),
      static_cast<unsigned long long>(t.atomics));
  fflush(stdout);
}

}  // namespace soak
