/* Command line, size lists and iteration schedule of mpi_bench; see mpi_bench_opts.h. */
#include "mpi_bench_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MB_LIST_MAX = 512 };
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

static int parse_tests(const char* text, unsigned* out) {
  char buf[MB_LIST_MAX];
  if (text == NULL || strlen(text) >= sizeof(buf)) return -1;
  strcpy(buf, text);
  unsigned mask = 0;
  char* save = NULL;
  for (char* t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
    if (strcmp(t, "latency") == 0) {
      mask |= MB_TEST_LATENCY;
    } else if (strcmp(t, "bw") == 0) {
      mask |= MB_TEST_BW;
    } else if (strcmp(t, "bibw") == 0) {
      mask |= MB_TEST_BIBW;
    } else {
      return -1;
    }
  }
  if (mask == 0) return -1;
  *out = mask;
  return 0;
}

int mb_parse_args(int argc, char** argv, struct mb_opts* o) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const char* val = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t n = 0;
    int ok = 0;
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) return 1;
    if (strcmp(arg, "--csv") == 0) {
      o->csv = 1;
      continue;
    }
    if (val == NULL) {
      fprintf(stderr, "mpi_bench: %s needs a value (or is unknown)\n", arg);
      return -1;
    }
    ++i;
    if (strcmp(arg, "--tests") == 0) {
      ok = parse_tests(val, &o->tests) == 0;
    } else if (strcmp(arg, "--sizes") == 0) {
      ok = mb_parse_sizes(val, o->sizes, &o->nsizes) == 0;
    } else if (strcmp(arg, "--iters") == 0) {
      ok = mb_parse_u64(val, &n) == 0 && n >= kMinIters && n <= 100000000;
      if (ok) o->lat_iters = o->bw_iters = n;
    } else if (strcmp(arg, "--warmup") == 0) {
      ok = mb_parse_u64(val, &n) == 0 && n >= 1 && n <= 100000000;
      if (ok) o->warmup = n;
    } else if (strcmp(arg, "--budget") == 0) {
      ok = mb_parse_size(val, strlen(val), &n) == 0;
      if (ok) o->budget = n;
    } else if (strcmp(arg, "-w") == 0) {
      ok = mb_parse_u64(val, &n) == 0 && n >= 1 && n <= 1024;
      if (ok) o->window = (size_t)n;
    } else if (strcmp(arg, "--label") == 0) {
      ok = *val != '\0' && strpbrk(val, ",\n") == NULL;
      if (ok) o->label = val;
    } else if (strcmp(arg, "--corrupt") == 0) {
      ok = mb_parse_size(val, strlen(val), &n) == 0;
      if (ok) o->corrupt = (size_t)n;
    } else {
      fprintf(stderr, "mpi_bench: unknown option %s\n", arg);
      return -1;
    }
    if (!ok) {
      fprintf(stderr, "mpi_bench: bad value for %s: %s\n", arg, val);
      return -1;
    }
  }
  return 0;
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
