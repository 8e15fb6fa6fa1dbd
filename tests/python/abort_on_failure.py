"""What every MPI script of mpi_scripts/ does on a failure: print it and end every rank, so that no rank waits
forever in a collective call for one that failed."""

from __future__ import annotations

import contextlib
import sys
import traceback


@contextlib.contextmanager
def aborting_every_rank(comm):
    """Runs the block; any exception (even SystemExit) prints its traceback and aborts ``comm``."""
    try:
        yield
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        sys.stderr.flush()
        comm.Abort(3)
