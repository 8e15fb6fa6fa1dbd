"""The ``hzio`` command line (info, read, convert, verify, dump) run as ``python -m hzio`` in a subprocess.

Oracles: the public Python API (properties, ``ds.read``, ``ds.blocks``), NumPy slicing of the source arrays,
the known values of the OpenVisus-written samples (README.md next to them), and header tables parsed here
from the bytes (40-byte file header, 40-byte big-endian entries).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import hzio
import numpy as np
import pytest
from hzio import _cli_convert

SAMPLES = ["f32_3d_2fields_zip", "f32_3d_rowmajor_lz4", "f32_3d_zfp_reversible", "i16_3d_npot_rowmajor_raw",
           "u8_2d_createidx_data", "u8_2d_hzorder_raw_multifile", "u8_2d_hzorder_zip", "u8_2d_partial_missing",
           "u8_2d_rowmajor_raw", "u8_2d_time", "u8x3_2d_hzorder_zip"]


def run(*args, cwd=None):
    """Run ``python -m hzio ARGS``; return the CompletedProcess (text stdout/stderr)."""
    return subprocess.run([sys.executable, "-m", "hzio", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def run_json(*args):
    """Run with ``--json``; return the CompletedProcess and the parsed stdout."""
    proc = run(*args, "--json")
    assert proc.returncode in (0, 1), proc.stderr
    return proc, json.loads(proc.stdout)


def assert_error(proc, *needles):
    """Exit status 2, one ``hzio: error:`` line naming every needle, no traceback."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("hzio: error:"), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)


@pytest.fixture
def volume(tmp_path, rng):
    """A zip dataset of shape 13x20x35: float32 ``t`` = array at timestep 5, int16 ``u`` at 0; (path, array)."""
    array = rng.standard_normal((13, 20, 35)).astype(np.float32)
    path = tmp_path / "volume.idx"
    with hzio.create(path, shape=array.shape, fields={"t": "float32", "u": "int16"}, codec="zip",
                     times=[0, 5]) as ds:
        ds.write(array, time=5)
        ds.write((array * 100).astype(np.int16), field="u", time=0)
    return path, array


# ---------------------------------------------------------------- global options
def test_version_prints_the_package_version():
    proc = run("--version")
    assert (proc.returncode, proc.stdout.strip()) == (0, f"hzio {hzio.__version__}")


@pytest.mark.parametrize("command, option", [(None, "COMMAND"), ("info", "--json"), ("read", "--box"),
                                             ("convert", "--blocks-per-file"), ("convert", "--time-dim"),
                                             ("export", "--zarr-format"), ("verify", "--time"), ("dump", "--field")])
def test_help_of_every_command_lists_its_options(command, option):
    proc = run(*([command] if command else []), "-h")
    assert proc.returncode == 0, proc.stderr
    assert option in proc.stdout


def test_no_command_is_a_usage_error():
    proc = run()
    assert proc.returncode == 2 and "usage:" in proc.stderr


@pytest.mark.parametrize("args", [["info"], ["read", "-o", "x.npy"], ["verify"], ["dump"]])
def test_a_missing_dataset_exits_2_with_an_error_line(tmp_path, args):
    missing = tmp_path / "nothing.idx"
    proc = run(args[0], missing, *args[1:], cwd=tmp_path)
    assert_error(proc, "nothing.idx")


