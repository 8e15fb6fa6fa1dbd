"""The ``hzio convert`` subcommand: a .npy or headerless binary array to a new IDX dataset, written in z slabs.

The input is memory-mapped, so arrays larger than memory convert in bounded memory; a hand-made progress
bar (percentage and MiB/s) goes to stderr.
"""

import os
import sys
import time

import numpy as np

import hzio

from ._cli_util import MIB, UsageError, parse_dtype_option, parse_ints

SLAB_BYTES = 64 * MIB
_NPY_MAGIC = b"\x93NUMPY"


def convert(args):
    """Run ``hzio convert``: write INPUT (.npy or headerless binary) into a new dataset OUTPUT.idx.

    Parameters
    ----------
    args : argparse.Namespace
        ``input``, ``output``, ``shape``, ``dtype``, ``field``, ``codec``, ``layout``,
        ``bits_per_block``, ``blocks_per_file``, ``overwrite`` and ``progress`` (None: only on a tty).

    Returns
    -------
    int
        The exit status, 0.

    Raises
    ------
    hzio._cli_util.UsageError
        Missing or inconsistent ``--shape``/``--dtype``, or a headerless file whose size does not match them.
    hzio.Error, OSError
        From reading the input or writing the dataset.
    """
    if os.path.isfile(args.output) and not args.overwrite:  # other path problems: hzio.create says what is wrong
        raise UsageError(f"dataset {args.output} exists; pass --overwrite to replace it")
    source, spatial, dtype_text = load_input(args.input, args.shape, args.dtype)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    bar = ProgressBar(source.nbytes, sys.stderr if show else None)
    start = time.perf_counter()
    with hzio.create(args.output, shape=spatial, fields={args.field: dtype_text}, codec=args.codec,
                     layout=args.layout, bits_per_block=args.bits_per_block,
                     blocks_per_file=args.blocks_per_file, overwrite=args.overwrite) as ds:
        for lo, hi in slabs(spatial[0], source.nbytes // spatial[0], SLAB_BYTES):
            # np.array copies the mapped slab into a writable array: Dataset.write rejects read-only arrays.
            ds.write(np.array(source[lo:hi], order="C"), offset=(lo,) + (0,) * (len(spatial) - 1))
            bar.update(source.nbytes * hi // spatial[0])
        bar.message("committing")
    bar.finish()
    seconds = time.perf_counter() - start
    mib = source.nbytes / MIB
    print(f"wrote {args.output} (field {args.field}: {dtype_text}, codec {args.codec}, "
          f"shape {'x'.join(map(str, spatial))}): {mib:.1f} MiB in {seconds:.2f} s "
          f"({mib / max(seconds, 1e-9):.1f} MiB/s)")
    return 0


def load_input(path, shape_text, dtype_text):
    """Memory-map the input array.

    Parameters
    ----------
    path : str
        A .npy file (recognised by its magic bytes) or a headerless binary file.
    shape_text, dtype_text : str or None
        The ``--shape`` and ``--dtype`` options; both required for headerless input, ``--shape`` refused for .npy.

    Returns
    -------
    (numpy.ndarray, tuple of int, str)
        The array (read-only map), its spatial shape ([z, y, x]) and the field dtype text for
        :func:`hzio.create`.
    """
    with open(path, "rb") as f:
        is_npy = f.read(len(_NPY_MAGIC)) == _NPY_MAGIC
    if is_npy:
        return _load_npy(path, shape_text, dtype_text)
    if shape_text is None or dtype_text is None:
        raise UsageError(f"{path} is not a .npy file: headerless binary input needs --shape Z,Y,X and --dtype")
    return _load_raw(path, parse_ints(shape_text, "--shape"), dtype_text)


def _load_npy(path, shape_text, dtype_text):
    if shape_text is not None:
        raise UsageError("--shape is only for headerless binary input; a .npy file records its own shape")
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as e:
        raise UsageError(f"cannot load {path} as .npy: {e}") from None
    scalar, comps = parse_dtype_option(dtype_text) if dtype_text else (array.dtype, 1)
    if not np.can_cast(array.dtype, scalar, casting="safe"):
        raise UsageError(f"{path} holds {array.dtype} values, which --dtype {dtype_text} cannot hold exactly")
    spatial = array.shape[:-1] if comps > 1 else array.shape
    if comps > 1 and (array.ndim < 2 or array.shape[-1] != comps):
        raise UsageError(f"--dtype {dtype_text} needs a last axis of {comps} components, but {path} has "
                         f"shape {array.shape}")
    if not 1 <= len(spatial) <= 3 or min(spatial, default=0) < 1:
        raise UsageError(f"{path} has shape {array.shape}: a dataset needs 1 to 3 non-empty axes "
                         "(use --dtype TYPE[N] if the last axis holds the components of a vector field)")
    return array, tuple(spatial), dtype_text or array.dtype.name


def _load_raw(path, shape, dtype_text):
    if len(shape) > 3:
        raise UsageError(f"--shape needs 1 to 3 axes ([z, y, x] order), got {len(shape)}")
    scalar, comps = parse_dtype_option(dtype_text)
    expected = int(np.prod(shape, dtype=np.int64)) * comps * scalar.itemsize
    actual = os.path.getsize(path)
    if actual != expected:
        raise UsageError(f"headerless input {path} is {actual} bytes, but --shape {','.join(map(str, shape))} with "
                         f"--dtype {dtype_text} needs {expected} bytes")
    full = shape + ((comps,) if comps > 1 else ())
    return np.memmap(path, dtype=scalar, mode="r", shape=full), shape, dtype_text


def slabs(count, plane_bytes, slab_bytes):
    """Split ``count`` planes into ``(lo, hi)`` slabs of about ``slab_bytes`` each.

    The plane count per slab is a power of two, so slab edges fall on block edges as far as possible.

    Examples
    --------
    >>> list(slabs(10, 1 << 20, 4 << 20))
    [(0, 4), (4, 8), (8, 10)]
    """
    planes = max(1, slab_bytes // max(1, plane_bytes))
    planes = 1 << (planes.bit_length() - 1)
    return [(lo, min(lo + planes, count)) for lo in range(0, count, planes)]


class ProgressBar:
    """A one-line progress bar with percentage and MiB/s, redrawn in place; silent without a stream.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> bar = ProgressBar(4 * MIB, out, width=4)
    >>> bar.update(2 * MIB)
    >>> text = out.getvalue()
    >>> text.startswith("\\r[##--]"), "50.0%" in text, "2.0/4.0 MiB" in text
    (True, True, True)
    """

    def __init__(self, total_bytes, stream, width=30):
        self.total_bytes = max(1, int(total_bytes))
        self.stream = stream
        self.width = width
        self.start = time.perf_counter()
        self.done_bytes = 0

    def update(self, done_bytes):
        """Redraw with ``done_bytes`` of ``total_bytes`` processed."""
        self.done_bytes = int(done_bytes)
        self._draw("")

    def message(self, text):
        """Redraw with a short status word after the rate (e.g. ``"committing"``)."""
        self._draw(text)

    def finish(self):
        """End the line."""
        if self.stream is not None:
            self._draw("done")
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self, text):
        if self.stream is None:
            return
        frac = min(1.0, self.done_bytes / self.total_bytes)
        filled = int(round(frac * self.width))
        rate = self.done_bytes / MIB / max(time.perf_counter() - self.start, 1e-9)
        line = (f"\r[{'#' * filled}{'-' * (self.width - filled)}] {100 * frac:5.1f}%  "
                f"{self.done_bytes / MIB:5.1f}/{self.total_bytes / MIB:.1f} MiB  {rate:7.1f} MiB/s  {text:<10}")
        self.stream.write(line)
        self.stream.flush()
