"""Small reads of large data files take only the sidecar entries of their blocks (docs/format.md "Reading
and validation"): the checks they make are those of the whole sidecar's, a damaged entry or payload is
reported as such, and damage elsewhere in the sidecar is left to ``hzio verify`` and to reads that need it.

Oracles: NumPy arrays written earlier; offsets computed here from docs/format.md "Bytes"; the ``xxhash``
package for the checksums of the payloads on disk.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import hzio
import numpy as np
import pytest
import xxhash

SHAPE = (32, 32, 32)  # 32768 samples: 128 blocks of 256, all in one data file
BITS_PER_BLOCK = 8
SUB_BLOCK_BITS = 4  # 536 bytes per entry: a sidecar of about 67 KiB
BOX = ((8, 16, 0), (12, 20, 4))  # 64 samples: a few blocks of the 128


@pytest.fixture()
def dataset(tmp_path):
    """One float32 field in one data file of 128 blocks, whose sidecar is large enough to be read entry by
    entry (over 64 KiB); the array."""
    path = tmp_path / "d.idx"
    z = np.arange(SHAPE[0], dtype=np.float32)[:, None, None] / 8  # blocks of distinct ranges, for queries
    a = (z + np.random.default_rng(3).standard_normal(SHAPE) / 16).astype(np.float32)
    with hzio.create(path, shape=SHAPE, fields={"v": "float32"}, bits_per_block=BITS_PER_BLOCK,
                     blocks_per_file=128, sub_block_bits=SUB_BLOCK_BITS) as ds:
        ds.write(a)
    (data,) = sorted(path.with_suffix("").rglob("*.bin"))
    sidecar = Path(str(data) + ".hzstats")
    return path, a, data, sidecar


def _entry_checksums_at(entry: int) -> int:
    """Offset of an entry's checksums in the sidecar of one float32 field (docs/format.md "Bytes")."""
    parts = 2 ** SUB_BLOCK_BITS
    record = 8 * parts + (1 + parts) * (8 + 16 * 1)
    return 48 + 8 + entry * record


def _present_entries(data: bytes, entries: int):
    """(entry, offset, size) of the present blocks, from the header table (docs/format.md)."""
    out = []
    for i in range(entries):
        w = struct.unpack(">10I", data[40 + 40 * i:80 + 40 * i])
        offset, size = w[2] | w[3] << 32, w[4]
        if offset and size:
            out.append((i, offset, size))
    return out


def _read_box(path, box=BOX):
    with hzio.open(path) as ds:
        (z0, y0, x0), (z1, y1, x1) = box
        out = ds[z0:z1, y0:y1, x0:x1]
        return out, ds.last_read_report


def _entries_of_box(path, data_file: Path, sidecar: Path):
    """The entries a read of BOX uses: those whose sidecar checksums, when damaged, fail the read."""
    used = []
    side = sidecar.read_bytes()
    for entry, _offset, _size in _present_entries(data_file.read_bytes(), 128):
        at = _entry_checksums_at(entry)
        damaged = bytearray(side)
        damaged[at] ^= 0x01
        sidecar.write_bytes(bytes(damaged))
        try:
            _read_box(path)
        except hzio.CorruptError:
            used.append(entry)
        finally:
            sidecar.write_bytes(side)
    return used


