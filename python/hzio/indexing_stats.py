"""Building per-block statistics for datasets written elsewhere (OpenVisus, PIDX, older hzio).

:func:`index` writes a ``.hzstats`` sidecar next to every data file; the data files and the .idx are
not modified, so OpenVisus reads the dataset as before. With an mpi4py communicator the files are
shared round-robin over the ranks (Collective).

Examples
--------
>>> import hzio
>>> hzio.index("/data/run42.idx")                       # doctest: +SKIP
IndexReport(files=4, blocks=2048, seconds=1.9)
"""

from __future__ import annotations

import os
import time as _time
from typing import Any, Callable

from . import _core
from ._results import IndexReport


def index(path: str | os.PathLike, *, sub_block_bits: int | None = None, comm: Any = None,
          threads: int = 0, verify: bool = True, progress: Callable[[int, int], None] | None = None) -> IndexReport:
    """Compute and store the statistics and checksums of every block of every field and timestep.

    Local without ``comm``; Collective with it (an mpi4py communicator: every rank must call it, and
    the data files are shared round robin over the ranks).

    ``sub_block_bits``: also keep the statistics of ``2**N`` equal parts of each block; ``None`` (the
    default) keeps the sub-block bits hzio's writers use for this dataset (its ``.idx`` key), or, for datasets
    written elsewhere, parts of 4096 samples as :func:`hzio.create` picks (``bits_per_block - 12``, at
    least 0); 0 keeps whole blocks only. ``threads``: worker threads (0: one per hardware thread).
    ``verify``: a data file whose current sidecar holds checksums is checked against them first, so that
    indexing never gives damaged blocks new checksums (:class:`CorruptError`); False records the files as
    they are now (after a tool other than hzio changed a data file in place, for instance).
    ``progress``: called as ``progress(done, total)`` after each data file this process indexed, with
    ``total`` the number of data files it indexes (its share with ``comm``), e.g. to draw a progress bar.
    Returns an :class:`~hzio.IndexReport` (also a mapping): the numbers of data files and blocks
    indexed (summed over ranks) and the seconds taken.
    """
    if sub_block_bits is not None and int(sub_block_bits) < 0:
        from .errors import InvalidArgumentError
        raise InvalidArgumentError(f"sub_block_bits must be None or non-negative, got {sub_block_bits}")
    t0 = _time.perf_counter()
    core = _core.Dataset.open(os.fspath(path), False, True, int(threads), bool(verify))
    rank, size = (comm.rank, comm.size) if comm is not None else (0, 1)
    # Only the data files that exist: a .idx may declare far more than it has.
    units = [(t, first) for t in core.times for first in core.file_census(t, 0)[0]]
    files = blocks = done = 0
    error = None
    mine = len(units[rank::size])
    for k, (t, first) in enumerate(units):
        if k % size != rank:
            continue
        try:
            # -1: kDatasetSubBlockBits, those of the dataset's (hzio stats) key
            n = core.index_file(t, first, -1 if sub_block_bits is None else int(sub_block_bits))
        except Exception as e:  # keep going so that every rank reaches the collective below
            error = error or e
        else:
            files += 1 if n else 0
            blocks += n
        done += 1
        if progress is not None:
            progress(done, mine)
    core.close()
    if comm is not None:
        errors = comm.allgather(None if error is None else f"{type(error).__name__}: {error}")
        files, blocks = comm.allreduce(files), comm.allreduce(blocks)
        other = next((e for e in errors if e), None)
        if other and error is None:
            from .errors import Error
            raise Error(f"indexing failed on another rank: {other}")
    if error is not None:
        raise error
    return IndexReport(files=files, blocks=blocks, seconds=round(_time.perf_counter() - t0, 3))
