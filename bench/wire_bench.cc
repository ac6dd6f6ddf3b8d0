// wire_bench: cost of the per-byte and per-FPDU work on the data path.
//
//   build/bench/wire_bench [--benchmark_filter=...]
//
// Anchors in the same run: memcpy of the same bytes is the floor a software
// stack pays anyway (one copy from the socket), so CRC32c is reported beside
// it; the portable CRC shows what a CPU without SSE4.2 pays.
#include <array>
#include <cstring>
#include <vector>

#include <benchmark/benchmark.h>

#include "base/crc32c.h"
#include "wire/fpdu.h"
#include "wire/rdmap.h"

namespace iwarpx::wire {
namespace {

std::vector<uint8_t> Bytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + 7);
  return v;
}

void BM_Memcpy(benchmark::State& state) {
  const auto src = Bytes(static_cast<size_t>(state.range(0)));
  std::vector<uint8_t> dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

// CRC32c of state.range(0) bytes by `crc`; skipped with `missing` where the
// CPU lacks the instructions (`available` false).
void CrcBench(benchmark::State& state, bool available, const char* missing,
              uint32_t (*crc)(ByteSpan)) {
  if (!available) {
    state.SkipWithError(missing);
    return;
  }
  const auto src = Bytes(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(crc(src));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_Crc32cHardware(benchmark::State& state) {
  CrcBench(state, Crc32cHasHardware(), "no SSE4.2 crc32 on this CPU", &Crc32cHardware);
}

void BM_Crc32cVector(benchmark::State& state) {
  CrcBench(state, Crc32cHasVector(), "no VPCLMULQDQ/AVX-512 on this CPU", &Crc32cVector);
}

void BM_Crc32cPortable(benchmark::State& state) {
  CrcBench(state, true, "", &Crc32cPortable);
}

// Transmit framing of one FPDU (prefix + pad + CRC over header and payload),
// what the engine does per segment before its gather sendmsg.
void BM_FrameFpdu(benchmark::State& state) {
  const bool crc = state.range(1) != 0;
  const auto payload = Bytes(static_cast<size_t>(state.range(0)));
  std::array<uint8_t, 32> hdr{};
  const size_t hn = EncodeWriteHeader(0x1234, 0x10000, true, hdr).value();
  const std::array<ByteSpan, 2> parts{ByteSpan(hdr.data(), hn), ByteSpan(payload)};
  for (auto _ : state) {
    auto f = FrameFpdu(parts, crc);
    benchmark::DoNotOptimize(f);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

// Receive: push parser plus segment parse of back-to-back FPDUs.
void BM_ParseFpduStream(benchmark::State& state) {
  const bool crc = state.range(1) != 0;
  const size_t payload_size = static_cast<size_t>(state.range(0));
  const auto payload = Bytes(payload_size);
  std::array<uint8_t, 32> hdr{};
  const size_t hn = EncodeWriteHeader(0x1234, 0x10000, true, hdr).value();
  std::vector<uint8_t> ulpdu(hdr.begin(), hdr.begin() + static_cast<long>(hn));
  ulpdu.insert(ulpdu.end(), payload.begin(), payload.end());
  std::vector<uint8_t> stream(FpduWireLength(ulpdu.size()) * 16U);
  size_t off = 0;
  for (int i = 0; i < 16; ++i) {
    off += EncodeFpdu(ulpdu, crc, MutableByteSpan(stream).subspan(off)).value();
  }
  struct Sink : FpduVisitor {
    void OnFpdu(ByteSpan u) override { n += ParseSegment(u).ok() ? 1U : 0U; }
    void OnError(WireError) override { std::abort(); }
    size_t n = 0;
  } sink;
  for (auto _ : state) {
    FpduStreamParser parser(FpduRxConfig{.crc = crc, .max_ulpdu = 65535});
    parser.Feed(stream, sink);
  }
  benchmark::DoNotOptimize(sink.n);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 16 * state.range(0));
}

BENCHMARK(BM_Memcpy)->Arg(64)->Arg(4096)->Arg(65536)->Arg(1 << 20);
BENCHMARK(BM_Crc32cHardware)->Arg(64)->Arg(4096)->Arg(65536)->Arg(1 << 20);
BENCHMARK(BM_Crc32cVector)->Arg(1024)->Arg(4096)->Arg(65536)->Arg(1 << 20);
BENCHMARK(BM_Crc32cPortable)->Arg(64)->Arg(4096)->Arg(65536)->Arg(1 << 20);
BENCHMARK(BM_FrameFpdu)->ArgsProduct({{8, 1024, 8192, 65000}, {0, 1}});
BENCHMARK(BM_ParseFpduStream)->ArgsProduct({{8, 1024, 8192, 65000}, {0, 1}});

}  // namespace
}  // namespace iwarpx::wire

BENCHMARK_MAIN();