# ---------------------------------------------------------------- info
def test_info_json_matches_the_api(volume):
    path, _ = volume
    _, d = run_json("info", path)
    with hzio.open(path) as ds:
        assert d["path"] == ds.path
        assert d["shape"] == list(ds.grid_shape) == [13, 20, 35]
        assert d["ndim"] == 3
        assert d["times"] == ds.times == [0, 5]
        assert {k: v["dtype"] for k, v in d["fields"].items()} == ds.fields
        assert {k: v["codec"] for k, v in d["fields"].items()} == ds.codecs
        assert {k: v["layout"] for k, v in d["fields"].items()} == ds.layouts
        for key in ("max_level", "bitmask", "bits_per_block", "blocks_per_file", "block_count"):
            assert d[key] == getattr(ds, key), key
        assert [lv["shape"] for lv in d["levels"]] == [list(ds.level_shape(h)) for h in range(ds.max_level + 1)]
    assert d["levels"][-1]["shape"] == [13, 20, 35]
    assert d["file_count"] == 2 * -(-d["block_count"] // d["blocks_per_file"])


def test_info_json_of_an_openvisus_sample_has_its_known_values(samples_dir):
    _, d = run_json("info", samples_dir / "f32_3d_2fields_zip.idx")
    assert d["shape"] == [32, 32, 32]
    assert d["fields"] == {"a": {"dtype": "float32", "codec": "zip", "layout": "hzorder"},
                           "b": {"dtype": "float32", "codec": "zip", "layout": "hzorder"}}
    assert (d["bitmask"], d["bits_per_block"], d["blocks_per_file"], d["block_count"]) == ("V012012012012012", 12, 8, 8)
    assert d["max_level"] == 15 and len(d["levels"]) == 16
    assert d["file_count"] == 1


def test_info_text_shows_every_property_and_level(samples_dir):
    proc = run("info", samples_dir / "u8_2d_time.idx")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for text in ("V0101010", "bits_per_block", "blocks_per_file", "block_count", "file_count", "0, 1",
                 "data", "uint8", "hzorder", "8 x 16"):
        assert text in out, text
    assert "[y, x]" in out
    assert sum(1 for line in out.splitlines() if line.strip().split(" ")[0].isdigit()) == 8  # levels 0..7


# ---------------------------------------------------------------- read
def test_read_full_resolution_equals_the_source(volume, tmp_path):
    path, array = volume
    out = tmp_path / "full.npy"
    proc = run("read", path, "-o", out, "--field", "t", "--time", 5)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), array)
    assert all(text in proc.stdout for text in ("(13, 20, 35)", "files_opened", "blocks_read", "bytes_read"))


def test_read_box_equals_numpy_slicing(volume, tmp_path):
    proc = run("read", volume[0], "-o", tmp_path / "box.npy", "--time", 5, "--box", "2:11,:,7:")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "box.npy"), volume[1][2:11, :, 7:])


def test_read_second_field_and_first_timestep(volume, tmp_path):
    assert run("read", volume[0], "-o", tmp_path / "u.npy", "--field", "u", "--quiet").returncode == 0
    np.testing.assert_array_equal(np.load(tmp_path / "u.npy"), (volume[1] * 100).astype(np.int16))


def test_read_coarse_level_in_a_box_equals_the_api(volume, tmp_path):
    path, _ = volume
    out = tmp_path / "coarse.npy"
    with hzio.open(path) as ds:
        level = ds.max_level - 4
        expected = ds.read(box=((1, 3, 0), (13, 17, 30)), level=level, time=5)
    proc = run("read", path, "-o", out, "--time", 5, "--level", level, "--box", "1:,3:17,:30", "-q")
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr
    got = np.load(out)
    assert got.shape == expected.shape and got.size > 0
    np.testing.assert_array_equal(got, expected)


def test_read_of_an_openvisus_sample_gives_its_formula(samples_dir, tmp_path):
    out = tmp_path / "rgb.npy"
    assert run("read", samples_dir / "u8x3_2d_hzorder_zip.idx", "-o", out).returncode == 0
    y, x = np.mgrid[0:8, 0:16]
    np.testing.assert_array_equal(np.load(out), np.stack([x, y, x + y], axis=-1).astype(np.uint8))


@pytest.mark.parametrize("option, needle", [("--box=0:4,0:4", "3 comma-separated"), ("--box=0:99,:,:", "outside"),
                                            ("--box=4:2,:,:", "empty"), ("--box=a:b,:,:", "integers"),
                                            ("--level=99", "level 99")])
def test_read_rejects_a_bad_box_or_level(volume, tmp_path, option, needle):
    assert_error(run("read", volume[0], "-o", tmp_path / "x.npy", option), needle)
    assert not (tmp_path / "x.npy").exists()


