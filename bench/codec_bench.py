"""hzio's compression throughput per thread against the codec library compressing the same blocks alone.

Run it with ``.venv/bin/python bench/codec_bench.py [--size 256] [--reps 5] [--threads 1,2]``. The source is a
``size^3`` float32 field (smooth waves plus a little noise). A raw dataset of it gives the blocks exactly
as hzio stores them (HZ order, ``2^16`` samples); the baseline compresses each of them with the library
alone, one thread: zlib's ``compress`` at the default level (Python's ``zlib``) for ``zip``, and through
ctypes the libraries hzio links, each into one output buffer kept from block to block: liblz4's
``LZ4_compress_default`` (a frameless block) for ``lz4``, libzfp's reversible mode on the block's grid for
``zfp-reversible-reversible``; fast codecs make several passes, at least 0.5 s. (The ``lz4`` package's
``lz4.block.compress`` allocates its output at every call: its rate swings tenfold with the page faults of
that memory, depending on what the process allocated before.)
hzio's figure is the ``compress`` phase of its write report (a durable-off write with ``threads=N``): the
seconds of every block added up over the threads, so MiB of samples over it is the rate per thread.
Target: per thread at least 0.9 x the library alone. The write's wall time shows that every thread
compresses: it shrinks with more threads.
"""

import argparse
import os
import resource
import shutil
import statistics
import sys
import time
import zlib

import hzio
import numpy as np
from bench_figures import add_plot_option, plot_after_run
from bench_util import machine_facts, uptime_line, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
CODECS = {"zip": "zlib.compress (default level)", "lz4": "liblz4 LZ4_compress_default (ctypes)",
          "zfp-reversible-reversible": "libzfp zfp_compress (reversible, ctypes)"}


def source(n):
    z, y, x = np.meshgrid(*(np.linspace(0, 4 * np.pi, n, dtype=np.float32),) * 3, indexing="ij")
    noise = np.random.default_rng(0).standard_normal((n, n, n)).astype(np.float32) * 0.01
    return np.sin(x) * np.cos(y) + np.sin(z) + noise


def block_shape(ds):
    """The grid (z, y, x) of a finest-level block: the axes of the bitmask's last bits_per_block digits."""
    tail = ds.bitmask[1:][-ds.bits_per_block:]
    return tuple(1 << tail.count(d) for d in "210")


class Lz4Block:
    """liblz4 itself (the library hzio links, through ctypes): one frameless block per call, into a buffer
    of LZ4's bound for the largest block seen."""

    def __init__(self):
        import ctypes
        import ctypes.util

        lib = ctypes.CDLL(ctypes.util.find_library("lz4") or "liblz4.so.1")
        lib.LZ4_compressBound.restype, lib.LZ4_compressBound.argtypes = ctypes.c_int, [ctypes.c_int]
        lib.LZ4_compress_default.restype = ctypes.c_int
        lib.LZ4_compress_default.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        self.lib, self.ctypes, self.out = lib, ctypes, ctypes.create_string_buffer(1)

    def __call__(self, block):
        bound = self.lib.LZ4_compressBound(len(block))
        if len(self.out) < bound:
            self.out = self.ctypes.create_string_buffer(bound)
        if self.lib.LZ4_compress_default(block, self.out, len(block), len(self.out)) <= 0:
            raise RuntimeError("LZ4_compress_default failed")


class ZfpReversible:
    """libzfp itself (the library hzio links, through ctypes): reversible mode, no header, one float32
    block of ``shape`` (z, y, x) per call, into a buffer of zfp's maximum size."""

    def __init__(self, shape):
        import ctypes
        import ctypes.util

        lib = ctypes.CDLL(ctypes.util.find_library("zfp") or "libzfp.so.1")
        p, n = ctypes.c_void_p, ctypes.c_size_t
        for name, res, args in (("zfp_field_3d", p, [p, ctypes.c_int, n, n, n]), ("zfp_stream_open", p, [p]),
                                ("zfp_stream_set_reversible", None, [p]), ("zfp_stream_maximum_size", n, [p, p]),
                                ("stream_open", p, [p, n]), ("zfp_stream_set_bit_stream", None, [p, p]),
                                ("zfp_stream_rewind", None, [p]), ("zfp_compress", n, [p, p]),
                                ("zfp_field_set_pointer", None, [p, p])):
            getattr(lib, name).restype, getattr(lib, name).argtypes = res, args
        self.lib, self.ctypes = lib, ctypes
        self.field = lib.zfp_field_3d(None, 3, shape[2], shape[1], shape[0])  # zfp_type_float, x fastest
        self.zfp = lib.zfp_stream_open(None)
        lib.zfp_stream_set_reversible(self.zfp)
        self.out = ctypes.create_string_buffer(lib.zfp_stream_maximum_size(self.zfp, self.field))
        lib.zfp_stream_set_bit_stream(self.zfp, lib.stream_open(self.out, len(self.out)))

    def __call__(self, block):
        self.lib.zfp_field_set_pointer(self.field, block)  # the bytes object's own buffer: no copy
        self.lib.zfp_stream_rewind(self.zfp)
        if self.lib.zfp_compress(self.zfp, self.field) == 0:
            raise RuntimeError("zfp_compress failed")


