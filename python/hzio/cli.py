"""The ``hzio`` command line: ``info``, ``read``, ``convert``, ``export``, ``verify``, ``dump``, ``query``,
``index`` and ``serve`` over the public API.

Run ``hzio -h`` or ``hzio COMMAND -h``. Errors print ``hzio: error: <message>`` on stderr and exit with
status 2 (``verify`` exits 1 when it finds a corrupt block or a timestep without data); there is
never a traceback for hzio errors. Verbs that write a file refuse to replace one without ``--overwrite``;
long-running verbs draw a progress bar on stderr when it is a terminal (``--progress``/``--no-progress``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

import hzio

from ._cli_convert import convert
from ._cli_dump import dump
from ._cli_export import export
from ._cli_index import index
from ._cli_inspect import info, read
from ._cli_plan import add_plan_arguments, plan
from ._cli_query import query
from ._cli_serve import serve
from ._cli_util import UsageError
from ._cli_verify import verify

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

_EPILOG = """\
examples:
  hzio info data.idx
  hzio read data.idx -o coarse.npy --level 12 --box 0:64,:,:
  hzio convert volume.raw out.idx --shape 256,256,256 --dtype float32 --codec zip
  hzio convert run.nc run.idx --variables temp,salt --time-dim time
  mpiexec -n 4 hzio convert big.h5 big.idx --variables /fields/density
  hzio export data.idx part.zarr --box 0:64,:,: --level 15 --fields temperature
  hzio verify data.idx && echo intact
  hzio dump data.idx --field temperature --time 0
  hzio query data.idx --field temperature --range 1500 2000 --out front.npz
  mpiexec -n 4 hzio index openvisus_run.idx
  hzio serve data.idx run.idx --port 8000
  hzio plan --global 4096,4096,8192 --grid 32,64,64 --dtype float64 --fields 16 --partitions 16