def test_sidecar_is_large_and_its_entries_are_where_the_format_says(dataset):
    path, a, data_file, sidecar = dataset
    side = sidecar.read_bytes()
    assert len(side) > 64 * 1024
    data = data_file.read_bytes()
    for entry, offset, size in _present_entries(data, 128):
        payload = data[offset:offset + size]
        part = -(-size // 2 ** SUB_BLOCK_BITS)
        at = _entry_checksums_at(entry)
        for k in range(2 ** SUB_BLOCK_BITS):
            want = xxhash.xxh3_64_intdigest(payload[k * part:(k + 1) * part])
            assert struct.unpack("<Q", side[at + 8 * k:at + 8 * k + 8])[0] == want


def test_a_small_read_takes_a_few_sidecar_entries_not_the_whole_sidecar(dataset):
    path, a, data_file, sidecar = dataset
    out, report = _read_box(path)
    (z0, y0, x0), (z1, y1, x1) = BOX
    np.testing.assert_array_equal(out, a[z0:z1, y0:y1, x0:x1])
    # The header table (40 + 40 * 128 bytes), a few payload parts and sidecar entries: far less than the
    # sidecar alone.
    assert report.bytes_read < sidecar.stat().st_size / 4, report


def test_a_damaged_payload_part_fails_the_small_read(dataset):
    path, a, data_file, sidecar = dataset
    used = _entries_of_box(path, data_file, sidecar)
    assert used, "no entry of the box's blocks found"
    data = bytearray(data_file.read_bytes())
    entries = {e: (offset, size) for e, offset, size in _present_entries(bytes(data), 128)}
    clean = bytes(data)
    hits = 0
    for entry in used:
        offset, size = entries[entry]
        for k in range(2 ** SUB_BLOCK_BITS):
            damaged = bytearray(clean)
            damaged[offset + k * (size // 2 ** SUB_BLOCK_BITS)] ^= 0x40
            data_file.write_bytes(bytes(damaged))
            try:
                out, _ = _read_box(path)
            except hzio.CorruptError as e:
                assert "checksum mismatch in " + str(data_file) in str(e)
                hits += 1
            else:  # a part the box does not take: the data must still be right
                (z0, y0, x0), (z1, y1, x1) = BOX
                np.testing.assert_array_equal(out, a[z0:z1, y0:y1, x0:x1])
    data_file.write_bytes(clean)
    assert hits > 0


def test_a_damaged_entry_of_the_box_is_reported_as_a_damaged_sidecar(dataset):
    path, a, data_file, sidecar = dataset
    used = _entries_of_box(path, data_file, sidecar)
    side = bytearray(sidecar.read_bytes())
    side[_entry_checksums_at(used[0]) + 3] ^= 0x10
    sidecar.write_bytes(bytes(side))
    with pytest.raises(hzio.CorruptError, match=r"statistics file .*hzstats.*own checksum does not match"):
        _read_box(path)


def test_damage_in_other_entries_leaves_small_reads_right_and_verify_reports_it(dataset):
    path, a, data_file, sidecar = dataset
    used = set(_entries_of_box(path, data_file, sidecar))
    other = next(e for e, _, _ in _present_entries(data_file.read_bytes(), 128) if e not in used)
    side = bytearray(sidecar.read_bytes())
    side[_entry_checksums_at(other)] ^= 0x01
    sidecar.write_bytes(bytes(side))
    out, _ = _read_box(path)
    (z0, y0, x0), (z1, y1, x1) = BOX
    np.testing.assert_array_equal(out, a[z0:z1, y0:y1, x0:x1])
    # A read of everything needs the whole sidecar, which fails its own checksum.
    with hzio.open(path) as ds, pytest.raises(hzio.CorruptError, match="own checksum does not match"):
        ds.read()
    cli = subprocess.run([sys.executable, "-m", "hzio", "verify", str(path)], capture_output=True, text=True)
    assert cli.returncode != 0
    assert "hzstats" in cli.stdout + cli.stderr


def test_a_query_after_a_small_read_has_every_statistic(dataset):
    path, a, data_file, sidecar = dataset
    with hzio.open(path) as ds:
        (z0, y0, x0), (z1, y1, x1) = BOX
        np.testing.assert_array_equal(ds[z0:z1, y0:y1, x0:x1], a[z0:z1, y0:y1, x0:x1])
        mask = ds.query(None, 3.0, np.inf, mask=True)  # needs the statistics of every block
        report = ds.last_read_report
    np.testing.assert_array_equal(mask, a >= 3.0)
    assert report.blocks_skipped > 0, report