# ---------------------------------------------------------------- convert
def test_convert_npy_round_trips_exactly(tmp_path, rng):
    array = rng.integers(-1000, 1000, (9, 17, 33)).astype(np.int32)
    np.save(tmp_path / "in.npy", array)
    out = tmp_path / "out.idx"
    proc = run("convert", tmp_path / "in.npy", out, "--codec", "zip", "--field", "density", "--bits-per-block", 8,
               "--blocks-per-file", 4, "--layout", "rowmajor")
    assert proc.returncode == 0, proc.stderr
    assert "MiB/s" in proc.stdout and len(proc.stdout.strip().splitlines()) == 1
    assert "[#" not in proc.stderr  # no progress bar when stderr is not a terminal
    with hzio.open(out) as ds:
        assert ds.fields == {"density": "int32"}
        assert (ds.codecs["density"], ds.layouts["density"]) == ("zip", "rowmajor")
        assert (ds.bits_per_block, ds.blocks_per_file) == (8, 4)
        np.testing.assert_array_equal(ds.read(), array)


def test_convert_raw_round_trips_exactly(tmp_path, rng):
    array = rng.random((6, 11, 3)).astype(np.float64)
    array.tofile(tmp_path / "in.raw")
    out = tmp_path / "out.idx"
    proc = run("convert", tmp_path / "in.raw", out, "--shape", "6,11", "--dtype", "float64[3]", "--codec", "lz4")
    assert proc.returncode == 0, proc.stderr
    with hzio.open(out) as ds:
        assert ds.grid_shape == (6, 11) and ds.shape == (6, 11, 3) and ds.fields == {"data": "float64[3]"}
        np.testing.assert_array_equal(ds.read(), array)


@pytest.mark.parametrize("options, needles", [(["--shape", "4,5,6", "--dtype", "uint16"], ["200 bytes", "240 bytes"]),
                                              (["--dtype", "uint16"], ["--shape"]), (["--shape", "100"], ["--dtype"])])
def test_convert_raw_of_the_wrong_size_or_without_shape_fails(tmp_path, options, needles):
    np.zeros(100, np.uint16).tofile(tmp_path / "in.raw")
    assert_error(run("convert", tmp_path / "in.raw", tmp_path / "out.idx", *options), *needles)
    assert not (tmp_path / "out.idx").exists()


def test_convert_refuses_a_dtype_that_loses_values_before_creating_anything(tmp_path):
    np.save(tmp_path / "in.npy", np.linspace(0, 1, 24).reshape(2, 3, 4))
    assert_error(run("convert", tmp_path / "in.npy", tmp_path / "out.idx", "--dtype", "float32"), "float64")
    assert not (tmp_path / "out.idx").exists()


def test_convert_refuses_to_replace_a_dataset_without_overwrite(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(16, dtype=np.uint8).reshape(4, 4))
    np.save(tmp_path / "b.npy", np.arange(16, 32, dtype=np.uint8).reshape(4, 4))
    out = tmp_path / "out.idx"
    assert run("convert", tmp_path / "a.npy", out).returncode == 0
    assert_error(run("convert", tmp_path / "b.npy", out), "--overwrite")
    assert run("convert", tmp_path / "b.npy", out, "--overwrite").returncode == 0
    with hzio.open(out) as ds:
        np.testing.assert_array_equal(ds.read(), np.arange(16, 32, dtype=np.uint8).reshape(4, 4))


