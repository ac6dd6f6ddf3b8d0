/* mpit_kill.c: a rank dies mid-exchange (sub-test "kill", contract in mpit.h, except that it
 * never returns normally: the job must end in an error).
 * Needs at least 2 ranks. The last rank ("victim") and all others start a ring of large
 * exchanges; after kRounds complete ones, the victim sends half of a rendezvous-sized message
 * (it posts the send and enters a receive) and then raise(SIGKILL)s itself, writing its PID to
 * stderr first. The survivors are then blocked in MPI_Recv / MPI_Wait on it. The runtime (the
 * ORTE daemon that sees its child die) and/or the BTL (peer loss reported as error completions
 * through register_error) must abort the job: mpirun exits non-zero. Every rank prints
 * "mpit: kill: rank R pid P" first, so the runner can check that no rank outlives mpirun. If the
 * survivors ever return from the dead rank's exchange, they report it and exit 3, which the runner
 * treats as a failure too. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mpit.h"

enum { kRounds = 3, kLen = 4 << 20, kTag = 950 };

void mpit_kill(void) {
  if (mpit_size < 2) mpit_fail("kill needs at least 2 ranks", mpit_size, 2);
  const int victim = mpit_size - 1;
  const int right = (mpit_rank + 1) % mpit_size;
  const int left = (mpit_rank + mpit_size - 1) % mpit_size;
  fprintf(stderr, "mpit: kill: rank %d pid %ld\n", mpit_rank, (long)getpid());
  fflush(stderr);
  unsigned char* tx = mpit_alloc(kLen);
  unsigned char* rx = mpit_alloc(kLen);
  for (int round = 0; round <= kRounds; ++round) {
    mpit_fill(tx, kLen, mpit_rank, kTag + round);
    MPI_Request req[2];
    MPI_Irecv(rx, kLen, MPI_BYTE, left, kTag + round, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(tx, kLen, MPI_BYTE, right, kTag + round, MPI_COMM_WORLD, &req[1]);
    if (round == kRounds && mpit_rank == victim) {
      /* Let the others reach their receive from us and our rendezvous start. */
      for (int i = 0; i < 1000; ++i) {
        int flag;
        MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE);
        usleep(100);
      }
      fprintf(stderr, "mpit: kill: rank %d (pid %ld) raises SIGKILL mid-exchange\n", mpit_rank,
              (long)getpid());
      fflush(stderr);
      raise(SIGKILL);
    }
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    mpit_check(rx, kLen, left, kTag + round, "kill: payload before the kill");
    if (round == kRounds) {
      /* Only a rank that is not the victim's neighbour can get here legitimately; wait for
       * the victim in a collective, which can never complete. */
      MPI_Barrier(MPI_COMM_WORLD);
      fprintf(stderr, "mpit: kill: rank %d returned from a barrier with a dead rank\n", mpit_rank);
      exit(3);
    }
  }
  free(tx);
  free(rx);
}

/* killsend: the BTL's own peer-loss path. The runner starts it with --enable-recovery, so the
 * runtime does not abort the job when the victim dies; only the BTL can tell the PML. The
 * survivors keep sending eager messages to the victim (MPI_Send, 1 ms apart); the victim takes
 * kMsgsBeforeKill of them from each, prints its PID and raise(SIGKILL)s itself. The survivors'
 * sends then fail in the provider (peer reset or FI_IWARPX_RD_TIMEOUT), the BTL reports the
 * loss to the PML (register_error callback) and ob1 aborts the process. A survivor still
 * sending after 120 s prints so and exits 3. */
enum { kMsgsBeforeKill = 20, kSendLen = 1000, kSendTag = 960 };

void mpit_killsend(void) {
  if (mpit_size < 2) mpit_fail("killsend needs at least 2 ranks", mpit_size, 2);
  const int victim = mpit_size - 1;
  unsigned char buf[kSendLen];
  fprintf(stderr, "mpit: kill: rank %d pid %ld\n", mpit_rank, (long)getpid());
  fflush(stderr);
  if (mpit_rank == victim) {
    for (int i = 0; i < kMsgsBeforeKill * (mpit_size - 1); ++i) {
      MPI_Status st;
      MPI_Recv(buf, kSendLen, MPI_BYTE, MPI_ANY_SOURCE, kSendTag, MPI_COMM_WORLD, &st);
      mpit_check(buf, kSendLen, st.MPI_SOURCE, kSendTag, "killsend payload");
    }
    fprintf(stderr, "mpit: kill: rank %d (pid %ld) raises SIGKILL mid-exchange\n", mpit_rank,
            (long)getpid());
    fflush(stderr);
    raise(SIGKILL);
  }
  mpit_fill(buf, kSendLen, mpit_rank, kSendTag);
  const double deadline = MPI_Wtime() + 120.0;
  /* 1 ms apart: a flood from spinning senders could starve the victim of CPU on an
   * oversubscribed host and delay its death by tens of seconds. */
  while (MPI_Wtime() < deadline) {
    MPI_Send(buf, kSendLen, MPI_BYTE, victim, kSendTag, MPI_COMM_WORLD);
    usleep(1000);
  }
  fprintf(stderr, "mpit: kill: rank %d returned from a barrier with a dead rank (still sending)\n",
          mpit_rank);
  exit(3);
}
