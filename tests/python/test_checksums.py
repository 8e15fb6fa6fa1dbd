"""Checksums (docs/format.md "Checksums"): every bit flipped in a payload or a header table of a data file
is reported by reads and by ``hzio verify``, never returned as data; the checksums in the sidecars are
the XXH3-64 of the payloads as stored; ``hzio index`` adds them to datasets written elsewhere; reads can
skip the checks.

Oracles: the ``xxhash`` package (checksums computed here from the bytes on disk, parsed here from the
header tables as docs/format.md "Block header table" lays them out), NumPy arrays written earlier,
OpenVisus (a dataset it wrote).
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import hzio
import numpy as np
import pytest
import xxhash
from hzio._cli_verify import verify_table
from ov_helpers import have_openvisus, ov_write

SHAPE = (4, 8, 8)  # 256 samples: 8 blocks of 32 per field


def _payloads(data: bytes, nfields: int, bpf: int):
    """(entry, offset, size) of the present blocks of a data file, from its header table."""
    out = []
    for i in range(nfields * bpf):
        w = struct.unpack(">10I", data[40 + 40 * i:80 + 40 * i])
        offset, size = w[2] | w[3] << 32, w[4]
        if offset and size:
            out.append((i, offset, size))
    return out


def _sidecar_checksums(side: bytes, components, bpf: int):
    """The checksums of a version 2 sidecar, per entry (format.md "Bytes"), checked against its own checksum."""
    assert side[:8] == b"HZSTATS1" and struct.unpack("<I", side[8:12])[0] == 2
    assert struct.unpack("<I", side[28:32])[0] == 1  # XXH3-64
    assert xxhash.xxh3_64_intdigest(side[:-8]) == struct.unpack("<Q", side[-8:])[0]
    bits = struct.unpack("<I", side[24:28])[0]
    parts = 2 ** bits if bits else 0
    at = 48 + 8 * ((len(components) + 1) // 2)
    sums = []
    for c in components:
        for _ in range(bpf):
            sums.append(struct.unpack(f"<{2 ** bits}Q", side[at:at + 8 * 2 ** bits]))
            at += 8 * 2 ** bits + (1 + parts) * (8 + 16 * c)
    assert at == len(side) - 8
    return bits, sums


def _chunk_sums(payload: bytes, bits: int):
    n = 2 ** bits
    chunk = -(-len(payload) // n)
    return tuple(xxhash.xxh3_64_intdigest(payload[k * chunk:(k + 1) * chunk]) for k in range(n))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A committed dataset of a raw float32 field and a zip int16 field, 2 data files; its arrays."""
    path = tmp_path_factory.mktemp("sums") / "d.idx"
    rng = np.random.default_rng(7)
    arrays = {"r": rng.standard_normal(SHAPE).astype(np.float32),
              "z": rng.integers(-300, 300, SHAPE).astype(np.int16)}
    fields = [("r", "float32"), ("z", "int16", {"codec": "zip"})]
    with hzio.create(path, shape=SHAPE, fields=fields, bits_per_block=5, blocks_per_file=4,
                     sub_block_bits=1) as ds:
        for name, a in arrays.items():
            ds.write(a, field=name)
    return path, arrays


def _data_files(path: Path):
    return sorted(p for p in path.with_suffix("").rglob("*.bin"))


def test_sidecars_hold_the_xxh3_of_every_payload_as_stored(small):
    path, _ = small
    files = _data_files(path)
    assert len(files) == 2
    for f in files:
        data = f.read_bytes()
        bits, sums = _sidecar_checksums(Path(str(f) + ".hzstats").read_bytes(), [1, 1], 4)
        assert bits == 1
        present = _payloads(data, 2, 4)
        assert len(present) == 8
        for entry, offset, size in present:
            assert sums[entry] == _chunk_sums(data[offset:offset + size], bits), (f, entry)
        for entry in set(range(8)) - {e for e, _, _ in present}:
            assert sums[entry] == (0, 0)


