/* The data pattern of mpi_bench; see mpi_bench_pattern.h. */
#include "mpi_bench_pattern.h"

void mb_fill(uint8_t* buf, size_t size, unsigned seed) {
  for (size_t j = 0; j < size; ++j) buf[j] = mb_pattern_byte(size, seed, j);
}

void mb_poison(uint8_t* buf, size_t size, unsigned seed) {
  for (size_t j = 0; j < size; ++j) buf[j] = (uint8_t)~mb_pattern_byte(size, seed, j);
}

size_t mb_check(const uint8_t* buf, size_t size, unsigned seed) {
  for (size_t j = 0; j < size; ++j)
    if (buf[j] != mb_pattern_byte(size, seed, j)) return j;
  return MB_CHECK_OK;
}
