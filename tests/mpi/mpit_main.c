/* mpit_main.c: runs the sub-tests named on the command line in order (all of the non-fatal ones
 * without arguments), each between barriers, and prints "mpit: <name> OK <ranks> ranks" from
 * rank 0 after each and "mpit: OK <ranks> ranks" at the end. Unknown names: usage on stderr,
 * exit 2 (before MPI_Init, so mpirun fails fast). Contract of the sub-tests in mpit.h. */
#include <stdio.h>
#include <string.h>

#include "mpit.h"

struct subtest {
  const char* name;
  void (*run)(void);
  int in_all; /* part of the default run */
};

static const struct subtest kTests[] = {
    {"p2p", mpit_p2p, 1},     {"anysrc", mpit_anysrc, 1},     {"many2one", mpit_many2one, 1},
    {"probe", mpit_probe, 1}, {"dtype", mpit_dtype, 1},       {"coll", mpit_coll, 1},
    {"kill", mpit_kill, 0},   {"killsend", mpit_killsend, 0},
};
enum { kNumTests = sizeof(kTests) / sizeof(kTests[0]) };

static const struct subtest* find(const char* name) {
  for (int i = 0; i < kNumTests; ++i)
    if (strcmp(kTests[i].name, name) == 0) return &kTests[i];
  return NULL;
}

static void run(const struct subtest* t) {
  mpit_current = t->name;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  t->run();
  MPI_Barrier(MPI_COMM_WORLD);
  if (mpit_rank == 0) {
    printf("mpit: %s OK %d ranks (%.2f s)\n", t->name, mpit_size, MPI_Wtime() - t0);
    fflush(stdout);
  }
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (find(argv[i]) == NULL) {
      fprintf(stderr, "usage: mpit [sub-test...]; sub-tests:");
      for (int k = 0; k < kNumTests; ++k)
        fprintf(stderr, " %s%s", kTests[k].name, kTests[k].in_all ? "" : " (not by default)");
      fprintf(stderr, "\nmpit: unknown sub-test '%s'\n", argv[i]);
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &mpit_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpit_size);
  if (argc > 1) {
    for (int i = 1; i < argc; ++i) run(find(argv[i]));
  } else {
    for (int k = 0; k < kNumTests; ++k)
      if (kTests[k].in_all) run(&kTests[k]);
  }
  if (mpit_rank == 0) printf("mpit: OK %d ranks\n", mpit_size);
  MPI_Finalize();
  return 0;
}