def _flip(f: Path, bit: int):
    with open(f, "r+b") as fh:
        fh.seek(bit // 8)
        b = fh.read(1)[0]
        fh.seek(bit // 8)
        fh.write(bytes([b ^ (1 << (bit % 8))]))


def _flips_are_reported(path: Path, arrays, f: Path, bits):
    """For each bit: flipped, a fresh read of every field raises CorruptError and verify reports it."""
    silent, unreported = [], []
    for bit in bits:
        _flip(f, bit)
        try:
            with hzio.open(path) as ds:
                for name in arrays:
                    try:
                        ds.read(field=name)
                    except hzio.CorruptError:
                        break
                else:
                    silent.append(bit)
                if not any(verify_table(ds, name, 0)["corrupt"] for name in arrays):
                    unreported.append(bit)
        finally:
            _flip(f, bit)
    return silent, unreported


def test_every_bit_flipped_in_payloads_and_header_tables_is_reported(small):
    path, arrays = small
    for f in _data_files(path):
        data = f.read_bytes()
        header = 40 + 40 * 2 * 4
        bits = list(range(8 * header))
        for _, offset, size in _payloads(data, 2, 4):
            bits += range(8 * offset, 8 * (offset + size))
        assert 8 * header + 8 * sum(s for _, _, s in _payloads(data, 2, 4)) == len(bits)
        silent, unreported = _flips_are_reported(path, arrays, f, bits)
        assert silent == [], f"{f.name}: {len(silent)} of {len(bits)} flipped bits read silently, e.g. {silent[:5]}"
        assert unreported == [], f"{f.name}: {len(unreported)} flipped bits not reported by verify"
        assert f.read_bytes() == data
    with hzio.open(path) as ds:  # everything restored reads as written
        for name, a in arrays.items():
            np.testing.assert_array_equal(ds.read(field=name), a)


def test_a_flip_names_file_field_timestep_and_block_in_reads_and_the_cli(small, tmp_path):
    path, arrays = small
    f = _data_files(path)[1]
    entry, offset, size = _payloads(f.read_bytes(), 2, 4)[1]  # field r (raw, entries 0..3), slot 1
    _flip(f, 8 * (offset + size - 1))
    try:
        with hzio.open(path) as ds:
            b = ds.blocks("r")
            block = int(b[(b["file"] == str(f)) & (b["slot"] == 1)]["block"][0])
            with pytest.raises(hzio.CorruptError, match=re.escape(str(f))) as info:
                ds.read(field="r")
            assert f"field 'r', timestep 0, block {block}" in str(info.value)
            np.testing.assert_array_equal(ds.read(field="z"), arrays["z"])  # the other field is whole
        with hzio.open(path, verify=False) as ds:  # the option to skip: the damaged sample is read as it is
            assert (ds.read(field="r") != arrays["r"]).sum() == 1
        run = subprocess.run([sys.executable, "-m", "hzio", "verify", str(path)], capture_output=True, text=True)
        assert run.returncode == 1, run.stdout + run.stderr
        assert f"corrupt block {block}" in run.stdout and "checksum mismatch" in run.stdout, run.stdout
        assert f"field 'r', timestep 0, block {block}" in run.stdout, run.stdout
    finally:
        _flip(f, 8 * (offset + size - 1))


def test_queries_check_the_parts_they_read(tmp_path):
    """A raw block's parts, read alone by queries, are checked alone: a flip in a part the query reads is
    reported; one in a part it skips is not read at all, and verify still finds it."""
    path = tmp_path / "q.idx"
    a = np.zeros((16, 16, 16), np.float32)
    a[:2] = 100  # the high values live in a few parts of a few blocks
    with hzio.create(path, shape=a.shape, fields={"v": "float32"}, bits_per_block=8, sub_block_bits=2) as ds:
        ds.write(a)
    f = _data_files(path)[0]
    with hzio.open(path) as ds:
        expect = ds.query("v", 50, 200)
        hits = ds.blocks("v")
    first = hits[hits["present"]][0]
    part_bytes = int(first["size"]) // 4
    for part in range(4):
        bit = 8 * (int(first["offset"]) + part * part_bytes + 3)
        _flip(f, bit)
        try:
            with hzio.open(path) as ds:
                try:
                    got = ds.query("v", 50, 200)
                except hzio.CorruptError as e:
                    assert "checksum mismatch" in str(e)
                else:  # the query did not read the damaged part: its answer is the true one
                    np.testing.assert_array_equal(got[0], expect[0])
                    np.testing.assert_array_equal(got[1], expect[1])
                assert verify_table(ds, "v", 0)["corrupt"], part
        finally:
            _flip(f, bit)


def test_small_reads_check_the_parts_they_read(tmp_path):
    """A small read takes only the bytes of each raw block between the first and last sample of its box,
    widened to whole checksum parts, and checks those parts: a flip in a part it reads is reported; a
    read that succeeds returns the source exactly."""
    path = tmp_path / "s.idx"
    a = np.random.default_rng(5).standard_normal((32, 32, 32)).astype(np.float32)
    with hzio.create(path, shape=a.shape, fields={"v": "float32"}, bits_per_block=12, sub_block_bits=2) as ds:
        ds.write(a)
    box = (slice(0, 8), slice(8, 16), slice(16, 24))
    with hzio.open(path) as ds:
        blocks = ds.blocks("v")
    reported = returned = 0
    for b in blocks[blocks["present"]]:
        f = Path(str(b["file"]))
        part_bytes = int(b["size"]) // 4
        for part in range(4):
            bit = 8 * (int(b["offset"]) + part * part_bytes + part_bytes // 2)
            _flip(f, bit)
            try:
                with hzio.open(path) as ds:
                    try:
                        got = ds[box]
                    except hzio.CorruptError as e:
                        assert "checksum mismatch" in str(e)
                        reported += 1
                    else:
                        np.testing.assert_array_equal(got, a[box])
                        returned += 1
            finally:
                _flip(f, bit)
    assert reported > 0 and returned > 0, (reported, returned)


def test_large_reads_from_mapped_files_are_checked(tmp_path):
    """Reads large enough to be placed straight from the page cache (windows) check every block too."""
    path = tmp_path / "big.idx"
    a = np.random.default_rng(3).standard_normal((128, 128, 128)).astype(np.float32)  # 8 MiB: windows
    with hzio.create(path, shape=a.shape, fields={"v": "float32"}) as ds:
        ds.write(a)
    f = _data_files(path)[-1]
    data = f.read_bytes()
    _, offset, size = _last_payload(data)
    bit = 8 * (offset + size // 2)
    _flip(f, bit)
    try:
        with hzio.open(path) as ds:
            with pytest.raises(hzio.CorruptError, match="checksum mismatch"):
                ds.read()
        with hzio.open(path, verify=False) as ds:
            back = ds.read()
            assert ds.last_read_report["assembly"] == "windows"
            assert (back != a).sum() == 1
    finally:
        _flip(f, bit)
    with hzio.open(path) as ds:
        np.testing.assert_array_equal(ds.read(), a)


def _last_payload(data: bytes):
    """The payload of a one-field data file that ends last."""
    first_offset = struct.unpack(">10I", data[40:80])
    n = (first_offset[2] - 40) // 40  # the table ends where the first payload starts (canonical layout)
    return max(_payloads(data, 1, n), key=lambda e: e[1])


@pytest.mark.skipif(not have_openvisus(), reason="OpenVisus not installed")
def test_index_adds_checksums_to_a_dataset_openvisus_wrote(tmp_path):
    path = tmp_path / "ov.idx"
    a = np.arange(16 * 16 * 16, dtype=np.float32).reshape(16, 16, 16)
    ov_write(path, {("v", 0): a}, dims=(16, 16, 16), bpb=8, bpf=4, codec="zip")
    with hzio.open(path) as ds:
        assert not ds.blocks("v")["checksummed"].any()
        np.testing.assert_array_equal(ds.read(), a)  # read unchecked: there is nothing to check against
    run = subprocess.run([sys.executable, "-m", "hzio", "verify", str(path)], capture_output=True, text=True)
    assert run.returncode == 0 and "UNCHECKED: 16 present blocks" in run.stdout, run.stdout
    hzio.index(path)
    with hzio.open(path) as ds:
        b = ds.blocks("v")
        assert b[b["present"]]["checksummed"].all()
    run = subprocess.run([sys.executable, "-m", "hzio", "verify", str(path)], capture_output=True, text=True)
    assert run.returncode == 0 and "UNCHECKED" not in run.stdout, run.stdout
    f = _data_files(path)[0]
    _, offset, size = _payloads(f.read_bytes(), 1, 4)[0]
    _flip(f, 8 * offset + 5)
    with hzio.open(path) as ds:
        with pytest.raises(hzio.CorruptError, match="checksum mismatch"):
            ds.read()
    # Indexing again does not bless the damage.
    with pytest.raises(hzio.CorruptError, match="checksum mismatch"):
        hzio.index(path)
    _flip(f, 8 * offset + 5)
    hzio.index(path)
    with hzio.open(path) as ds:
        np.testing.assert_array_equal(ds.read(), a)


def test_a_file_changed_after_an_earlier_read_of_this_process_is_checked_again(tmp_path):
    """Checks are remembered per version of a data file (across opens only once it has settled): a later
    change in place is another version, and the next read checks it."""
    path = tmp_path / "s.idx"
    a = np.random.default_rng(5).standard_normal((16, 16, 16)).astype(np.float32)
    with hzio.create(path, shape=a.shape, fields={"v": "float32"}, bits_per_block=8) as ds:
        ds.write(a)
    time.sleep(2.5)  # settled: the next open's checks are remembered for the process
    for _ in range(2):
        with hzio.open(path) as ds:
            np.testing.assert_array_equal(ds.read(), a)
    f = _data_files(path)[0]
    _, offset, size = _payloads(f.read_bytes(), 1, 16)[3]
    _flip(f, 8 * (offset + size // 2))
    with hzio.open(path) as ds:
        with pytest.raises(hzio.CorruptError, match="checksum mismatch"):
            ds.read()
        with pytest.raises(hzio.CorruptError, match="checksum mismatch"):
            ds.read()  # a failed check is not remembered as done
