"""mpi4py one-sided checks for osc iwarpx (run by osc_iwarpx_test.sh with /usr/bin/python3).

mpi4py initialises MPI with MPI_THREAD_MULTIPLE, the level osc pt2pt refuses. Five windows:
Win.Allocate (Put with Fence, Get under a shared Lock, Accumulate(SUM) from all ranks under
Lock_all), Win.Create over a bytearray (Put under an exclusive Lock from every rank into its own
slot at rank 0, then Flush/Unlock), a Post/Start/Complete/Wait ring, and Win.Create_dynamic
(Attach, Accumulate(SUM) and Fetch_and_op(SUM) on doubles from every rank, Detach), and
Win.Allocate with Get_accumulate(MAXLOC) through a vector of MPI.DOUBLE_INT from every rank
(padding bytes at target and in the result untouched).
Rank 0 prints "osc_iwarpx_test: OK <n> ranks (mpi4py)" only if every rank passed.
"""
import struct
from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
errors = []
if MPI.Query_thread() != MPI.THREAD_MULTIPLE:
    errors.append("thread level %d, want MPI_THREAD_MULTIPLE" % MPI.Query_thread())

N = 1024
right, left = (rank + 1) % size, (rank - 1) % size
win = MPI.Win.Allocate(8 * N, 8, comm=comm)
mem = memoryview(win.tomemory()).cast("B").cast("q")
for i in range(N):
    mem[i] = -1
win.Fence()
src = array("q", [1000 * rank + i for i in range(N)])
win.Put([src, MPI.INT64_T], right)
win.Fence()
if any(mem[i] != 1000 * left + i for i in range(N)):
    errors.append("fence Put: window content differs")
got = array("q", [0] * N)
win.Lock(right, MPI.LOCK_SHARED)
win.Get([got, MPI.INT64_T], right)
win.Unlock(right)
if got != src:
    errors.append("Get under a shared lock differs")
# Accumulate(MPI.SUM) on int64 from every rank into rank 0's first slot (20 times each).
win.Fence()
if rank == 0:
    mem[0] = 0
win.Fence()
one = array("q", [1])
win.Lock_all()
for _ in range(20):
    win.Accumulate([one, MPI.INT64_T], 0, op=MPI.SUM)
win.Flush_all()
win.Unlock_all()
comm.Barrier()
if rank == 0 and mem[0] != 20 * size:
    errors.append("Accumulate(SUM): counter %d, want %d" % (mem[0], 20 * size))
win.Free()

buf = bytearray(64 * size)
win = MPI.Win.Create(buf, 1, comm=comm)
mine = bytearray([rank + 1] * 64)
win.Lock(0, MPI.LOCK_EXCLUSIVE)
win.Put([mine, MPI.BYTE], 0, target=(64 * rank, 64, MPI.BYTE))
win.Flush(0)
win.Unlock(0)
comm.Barrier()
if rank == 0:
    win.Lock(0, MPI.LOCK_EXCLUSIVE)
    for r in range(size):
        if buf[64 * r : 64 * (r + 1)] != bytearray([r + 1] * 64):
            errors.append("exclusive-lock Put of rank %d missing" % r)
    win.Unlock(0)
win.Free()

# PSCW ring: expose to the left neighbour, access the right one.
win = MPI.Win.Allocate(8, 8, comm=comm)
cell = memoryview(win.tomemory()).cast("B").cast("q")
world = comm.Get_group()
gl, gr = world.Incl([left]), world.Incl([right])
for epoch in range(5):
    win.Post(gl)
    win.Start(gr)
    win.Put([array("q", [100 * epoch + rank]), MPI.INT64_T], right)
    win.Complete()
    win.Wait()
    if cell[0] != 100 * epoch + left:
        errors.append("PSCW epoch %d: got %d, want %d" % (epoch, cell[0], 100 * epoch + left))
gl.Free()
gr.Free()
world.Free()
win.Free()

