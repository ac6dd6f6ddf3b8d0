/* Command line and schedule of osc_bench; see osc_bench_opts.h. */
#include "osc_bench_opts.h"

#include <stdio.h>
#include <string.h>

enum { OB_ATOMIC_SIZE = 8 };

static const char* const kTestNames[OB_NTESTS] = {"put_latency",  "get_latency", "put_bw",
                                                  "get_bw",       "acc_latency", "fop_latency",
                                                  "cswap_latency"};
static const char* const kSyncNames[OB_NSYNCS] = {"lock", "fence", "pscw"};

void ob_opts_init(struct ob_opts* o) {
  memset(o, 0, sizeof(*o));
  o->tests = OB_ALL_TESTS;
  o->syncs = OB_ALL_SYNCS;
  for (size_t s = 1; s <= ((size_t)4 << 20); s *= 2) o->sizes[o->nsizes++] = s;
  o->lat_iters = 10000;
  o->bw_iters = 100;
  o->budget = (uint64_t)1 << 30;
  o->window = 64;
  o->label = "osc";
}

void ob_usage(void* out, const char* prog) {
  fprintf((FILE*)out,
          "usage: mpirun -np 2 %s [options]   (rank 0 = origin, rank 1 = target)\n"
          "  --tests LIST    put_latency,get_latency,put_bw,get_bw,acc_latency,fop_latency,\n"
          "                  cswap_latency (default all; acc/fop/cswap: one int64)\n"
          "  --sync LIST     lock (lock once, flush per iteration),fence,pscw (default all)\n"
          "  --win KIND      allocate (MPI_Win_allocate, default) or create (MPI_Win_create)\n"
          "  --sizes LIST    e.g. 1:4m (powers of two), 8,1k,1m (default 1:4m)\n"
          "  --iters N       measured iterations at small sizes, >= 2 (latency 10000, bw 100)\n"
          "  --warmup N      warm-up iterations (default: a tenth of the measured count)\n"
          "  --budget SIZE   payload bytes per measured size at most (default 1g)\n"
          "  -w N            bw tests: operations per iteration before the sync (default 64)\n"
          "  --csv           program,label,test,sync,win,size,iters,value,unit lines\n"
          "  --label TEXT    the label column of --csv (default osc)\n"
          "  --corrupt SIZE  testing: damage the checked data at SIZE, the run must fail\n",
          prog);
}

static int own_option(const char* arg, const char* val, void* ctx) {
  struct ob_opts* o = ctx;
  if (strcmp(arg, "--tests") == 0)
    return mb_parse_names(val, kTestNames, OB_NTESTS, &o->tests) == 0;
  if (strcmp(arg, "--sync") == 0) return mb_parse_names(val, kSyncNames, OB_NSYNCS, &o->syncs) == 0;
  if (strcmp(arg, "--win") == 0) {
    if (strcmp(val, "allocate") != 0 && strcmp(val, "create") != 0) return 0;
    o->win_create = strcmp(val, "create") == 0;
    return 1;
  }
  return -1;
}

int ob_parse_args(int argc, char** argv, struct ob_opts* o) {
  const struct mb_common_opts c = {"osc_bench",  2,          o->sizes,   &o->nsizes, &o->lat_iters,
                                   &o->bw_iters, &o->warmup, &o->budget, &o->window, &o->csv,
                                   &o->label,    &o->corrupt};
  return mb_parse_argv(argc, argv, &c, own_option, o);
}

static int bit_index(unsigned bit, unsigned n) {
  for (unsigned i = 0; i < n; ++i)
    if (bit == 1u << i) return (int)i;
  return -1;
}

const char* ob_test_name(unsigned test) {
  const int i = bit_index(test, OB_NTESTS);
  return i < 0 ? "?" : kTestNames[i];
}

const char* ob_sync_name(unsigned sync) {
  const int i = bit_index(sync, OB_NSYNCS);
  return i < 0 ? "?" : kSyncNames[i];
}

int ob_test_is_bw(unsigned test) {
  return test == OB_PUT_BW || test == OB_GET_BW;
}

int ob_test_is_atomic(unsigned test) {
  return test == OB_ACC_LATENCY || test == OB_FOP_LATENCY || test == OB_CSWAP_LATENCY;
}

const char* ob_test_unit(unsigned test) {
  return ob_test_is_bw(test) ? "MB_s" : "us";
}

size_t ob_test_sizes(const struct ob_opts* o, unsigned test, size_t* out) {
  if (ob_test_is_atomic(test)) {
    out[0] = OB_ATOMIC_SIZE;
    return 1;
  }
  memcpy(out, o->sizes, o->nsizes * sizeof(o->sizes[0]));
  return o->nsizes;
}

size_t ob_max_size(const struct ob_opts* o) {
  size_t m = OB_ATOMIC_SIZE;
  for (size_t i = 0; i < o->nsizes; ++i)
    if (o->sizes[i] > m) m = o->sizes[i];
  return m;
}

int ob_corrupt_reachable(const struct ob_opts* o) {
  if (o->corrupt == 0) return 1;
  for (unsigned t = 0; t < OB_NTESTS; ++t) {
    if ((o->tests & (1u << t)) == 0) continue;
    size_t sizes[MB_MAX_SIZES];
    const size_t n = ob_test_sizes(o, 1u << t, sizes);
    for (size_t i = 0; i < n; ++i)
      if (sizes[i] == o->corrupt) return 1;
  }
  return 0;
}

uint64_t ob_bytes_per_iter(const struct ob_opts* o, unsigned test, size_t size) {
  return ob_test_is_bw(test) ? (uint64_t)o->window * size : (uint64_t)size;
}

uint64_t ob_iters(const struct ob_opts* o, unsigned test, size_t size) {
  const uint64_t base = ob_test_is_bw(test) ? o->bw_iters : o->lat_iters;
  return mb_schedule_iters(base, ob_bytes_per_iter(o, test, size), o->budget);
}

uint64_t ob_warmup(const struct ob_opts* o, unsigned test, size_t size) {
  return mb_schedule_warmup(o->warmup, ob_iters(o, test, size));
}
