"""Dataset paths and overwrite: every path form works or is refused before the disk is touched, and
overwrite removes only the files of the dataset it replaces.

Oracles: NumPy arrays written and read back, OpenVisus reading the datasets, the ``hzio verify`` exit
status, and snapshots of the folder tree (names and bytes) taken before and after an operation.
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import hzio
import numpy as np
import ov_helpers as oh
import pytest

SHAPE = (8, 16, 16)


def tree(root: Path) -> dict:
    """Every entry below ``root``: relative path -> file bytes, "dir" or "special" (a FIFO, never opened)."""
    out = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = "dir" if p.is_dir() else p.read_bytes() if p.is_file() else "special"
    return out


def write(path, array, **options):
    with hzio.create(path, shape=array.shape, fields={"v": str(array.dtype)}, bits_per_block=6, **options) as ds:
        ds.write(array)


def verify(path, *flags):
    return subprocess.run([sys.executable, "-m", "hzio", "verify", str(path), *flags], capture_output=True,
                          text=True, timeout=120)


GOOD = ["d.idx", "d.IDX", "d.dat", "d", "my data.idx", "données ü.idx", "a.b.idx", ".hidden", "new/sub dir/d.idx",
        " spaced .idx"]


@pytest.mark.parametrize("name", GOOD)
def test_every_path_form_writes_reads_back_verifies_and_opens_in_openvisus(tmp_path, rng, name):
    path = tmp_path / name
    array = rng.random(SHAPE, dtype=np.float32)
    write(path, array)
    assert path.is_file()
    with hzio.open(path) as ds:
        np.testing.assert_array_equal(ds.read(), array)
    data_folders = [p for p in path.parent.iterdir() if p.is_dir()]
    assert len(data_folders) == 1 and data_folders[0] != path, data_folders
    proc = verify(path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if oh.have_openvisus():
        np.testing.assert_array_equal(oh.ov_read(path), array)


def test_a_name_without_extension_never_takes_the_data_folder_of_another_dataset(tmp_path, rng):
    first, second, third = (rng.random(SHAPE, dtype=np.float32) for _ in range(3))
    write(tmp_path / "a.idx", first)
    before = tree(tmp_path)
    with pytest.raises(hzio.InvalidArgumentError, match="is a folder"):
        write(tmp_path / "a", second, overwrite=True)  # "a" is a.idx's data folder
    assert tree(tmp_path) == before
    write(tmp_path / "c", second)  # data in c.data/
    before = tree(tmp_path)
    with pytest.raises(hzio.InvalidArgumentError, match="taken by a file"):
        write(tmp_path / "c.idx", third)  # its data folder c/ would be the .idx c
    assert tree(tmp_path) == before
    for name, array in [("a.idx", first), ("c", second)]:
        with hzio.open(tmp_path / name) as ds:
            np.testing.assert_array_equal(ds.read(), array)


BAD = {
    "folder path": lambda d: d / "sub",                # an existing folder
    "percent": lambda d: d / "p%d.idx",
    "template variable": lambda d: d / "$(x).idx",
    "newline": lambda d: d / "two\nlines.idx",
    "dot dot stem": lambda d: d / "...idx",
    "data folder is a file": lambda d: d / "run.idx",  # next to a file named run
    "not a regular file": lambda d: d / "fifo.idx",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_paths_that_cannot_hold_a_dataset_are_refused_before_anything_changes(tmp_path, case):
    (tmp_path / "sub").mkdir()
    (tmp_path / "run").write_bytes(b"someone's file")
    os.mkfifo(tmp_path / "fifo.idx")
    before = tree(tmp_path)
    with pytest.raises(hzio.InvalidArgumentError) as err:
        hzio.create(BAD[case](tmp_path), shape=SHAPE, fields={"v": "float32"})
    assert "Traceback" not in str(err.value) and str(err.value)
    assert tree(tmp_path) == before


def test_two_names_with_one_data_folder_are_refused_naming_the_other_dataset(tmp_path, rng):
    write(tmp_path / "run.v1", rng.random(SHAPE, dtype=np.float32))
    before = tree(tmp_path)
    for name in ["run.v2", "run.idx", "run.IDX"]:
        with pytest.raises(hzio.InvalidArgumentError, match="run.v1"):
            hzio.create(tmp_path / name, shape=SHAPE, fields={"v": "float32"})
    write(tmp_path / "c", rng.random(SHAPE, dtype=np.float32))  # data in c.data/
    with pytest.raises(hzio.InvalidArgumentError, match=r"dataset \S*/c;"):
        hzio.create(tmp_path / "c.data.idx", shape=SHAPE, fields={"v": "float32"})
    assert {k: v for k, v in tree(tmp_path).items() if k in before} == before


def test_overwrite_through_a_linked_data_folder_keeps_the_link_and_its_other_files(tmp_path, rng):
    elsewhere = tmp_path / "scratch"
    elsewhere.mkdir()
    (elsewhere / "other.txt").write_text("keep")
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "x").symlink_to(elsewhere)
    old, new = rng.random(SHAPE, dtype=np.float32), rng.random(SHAPE, dtype=np.float32)
    write(tmp_path / "ds" / "x.idx", old)
    assert any(p.suffix == ".bin" for p in elsewhere.iterdir())
    write(tmp_path / "ds" / "x.idx", new, overwrite=True)
    assert (tmp_path / "ds" / "x").is_symlink() and (elsewhere / "other.txt").read_text() == "keep"
    with hzio.open(tmp_path / "ds" / "x.idx") as ds:
        np.testing.assert_array_equal(ds.read(), new)


def test_a_data_folder_blocked_after_create_fails_the_write_cleanly(tmp_path, rng):
    path = tmp_path / "blocked.idx"
    array = rng.random(SHAPE, dtype=np.float32)
    ds = hzio.create(path, shape=SHAPE, fields={"v": "float32"}, bits_per_block=6)
    (tmp_path / "blocked").write_bytes(b"in the way")
    with pytest.raises(hzio.IoError, match="blocked"):
        ds.write(array)  # whole blocks go to the data files' logs at once
        ds.flush()
    ds.close()
    assert (tmp_path / "blocked").read_bytes() == b"in the way"


def test_overwrite_removes_only_the_replaced_datasets_files(tmp_path, rng):
    old = rng.random(SHAPE, dtype=np.float32)
    with hzio.create(tmp_path / "x.idx", shape=SHAPE, fields={"v": "float32"}, bits_per_block=4,
                     blocks_per_file=2, times=[0, 3]) as ds:
        ds.write(old, time=0)
        ds.write(old, time=3)
    folder = tmp_path / "x"
    (folder / "notes.txt").write_text("keep me")
    (folder / "time_0003" / "plot.png").write_bytes(b"png")
    (folder / "empty_of_mine").mkdir()
    new = rng.random((4, 4, 4), dtype=np.float32)
    write(tmp_path / "x.idx", new, overwrite=True)
    assert (folder / "notes.txt").read_text() == "keep me"
    assert (folder / "time_0003" / "plot.png").read_bytes() == b"png"
    assert (folder / "empty_of_mine").is_dir()  # a folder the dataset's templates do not name
    assert not (folder / "time_0000").exists()  # emptied of the old dataset's files: removed
    assert sorted(p.name for p in (folder / "time_0003").iterdir()) == ["plot.png"]
    with hzio.open(tmp_path / "x.idx") as ds:
        np.testing.assert_array_equal(ds.read(), new)


@pytest.mark.parametrize("bad", ["shape", "dtype", "default", "bitmask"])
def test_overwrite_with_invalid_settings_removes_nothing(tmp_path, rng, bad):
    old = rng.random(SHAPE, dtype=np.float32)
    write(tmp_path / "y.idx", old)
    before = tree(tmp_path)
    options = dict(shape=SHAPE, fields={"v": "float32"}, overwrite=True)
    if bad == "shape":
        options["shape"] = (0, 4, 4)
    elif bad == "dtype":
        options["fields"] = {"v": "float33"}
    elif bad == "default":
        options["fields"] = [("v", "uint8", {"default_value": 300})]
    else:
        options["bitmask"] = "V01"
    with pytest.raises(hzio.Error):
        hzio.create(tmp_path / "y.idx", **options)
    assert tree(tmp_path) == before
    with hzio.open(tmp_path / "y.idx") as ds:
        np.testing.assert_array_equal(ds.read(), old)


def test_overwrite_refuses_a_file_that_is_not_a_dataset(tmp_path):
    target = tmp_path / "vol.npy"
    np.save(target, np.zeros(3))
    before = tree(tmp_path)
    with pytest.raises(hzio.InvalidArgumentError, match="not a dataset hzio can read"):
        hzio.create(target, shape=SHAPE, fields={"v": "float32"}, overwrite=True)
    assert tree(tmp_path) == before


@pytest.mark.parametrize("overwrite", [False, True])
def test_create_refuses_a_data_folder_holding_files_of_no_dataset(tmp_path, rng, overwrite):
    write(tmp_path / "z.idx", rng.random(SHAPE, dtype=np.float32))
    (tmp_path / "z.idx").unlink()  # the data files stay: the new dataset would read them as its own
    before = tree(tmp_path)
    with pytest.raises(hzio.InvalidArgumentError, match="belongs to no dataset"):
        hzio.create(tmp_path / "z.idx", shape=SHAPE, fields={"v": "float32"}, overwrite=overwrite)
    assert tree(tmp_path) == before


def test_a_create_whose_writes_fail_leaves_nothing_behind(tmp_path, rng):
    with pytest.raises(RuntimeError):
        with hzio.create(tmp_path / "new/deeper/w.idx", shape=SHAPE, fields={"v": "float32"}) as ds:
            ds.write(rng.random(SHAPE, dtype=np.float32))
            raise RuntimeError("the simulation crashed")
    assert tree(tmp_path) == {}


def test_a_create_whose_first_commit_fails_leaves_nothing_behind(tmp_path, rng):
    ds = hzio.create(tmp_path / "c.idx", shape=SHAPE, fields={"v": "float32"}, bits_per_block=6)
    ds.write(rng.random(SHAPE, dtype=np.float32))
    hzio._core.inject_fault(ds._core, "write", r"\.bin", 28)
    with pytest.raises(hzio.IoError, match="disk full"):
        ds.close()
    assert tree(tmp_path) == {}


def test_a_create_whose_first_commit_fails_after_publishing_some_files_leaves_nothing(tmp_path, rng):
    ds = hzio.create(tmp_path / "r.idx", shape=SHAPE, fields={"v": "float32"}, bits_per_block=6, blocks_per_file=1)
    ds.write(rng.random(SHAPE, dtype=np.float32))
    hzio._core.inject_fault(ds._core, "rename", r"/0003\.bin$", 5)  # EIO on the fourth file: three are published
    with pytest.raises(hzio.IoError):
        ds.close()
    assert tree(tmp_path) == {}


def test_a_failed_convert_leaves_nothing_and_the_next_run_succeeds(tmp_path, rng):
    array = rng.random((16, 16, 16), dtype=np.float32)
    np.save(tmp_path / "vol.npy", array)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    before = tree(tmp_path)
    # A real limit, not a simulated one: the child may write files of at most 4 KiB (RLIMIT_FSIZE, with
    # SIGXFSZ ignored so that the write fails with EFBIG), enough for the .idx, not for the data.
    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    convert = [sys.executable, "-m", "hzio", "convert", str(tmp_path / "vol.npy"), str(tmp_path / "out.idx")]
    proc = subprocess.run(convert, capture_output=True, text=True, timeout=120,
                          env=dict(env, PYTHONDONTWRITEBYTECODE="1"), preexec_fn=limit_file_size)
    assert proc.returncode == 2 and os.strerror(errno.EFBIG) in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert tree(tmp_path) == before
    proc = subprocess.run([sys.executable, "-m", "hzio", "convert", str(tmp_path / "vol.npy"),
                           str(tmp_path / "out.idx")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with hzio.open(tmp_path / "out.idx") as ds:
        np.testing.assert_array_equal(ds.read(), array)


def test_verify_fails_when_every_block_of_a_timestep_is_missing(tmp_path, rng):
    array = rng.random(SHAPE, dtype=np.float32)
    with hzio.create(tmp_path / "m.idx", shape=SHAPE, fields={"v": "float32"}, times=[0, 1]) as ds:
        ds.write(array, time=0)  # timestep 1 is declared but never written
    proc = verify(tmp_path / "m.idx")
    assert proc.returncode == 1 and "EMPTY" in proc.stdout and "1" in proc.stdout.split("EMPTY")[1], proc.stdout
    assert verify(tmp_path / "m.idx", "--allow-missing").returncode == 0
    assert verify(tmp_path / "m.idx", "--time", "0").returncode == 0
    for f in (tmp_path / "m").rglob("*.bin"):
        f.unlink()  # every block of every timestep missing
    proc = verify(tmp_path / "m.idx", "--time", "0")
    assert proc.returncode == 1 and "EMPTY" in proc.stdout, proc.stdout
