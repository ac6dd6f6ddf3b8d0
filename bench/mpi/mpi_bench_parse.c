/* Option values and iteration schedule of the MPI benchmarks; see mpi_bench_parse.h. */
#include "mpi_bench_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint64_t kMaxSize = (uint64_t)1 << 30;
static const uint64_t kMinIters = 2;
enum { MB_LIST_MAX = 512 };

int mb_parse_u64(const char* text, uint64_t* out) {
  if (text == NULL || *text == '\0' || *text == '-' || *text == '+') return -1;
  char* end = NULL;
  errno = 0;
  const unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0') return -1;
  *out = v;
  return 0;
}

int mb_parse_size(const char* text, size_t len, uint64_t* out) {
  char buf[32];
  if (len == 0 || len >= sizeof(buf)) return -1;
  memcpy(buf, text, len);
  buf[len] = '\0';
  unsigned shift = 0;
  switch (buf[len - 1]) {
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    default: break;
  }
  if (shift != 0) buf[len - 1] = '\0';
  uint64_t v = 0;
  if (mb_parse_u64(buf, &v) != 0 || v == 0 || v > (kMaxSize >> shift)) return -1;
  *out = v << shift;
  return 0;
}

static int is_pow2(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

int mb_parse_sizes(const char* text, size_t* out, size_t* n) {
  size_t count = 0;
  const char* p = text;
  if (text == NULL || *text == '\0') return -1;
  for (;;) {
    const char* comma = strchr(p, ',');
    const size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
    const char* colon = memchr(p, ':', len);
    uint64_t lo = 0, hi = 0;
    if (colon == NULL) {
      if (mb_parse_size(p, len, &lo) != 0 || count >= MB_MAX_SIZES) return -1;
      out[count++] = (size_t)lo;
    } else {
      if (mb_parse_size(p, (size_t)(colon - p), &lo) != 0 ||
          mb_parse_size(colon + 1, len - (size_t)(colon - p) - 1, &hi) != 0 || lo > hi ||
          !is_pow2(lo) || !is_pow2(hi)) {
        return -1;
      }
      for (uint64_t s = lo; s <= hi; s *= 2) {
        if (count >= MB_MAX_SIZES) return -1;
        out[count++] = (size_t)s;
      }
    }
    if (comma == NULL) break;
    p = comma + 1;
  }
  *n = count;
  return 0;
}

uint64_t mb_schedule_iters(uint64_t base, uint64_t bytes_per_iter, uint64_t budget) {
  uint64_t n = bytes_per_iter > 0 ? budget / bytes_per_iter : base;
  if (n > base) n = base;
  if (n < kMinIters) n = kMinIters;
  return n;
}

uint64_t mb_schedule_warmup(uint64_t warmup, uint64_t iters) {
  if (warmup != 0) return warmup < iters ? warmup : iters;
  return iters / 10 > 0 ? iters / 10 : 1;
}

int mb_parse_names(const char* text, const char* const* names, unsigned n, unsigned* out) {
  char buf[MB_LIST_MAX];
  if (text == NULL || strlen(text) >= sizeof(buf)) return -1;
  strcpy(buf, text);
  unsigned mask = 0;
  char* save = NULL;
  for (char* t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
    unsigned i = 0;
    while (i < n && strcmp(t, names[i]) != 0) ++i;
    if (i == n) return -1;
    mask |= 1u << i;
  }
  if (mask == 0) return -1;
  *out = mask;
  return 0;
}

/* One common option with its value: 1 taken, 0 bad value, -1 not a common option. */
static int common_option(const struct mb_common_opts* c, const char* arg, const char* val) {
  uint64_t n = 0;
  if (strcmp(arg, "--sizes") == 0) return mb_parse_sizes(val, c->sizes, c->nsizes) == 0;
  if (strcmp(arg, "--iters") == 0) {
    if (mb_parse_u64(val, &n) != 0 || n < c->min_iters || n > 100000000) return 0;
    *c->lat_iters = *c->bw_iters = n;
    return 1;
  }
  if (strcmp(arg, "--warmup") == 0) {
    if (mb_parse_u64(val, &n) != 0 || n < 1 || n > 100000000) return 0;
    *c->warmup = n;
    return 1;
  }
  if (strcmp(arg, "--budget") == 0) {
    if (mb_parse_size(val, strlen(val), &n) != 0) return 0;
    *c->budget = n;
    return 1;
  }
  if (strcmp(arg, "-w") == 0) {
    if (mb_parse_u64(val, &n) != 0 || n < 1 || n > 1024) return 0;
    *c->window = (size_t)n;
    return 1;
  }
  if (strcmp(arg, "--label") == 0) {
    if (*val == '\0' || strpbrk(val, ",\n") != NULL) return 0;
    *c->label = val;
    return 1;
  }
  if (strcmp(arg, "--corrupt") == 0) {
    if (mb_parse_size(val, strlen(val), &n) != 0) return 0;
    *c->corrupt = (size_t)n;
    return 1;
  }
  return -1;
}

int mb_parse_argv(int argc, char** argv, const struct mb_common_opts* c,
                  int (*own)(const char* arg, const char* val, void* ctx), void* ctx) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const char* val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) return 1;
    if (strcmp(arg, "--csv") == 0) {
      *c->csv = 1;
      continue;
    }
    if (val == NULL) {
      fprintf(stderr, "%s: %s needs a value (or is unknown)\n", c->prog, arg);
      return -1;
    }
    ++i;
    int r = own(arg, val, ctx);
    if (r < 0) r = common_option(c, arg, val);
    if (r < 0) {
      fprintf(stderr, "%s: unknown option %s\n", c->prog, arg);
      return -1;
    }
    if (r == 0) {
      fprintf(stderr, "%s: bad value for %s: %s\n", c->prog, arg, val);
      return -1;
    }
  }
  return 0;
}
