/* Command line, size lists and iteration schedule of mpi_bench; see mpi_bench_opts.h. */
#include "mpi_bench_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint64_t kMinIters = 2;

void mb_opts_init(struct mb_opts* o) {
  memset(o, 0, sizeof(*o));
  o->tests = MB_TEST_LATENCY | MB_TEST_BW;
  o->nsizes = 0;
  for (size_t s = 1; s <= ((size_t)4 << 20); s *= 2) o->sizes[o->nsizes++] = s;
  o->lat_iters = 10000;
  o->bw_iters = 100;
  o->warmup = 0;
  o->budget = (uint64_t)1 << 30;
  o->window = 64;
  o->csv = 0;
  o->label = "mpi";
  o->corrupt = 0;
}

void mb_usage(void* out, const char* prog) {
  fprintf((FILE*)out,
          "usage: mpirun -np 2 %s [options]\n"
          "  --tests LIST    latency,bw,bibw (default latency,bw)\n"
          "  --sizes LIST    e.g. 1:4m (powers of two), 8,1k,1m (default 1:4m)\n"
          "  --iters N       measured iterations of small messages, >= 2\n"
          "                  (latency 10000, bw 100); large sizes run fewer, see --budget\n"
          "  --warmup N      warm-up iterations (default: a tenth of the measured count)\n"
          "  --budget SIZE   payload bytes moved per measured size at most (default 1g)\n"
          "  -w N            bw/bibw: messages in flight per iteration (default 64)\n"
          "  --csv           program,label,test,size,iters,value,unit lines\n"
          "  --label TEXT    the label column of --csv (default mpi)\n"
          "  --corrupt SIZE  testing: damage the checked data at SIZE, the run must fail\n",
          prog);
}

static const char* const kTestNames[] = {"latency", "bw", "bibw"}; /* bit i: enum mb_test */

static int own_option(const char* arg, const char* val, void* ctx) {
  struct mb_opts* o = ctx;
  if (strcmp(arg, "--tests") == 0)
    return mb_parse_names(val, kTestNames, sizeof(kTestNames) / sizeof(kTestNames[0]), &o->tests) ==
           0;
  return -1;
}

int mb_parse_args(int argc, char** argv, struct mb_opts* o) {
  const struct mb_common_opts c = {"mpi_bench",   kMinIters,    o->sizes,   &o->nsizes,
                                   &o->lat_iters, &o->bw_iters, &o->warmup, &o->budget,
                                   &o->window,    &o->csv,      &o->label,  &o->corrupt};
  return mb_parse_argv(argc, argv, &c, own_option, o);
}

size_t mb_max_size(const struct mb_opts* o) {
  size_t m = 0;
  for (size_t i = 0; i < o->nsizes; ++i)
    if (o->sizes[i] > m) m = o->sizes[i];
  return m;
}

uint64_t mb_bytes_per_iter(const struct mb_opts* o, enum mb_test test, size_t size) {
  switch (test) {
    case MB_TEST_LATENCY: return 2 * (uint64_t)size;
    case MB_TEST_BW: return (uint64_t)o->window * size;
    case MB_TEST_BIBW: return 2 * (uint64_t)o->window * size;
  }
  return size;
}

uint64_t mb_iters(const struct mb_opts* o, enum mb_test test, size_t size) {
  const uint64_t base = test == MB_TEST_LATENCY ? o->lat_iters : o->bw_iters;
  return mb_schedule_iters(base, mb_bytes_per_iter(o, test, size), o->budget);
}

uint64_t mb_warmup(const struct mb_opts* o, enum mb_test test, size_t size) {
  return mb_schedule_warmup(o->warmup, mb_iters(o, test, size));
}