def library_seconds(codec, blocks, shape):
    """Seconds for the library alone to compress every block, one thread."""
    if codec == "zip":
        compress = lambda b: zlib.compress(b, -1)  # noqa: E731
    elif codec == "lz4":
        compress = Lz4Block()
    else:
        compress = ZfpReversible(shape)
    passes, t0 = 0, time.perf_counter()
    while passes == 0 or time.perf_counter() - t0 < 0.5:  # fast codecs: several passes, for a stable figure
        for b in blocks:
            compress(b)
        passes += 1
    return (time.perf_counter() - t0) / passes


def hzio_seconds(codec, a, path, threads):
    """The compress phase of a one-process write (durable off), its whole wall time, and the process's minor
    page faults during it (first touches of memory the process had not used or had given back)."""
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    with hzio.create(path, shape=a.shape, fields={"t": "float32"}, codec=codec, overwrite=True, durable=False,
                     threads=threads) as ds:
        ds.write(a)
    wall = time.perf_counter() - t0
    return ds.last_write_report.max.compress, wall, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="the cube's side (float32; default 256)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--threads", default="1,2", help="hzio's thread counts (default 1,2)")
    parser.add_argument("--dir", default=os.path.join(HERE, "..", "build", "bench_tmp"), help="scratch folder")
    parser.add_argument("--json", default=os.path.join(HERE, "results", "codec_bench.json"), help="JSON output")
    add_plot_option(parser)
    args = parser.parse_args()
    work = os.path.join(args.dir, f"codec_bench_{os.getpid()}")
    os.makedirs(work, exist_ok=True)
    a = source(args.size)
    mib = a.nbytes / MIB
    raw = os.path.join(work, "raw.idx")
    with hzio.create(raw, shape=a.shape, fields={"t": "float32"}, overwrite=True, durable=False) as ds:
        ds.write(a)
    with hzio.open(raw) as ds:
        shape = block_shape(ds)
        rows = ds.blocks()
        blocks = []
        for r in rows[rows["present"]]:
            with open(r["file"], "rb") as f:
                f.seek(int(r["offset"]))
                blocks.append(f.read(int(r["size"])))
    print(f"{args.size}^3 float32 ({mib:.0f} MiB), {len(blocks)} blocks of {shape} samples; {uptime_line()}")
    threads = [int(t) for t in args.threads.split(",")]
    cases = {}
    for codec, library in CODECS.items():
        lib = [library_seconds(codec, blocks, shape) for _ in range(args.reps)]
        case = {"library": library, "library_seconds": lib}
        for n in threads:
            runs = [hzio_seconds(codec, a, os.path.join(work, "c.idx"), n) for _ in range(args.reps)]
            case[f"hzio_{n}_compress_seconds"] = [r[0] for r in runs]
            case[f"hzio_{n}_wall_seconds"] = [r[1] for r in runs]
            case[f"hzio_{n}_minor_faults"] = [r[2] for r in runs]
        lib_rate = mib / statistics.median(lib)
        case["library_mib_per_s"] = lib_rate
        for n in threads:  # the compress phase adds up the threads' seconds: its rate is per thread
            rate = mib / statistics.median(case[f"hzio_{n}_compress_seconds"])
            case[f"hzio_{n}_mib_per_s_per_thread"] = rate
            case[f"hzio_{n}_vs_library"] = rate / lib_rate
            case[f"hzio_{n}_wall_median"] = statistics.median(case[f"hzio_{n}_wall_seconds"])
            case[f"hzio_{n}_faults_per_mib"] = statistics.median(case[f"hzio_{n}_minor_faults"]) / mib
        cases[codec] = case
        per = ", ".join(f"{n} thread(s) {case[f'hzio_{n}_mib_per_s_per_thread']:.0f} MiB/s per thread "
                        f"({case[f'hzio_{n}_vs_library']:.2f} x), write {case[f'hzio_{n}_wall_median']:.2f} s, "
                        f"{case[f'hzio_{n}_faults_per_mib']:.0f} page faults/MiB"
                        for n in threads)
        print(f"  {codec:28s} library {lib_rate:7.0f} MiB/s; hzio {per}")
    shutil.rmtree(work, ignore_errors=True)
    report = {"command": " ".join(["codec_bench.py"] + sys.argv[1:]), "config": vars(args), "cases": cases,
              "threads": threads, "machine": machine_facts(args.dir), "uptime_after": uptime_line(),
              "target": {"vs_library": 0.9}}
    write_json(args.json, report)
    plot_after_run(args, "codec_bench")


if __name__ == "__main__":
    main()
