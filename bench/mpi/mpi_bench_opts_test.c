/* Unit test of mpi_bench_opts and mpi_bench_pattern (no MPI): size lists, option errors,
 * the iteration schedule and the data check. Exits 1 naming every failed expectation. */
#include "mpi_bench_opts.h"

#include <stdio.h>
#include <string.h>

#include "mpi_bench_pattern.h"

static int failures;

#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

static int parse(struct mb_opts* o, const char* a1, const char* a2) {
  char* argv[] = {"mpi_bench", (char*)a1, (char*)a2, NULL};
  mb_opts_init(o);
  return mb_parse_args(a2 != NULL ? 3 : 2, argv, o);
}

static void test_sizes(void) {
  size_t s[MB_MAX_SIZES];
  size_t n = 0;
  EXPECT(mb_parse_sizes("8,1m", s, &n) == 0 && n == 2 && s[0] == 8 && s[1] == 1048576);
  EXPECT(mb_parse_sizes("1:4m", s, &n) == 0 && n == 23 && s[0] == 1 && s[22] == 4194304);
  EXPECT(mb_parse_sizes("4k:16k,3", s, &n) == 0 && n == 4 && s[2] == 16384 && s[3] == 3);
  EXPECT(mb_parse_sizes("1g", s, &n) == 0 && n == 1 && s[0] == ((size_t)1 << 30));
  n = 99;
  EXPECT(mb_parse_sizes("", s, &n) == -1 && n == 99);
  EXPECT(mb_parse_sizes("0", s, &n) == -1);
  EXPECT(mb_parse_sizes("2g", s, &n) == -1);
  EXPECT(mb_parse_sizes("8,", s, &n) == -1);
  EXPECT(mb_parse_sizes("-8", s, &n) == -1);
  EXPECT(mb_parse_sizes("8x", s, &n) == -1);
  EXPECT(mb_parse_sizes("16:8", s, &n) == -1);
  EXPECT(mb_parse_sizes("3:64", s, &n) == -1);           /* range ends must be powers of two */
  EXPECT(mb_parse_sizes("1:1g,1:1g,1:1g", s, &n) == -1); /* more than MB_MAX_SIZES */
}

static void test_args(void) {
  struct mb_opts o;
  EXPECT(parse(&o, "--sizes", "8,1m") == 0 && o.nsizes == 2);
  EXPECT(parse(&o, "--tests", "bibw,latency") == 0 && o.tests == (MB_TEST_BIBW | MB_TEST_LATENCY));
  EXPECT(parse(&o, "--tests", "lat") == -1);
  EXPECT(parse(&o, "--iters", "1") == -1);
  EXPECT(parse(&o, "--iters", "5") == 0 && o.lat_iters == 5 && o.bw_iters == 5);
  EXPECT(parse(&o, "-w", "0") == -1);
  EXPECT(parse(&o, "-w", "2000") == -1);
  EXPECT(parse(&o, "--corrupt", "1m") == 0 && o.corrupt == 1048576);
  EXPECT(parse(&o, "--label", "a,b") == -1);
  EXPECT(parse(&o, "--warmup", NULL) == -1);
  EXPECT(parse(&o, "--bogus", "1") == -1);
  EXPECT(parse(&o, "--csv", NULL) == 0 && o.csv == 1);
  EXPECT(parse(&o, "-h", NULL) == 1);
}

static void test_schedule(void) {
  struct mb_opts o;
  mb_opts_init(&o);
  EXPECT(mb_iters(&o, MB_TEST_LATENCY, 8) == 10000);
  EXPECT(mb_warmup(&o, MB_TEST_LATENCY, 8) == 1000);
  /* 1 GiB budget / (2 x 1 MiB) = 512 ping-pongs; / (64 x 1 MiB) = 16 windows. */
  EXPECT(mb_iters(&o, MB_TEST_LATENCY, 1 << 20) == 512);
  EXPECT(mb_iters(&o, MB_TEST_BW, 1 << 20) == 16);
  EXPECT(mb_iters(&o, MB_TEST_BIBW, 1 << 20) == 8);
  EXPECT(mb_warmup(&o, MB_TEST_BW, 1 << 20) == 1);
  EXPECT(mb_iters(&o, MB_TEST_BW, 8) == 100);
  o.budget = 1;
  EXPECT(mb_iters(&o, MB_TEST_BW, 1 << 20) == 2); /* never below 2 */
  o.warmup = 7;
  EXPECT(mb_warmup(&o, MB_TEST_BW, 1 << 20) == 2); /* at most the measured count */
  EXPECT(mb_warmup(&o, MB_TEST_LATENCY, 8) == 2);
}

static void test_pattern(void) {
  static uint8_t a[4096], b[4096];
  mb_fill(a, sizeof(a), 5);
  EXPECT(mb_check(a, sizeof(a), 5) == MB_CHECK_OK);
  EXPECT(mb_check(a, sizeof(a), 6) != MB_CHECK_OK); /* another slot or sender */
  mb_fill(b, 1000, 5);
  EXPECT(mb_check(b, 1000, 5) == MB_CHECK_OK);
  EXPECT(mb_check(a, 1000, 5) != MB_CHECK_OK); /* another size */
  a[4095] ^= 1u;
  EXPECT(mb_check(a, sizeof(a), 5) == 4095);
  mb_poison(b, 1, 5);
  EXPECT(mb_check(b, 1, 5) == 0); /* a 1-byte receive that wrote nothing */
  int periodic = 1;               /* the pattern must not repeat every 256 bytes */
  mb_fill(a, sizeof(a), 0);
  for (size_t j = 0; j + 256 < sizeof(a); ++j) periodic &= a[j] == a[j + 256];
  EXPECT(!periodic);
}

int main(void) {
  test_sizes();
  test_args();
  test_schedule();
  test_pattern();
  if (failures != 0) {
    fprintf(stderr, "mpi_bench_opts_test: %d failure(s)\n", failures);
    return 1;
  }
  printf("mpi_bench_opts_test: OK\n");
  return 0;
}