def test_convert_in_many_boxes_shows_progress_and_round_trips(tmp_path, rng, monkeypatch, capsys):
    from hzio.cli import main
    array = rng.integers(0, 60000, (37, 19, 23)).astype(np.uint16)
    np.save(tmp_path / "in.npy", array)
    monkeypatch.setattr(_cli_convert, "SLAB_BYTES", 4 * 19 * 23 * 2)  # boxes of at most 3496 bytes
    assert main(["convert", str(tmp_path / "in.npy"), str(tmp_path / "out.idx"), "--progress", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["boxes"] >= 10
    assert "convert: 100%" in err and "committing" in err
    with hzio.open(tmp_path / "out.idx") as ds:
        np.testing.assert_array_equal(ds.read(), array)


# ---------------------------------------------------------------- verify
@pytest.mark.parametrize("name", SAMPLES)
def test_verify_passes_every_openvisus_sample(samples_dir, name):
    proc, d = run_json("verify", samples_dir / f"{name}.idx")
    assert proc.returncode == 0, proc.stdout
    assert d["ok"] and d["corrupt"] == 0
    with hzio.open(samples_dir / f"{name}.idx") as ds:
        present = sum(int(ds.blocks(field=f, time=t)["present"].sum()) for f in ds.fields for t in ds.times)
        assert len(d["tables"]) == len(ds.fields) * len(ds.times)
    assert d["present"] == present > 0


def test_verify_of_a_written_dataset_exits_0(volume):
    proc = run("verify", volume[0])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "OK" in proc.stdout


def _entry(data, slot):
    """(offset, size, flags) of header entry ``slot``: words 2, 3, 4, 5 of the 40-byte entry after the file header."""
    words = struct.unpack(">10I", data[40 + 40 * slot:80 + 40 * slot])
    return words[2] | words[3] << 32, words[4], words[5]


def test_verify_names_the_file_and_block_of_a_corrupt_zip_payload(sample_copy):
    idx = sample_copy("u8_2d_hzorder_zip")
    data_file = idx.parent / "u8_2d_hzorder_zip" / "0000.bin"
    data = bytearray(data_file.read_bytes())
    offset, size, flags = _entry(data, 2)
    assert flags & 0x0F == 3 and size > 8
    for i in range(offset + size // 2 - 2, offset + size // 2 + 2):
        data[i] ^= 0xFF
    data_file.write_bytes(bytes(data))

    proc = run("verify", idx)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "block 2" in proc.stdout and str(data_file) in proc.stdout and "corrupt" in proc.stdout.lower()
    proc, d = run_json("verify", idx)
    assert proc.returncode == 1 and not d["ok"] and d["corrupt"] == 1
    [bad] = d["tables"][0]["corrupt"]
    assert bad["block"] == 2 and bad["file"] == str(data_file) and bad["reason"]


def test_verify_reports_missing_blocks_without_failing(samples_dir):
    proc, d = run_json("verify", samples_dir / "u8_2d_partial_missing.idx")
    assert proc.returncode == 0
    assert (d["blocks"], d["present"], d["missing"], d["corrupt"], d["missing_files"]) == (8, 4, 4, 0, 0)
    text = run("verify", samples_dir / "u8_2d_partial_missing.idx")
    assert text.returncode == 0 and "4 missing" in text.stdout


def test_verify_reports_a_missing_data_file_without_failing(sample_copy):
    idx = sample_copy("u8_2d_hzorder_raw_multifile")
    gone = idx.parent / "u8_2d_hzorder_raw_multifile" / "0004.bin"
    gone.unlink()
    proc, d = run_json("verify", idx)
    assert proc.returncode == 0, proc.stdout
    assert d["tables"][0]["missing_files"] == [str(gone)]
    assert (d["present"], d["missing"]) == (6, 2)


def test_verify_fails_on_a_header_entry_pointing_outside_its_file(sample_copy):
    idx = sample_copy("u8_2d_hzorder_raw_multifile")
    data_file = idx.parent / "u8_2d_hzorder_raw_multifile" / "0002.bin"
    data = bytearray(data_file.read_bytes())
    data[48:52] = struct.pack(">I", 100_000)  # entry 0, word 2 (offset low)
    data_file.write_bytes(bytes(data))
    proc = run("verify", idx)
    assert proc.returncode == 1 and "header table" in proc.stdout and str(data_file) in proc.stdout


def test_verify_selects_one_field_and_timestep(samples_dir):
    _, d = run_json("verify", samples_dir / "u8_2d_time.idx", "--time", 1)
    assert [(t["field"], t["time"]) for t in d["tables"]] == [("data", 1)]
    assert_error(run("verify", samples_dir / "u8_2d_time.idx", "--time", 7), "timestep")
    assert_error(run("verify", samples_dir / "u8_2d_time.idx", "--field", "nope"), "nope")


# ---------------------------------------------------------------- dump
def _entries(d, field=None):
    return [e for step in d["timesteps"] for f in step["files"] for e in f["entries"]
            if field is None or e["field"] == field]


@pytest.mark.parametrize("name", ["f32_3d_2fields_zip", "u8_2d_hzorder_raw_multifile", "u8_2d_partial_missing",
                                  "f32_3d_rowmajor_lz4", "u8_2d_time"])
def test_dump_json_lists_what_blocks_returns(samples_dir, name):
    idx = samples_dir / f"{name}.idx"
    _, d = run_json("dump", idx)
    with hzio.open(idx) as ds:
        assert [step["time"] for step in d["timesteps"]] == ds.times
        for step in d["timesteps"]:
            for i, field in enumerate(ds.fields):
                expected = ds.blocks(field=field, time=step["time"])
                got = sorted((dict(e, file=f["path"]) for f in step["files"] for e in f["entries"]
                              if e["field"] == field), key=lambda e: e["block"])
                for key in ("block", "level", "offset", "size", "present", "file"):
                    assert [e[key] for e in got] == expected[key].tolist(), key
                slots = [b % ds.blocks_per_file for b in expected["block"].tolist()]  # format.md, File names
                assert [e["slot"] for e in got] == slots
                assert [e["entry"] for e in got] == [i * ds.blocks_per_file + s for s in slots]


def test_dump_offsets_match_the_header_bytes(samples_dir):
    _, d = run_json("dump", samples_dir / "f32_3d_2fields_zip.idx", "--field", "b")
    [step] = d["timesteps"]
    [f] = step["files"]
    raw = open(f["path"], "rb").read()
    assert [e["entry"] for e in f["entries"]] == list(range(8, 16))  # field b follows field a's 8 entries
    assert [e["slot"] for e in f["entries"]] == list(range(8))
    for e in f["entries"]:
        assert _entry(raw, e["entry"]) == (e["offset"], e["size"], 0x03)
        assert (e["codec"], e["layout"]) == ("zip", "hzorder")
    assert (f["entries"][0]["offset"], f["entries"][0]["size"]) == (59086, 932)  # idx-format.md 3.2


@pytest.mark.parametrize("name, codec, layout", [("f32_3d_rowmajor_lz4", "lz4", "rowmajor"),
                                                 ("f32_3d_zfp_reversible", "zfp", "hzorder"),
                                                 ("u8_2d_createidx_data", "zip", "rowmajor"),
                                                 ("u8_2d_rowmajor_raw", "raw", "rowmajor")])
def test_dump_names_codec_and_layout_from_the_flags(samples_dir, name, codec, layout):
    _, d = run_json("dump", samples_dir / f"{name}.idx")
    present = [e for e in _entries(d) if e["present"]]
    assert present and {(e["codec"], e["layout"]) for e in present} == {(codec, layout)}


def test_dump_shows_an_absent_data_file(sample_copy):
    idx = sample_copy("u8_2d_hzorder_raw_multifile")
    (idx.parent / "u8_2d_hzorder_raw_multifile" / "0002.bin").unlink()
    _, d = run_json("dump", idx)
    files = {os.path.basename(f["path"]): f for f in d["timesteps"][0]["files"]}
    assert sorted(files) == ["0000.bin", "0002.bin", "0004.bin", "0006.bin"]
    assert not files["0002.bin"]["exists"] and files["0002.bin"]["size_bytes"] is None
    assert [e["present"] for e in files["0002.bin"]["entries"]] == [False, False]
    assert files["0004.bin"]["size_bytes"] == 152 and all(e["present"] for e in files["0004.bin"]["entries"])
    assert "(file absent)" in run("dump", idx).stdout


def test_dump_text_uses_the_format_section_names(samples_dir):
    proc = run("dump", samples_dir / "u8_2d_partial_missing.idx")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for heading in ("The .idx file", "Data files", "Block header table", "Block payload"):
        assert any(line.startswith(heading) for line in lines), heading
    missing = [line.split() for line in lines if line.rstrip().endswith("missing")]
    assert sorted(int(cols[3]) for cols in missing) == [3, 5, 6, 7]
    row0 = next(line.split() for line in lines if line.split()[:5] == ["0", "data", "0", "0", "4"])
    assert row0[5:] == ["360", "16", "raw", "hzorder"]
