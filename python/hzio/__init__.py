"""hzio: parallel multiresolution I/O for IDX datasets (hierarchical Z order), interoperable with OpenVisus.

Examples
--------
>>> import numpy as np, hzio, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "field.idx")
>>> with hzio.create(path, shape=(32, 32, 32), fields={"temperature": "float32"}, codec="zip") as ds:
...     ds.write(np.ones((32, 32, 32), np.float32))
>>> with hzio.open(path) as ds:
...     ds.read(level=ds.max_level - 3).shape
(16, 16, 16)
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence

from . import _core
from ._results import IndexReport, LevelTimes, PhaseTimes, ProgressiveReport, QueryReport, ReadReport, WriteReport
from ._types import FieldsLike, as_int, as_path, parse_dtype
from ._views import Field, LevelView
from .dask_arrays import from_dask, to_dask
from .dataset import Dataset
from .errors import (
    CorruptError,
    Error,
    FormatError,
    InternalError,
    InvalidArgumentError,
    IoError,
    NotFoundError,
    UnsupportedError,
    WaitTimeoutError,
)
from .index_templates import grid_boxes, is_rank_conforming, rank_conforming_bitmask, why_not_rank_conforming
from .indexing_stats import index
from .io_ranks import start_io_ranks
from .mosaic import MosaicDataset, mosaic_path
from .parallel import shared_array
from .planning import plan

__version__ = "0.1.0"

__all__ = ["create", "open", "index", "parse_dtype", "to_dask", "from_dask", "grid_boxes", "rank_conforming_bitmask",
           "is_rank_conforming", "why_not_rank_conforming", "plan", "start_io_ranks", "shared_array", "Dataset",
           "Field", "LevelView",
           "ReadReport", "QueryReport", "ProgressiveReport", "WriteReport", "PhaseTimes", "LevelTimes", "IndexReport",
           "Error", "FormatError", "CorruptError", "NotFoundError", "InvalidArgumentError", "IoError",
           "UnsupportedError", "InternalError", "WaitTimeoutError"]


_FIELD_OPTIONS = ("codec", "layout", "default_value")


def _fields_list(fields: FieldsLike, codec: str, layout: str) -> list[tuple[str, str, str, str, float]]:
    usage = ("fields must be {name: dtype} or a list of (name, dtype) and (name, dtype, {'codec': ..., "
             "'layout': ..., 'default_value': ...})")
    if isinstance(fields, Mapping):
        items: Iterable[Any] = fields.items()
    elif isinstance(fields, (str, bytes)) or not isinstance(fields, Iterable):
        raise InvalidArgumentError(f"{usage}, got {fields!r}")
    else:
        items = fields
    out = []
    for item in items:
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) not in (2, 3):
            raise InvalidArgumentError(f"{usage}; {item!r} is not such an entry")
        name, dtype = item[0], item[1]
        opts = item[2] if len(item) > 2 else {}
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"a field name must be a non-empty str, got {name!r}")
        if not isinstance(opts, Mapping) or set(opts) - set(_FIELD_OPTIONS):
            raise InvalidArgumentError(f"options of field {name!r} must be a dict with keys among {_FIELD_OPTIONS}, "
                                       f"got {opts!r}")
        try:
            default = float(opts.get("default_value", 0))
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"default_value of field {name!r} must be a number, got "
                                       f"{opts['default_value']!r}") from None
        out.append((name, parse_dtype(dtype)[0], _text(opts.get("codec", codec), "codec"),
                    _text(opts.get("layout", layout), "layout"), default))
    if not out:
        raise InvalidArgumentError("a dataset needs at least one field")
    return out


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a str, got {value!r}")
    return value


def _check_bitmask_covers(bitmask: str, shape: tuple[int, ...]) -> None:
    """Refuse, in [z, y, x] words, a bitmask whose power-of-two box does not cover ``shape`` (the core's
    own check speaks x first); a bitmask that does not parse is left to the core's message."""
    digits = bitmask[1:]
    if not bitmask or bitmask[0] not in "Vv" or not digits.isdigit():
        return
    covered = tuple(2 ** digits.count(str(a)) for a in reversed(range(len(shape))))
    if any(n > c for n, c in zip(shape, covered)):
        raise InvalidArgumentError(f"bitmask {bitmask} covers {covered} samples ([z, y, x]), less than the shape "
                                   f"{shape}")


