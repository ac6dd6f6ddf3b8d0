/* mpit: the project's MPI acceptance program (tests/mpi/mpit_*.c), run over whatever transport
 * mpirun selects; the ctest runners force --mca pml ob1 --mca btl self,iwarpx.
 *
 * Contract shared by the sub-tests:
 *   - every sub-test is a function `void mpit_<name>(void)` called collectively by all ranks of
 *     MPI_COMM_WORLD after MPI_Init; it checks every byte it receives against what the sender
 *     must have sent and calls mpit_fail() (which aborts the whole job with exit code 1) on the
 *     first mismatch, so a sub-test that returns has passed on this rank;
 *   - sub-tests leave no pending request and no unmatched message behind (the next one starts
 *     clean), and use only MPI_COMM_WORLD or communicators they free themselves;
 *   - mpit_rank / mpit_size are set before the first sub-test runs. */
#ifndef IWARPX_TESTS_MPI_MPIT_H
#define IWARPX_TESTS_MPI_MPIT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

extern int mpit_rank;
extern int mpit_size;

/* Prints "mpit: rank R: <sub-test>: <what> (a, b)" to stderr and aborts the job (exit 1). */
_Noreturn void mpit_fail(const char* what, long a, long b);

/* Deterministic content of byte i of a message from rank `from` with tag `tag` and length n:
 * different for neighbouring bytes, senders, tags and lengths, so a misplaced, truncated or
 * crossed message never checks out. */
static inline unsigned char mpit_byte(size_t i, int from, int tag, size_t n) {
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull ^ (uint64_t)(unsigned)from << 40 ^
               (uint64_t)(unsigned)tag << 20 ^ (uint64_t)n;
  x ^= x >> 29;
  return (unsigned char)(x ^ (x >> 8));
}

/* Fills buf[0..n) with mpit_byte(i, from, tag, n). */
void mpit_fill(unsigned char* buf, size_t n, int from, int tag);

/* Fails (with `what`, the length and the first bad index) unless buf[0..n) holds
 * mpit_byte(i, from, tag, n). */
void mpit_check(const unsigned char* buf, size_t n, int from, int tag, const char* what);

/* malloc that fails the test instead of returning NULL (n == 0 allocates 1 byte). */
void* mpit_alloc(size_t n);

/* The same, zero-filled. */
void* mpit_zalloc(size_t n);

/* The name of the sub-test now running (for mpit_fail's message). */
extern const char* mpit_current;

/* Sub-tests (one file each). */
void mpit_p2p(void);      /* mpit_p2p.c: blocking + nonblocking, 0 B .. 64 MiB */
void mpit_anysrc(void);   /* mpit_match.c: MPI_ANY_SOURCE / MPI_ANY_TAG */
void mpit_many2one(void); /* mpit_match.c: all ranks to rank 0, interleaved tags */
void mpit_probe(void);    /* mpit_probe.c: Probe, Iprobe, Mprobe, Improbe */
void mpit_dtype(void);    /* mpit_dtype.c: vector, indexed, struct, resized */
void mpit_coll(void);     /* mpit_coll.c: collectives */
void mpit_kill(void);     /* mpit_kill.c: the last rank SIGKILLs itself mid-exchange */
void mpit_killsend(void); /* mpit_kill.c: ... while the others keep sending to it */

#endif