# Dynamic window (increment 2): attach a buffer, exchange its address, then the general
# accumulate path from every rank into rank 0's buffer: Accumulate(SUM) on doubles,
# Fetch_and_op(SUM) on a double (tickets must all differ).
win = MPI.Win.Create_dynamic(comm=comm)
dyn = array("d", [0.0] * 4)
win.Attach(dyn)
addrs = comm.allgather(MPI.Get_address(dyn))
win.Lock_all()
tickets = []
for i in range(10):
    win.Accumulate([array("d", [0.5, 0.25]), MPI.DOUBLE], 0, target=(addrs[0], 2, MPI.DOUBLE),
                   op=MPI.SUM)
    t = array("d", [0.0])
    win.Fetch_and_op([array("d", [1.0]), MPI.DOUBLE], [t, MPI.DOUBLE], 0,
                     target_disp=addrs[0] + 16, op=MPI.SUM)
    win.Flush(0)
    tickets.append(t[0])
win.Unlock_all()
comm.Barrier()
all_tickets = sorted(sum(comm.allgather(tickets), []))
if all_tickets != [float(i) for i in range(10 * size)]:
    errors.append("dynamic Fetch_and_op(SUM, DOUBLE) tickets not 0..%d" % (10 * size - 1))
if rank == 0 and (dyn[0] != 5.0 * size or dyn[1] != 2.5 * size or dyn[2] != 10.0 * size):
    errors.append("dynamic Accumulate(SUM, DOUBLE): %s" % list(dyn))
comm.Barrier()
win.Detach(dyn)
win.Free()

# Pair type inside a derived type: Get_accumulate(MAXLOC) from every rank through a vector of
# MPI.DOUBLE_INT at rank 0 (3 elements, stride 2); the 4 padding bytes of every element (0xA5)
# and the gap elements (0xEE) at the target, and the result's padding (0xC3), must survive.
DI = struct.Struct("=di4x")  # MPI_DOUBLE_INT: double, int, 4 bytes of padding (extent 16)
win = MPI.Win.Allocate(128, 1, comm=comm)
tmem = memoryview(win.tomemory()).cast("B")
if rank == 0:
    tmem[:] = b"\xee" * 128
    for j in range(3):
        tmem[32 * j : 32 * j + 16] = DI.pack(-1.0, -1)[:12] + b"\xa5" * 4
vec = MPI.DOUBLE_INT.Create_vector(3, 1, 2).Commit()
comm.Barrier()
win.Lock_all()
for i in range(10):
    org = b"".join(DI.pack(float(i * size + rank), rank)[:12] + b"\x5a" * 4 for _ in range(3))
    res = bytearray(b"\xc3" * 48)
    win.Get_accumulate([bytearray(org), 3, MPI.DOUBLE_INT], [res, 3, MPI.DOUBLE_INT], 0,
                       target=(0, 1, vec), op=MPI.MAXLOC)
    if any(res[16 * j + 12 : 16 * j + 16] != b"\xc3" * 4 for j in range(3)):
        errors.append("MAXLOC on a DOUBLE_INT vector: result padding written")
win.Unlock_all()
comm.Barrier()
if rank == 0:
    top = 9 * size + size - 1
    for j in range(3):
        el = bytes(tmem[32 * j : 32 * j + 16])
        v, k = struct.unpack("=di", el[:12])
        if (v, k) != (float(top), size - 1) or el[12:] != b"\xa5" * 4:
            errors.append("DOUBLE_INT vector element %d: (%g, %d), padding %s" % (j, v, k, el[12:]))
        if bytes(tmem[32 * j + 16 : 32 * j + 32]) != b"\xee" * 16:
            errors.append("DOUBLE_INT vector: gap element %d written" % j)
comm.Barrier()
vec.Free()
win.Free()

for e in errors:
    print("rank %d: FAIL %s" % (rank, e), flush=True)
total = comm.allreduce(len(errors))
if rank == 0:
    print("osc_iwarpx_test: %s %d ranks (mpi4py)" % ("OK" if total == 0 else "FAILED", size))
raise SystemExit(0 if total == 0 else 1)
