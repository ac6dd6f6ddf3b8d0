/*
 * Minimal MPI client for tests/mca/mca_mpirun_loads.sh: a verified send/recv ring (one eager
 * and one rendezvous-sized message) plus a verified allreduce. Prints "hello_mpi: OK" on rank 0
 * when every rank passed; exits non-zero otherwise.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { kSmall = 16, kLarge = 1 << 20 }; /* 1 MiB: above every BTL's eager limit */

static int ring(int rank, int size, int count, int tag) {
  uint32_t* out = malloc(sizeof(uint32_t) * (size_t)count);
  uint32_t* in = malloc(sizeof(uint32_t) * (size_t)count);
  if (out == NULL || in == NULL) {
    free(out);
    free(in);
    return 1;
  }
  const int next = (rank + 1) % size;
  const int prev = (rank + size - 1) % size;
  for (int i = 0; i < count; ++i) out[i] = (uint32_t)rank * 0x10000u + (uint32_t)i;
  MPI_Sendrecv(out, count, MPI_UINT32_T, next, tag, in, count, MPI_UINT32_T, prev, tag,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  int errors = 0;
  for (int i = 0; i < count; ++i) {
    if (in[i] != (uint32_t)prev * 0x10000u + (uint32_t)i) ++errors;
  }
  if (errors != 0) {
    fprintf(stderr, "hello_mpi: rank %d: %d of %d words from rank %d wrong (ring, tag %d)\n", rank,
            errors, count, prev, tag);
  }
  free(out);
  free(in);
  return errors != 0;
}

int main(int argc, char** argv) {
  int rank = 0;
  int size = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int failed = ring(rank, size, kSmall, 1);
  failed |= ring(rank, size, kLarge / (int)sizeof(uint32_t), 2);

  long sum = 0;
  const long mine = rank + 1;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (sum != (long)size * (size + 1) / 2) {
    fprintf(stderr, "hello_mpi: rank %d: allreduce sum %ld, expected %ld\n", rank, sum,
            (long)size * (size + 1) / 2);
    failed = 1;
  }

  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (rank == 0) {
    if (any_failed) {
      printf("hello_mpi: FAILED on at least one of %d ranks\n", size);
    } else {
      printf("hello_mpi: OK (%d ranks, ring + allreduce verified)\n", size);
    }
    fflush(stdout);
  }
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
