"""Writes the seed corpus of fuzz/sidecar_fuzz.cpp: statistics sidecars written by the hzio package, each
behind the 4-byte prefix that tells the target the dataset's layout (see the target's header comment).
Usage: .venv/bin/python scripts/fuzz/sidecar_seeds.py [fuzz/corpus/sidecar]. It leaves the other files of the
folder alone: fuzz findings (finding_*) and version1_bpf2, the version 1 seed block_header_fuzz.cpp used to take.
"""
import pathlib
import sys
import tempfile

import hzio
import numpy as np

# (seed name, fields as (name, scalar dtype, components, codec), shape, bits per block, blocks per file,
# sub-block bits). The target takes 1 to 4 fields of 1 to 4 components and 1 to 16 blocks per file.
DATASETS = [
    ("u8_raw_n0", [("v", "uint8", 1, "raw")], (4, 4), 2, 4, 0),
    ("u8_raw_n2", [("v", "uint8", 1, "raw")], (8, 8), 4, 2, 2),
    ("f32_zip_n0", [("a", "float32", 1, "zip")], (8, 8), 4, 4, 0),
    ("f32_zip_n2", [("a", "float32", 1, "zip")], (8, 8), 4, 4, 2),
    ("u8x3_raw_n0", [("rgb", "uint8", 3, "raw")], (4, 8), 3, 4, 0),
    ("f64_zip_i16x2_raw_n2", [("p", "float64", 1, "zip"), ("q", "int16", 2, "raw")], (8, 4), 3, 2, 2),
    ("three_fields_n0", [("a", "uint8", 1, "raw"), ("b", "float32", 3, "zip"), ("c", "int32", 1, "raw")], (4, 4),
     2, 3, 0),
]

# The version 1 sidecar of docs/format.md's tiny example, the test vector of ReadsVersionOneWithoutChecksums in
# src/stats/block_stats_test.cpp: one uint8 field, 4 blocks per file, no sub-blocks.
VERSION1 = bytes.fromhex(
    "485a535441545331010000000100000004000000000000000000000000000000d800000000000000c509e97a00000000"
    "01000000000000000400000000000000000000000000000000000000000024400400000000000000000000000000f03f"
    "0000000000002640040000000000000000000000000010400000000000002a40040000000000000000000000000018"
    "400000000000002e40")


def prefix(components, bpf, reseal):
    """The target's layout, components, flags and payload sub-block bits bytes."""
    layout = (bpf - 1) * 4 + len(components) - 1
    comps = sum((c - 1) << (2 * f) for f, c in enumerate(components))
    return bytes([layout, comps, 1 if reseal else 0, 2])


def main(out):
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, fields, shape, bpb, bpf, n in DATASETS:
            spec = [(f, f"{dt}[{c}]" if c > 1 else dt, {"codec": codec}) for f, dt, c, codec in fields]
            with hzio.create(pathlib.Path(tmp, name + ".idx"), shape, spec, bits_per_block=bpb, blocks_per_file=bpf,
                             sub_block_bits=n) as ds:
                for f, dt, c, _ in fields:
                    values = np.arange(np.prod(shape) * c) % 97
                    ds.write(values.astype(dt).reshape(shape + ((c,) if c > 1 else ())), field=f)
            components = [c for _, _, c, _ in fields]
            # Up to two sidecars as they are, and the first with the flag that re-seals mutated bytes.
            sidecars = sorted(pathlib.Path(tmp, name).rglob("*.hzstats"))[:2]
            for k, sidecar in enumerate(sidecars):
                (out / f"{name}_{k}").write_bytes(prefix(components, bpf, reseal=False) + sidecar.read_bytes())
            (out / f"{name}_reseal").write_bytes(prefix(components, bpf, reseal=True) + sidecars[0].read_bytes())
    assert len(VERSION1) == 152
    (out / "tiny_version1").write_bytes(prefix([1], 4, reseal=False) + VERSION1)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "fuzz/corpus/sidecar"))
