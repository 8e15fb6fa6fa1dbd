"""hzio rejects damaged or invalid input with the documented exception types.

Damage is applied to writable copies of the OpenVisus samples (``sample_copy``)
or to hand-written ``.idx`` files.  Every test checks the exception class and
that the message names the file (basename) or the reason.  One deliberate
non-error: a *missing* ``.bin`` file means "blocks absent" and reads as the
field's default value, exactly like OpenVisus.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib

import hz_expect as he
import hzio  # the package under test: a missing build must fail, not skip
import numpy as np
import ov_helpers as oh
import pytest

RAW = "u8_2d_hzorder_raw_multifile"   # 4 files, bpf 2, raw 16-byte HZ blocks
ZIP = "u8_2d_hzorder_zip"             # 1 file, 8 zip blocks
VALUES = he.sample_value(RAW, (8, 16))


def assert_names(excinfo, *needles):
    msg = str(excinfo.value).lower()
    assert any(n.lower() in msg for n in needles), f"message {msg!r} names none of {needles}"


def patch_entry(bin_path, entry, **words):
    """Overwrite big-endian words of a 40-byte block header (offset_low=2 ... flags=5)."""
    index = {"offset_low": 2, "offset_high": 3, "size": 4, "flags": 5}
    data = bytearray(bin_path.read_bytes())
    base = 40 + 40 * entry
    for name, value in words.items():
        pos = base + 4 * index[name]
        data[pos:pos + 4] = struct.pack(">I", value)
    bin_path.write_bytes(bytes(data))


def entry_words(bin_path, entry):
    return struct.unpack(">10I", bin_path.read_bytes()[40 + 40 * entry: 80 + 40 * entry])


def test_exception_hierarchy():
    for cls in (hzio.FormatError, hzio.CorruptError, hzio.NotFoundError,
                hzio.InvalidArgumentError, hzio.IoError, hzio.UnsupportedError):
        assert issubclass(cls, hzio.Error) and issubclass(cls, Exception)
    assert issubclass(hzio.NotFoundError, FileNotFoundError)
    assert issubclass(hzio.InvalidArgumentError, ValueError)
    assert issubclass(hzio.IoError, OSError)


def test_open_nonexistent_path(tmp_path):
    with pytest.raises(hzio.NotFoundError) as ei:
        hzio.open(str(tmp_path / "nowhere.idx"))
    assert isinstance(ei.value, FileNotFoundError)
    assert_names(ei, "nowhere.idx")


def test_open_bad_mode(sample_copy):
    idx = sample_copy(RAW)
    with pytest.raises(hzio.InvalidArgumentError) as ei:
        hzio.open(str(idx), mode="rw+x")
    assert_names(ei, "mode", "rw+x")


def _cut_before_bits(text):
    return text[: text.index("(bits)")]


def _replace_value(key, value):
    def mutate(text):
        lines = text.splitlines()
        i = lines.index(key)
        lines[i + 1] = value
        return "\n".join(lines) + "\n"
    return mutate


IDX_DAMAGE = {
    "empty": (lambda t: "", ("empty", "version", "missing")),
    "truncated_before_bits": (_cut_before_bits, ("bits", "bitmask")),
    "truncated_in_bits": (lambda t: t[: t.index("(bits)") + len("(bits)\nV010")], ("bits", "bitmask")),
    "binary_garbage": (lambda t: "\x00\xff\xfe(\x01garbage\x00" * 9,
                       ("version", "parse", "format", "invalid", "missing")),
    "version_7": (_replace_value("(version)", "7"), ("version",)),
    "bitmask_bad_char": (_replace_value("(bits)", "V01x1010"), ("bits", "bitmask")),
    "bitmask_no_V": (_replace_value("(bits)", "0101010"), ("bits", "bitmask")),
    "box_odd_count": (_replace_value("(box)", "0 15 0"), ("box",)),
    "box_not_numbers": (_replace_value("(box)", "0 fifteen 0 7"), ("box", "fifteen")),
    "box_inverted": (_replace_value("(box)", "9 2 0 7"), ("box",)),
    "unknown_dtype": (_replace_value("(fields)", "data floaty32 default_layout(hzorder)"),
                      ("floaty32", "dtype", "type")),
    "no_fields": (_replace_value("(fields)", ""), ("field",)),
    "bitsperblock_text": (_replace_value("(bitsperblock)", "four"), ("bitsperblock", "four")),
}


@pytest.mark.parametrize("damage", sorted(IDX_DAMAGE))
def test_damaged_idx_is_format_error(sample_copy, damage):
    idx = sample_copy(RAW)
    mutate, reasons = IDX_DAMAGE[damage]
    idx.write_text(mutate(idx.read_text()), encoding="latin-1")
    with pytest.raises(hzio.FormatError) as ei:
        with hzio.open(str(idx)) as ds:
            ds.read()
    assert_names(ei, idx.name, *reasons)


def test_bitmask_too_short_for_box(tmp_path):
    """OpenVisus silently returns wrong data here; hzio must refuse the file."""
    idx = tmp_path / "short.idx"
    idx.write_text("(version)\n6\n(box)\n0 15 0 7\n(fields)\ndata uint8 default_layout(hzorder)\n"
                   "(bits)\nV01010\n(bitsperblock)\n4\n(blocksperfile)\n2\n"
                   "(filename_template)\n./short/%04x.bin\n")
    with pytest.raises(hzio.FormatError) as ei:
        hzio.open(str(idx))
    assert_names(ei, "short.idx", "bitmask", "bits")


def test_handwritten_minimal_idx_is_accepted(tmp_path):
    """Control for the test above: the same file with a full bitmask opens fine."""
    idx = tmp_path / "ok.idx"
    idx.write_text("(version)\n6\n(box)\n0 15 0 7\n(fields)\ndata uint8\n(bits)\nV0101010\n")
    with hzio.open(str(idx)) as ds:
        assert tuple(ds.grid_shape) == (8, 16) and ds.bits_per_block == 7 and ds.blocks_per_file == 1
        np.testing.assert_array_equal(ds.read(), np.zeros((8, 16), np.uint8))  # no .bin at all


@pytest.mark.parametrize("patch", [
    dict(offset_low=10_000),                  # payload starts past the end of the 152-byte file
    dict(offset_high=1),                      # 64-bit offset 2**32 + 136
    dict(size=0x7FFF_FFFF),                   # payload runs past the end of the file
])
def test_block_header_past_end_of_file(sample_copy, patch):
    idx = sample_copy(RAW)
    patch_entry(idx.parent / RAW / "0000.bin", 1, **patch)  # block 1 (level 5)
    with hzio.open(str(idx)) as ds:
        with pytest.raises(hzio.CorruptError) as ei:
            ds.read()
    assert_names(ei, "0000.bin")


def test_truncated_bin_file(sample_copy):
    idx = sample_copy(RAW)
    path = idx.parent / RAW / "0002.bin"
    path.write_bytes(path.read_bytes()[:130])  # block 2 payload (120..136) cut short
    with hzio.open(str(idx)) as ds:
        with pytest.raises(hzio.CorruptError) as ei:
            ds.read()
    assert_names(ei, "0002.bin")


def test_raw_block_with_wrong_size(sample_copy):
    idx = sample_copy(RAW)
    patch_entry(idx.parent / RAW / "0004.bin", 0, size=8)  # raw block must be 16 bytes
    with hzio.open(str(idx)) as ds:
        with pytest.raises(hzio.CorruptError) as ei:
            ds.read()
    assert_names(ei, "0004.bin", "size")


@pytest.mark.parametrize("how", ["header", "middle"])
def test_undecodable_zip_payload(sample_copy, how):
    idx = sample_copy(ZIP)
    path = idx.parent / ZIP / "0000.bin"
    _, _, off, _, size, flags, *_ = entry_words(path, 2)
    assert flags & 0x0F == 3 and size > 12
    data = bytearray(path.read_bytes())
    span = range(off, off + 2) if how == "header" else range(off + size // 2 - 3, off + size // 2 + 3)
    for i in span:
        data[i] ^= 0xFF
    with pytest.raises(zlib.error):  # make sure the damage really is undecodable
        zlib.decompress(bytes(data[off:off + size]))
    path.write_bytes(bytes(data))
    with hzio.open(str(idx)) as ds:
        with pytest.raises(hzio.CorruptError) as ei:
            ds.read()
    assert_names(ei, "0000.bin", "zip", "zlib", "decompress", "decod")


def test_unsupported_block_codec(sample_copy):
    idx = sample_copy(RAW)
    patch_entry(idx.parent / RAW / "0000.bin", 0, flags=0x04)  # jpg-compressed block
    with hzio.open(str(idx)) as ds:
        with pytest.raises(hzio.UnsupportedError) as ei:
            ds.read()
    assert_names(ei, "jpg", "jpeg", "compression", "codec", "0000.bin")


def _missing_mask(bitmask, shape, bpb, blocks):
    hz = he.hz_address(bitmask, np.indices(shape))
    return np.isin(hz >> bpb, list(blocks))


def test_missing_bin_file_reads_default_value(sample_copy):
    idx = sample_copy(RAW)
    (idx.parent / RAW / "0002.bin").unlink()  # blocks 2 and 3
    expected = VALUES.copy()
    expected[_missing_mask("V0101010", (8, 16), 4, {2, 3})] = 0
    assert (expected != VALUES).sum() == 32
    with hzio.open(str(idx)) as ds:
        np.testing.assert_array_equal(ds.read(), expected)
        assert ds.last_read_report["blocks_missing"] == 2, ds.last_read_report
        np.testing.assert_array_equal(ds.read(level=4), VALUES[::2, ::4])  # block 0 only


def test_missing_bin_file_matches_openvisus(openvisus, sample_copy):
    idx = sample_copy(RAW)
    (idx.parent / RAW / "0004.bin").unlink()
    (idx.parent / RAW / "0006.bin").unlink()
    with hzio.open(str(idx)) as ds:
        for level in (4, 5, 6, 7):
            np.testing.assert_array_equal(ds.read(level=level), oh.ov_read(idx, level=level))


def test_missing_time_directory_reads_default(sample_copy):
    idx = sample_copy("u8_2d_time")
    for p in (idx.parent / "u8_2d_time" / "time_01").iterdir():
        p.unlink()
    with hzio.open(str(idx)) as ds:
        np.testing.assert_array_equal(ds.read(time=0), VALUES)
        np.testing.assert_array_equal(ds.read(time=1), np.zeros((8, 16), np.uint8))


def test_bin_path_is_a_directory(sample_copy):
    idx = sample_copy(RAW)
    path = idx.parent / RAW / "0006.bin"
    path.unlink()
    path.mkdir()
    with hzio.open(str(idx)) as ds:
        with pytest.raises(hzio.IoError) as ei:
            ds.read()
    assert isinstance(ei.value, OSError)
    assert_names(ei, "0006.bin")


def test_missing_field_and_time(samples_dir):
    with hzio.open(str(samples_dir / "u8_2d_time.idx")) as ds:
        for kwargs, needle in [(dict(field="nope"), "nope"), (dict(time=5), "time"),
                               (dict(time=-1), "time")]:
            with pytest.raises((hzio.NotFoundError, hzio.InvalidArgumentError)) as ei:
                ds.read(**kwargs)
            assert_names(ei, needle)


def test_bad_read_arguments(samples_dir):
    with hzio.open(str(samples_dir / "f32_3d_2fields_zip.idx")) as ds:
        bad = [(dict(level=16), "level"), (dict(level=-1), "level"),
               (dict(box=((0, 0, 0), (33, 32, 32))), "box"),
               (dict(box=((-1, 0, 0), (4, 4, 4))), "box"),
               (dict(box=((0, 0), (4, 4))), "box")]
        for kwargs, needle in bad:
            with pytest.raises(hzio.InvalidArgumentError) as ei:
                ds.read(**kwargs)
            assert_names(ei, needle, "bound", "outside", "range", "dimension")


@pytest.fixture
def writable(tmp_path):
    ds = hzio.create(str(tmp_path / "w.idx"), shape=(4, 6, 8),
                     fields={"u": "uint8", "vec": "float32[3]"})
    yield ds
    ds.close()


@pytest.mark.parametrize("array,kwargs,needles", [
    (np.zeros((4, 6, 8), np.float64), dict(field="u"), ("dtype", "float64", "uint8")),
    (np.full((4, 6, 8), -1, np.int8), dict(field="u"), ("fit", "-1", "uint8")),
    (np.zeros((4, 6, 8, 2), np.uint8), dict(field="u"), ("shape", "dimension")),
    (np.zeros((4, 6, 8), np.float32), dict(field="vec"), ("shape", "component", "3")),
    (np.zeros((4, 6, 8, 2), np.float32), dict(field="vec"), ("shape", "component", "3")),
    (np.zeros((4, 6, 9), np.uint8), dict(field="u"), ("shape", "bound", "outside", "box")),
    (np.zeros((2, 2, 2), np.uint8), dict(field="u", offset=(3, 0, 0)),
     ("shape", "bound", "outside", "box", "offset")),
    (np.zeros((2, 2, 2), np.uint8), dict(field="u", offset=(0, -1, 0)),
     ("bound", "outside", "box", "offset", "negative")),
])
def test_bad_write_arguments(writable, array, kwargs, needles):
    with pytest.raises(hzio.InvalidArgumentError) as ei:
        writable.write(array, **kwargs)
    assert_names(ei, *needles)


def test_write_missing_field_or_time(writable):
    for kwargs, needle in [(dict(field="nope"), "nope"), (dict(field="u", time=3), "time")]:
        with pytest.raises((hzio.NotFoundError, hzio.InvalidArgumentError)) as ei:
            writable.write(np.zeros((4, 6, 8), np.uint8), **kwargs)
        assert_names(ei, needle)


def test_write_in_read_mode(sample_copy):
    idx = sample_copy(RAW)
    before = (idx.parent / RAW / "0000.bin").read_bytes()
    with hzio.open(str(idx), mode="r") as ds:
        with pytest.raises(hzio.Error) as ei:
            ds.write(np.zeros((8, 16), np.uint8), field="data")
    assert_names(ei, "read", "mode", RAW)
    assert (idx.parent / RAW / "0000.bin").read_bytes() == before


@pytest.mark.parametrize("kwargs,needles", [
    (dict(shape=(0, 4)), ("shape",)),
    (dict(shape=(4, 4), bitmask="V010"), ("bitmask", "bits")),
    (dict(shape=(4, 4), bitmask="V01x1"), ("bitmask", "bits")),
    (dict(shape=(4, 4), fields={"a": "complex64"}), ("complex64", "dtype")),
    (dict(shape=(4, 4), fields={}), ("field",)),
    (dict(shape=(4, 4), codec="bogus"), ("bogus", "codec")),
    (dict(shape=(4, 4), layout="diagonal"), ("diagonal", "layout")),
    (dict(shape=(4, 4), bits_per_block=-2), ("bits_per_block", "bitsperblock", "block")),
])
def test_bad_create_arguments(tmp_path, kwargs, needles):
    args = dict(fields={"a": "uint8"})
    args.update(kwargs)
    with pytest.raises((hzio.InvalidArgumentError, hzio.UnsupportedError)) as ei:
        hzio.create(str(tmp_path / "c.idx"), **args)
    assert_names(ei, *needles)


def test_fifos_in_place_of_dataset_files_are_refused_at_once(tmp_path):
    """A FIFO where the .idx, a data file or a sidecar should be must not make a reader wait for a writer
    forever: the .idx and data files are refused naming the file, a sidecar is ignored (statistics
    unknown). Run in a child process with a time limit, so that a hang fails the test instead of the suite."""
    import textwrap  # noqa: PLC0415

    script = textwrap.dedent(f"""
        import os, sys
        import numpy as np
        import hzio
        root = {str(tmp_path)!r}
        a = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
        with hzio.create(root + "/d.idx", shape=(16, 16), fields={{"v": "float32"}}, bits_per_block=4) as ds:
            ds.write(a)
        data = sorted(f for f in os.listdir(root + "/d") if f.endswith(".bin"))
        side = root + "/d/" + data[0] + ".hzstats"
        os.remove(side)
        os.mkfifo(side)
        with hzio.open(root + "/d.idx") as ds:
            idx, values = ds.query("v", 10, 20)
            assert sorted(values.tolist()) == list(range(10, 21)), values
        os.remove(root + "/d/" + data[-1])
        os.mkfifo(root + "/d/" + data[-1])
        with hzio.open(root + "/d.idx") as ds:
            try:
                ds.read()
                sys.exit("read a FIFO data file")
            except hzio.IoError as e:
                assert "not a regular file (a FIFO)" in str(e) and data[-1] in str(e), str(e)
        os.mkfifo(root + "/f.idx")
        try:
            hzio.open(root + "/f.idx")
            sys.exit("opened a FIFO .idx")
        except hzio.IoError as e:
            assert "not a regular file (a FIFO)" in str(e), str(e)
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_a_dataset_whose_text_is_not_utf8_is_a_format_error_naming_it(tmp_path):
    """Names and templates reach Python and file paths: bytes that are not UTF-8 must give hzio's error,
    not a UnicodeDecodeError from deep inside the binding (or a traceback in the CLI)."""
    with hzio.create(tmp_path / "d.idx", shape=(8, 8), fields={"v": "float32"}) as ds:
        ds.write(np.ones((8, 8), np.float32))
    text = (tmp_path / "d.idx").read_bytes()
    assert b"\nv " in text
    (tmp_path / "e.idx").write_bytes(text.replace(b"\nv ", b"\nv\xff\xfe "))
    with pytest.raises(hzio.FormatError, match="not UTF-8"):
        hzio.open(tmp_path / "e.idx")
    proc = subprocess.run([sys.executable, "-m", "hzio", "info", str(tmp_path / "e.idx")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "hzio: error" in proc.stderr and "not UTF-8" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_read_larger_than_the_memory_is_a_clear_error_not_a_traceback(tmp_path):
    """Under an address-space limit (RLIMIT_AS, 8 GiB), reading a 256 GiB box fails with a MemoryError that
    says what the read needs; the CLI, which streams into the .npy, says the disk lacks the room (exit 2)."""
    import resource  # noqa: PLC0415

    path = tmp_path / "big.idx"
    with hzio.create(path, shape=(4096, 4096, 4096), fields={"v": "float32"}) as ds:
        ds.write(np.ones((4, 4, 4), np.float32))  # sparse: the rest reads as the default value

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))

    code = ("import hzio, sys\nwith hzio.open(sys.argv[1]) as ds:\n    try:\n        ds.read()\n"
            "    except MemoryError as e:\n        print(e)\n")
    api = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60,
                         preexec_fn=limit)
    assert api.returncode == 0 and str(4096 ** 3 * 4) + " bytes" in api.stdout, api.stdout + api.stderr
    cli = subprocess.run([sys.executable, "-m", "hzio", "read", str(path), "-o", str(tmp_path / "o.npy")],
                         capture_output=True, text=True, timeout=60, preexec_fn=limit)
    # the CLI streams the box into the .npy in slabs, so memory is not what stops it: the disk is
    assert cli.returncode == 2 and "hzio: error: " in cli.stderr and "free" in cli.stderr, cli.stderr
    assert "Traceback" not in cli.stderr and not (tmp_path / "o.npy").exists()
