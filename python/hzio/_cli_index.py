"""The ``hzio index`` subcommand: write the per-block statistics sidecars of a dataset written elsewhere.

It calls :func:`hzio.index`. Under ``mpiexec -n K hzio index ...`` the data files are shared over the
ranks of ``MPI.COMM_WORLD`` (mpi4py is imported only when installed) and rank 0 prints the summary.
"""

import importlib.util
import os

import hzio

from ._cli_util import UsageError, print_fields, print_json
from ._progress import progress_bar, wanted

# Set by the launchers for their ranks: Open MPI, MPICH's and Intel MPI's Hydra, PMIx (srun, prterun).
_LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK")


def world_comm():
    """Return mpi4py's ``MPI.COMM_WORLD`` when this process is one of several MPI ranks, else None.

    None without a launcher's variables in the environment (then MPI is not even initialized), and
    when mpi4py is not installed or its MPI library cannot be loaded.
    """
    if not any(v in os.environ for v in _LAUNCHER_VARIABLES) or importlib.util.find_spec("mpi4py") is None:
        return None
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError):
        return None
    return MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None


def index(args):
    """Run ``hzio index``: compute and store the statistics of every block of every field and timestep.

    Parameters
    ----------
    args : argparse.Namespace
        ``dataset``, ``sub_block_bits`` (int, 0 for whole blocks only), ``no_verify`` and ``json`` (bool), and
        ``progress`` (None: a bar of rank 0's data files only when stderr is a terminal).

    Returns
    -------
    int
        The exit status, 0. Collective under mpiexec: every rank runs it; only rank 0 prints.

    Examples
    --------
    ``mpiexec -n 4 hzio index /data/run42.idx --sub-block-bits 4``
    """
    if args.sub_block_bits is not None and args.sub_block_bits < 0:
        raise UsageError(f"--sub-block-bits must be non-negative, got {args.sub_block_bits}")
    comm = world_comm()
    rank = 0 if comm is None else comm.Get_rank()
    with progress_bar(wanted(args.progress, rank), None, "index", unit="file") as bar:
        def advance(done, total):
            bar.total = total
            bar.update(done - bar.n)

        summary = hzio.index(args.dataset, sub_block_bits=args.sub_block_bits, comm=comm, verify=not args.no_verify,
                             progress=advance if wanted(args.progress, rank) else None)
    if comm is not None and comm.Get_rank() != 0:
        return 0
    with hzio.open(args.dataset) as ds:
        path = ds.path
        known = present = 0
        for field in ds.fields:
            for time in ds.times:
                b = ds.blocks(field=field, time=time, existing_files_only=True)
                present += int(b["present"].sum())
                known += int((b["present"] & b["stats_known"]).sum())
    result = dict(summary, path=path, sub_block_bits=args.sub_block_bits, ranks=1 if comm is None else comm.Get_size(),
                  present_blocks=present, stats_known_blocks=known)
    if args.json:
        print_json(result)
    else:
        print(f"indexed {path}")
        print_fields([("data files", str(result["files"])), ("blocks", f"{result['blocks']} indexed; "
                                                                      f"{known} of {present} present blocks "
                                                                      "now have statistics"),
                      ("sub-block bits", "the dataset's" if args.sub_block_bits is None else str(args.sub_block_bits)),
                      ("ranks", str(result["ranks"])),
                      ("seconds", f"{result['seconds']:.3f}")])
    return 0
