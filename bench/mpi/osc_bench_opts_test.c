/* Unit test of osc_bench_opts (no MPI): test and sync lists, window kind, option errors, the
 * atomic tests' fixed size, --corrupt reachability and the iteration schedule. Exits 1 naming
 * every failed expectation. */
#include "osc_bench_opts.h"

#include <stdio.h>
#include <string.h>

static int failures;

#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

static int parse(struct ob_opts* o, const char* a1, const char* a2) {
  char* argv[] = {"osc_bench", (char*)a1, (char*)a2, NULL};
  ob_opts_init(o);
  return ob_parse_args(a2 != NULL ? 3 : 2, argv, o);
}

static void test_defaults(void) {
  struct ob_opts o;
  ob_opts_init(&o);
  EXPECT(o.tests == OB_ALL_TESTS && o.syncs == OB_ALL_SYNCS && o.win_create == 0);
  EXPECT(o.nsizes == 23 && o.sizes[0] == 1 && o.sizes[22] == ((size_t)4 << 20));
  EXPECT(strcmp(o.label, "osc") == 0 && o.window == 64);
}

static void test_args(void) {
  struct ob_opts o;
  EXPECT(parse(&o, "--tests", "get_bw,put_latency") == 0 &&
         o.tests == (OB_GET_BW | OB_PUT_LATENCY));
  EXPECT(parse(&o, "--tests", "cswap_latency,fop_latency,acc_latency") == 0 &&
         o.tests == (OB_CSWAP_LATENCY | OB_FOP_LATENCY | OB_ACC_LATENCY));
  EXPECT(parse(&o, "--tests", "put") == -1);
  EXPECT(parse(&o, "--tests", ",") == -1);
  EXPECT(parse(&o, "--sync", "pscw,lock") == 0 && o.syncs == (OB_SYNC_PSCW | OB_SYNC_LOCK));
  EXPECT(parse(&o, "--sync", "flush") == -1);
  EXPECT(parse(&o, "--win", "create") == 0 && o.win_create == 1);
  EXPECT(parse(&o, "--win", "allocate") == 0 && o.win_create == 0);
  EXPECT(parse(&o, "--win", "dynamic") == -1);
  EXPECT(parse(&o, "--sizes", "8,1m") == 0 && o.nsizes == 2 && o.sizes[1] == 1048576);
  EXPECT(parse(&o, "--sizes", "0") == -1);
  EXPECT(parse(&o, "--iters", "1") == -1);
  EXPECT(parse(&o, "--iters", "7") == 0 && o.lat_iters == 7 && o.bw_iters == 7);
  EXPECT(parse(&o, "-w", "0") == -1);
  EXPECT(parse(&o, "-w", "16") == 0 && o.window == 16);
  EXPECT(parse(&o, "--label", "a\nb") == -1);
  EXPECT(parse(&o, "--label", "iwarpx") == 0 && strcmp(o.label, "iwarpx") == 0);
  EXPECT(parse(&o, "--budget", "4k") == 0 && o.budget == 4096);
  EXPECT(parse(&o, "--corrupt", "1m") == 0 && o.corrupt == 1048576);
  EXPECT(parse(&o, "--sync", NULL) == -1);
  EXPECT(parse(&o, "--bogus", "1") == -1);
  EXPECT(parse(&o, "--csv", NULL) == 0 && o.csv == 1);
  EXPECT(parse(&o, "--help", NULL) == 1);
}

static void test_names(void) {
  EXPECT(strcmp(ob_test_name(OB_PUT_LATENCY), "put_latency") == 0);
  EXPECT(strcmp(ob_test_name(OB_CSWAP_LATENCY), "cswap_latency") == 0);
  EXPECT(strcmp(ob_test_name(OB_PUT_BW | OB_GET_BW), "?") == 0);
  EXPECT(strcmp(ob_sync_name(OB_SYNC_PSCW), "pscw") == 0);
  EXPECT(strcmp(ob_sync_name(1u << OB_NSYNCS), "?") == 0);
  EXPECT(strcmp(ob_test_unit(OB_GET_BW), "MB_s") == 0);
  EXPECT(strcmp(ob_test_unit(OB_FOP_LATENCY), "us") == 0);
}

static void test_sizes(void) {
  struct ob_opts o;
  size_t s[MB_MAX_SIZES];
  EXPECT(parse(&o, "--sizes", "1,2") == 0);
  EXPECT(ob_test_sizes(&o, OB_PUT_BW, s) == 2 && s[0] == 1 && s[1] == 2);
  EXPECT(ob_test_sizes(&o, OB_ACC_LATENCY, s) == 1 && s[0] == 8); /* one int64, always */
  EXPECT(ob_max_size(&o) == 8);                                   /* the atomics' int64 fits */
  o.corrupt = 2;
  EXPECT(ob_corrupt_reachable(&o));
  o.corrupt = 8; /* only the atomic tests run at 8 */
  EXPECT(ob_corrupt_reachable(&o));
  o.tests = OB_PUT_LATENCY;
  EXPECT(!ob_corrupt_reachable(&o));
  o.corrupt = 0;
  EXPECT(ob_corrupt_reachable(&o));
}

static void test_schedule(void) {
  struct ob_opts o;
  ob_opts_init(&o);
  EXPECT(ob_iters(&o, OB_PUT_LATENCY, 8) == 10000);
  EXPECT(ob_warmup(&o, OB_PUT_LATENCY, 8) == 1000);
  EXPECT(ob_iters(&o, OB_FOP_LATENCY, 8) == 10000);
  EXPECT(ob_iters(&o, OB_GET_BW, 8) == 100);
  /* 1 GiB budget / 4 MiB = 256 gets; / (64 x 1 MiB) = 16 windows. */
  EXPECT(ob_iters(&o, OB_GET_LATENCY, (size_t)4 << 20) == 256);
  EXPECT(ob_iters(&o, OB_PUT_BW, 1 << 20) == 16);
  EXPECT(ob_bytes_per_iter(&o, OB_PUT_BW, 1 << 20) == ((uint64_t)64 << 20));
  o.budget = 1;
  EXPECT(ob_iters(&o, OB_PUT_BW, 1) == 2); /* never below 2 */
  o.warmup = 50;
  EXPECT(ob_warmup(&o, OB_PUT_BW, 1) == 2); /* at most the measured count */
}

int main(void) {
  test_defaults();
  test_args();
  test_names();
  test_sizes();
  test_schedule();
  if (failures != 0) {
    fprintf(stderr, "osc_bench_opts_test: %d failure(s)\n", failures);
    return 1;
  }
  printf("osc_bench_opts_test: OK\n");
  return 0;
}
