"""A writer that rewrites timestep 0 of a dataset again and again, for the readers of
``tests/python/test_atomic_rewrites.py``.

Run alone (one process) or under mpiexec (collective, every rank writes its z-slab of each box)::

    python rewrite_writer.py '{"out": "/tmp/d", "seed": 7, "codec": "zip", "commits": 100, "mpi": false}'

The dataset ``<out>/rw.idx`` (32^3, fields ``t`` float32 and ``q`` int16, 4 data files per timestep) is
created with commit 0, timestep 0 whole. Commit k > 0 rewrites timestep 0 whole when k is even (every
data file written anew) and a box cutting blocks of several data files when k is odd (merged with the
stored blocks: the rebuild of docs/design/commit.md). Rank 0 prints ``{"created": true}`` once the
dataset exists and ``{"done": commits}`` at the end. Importable without MPI or hzio:
:func:`states` gives every state the dataset passes through.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

SHAPE = (32, 32, 32)
FIELDS = (("t", "float32"), ("q", "int16"))
BITS_PER_BLOCK = 10  # 32 blocks per field and timestep
BLOCKS_PER_FILE = 8  # so 4 data files per timestep


def box_of(seed: int, k: int):
    """The box ``(lo, hi)`` commit ``k`` writes."""
    if k % 2 == 0:
        return (0, 0, 0), SHAPE
    rng = np.random.default_rng([seed, 1, k])
    lo = tuple(int(rng.integers(0, n // 2)) for n in SHAPE)
    hi = tuple(int(rng.integers(n // 2 + 1, n + 1)) for n in SHAPE)
    return lo, hi


def values(seed: int, k: int, field: str, lo, hi) -> np.ndarray:
    shape = tuple(h - l for l, h in zip(lo, hi))
    rng = np.random.default_rng([seed, 2, k, [f for f, _ in FIELDS].index(field)])
    if field == "t":
        return rng.standard_normal(shape, dtype=np.float32)
    return rng.integers(-30000, 30000, size=shape, dtype=np.int16)


def states(seed: int, commits: int) -> list:
    """``[{field: array}]``: timestep 0 after commits 0, 1, ..., commits-1."""
    state = {f: np.zeros(SHAPE, dtype) for f, dtype in FIELDS}
    out = []
    for k in range(commits):
        lo, hi = box_of(seed, k)
        sl = tuple(slice(l, h) for l, h in zip(lo, hi))
        for f, _ in FIELDS:
            state[f] = state[f].copy()
            state[f][sl] = values(seed, k, f, lo, hi)
        out.append(dict(state))
    return out


def run(args, comm=None) -> None:
    import hzio  # noqa: PLC0415

    rank, size = (comm.rank, comm.size) if comm is not None else (0, 1)
    seed = int(args["seed"])
    z0, z1 = rank * SHAPE[0] // size, (rank + 1) * SHAPE[0] // size
    ds = hzio.create(os.path.join(args["out"], "rw.idx"), shape=SHAPE, fields=dict(FIELDS), codec=args["codec"],
                     bits_per_block=BITS_PER_BLOCK, blocks_per_file=BLOCKS_PER_FILE, times=[0], overwrite=True,
                     durable=False, threads=1, comm=comm)
    for k in range(int(args["commits"])):
        lo, hi = box_of(seed, k)
        mine_lo, mine_hi = (max(lo[0], z0),) + lo[1:], (min(hi[0], z1),) + hi[1:]
        if mine_hi[0] > mine_lo[0]:
            for f, _ in FIELDS:
                data = values(seed, k, f, lo, hi)[mine_lo[0] - lo[0]:mine_hi[0] - lo[0]]
                ds.write(np.ascontiguousarray(data), offset=mine_lo, field=f, time=0)
        ds.flush()
        if k == 0 and rank == 0:
            print(json.dumps({"created": True}), flush=True)
    ds.close()
    if rank == 0:
        print(json.dumps({"done": int(args["commits"])}), flush=True)


def main(argv) -> None:
    args = json.loads(argv[1])
    if not args.get("mpi"):
        run(args)
        return
    from mpi4py import MPI  # noqa: PLC0415

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from abort_on_failure import aborting_every_rank  # noqa: PLC0415

    comm = MPI.COMM_WORLD
    with aborting_every_rank(comm):
        run(args, comm)


if __name__ == "__main__":
    main(sys.argv)
