/* mpi_bench_pattern: the data pattern mpi_bench checks once per size and test. Plain C.
 *
 * Contract: byte j of the message identified by (size, seed) is mb_pattern_byte(size, seed, j);
 * the seed names the sender and the window slot, so a message delivered to the wrong slot, a
 * stale buffer or one damaged byte is found. mb_check returns the index of the first byte that
 * differs, or MB_CHECK_OK. mb_poison fills a receive buffer with the complement of the pattern,
 * so a receive that wrote nothing fails the check at every byte.
 */
#ifndef IWARPX_BENCH_MPI_BENCH_PATTERN_H
#define IWARPX_BENCH_MPI_BENCH_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define MB_CHECK_OK ((size_t)-1)

static inline uint8_t mb_pattern_byte(size_t size, unsigned seed, size_t j) {
  return (uint8_t)(j * 7u + (j >> 8) * 3u + size * 13u + seed * 101u + 1u);
}

void mb_fill(uint8_t* buf, size_t size, unsigned seed);
void mb_poison(uint8_t* buf, size_t size, unsigned seed);
size_t mb_check(const uint8_t* buf, size_t size, unsigned seed);

#endif