"""


def build_parser() -> argparse.ArgumentParser:
    """Local. Return the :class:`argparse.ArgumentParser` of the ``hzio`` command.

    Examples
    --------
    >>> build_parser().parse_args(["info", "a.idx", "--json"]).json
    True
    """
    parser = argparse.ArgumentParser(
        prog="hzio", description="Inspect, read, convert and verify IDX datasets (hierarchical Z order).",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"hzio {hzio.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_info(sub)
    _add_read(sub)
    _add_convert(sub)
    _add_export(sub)
    _add_verify(sub)
    _add_dump(sub)
    _add_query(sub)
    _add_index(sub)
    _add_serve(sub)
    _add_plan(sub)
    return parser


def _add_command(sub, name, func, summary, description):
    p = sub.add_parser(name, help=summary, description=description,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=func)
    return p


def _add_no_verify(p, what="read blocks without checking them against their checksums"):
    p.add_argument("--no-verify", action="store_true", help=what)


def _add_progress(p):
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show a progress bar on stderr (default: only when stderr is a terminal)")


def _add_overwrite(p, what="the output file"):
    p.add_argument("--overwrite", action="store_true", help=f"replace {what} if it exists (default: refuse)")


def _add_selection(p, all_by_default):
    scope = "all" if all_by_default else "the first"
    p.add_argument("--field", metavar="F", help=f"field name (default: {scope})")
    p.add_argument("--time", metavar="T", type=int, help=f"timestep (default: {scope})")


def _add_info(sub):
    p = _add_command(sub, "info", info, "show a dataset's shape, fields, bitmask, blocks and levels",
                     "Print the metadata of a dataset: shape ([z, y, x]), fields with dtype, codec and layout, "
                     "timesteps,\nbitmask, block and file counts, and the grid shape of every level.")
    p.add_argument("dataset", metavar="DATASET", help="the .idx file")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_read(sub):
    p = _add_command(sub, "read", read, "read a box at a level into a .npy file",
                     "Read the samples of levels 0..H inside a box and save them with numpy.save.")
    p.add_argument("dataset", metavar="DATASET", help="the .idx file")
    p.add_argument("-o", "--output", metavar="OUT.npy", required=True, help="the .npy file to write")
    _add_selection(p, all_by_default=False)
    p.add_argument("--level", metavar="H", type=int, help="resolution level (default: max_level, full resolution)")
    p.add_argument("--box", metavar="z0:z1,y0:y1,x0:x1",
                   help="box in [z, y, x] order with exclusive ends; ':' (or an empty bound) means the whole axis")
    _add_no_verify(p)
    _add_overwrite(p)
    _add_progress(p)
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing")


def _add_convert(sub):
    p = _add_command(sub, "convert", convert, "write an HDF5, NetCDF, Zarr, .npy or raw array into a new dataset",
                     "Convert arrays into a new IDX dataset: a .npy file, a headerless binary file (--shape and\n"
                     "--dtype), HDF5 datasets, NetCDF variables or Zarr (v2, v3) arrays. Each variable becomes a\n"
                     "field, each index of --time-dim a timestep. The input is read and written box by box\n"
                     "(--slab-bytes), and under mpiexec the boxes are shared over the ranks, which write collectively.")
    p.add_argument("input", metavar="INPUT", help=".npy, .h5/.hdf5, .nc, a .zarr folder, or headerless binary "
                                                  "(C order [z, y, x], native byte order)")
    p.add_argument("output", metavar="OUT.idx", help="the dataset to create")
    p.add_argument("--format", choices=["npy", "raw", "hdf5", "netcdf", "zarr"],
                   help="the input format (default: from the file's first bytes, suffix or Zarr metadata)")
    p.add_argument("--variables", metavar="A,B=NAME",
                   help="input variables (HDF5 dataset paths, NetCDF variables, Zarr array paths), one field each, "
                        "named after the variable or NAME (default: the input's only variable)")
    p.add_argument("--time-dim", metavar="DIM",
                   help="the dimension (name, or axis number from 0) whose indices become timesteps; the time "
                        "coordinate's values are the timesteps when they are distinct non-negative whole numbers, "
                        "else 0..n-1")
    p.add_argument("--shape", metavar="Z,Y,X",
                   help="samples per axis of headerless input ([z, y, x] order, 1 to 3 axes)")
    p.add_argument("--dtype", metavar="DTYPE",
                   help="field dtype, e.g. float32 (the input must convert to it without loss), or float32[3] "
                        "when the last axis holds 3 components; required for headerless input")
    p.add_argument("--field", metavar="NAME", help="field name of a single variable (default: its name, or data)")
    p.add_argument("--codec", default="raw", help="raw, zip, lz4 or zfp-<enc>-<dec> (default: raw)")
    p.add_argument("--layout", default="hzorder", choices=["hzorder", "rowmajor"],
                   help="sample order inside blocks (default: hzorder)")
    p.add_argument("--bits-per-block", metavar="N", type=int, help="log2 of samples per block (default: OpenVisus's)")
    p.add_argument("--blocks-per-file", metavar="N", type=int, help="blocks per data file (default: OpenVisus's)")
    p.add_argument("--partitions", metavar="R", type=int, default=1,
                   help="under mpiexec: domain partitioning, a power of two (hzio.create(partitions=); default 1)")
    p.add_argument("--index-space", default="global", choices=["global", "local"],
                   help="with --partitions: one dataset (global, the default) or one per partition and a .midx")
    p.add_argument("--slab-bytes", metavar="SIZE",
                   help="largest box read and written at once, all fields together, e.g. 16M (default: 64M)")
    _add_overwrite(p, "the dataset at OUT.idx")
    _add_progress(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_export(sub):
    p = _add_command(sub, "export", export, "write a box of a dataset at a level to Zarr or NetCDF",
                     "Write the samples of levels 0..H inside a box, for some fields and timesteps, to a Zarr store\n"
                     "(format 3 by default) or a NetCDF-4 file: one variable per field with dimensions time, z, y, x\n"
                     "(and component), coordinates time, z, y, x. Read and written in slabs (--slab-bytes).")
    p.add_argument("dataset", metavar="DATASET", help="the .idx file")
    p.add_argument("output", metavar="OUTPUT", help="OUT.zarr (a folder) or OUT.nc")
    p.add_argument("--format", choices=["zarr", "netcdf"], help="the output format (default: from the suffix)")
    p.add_argument("--zarr-format", type=int, choices=[2, 3], default=3, help="Zarr format version (default: 3)")
    p.add_argument("--box", metavar="z0:z1,y0:y1,x0:x1",
                   help="box in [z, y, x] order with exclusive ends; ':' (or an empty bound) means the whole axis")
    p.add_argument("--level", metavar="H", type=int, help="resolution level (default: max_level, full resolution)")
    p.add_argument("--fields", metavar="A,B", help="fields to export (default: all)")
    p.add_argument("--times", metavar="T1,T2", help="timesteps to export (default: all)")
    p.add_argument("--slab-bytes", metavar="SIZE", help="largest slab read at once, e.g. 16M (default: 64M)")
    _add_no_verify(p)
    _add_overwrite(p)
    _add_progress(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_verify(sub):
    p = _add_command(sub, "verify", verify,
                     "check and decode every block; exit 1 if any is corrupt or a timestep has no data",
                     "Check every header table and present block against its checksums and decode the block, for\n"
                     "every field and timestep (or the given ones), and report\n"
                     "present, missing and corrupt blocks and missing files. Exit status: 0 no corruption, "
                     "1 corrupt\nblocks found or a timestep without any present block (other missing blocks are "
                     "not\ncorruption), 2 usage error or unreadable dataset.")
    p.add_argument("dataset", metavar="DATASET", help="the .idx file")
    _add_selection(p, all_by_default=True)
    p.add_argument("--allow-missing", action="store_true",
                   help="accept timesteps in which every block is missing (exit 0 if nothing is corrupt)")
    p.add_argument("--repair", action="store_true",
                   help="remove the files writers left when they were killed before their commit ended "
                        "(never those of a process still running on this machine)")
    _add_progress(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_dump(sub):
    p = _add_command(sub, "dump", dump, "print the block header tables, grouped by data file",
                     "Print the .idx summary and, for each data file, its block header table (entry, field, slot,\n"
                     "block id, level, payload offset and size, codec, layout, or 'missing'), under the section\n"
                     "names of docs/format.md.")
    p.add_argument("dataset", metavar="DATASET", help="the .idx file")
    _add_selection(p, all_by_default=True)
    _add_progress(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_query(sub):
    p = _add_command(sub, "query", query, "find the samples whose value lies in a range, using block statistics",
                     "Find the samples of levels 0..H inside a box whose value lies in [LO, HI] (ds.query). Blocks\n"
                     "whose statistics exclude the range are not read. Prints the number of matches, their bounding\n"
                     "box, their value range, and the blocks and bytes read against a full read of the same box and\n"
                     "level (measured by reading it on a fresh open, so that costs one full read more).")
    p.add_argument("dataset", metavar="DATASET", help="the .idx file")
    _add_selection(p, all_by_default=False)
    p.add_argument("--range", metavar=("LO", "HI"), nargs=2, type=float, required=True,
                   help="inclusive value range (write negative bounds as plain decimals, e.g. -1000000: argparse "
                        "takes -1e6 for an option)")
    p.add_argument("--level", metavar="H", type=int, help="resolution level (default: max_level, full resolution)")
    p.add_argument("--box", metavar="z0:z1,y0:y1,x0:x1",
                   help="box in [z, y, x] order with exclusive ends; ':' (or an empty bound) means the whole axis")
    p.add_argument("--component", metavar="C", type=int, help="the component to test (required for vector fields)")
    p.add_argument("--out", metavar="OUT.npz", help="save the matches' coords ([z, y, x]) and values to a .npz file")
    p.add_argument("--limit", metavar="N", type=int, help="print the first N matches (C order)")
    _add_overwrite(p, "the --out file")
    _add_no_verify(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_index(sub):
    p = _add_command(sub, "index", index, "compute the block statistics and checksums of a dataset written elsewhere",
                     "Compute the statistics (count, min, max) and checksums of every block of every field and\n"
                     "timestep and store them in .hzstats sidecars next to the data files (hzio.index); the .idx\n"
                     "and the data files are not modified. Blocks whose current sidecar has checksums are checked\n"
                     "against them first. Under mpiexec the data files are shared over the ranks and rank 0 prints.")
    p.add_argument("dataset", metavar="DATASET", help="the .idx file")
    p.add_argument("--sub-block-bits", metavar="N", type=int, default=None,
                   help="also keep statistics of 2^N equal parts of each block (default: the sub-block bits "
                        "hzio's writers use for the dataset, else parts of 4096 samples; 0: whole blocks only)")
    _add_no_verify(p, "record the data files as they are now, even where they differ from their checksums "
                      "(after a tool other than hzio changed a file in place)")
    _add_progress(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _add_serve(sub):
    p = _add_command(sub, "serve", serve, "serve datasets to the browser viewer and to remote readers (read-only)",
                     "Start a read-only web server for the datasets and print its URL. The page shows slices of any\n"
                     "field, timestep and axis, coarse first and refined to the screen; new timesteps of a running\n"
                     "simulation appear while it runs. The datasets' files are served with byte ranges, so that\n"
                     "hzio.open('http://HOST:PORT/files/NAME/NAME.idx') reads them remotely. Ctrl-C stops it.")
    p.add_argument("datasets", metavar="DATASET", nargs="+", help="the .idx files to serve")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 exposes the datasets "
                        "to the network)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    p.add_argument("--exit-after", metavar="S", type=float, default=None,
                   help="stop after S seconds (for scripts and tests)")
    _add_no_verify(p)


def _add_plan(sub):
    p = _add_command(sub, "plan", plan, "simulate the plan of a collective write for any number of ranks",
                     "Run the planner of a collective write (hzio.create(..., comm=) then flush) in this one process\n"
                     "for a decomposition of the domain among ranks, and print per level: files, aggregators, the\n"
                     "ranks sending to each aggregator, messages and bytes per aggregator, messages that cross\n"
                     "partitions and memory per aggregator and round. Needs hzio built with MPI; makes no MPI call.")
    add_plan_arguments(p)


def _check_mosaics(args):
    """Local. Refuse a .midx mosaic (partitions in local index space) where a verb takes one IDX dataset:
    ``info`` describes a mosaic and its parts; the other verbs run on a part."""
    from .mosaic import mosaic_path

    verb = args.func.__name__
    paths = list(getattr(args, "datasets", None) or []) + ([args.dataset] if getattr(args, "dataset", None) else [])
    for path in paths:
        midx = mosaic_path(str(path)) if "://" not in str(path) else None
        if midx and verb != "info":
            raise UsageError(f"{midx} is a mosaic of one dataset per partition (local index space): hzio {verb} "
                             f"takes one of its parts ({os.path.basename(midx)[:-5]}_p<k>.idx), and hzio.open reads "
                             "the mosaic whole")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hzio`` command line and return its exit status.

    Local, except ``hzio index`` and ``hzio convert`` under ``mpiexec``, which are Collective over the ranks.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; ``sys.argv[1:]`` when None.

    Returns
    -------
    int
        0 on success, 1 when ``verify`` finds corruption or a timestep without data, 2 on a
        usage or hzio error, 130 on Ctrl-C.

    Examples
    --------
    >>> main(["info", "/nonexistent.idx"])  # doctest: +SKIP
    hzio: error: ...
    2
    """
    args = build_parser().parse_args(argv)
    try:
        _check_mosaics(args)
        return args.func(args)
    except BrokenPipeError:
        _silence_stdout()  # the reader of our output went away (e.g. `| head`); not an error worth a message
        return 1
    except (UsageError, hzio.Error, OSError) as e:
        return _fail(e)
    except MemoryError as e:  # e.g. reading a box larger than this machine's memory
        return _fail(f"out of memory: {e}" if str(e) else "out of memory")
    except KeyboardInterrupt:
        print("hzio: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _fail(error):
    if isinstance(error, OSError) and not isinstance(error, hzio.Error) and error.strerror:
        message = f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    else:
        message = str(error)
    print(f"hzio: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _silence_stdout():
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
