"""mpi4py_smoke.py: a real mpi4py client over whatever transport mpirun selects (tests/mpi/
mpi4py_test.sh forces btl self,iwarpx + osc rdma). Needs exactly 2 ranks; run it with
/usr/bin/python3 (Debian's python3-mpi4py; no numpy: buffers are bytearray and array.array).

Checks, each with the data verified: pickled python objects (comm.send/recv, both directions,
and comm.sendrecv), buffer Send/Recv of bytearrays 0 B .. 4 MiB + 1, object allreduce and
buffer Allreduce (array.array of doubles), and a one-sided window (Win.Create on a bytearray,
Put and Get between fences). Prints the thread level that MPI granted and, from rank 0,
"mpi4py_smoke: OK"; any mismatch raises (mpi4py then aborts the job: non-zero exit).
"""
import array
import sys

from mpi4py import MPI


def pattern(n, src, tag):
    return bytearray(((i * 131) ^ (src * 17) ^ tag ^ (n & 0xFF)) & 0xFF for i in range(n))


def check(cond, what):
    if not cond:
        sys.stderr.write(f"mpi4py_smoke: rank {MPI.COMM_WORLD.Get_rank()}: FAIL {what}\n")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)


def objects(comm, rank, peer):
    obj = {"from": rank, "list": list(range(1000 + rank)), "nested": {"t": (rank, "x" * 5000)}}
    if rank == 0:
        comm.send(obj, dest=peer, tag=7)
        got = comm.recv(source=peer, tag=8)
    else:
        got = comm.recv(source=peer, tag=7)
        comm.send(obj, dest=peer, tag=8)
    check(got["from"] == peer and got["list"] == list(range(1000 + peer)), "send/recv object")
    check(got["nested"]["t"] == (peer, "x" * 5000), "send/recv nested object")
    big = comm.sendrecv(["p" * 200000, rank], dest=peer, source=peer)
    check(big == ["p" * 200000, peer], "sendrecv of a 200 KB object")


def buffers(comm, rank, peer):
    for n in (0, 1, 100, 16383, 16385, 65536, 100000, (4 << 20) + 1):
        tx = pattern(n, rank, 3)
        rx = bytearray(n + 1)
        rx[n] = 0x5A
        st = MPI.Status()
        if rank == 0:
            comm.Send([tx, MPI.BYTE], dest=peer, tag=3)
            comm.Recv([memoryview(rx)[:n], MPI.BYTE], source=peer, tag=3, status=st)
        else:
            comm.Recv([memoryview(rx)[:n], MPI.BYTE], source=peer, tag=3, status=st)
            comm.Send([tx, MPI.BYTE], dest=peer, tag=3)
        check(st.Get_count(MPI.BYTE) == n and st.Get_source() == peer, f"Recv status, {n} B")
        check(rx[:n] == pattern(n, peer, 3), f"Recv bytes, {n} B")
        check(rx[n] == 0x5A, f"Recv wrote past the message, {n} B")


def reductions(comm, rank, size):
    total = comm.allreduce(rank + 1, op=MPI.SUM)
    check(total == size * (size + 1) // 2, "allreduce of python ints")
    n = 50000
    x = array.array("d", (rank * 1000.0 + i for i in range(n)))
    y = array.array("d", bytes(8 * n))
    comm.Allreduce([x, MPI.DOUBLE], [y, MPI.DOUBLE], op=MPI.SUM)
    base = sum(r * 1000.0 for r in range(size))
    check(all(y[i] == base + size * i for i in range(n)), "Allreduce of array('d')")


def one_sided(comm, rank, peer):
    n = 1 << 16
    mem = bytearray(n)
    win = MPI.Win.Create(mem, disp_unit=1, comm=comm)
    src = pattern(n, rank, 9)
    win.Fence()
    win.Put([src, MPI.BYTE], peer, target=[0, n, MPI.BYTE])
    win.Fence()
    check(mem == pattern(n, peer, 9), "Put + Fence into the window")
    got = bytearray(n)
    win.Fence()
    win.Get([got, MPI.BYTE], peer, target=[0, n, MPI.BYTE])
    win.Fence()
    check(got == pattern(n, rank, 9), "Get + Fence from the window")
    win.Free()


def atomics(comm, rank, size):
    words = array.array("q", [0, 0, -1, 0])
    win = MPI.Win.Create(words if rank == 0 else None, disp_unit=8, comm=comm)
    one = array.array("q", [0])
    old = array.array("q", [0])
    seen = []
    win.Lock(0, MPI.LOCK_SHARED)
    for i in range(20):
        bit = 1 << (rank * 20 + i)
        for disp, op, operand in ((0, MPI.BXOR, bit), (1, MPI.BOR, bit), (2, MPI.BAND, ~bit),
                                  (3, MPI.SUM, rank + 1)):
            one[0] = operand
            win.Fetch_and_op([one, MPI.INT64_T], [old, MPI.INT64_T], 0, disp, op)
            win.Flush(0)
            if disp == 0:
                seen.append(old[0])
    win.Unlock(0)
    # Our own XORs are ordered: before our i-th, our earlier bits were all flipped already.
    mine = (1 << 20) - 1
    for i, v in enumerate(seen):
        check((v >> (rank * 20)) & mine == (1 << i) - 1, f"Fetch_and_op BXOR result {i}")
    comm.Barrier()
    if rank == 0:
        every = (1 << (20 * size)) - 1
        check(words[0] == every, f"BXOR from every rank: {words[0]:#x}")
        check(words[1] == every, f"BOR from every rank: {words[1]:#x}")
        check(words[2] == ~every, f"BAND from every rank: {words[2]:#x}")
        check(words[3] == 20 * size * (size + 1) // 2, f"SUM from every rank: {words[3]}")
    comm.Barrier()
    win.Free()


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    check(size == 2, f"needs 2 ranks, got {size}")
    peer = 1 - rank
    levels = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
              MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}
    print(f"mpi4py_smoke: rank {rank} thread level {levels[MPI.Query_thread()]}", flush=True)
    objects(comm, rank, peer)
    buffers(comm, rank, peer)
    reductions(comm, rank, size)
    one_sided(comm, rank, peer)
    atomics(comm, rank, size)
    comm.Barrier()
    if rank == 0:
        print("mpi4py_smoke: OK", flush=True)


main()