def _shape(shape: Any) -> tuple[int, ...]:
    if not isinstance(shape, Iterable) or isinstance(shape, (str, bytes)):
        shape = (shape,)  # NumPy's shape=64 for (64,)
    out = tuple(as_int(v, "shape", 1) for v in shape)
    if not 1 <= len(out) <= 3:
        raise InvalidArgumentError(f"shape needs 1 to 3 axes of at least one sample each, got {out}")
    return out


def _sub_blocks(value: int | None) -> int:
    return -1 if value is None else as_int(value, "sub_block_bits", 0)  # -1: CreateOptions::kAutoSubBlockBits


def _index_space(value: str, partitions: int) -> str:
    if value not in ("global", "local"):
        raise InvalidArgumentError(f"index_space must be 'global' or 'local', got {value!r}")
    if value == "local" and _partitions(partitions) < 2:
        raise InvalidArgumentError("index_space='local' needs partitions > 1")
    return value


def _partitions(value: int) -> int:
    n = as_int(value, "partitions", 1)
    if n & (n - 1):
        raise InvalidArgumentError(f"partitions must be a power of two, got {n}")
    return n


def create(path: str | os.PathLike, shape: Sequence[int], fields: FieldsLike, *,
           bitmask: str | None = None, bits_per_block: int | None = None, blocks_per_file: int | None = None,
           codec: str = "raw", layout: str = "hzorder", times: Iterable[int] | None = None, overwrite: bool = False,
           durable: bool = True, threads: int = 0, comm: Any = None, placement: str = "localized",
           aggregator_count: int = 0, aggregator_bytes: int = 256 << 20,
           sub_block_bits: int | None = None, io: Any = None, partitions: int = 1,
           index_space: str = "global") -> Any:
    """Create an IDX dataset and return it open for writing (a context manager).

    Local without ``comm``; Collective over ``comm`` (an mpi4py communicator), returning a
    :class:`hzio.parallel.ParallelDataset`.

    Parameters
    ----------
    path : str or os.PathLike
        The .idx file; data files go in a folder named after it.
    shape : tuple of int
        ``(nz, ny, nx)`` or ``(ny, nx)``.
    fields : dict or list
        Name to dtype (``"float32"``, ``"float32[3]"``, ``"3*float32"``, NumPy dtypes), or a list of
        ``(name, dtype)`` / ``(name, dtype, {"codec": ..., "layout": ..., "default_value": ...})``.
    bitmask, bits_per_block, blocks_per_file : optional
        None means the OpenVisus default.
    codec : str
        ``"raw"``, ``"zip"``, ``"lz4"`` or ``"zfp-<enc>-<dec>"`` (e.g. ``"zfp-reversible-reversible"``).
    layout : str
        ``"hzorder"`` (default) or ``"rowmajor"``: sample order inside new blocks.
    times : iterable of int, optional
        Timesteps; None means one timestep 0 without a time folder. More can be written later.
    overwrite : bool
        Replace an existing dataset at ``path``.
    durable : bool
        fsync data files and the .idx at each commit.
    threads : int
        Worker threads (0 = one per core without ``comm``, one per rank with ``comm``).
    comm : mpi4py.MPI.Comm, optional
        Write collectively: every rank stages its own boxes, ``flush``/``close`` are Collective.
    placement : str
        ``"localized"`` (a file's aggregator holds its samples) or ``"uniform"`` (spread over ranks).
    aggregator_count : int
        Cap on distinct aggregator ranks (0 = no cap).
    aggregator_bytes : int
        Memory an aggregator may take per round; larger files are written in several rounds.
    partitions : int
        With ``comm``: domain partitioning in global index space, a power of two R (default 1: none).
        The bitmask's first log2(R) characters cut the domain into R partitions; the ranks whose samples
        lie mostly in one aggregate and write its data files in their own communicator, and one rank
        per shared (coarse) file merges it. The files are byte-identical to ``partitions=1``; the write
        report gives each group and the merge (docs/guide/parallel-io.md "Partitions").
    index_space : str
        ``"global"`` (default) or, with ``partitions > 1``, ``"local"``: one dataset per partition
        (``<name>_p<k>.idx``, indexed by the bitmask's characters after the partition template) and an
        OpenVisus mosaic ``<name>.midx`` placing them; no ``.idx`` at ``path``. Returns a
        :class:`hzio.mosaic.ParallelMosaic`; read the result with ``hzio.open(path)``, which gives a
        :class:`hzio.mosaic.MosaicDataset`.
    io : hzio.io_ranks.IoRanks, optional
        On the compute ranks of :func:`hzio.start_io_ranks`: the node's I/O ranks create and write the
        dataset (``comm`` must be ``io.compute_comm`` or None); returns a
        :class:`hzio.io_ranks.IoDataset`. Collective over the compute ranks.
    sub_block_bits : int, optional
        Besides per-block statistics, keep them for ``2**N`` equal parts of each block, so that
        queries read only the matching parts of raw blocks. ``None`` (default): parts of 4096 samples
        (``N = bits_per_block - 12``, at least 0); ``0``: per block only.

    ``bits_per_block`` beyond the bitmask's length is clamped to it (as OpenVisus' ``CreateIdx`` does):
    the whole dataset is then one block.
    """
    shape = _shape(shape)
    if times is not None and (isinstance(times, (str, bytes)) or not isinstance(times, Iterable)):
        raise InvalidArgumentError(f"times must be an iterable of integers, got {times!r}")
    args = (as_path(path), shape, _fields_list(fields, codec, layout), _text(bitmask or "", "bitmask"),
            as_int(bits_per_block or 0, "bits_per_block", 0), as_int(blocks_per_file or 0, "blocks_per_file", -1),
            [as_int(t, "a timestep") for t in (times or [])], bool(overwrite))
    _check_bitmask_covers(args[3], shape)
    threads = as_int(threads, "threads", 0)
    sub_blocks = _sub_blocks(sub_block_bits)
    if io is not None:
        from .io_ranks import create_through
        if index_space != "global":
            raise UnsupportedError("index_space='local' through I/O ranks (io=) is not supported")
        if comm is not None and comm != io.compute_comm:
            raise InvalidArgumentError("with io=, comm must be io.compute_comm (or None)")
        return create_through(io, *args, bool(durable), threads, _text(placement, "placement"),
                              as_int(aggregator_count, "aggregator_count", 0),
                              as_int(aggregator_bytes, "aggregator_bytes", 1), sub_blocks, _partitions(partitions))
    if comm is not None:
        from .parallel import create_parallel
        return create_parallel(comm, *args, bool(durable), threads or 1, _text(placement, "placement"),
                               as_int(aggregator_count, "aggregator_count", 0),
                               as_int(aggregator_bytes, "aggregator_bytes", 1), sub_blocks,
                               _partitions(partitions), _index_space(index_space, partitions))
    if _partitions(partitions) != 1:
        raise InvalidArgumentError("partitions= needs comm= (a collective write)")
    _index_space(index_space, 2)
    if index_space != "global":
        raise InvalidArgumentError("index_space='local' needs comm= and partitions > 1")
    core = _core.Dataset.create(args[0], list(reversed(shape)), *args[2:], bool(durable), threads, sub_blocks)
    return Dataset(core)


