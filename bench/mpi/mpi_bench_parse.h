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
 *   - mb_parse_names: "a,b" of names[0..n) -> the mask of their bits (bit i for names[i]); an
 *     unknown name or an empty list is -1 with *out untouched.
 *   - mb_parse_argv: the command-line loop both programs share: -h/--help returns 1, --csv sets
 *     its flag, every other option takes the next argument as its value; the program's own
 *     options are tried first (`own`: 1 taken, 0 bad value, -1 not its option), then the common
 *     ones (--sizes --iters --warmup --budget -w --label --corrupt, written through the
 *     pointers of struct mb_common_opts). An unknown option, a missing or bad value prints one
 *     line "PROG: ..." to stderr and returns -1 (the caller stops); otherwise 0.
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
int mb_parse_names(const char* text, const char* const* names, unsigned n, unsigned* out);

/* Where the options both benchmarks take live in the program's own option struct. */
struct mb_common_opts {
  const char* prog;   /* names the program in messages */
  uint64_t min_iters; /* --iters must be at least this */
  size_t* sizes;      /* --sizes: MB_MAX_SIZES entries */
  size_t* nsizes;
  uint64_t* lat_iters; /* --iters sets both */
  uint64_t* bw_iters;
  uint64_t* warmup;   /* --warmup */
  uint64_t* budget;   /* --budget */
  size_t* window;     /* -w */
  int* csv;           /* --csv */
  const char** label; /* --label */
  size_t* corrupt;    /* --corrupt */
};

int mb_parse_argv(int argc, char** argv, const struct mb_common_opts* c,
                  int (*own)(const char* arg, const char* val, void* ctx), void* ctx);

uint64_t mb_schedule_iters(uint64_t base, uint64_t bytes_per_iter, uint64_t budget);
uint64_t mb_schedule_warmup(uint64_t warmup, uint64_t iters);

#endif
