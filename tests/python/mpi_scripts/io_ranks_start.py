"""Starts dedicated I/O ranks with the payload's ``buffer_bytes``; rank 0 prints one JSON line: every rank's
error (type and message), or null where the start succeeded.

Run as ``mpiexec -n N python io_ranks_start.py '{"buffer_bytes": B}'``.
"""

import json
import sys

import hzio
from mpi4py import MPI

payload = json.loads(sys.argv[1])
comm = MPI.COMM_WORLD
error = None
try:
    io = hzio.start_io_ranks(comm, per_node=1, buffer_bytes=payload["buffer_bytes"])
    if io.is_io_rank:
        io.serve()
    else:
        io.close()
except hzio.Error as e:
    error = [type(e).__name__, str(e)]
errors = comm.gather(error, root=0)
if comm.rank == 0:
    print(json.dumps({"errors": errors}), flush=True)