def open(path: str | os.PathLike, *, mode: str = "r", durable: bool = True, threads: int = 0,  # noqa: A001
         comm: Any = None, placement: str = "localized", aggregator_count: int = 0,
         aggregator_bytes: int = 256 << 20, verify: bool = True, allow_outside_folder: bool = False,
         read_cache_bytes: int = 8 << 20, partitions: int = 1, io: Any = None) -> Dataset:
    """Open an existing dataset (a context manager). ``mode`` is ``"r"`` or ``"r+"``.

    Local without ``comm``. With ``comm`` Collective: reads are collective (each rank its own box,
    independent or two-phase), and with ``mode="r+"`` writes are too.

    ``verify`` (default True): every block read, and every header table of a data file, is checked
    against the checksums hzio recorded in its statistics sidecar (docs/format.md "Checksums"); a
    mismatch raises :class:`CorruptError` naming the file, field, timestep and block. False skips the
    checks, to read what a damaged dataset still holds. Files without checksums (written elsewhere and
    not indexed) are read unchecked either way.

    ``allow_outside_folder`` (default False): a ``.idx`` whose file name templates name files outside
    its own folder (an absolute path, ``..``) is refused with :class:`InvalidArgumentError` unless this
    is True, so that a ``.idx`` from elsewhere cannot make hzio read or write other files.

    ``read_cache_bytes`` (default 8 MiB; 0: none): small reads keep the raw block bytes they took, up to
    this many, for the reads that follow: a box read again, or neighbouring boxes, which share their
    coarse blocks, take them from memory (docs/design/read-path.md "Read cache").

    ``partitions`` (with ``comm`` and ``mode="r+"``): collective writes partitioned as in :func:`create`.

    ``io`` (with ``mode="r+"``, on the compute ranks of :func:`hzio.start_io_ranks`; ``comm`` must be
    ``io.compute_comm`` or None): the node's I/O ranks open the dataset and write what the compute ranks
    hand over; returns a :class:`hzio.io_ranks.IoDataset` whose default timestep is the last committed
    one. Collective over the compute ranks.

    A ``.midx`` (or the path given to a ``create`` with ``index_space="local"``) opens as a
    :class:`hzio.mosaic.MosaicDataset` without ``comm``, and with ``comm`` and ``mode="r+"`` for
    collective writes.
    """
    if mode not in ("r", "r+"):
        raise InvalidArgumentError(f"mode must be 'r' or 'r+', got {mode!r}")
    path, threads = as_path(path), as_int(threads, "threads", 0)
    if io is not None:
        from .io_ranks import open_through
        if mode != "r+":
            raise InvalidArgumentError("io= writes through I/O ranks: it needs mode='r+'")
        if comm is not None and comm != io.compute_comm:
            raise InvalidArgumentError("with io=, comm must be io.compute_comm (or None)")
        return open_through(io, path, bool(durable), threads, _text(placement, "placement"),  # type: ignore[return-value]
                            as_int(aggregator_count, "aggregator_count", 0),
                            as_int(aggregator_bytes, "aggregator_bytes", 1), bool(verify), bool(allow_outside_folder),
                            _partitions(partitions))
    # (imported at the top: an import here could hold a module lock that a fork() copies into a child)
    midx = mosaic_path(path)
    if comm is None and _partitions(partitions) != 1:
        raise InvalidArgumentError("partitions= needs comm= (a collective write)")
    if midx and comm is None:
        if mode != "r":
            raise UnsupportedError(f"{midx} holds one dataset per partition: write it with comm= (collectively)")
        return MosaicDataset(midx, threads=threads, verify=verify, allow_outside_folder=allow_outside_folder,
                             read_cache_bytes=read_cache_bytes)  # type: ignore[return-value]
    if comm is not None:
        from .parallel import open_parallel
        return open_parallel(comm, path, mode == "r+", bool(durable), threads or 1, _text(placement, "placement"),
                             as_int(aggregator_count, "aggregator_count", 0),
                             as_int(aggregator_bytes, "aggregator_bytes", 1), bool(verify), bool(allow_outside_folder),
                             _partitions(partitions))
    if _partitions(partitions) != 1:
        raise InvalidArgumentError("partitions= needs comm= (a collective write)")
    reopen = (path, mode == "r+", bool(durable), threads, bool(verify), bool(allow_outside_folder),
              as_int(read_cache_bytes, "read_cache_bytes", 0))
    ds = Dataset(_core.Dataset.open(*reopen))
    ds._reopen = reopen
    return ds
