/* mpi_bench_parse: the option values and the iteration schedule shared by the project's MPI
 * benchmarks (mpi_bench: two-sided; osc_bench: one-sided windows). Plain C, no MPI, unit
 * tested by mpi_bench_opts_test.c and osc_bench_opts_test.c.
 *
 * Contract:
 *   - mb_parse_u64: decimal digits only (no sign, no suffix), fits in 64 bits; 0 or -1.
 *   - mb_parse_size: "8", "4k", "1m", "1g" (k/m/g = 2^10/2^20/2^30), 1 B .. 1 GiB; 0 or -1.
 *   - mb_parse_sizes: comma-separated items kept in the order given; an item is a size or
 *     "lo:hi", the powers of two from lo to hi (both powers of two, lo <= hi); at most
 *     MB_MAX_SIZES sizes. 0, or -1 with *n untouched.
 *   - The schedule is a pure function of its arguments, so every rank computes the same count
 *     without talking: mb_schedule_iters = `base` capped by budget / bytes_per_iter, never below
 *     2; mb_schedule_warmup = `warmup` when non-zero (at most iters), else a tenth of iters, at
 *     least 1.
 */
#ifndef IWARPX_BENCH_MPI_BENCH_PARSE_H
#define IWARPX_BENCH_MPI_BENCH_PARSE_H

#include <stddef.h>
#include <stdint.h>

enum { MB_MAX_SIZES = 64 };

int mb_parse_u64(const char* text, uint64_t* out);
int mb_parse_size(const char* text, size_t len, uint64_t* out);
int mb_parse_sizes(const char* text, size_t* out, size_t* n);

uint64_t mb_schedule_iters(uint64_t base, uint64_t bytes_per_iter, uint64_t budget);
uint64_t mb_schedule_warmup(uint64_t warmup, uint64_t iters);

#endif
