"""Dedicated I/O ranks: the files equal the synchronous collective write of the same boxes, byte for
byte, with nodes emulated by $HZIO_RANKS_PER_NODE, one or two I/O ranks per node and buffers smaller than
a timestep (back-pressure); the I/O side's errors reach the compute ranks; a reader in another process
sees each timestep once it is committed (refresh, wait_for_time). Oracles: the synchronous write's
files and the NumPy arrays written."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import hzio
import numpy as np
import pytest

HERE = Path(__file__).resolve().parent


def _same_trees(a: Path, b: Path) -> list[str]:
    names_a = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    names_b = sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    if names_a != names_b:
        return [f"file lists differ: {names_a} vs {names_b}"]
    return [n for n in names_a if not filecmp.cmp(a / n, b / n, shallow=False)]


def _run(nprocs, per_node_env, payload, timeout=300, script="io_ranks_write"):
    import mpi_launch
    mpi_launch.skip_module_without_mpi()
    old = os.environ.get("HZIO_RANKS_PER_NODE")
    os.environ["HZIO_RANKS_PER_NODE"] = str(per_node_env)
    try:
        return mpi_launch.run_json(nprocs, script, payload, timeout=timeout)
    finally:
        if old is None:
            del os.environ["HZIO_RANKS_PER_NODE"]
        else:
            os.environ["HZIO_RANKS_PER_NODE"] = old


@pytest.mark.parametrize("nprocs,node,per_node,buffer,codec,in_place", [
    (3, 3, 1, 48 << 10, "zip", False),   # one node: 2 compute ranks, 1 I/O rank, a buffer below one timestep
    (6, 3, 1, 1 << 20, "raw", False),    # two nodes, one I/O rank each
    (5, 5, 2, 32 << 10, "lz4", False),   # one node with two I/O ranks
    (9, 3, 1, 96 << 10, "zip-Z_BEST_SPEED", False),  # three nodes
    (6, 3, 1, 1 << 20, "lz4", True),     # outputs computed into the shared buffer, handed over in place
], ids=["3ranks", "6ranks-2nodes", "5ranks-2io", "9ranks-3nodes", "6ranks-in-place"])
def test_files_equal_the_synchronous_write(tmp_path, nprocs, node, per_node, buffer, codec, in_place):
    result, describe = _run(nprocs, node, {"out": str(tmp_path), "per_node": per_node, "buffer_bytes": buffer,
                                           "steps": 3, "codec": codec, "seed": nprocs, "in_place": in_place})
    assert result is not None, describe
    assert result["compute_ranks"] == nprocs - per_node * (nprocs // node)
    assert _same_trees(tmp_path / "io", tmp_path / "sync") == []
    sys.path.insert(0, str(HERE / "mpi_scripts"))
    from io_ranks_write import arrays
    with hzio.open(str(tmp_path / "io" / "run.idx")) as ds:
        assert ds.times == [0, 1, 2, 3]  # 3: written after opening it again through the I/O ranks
        for step in range(4):
            want = arrays(tuple(result["shape"]), step, nprocs)
            np.testing.assert_array_equal(ds.read(field="t", time=step), want["t"])
            np.testing.assert_array_equal(ds.read(field="w", time=step), want["w"])
    flushes = [r for rank in result["reports"] for r in rank]
    if in_place:  # nothing copied: the arrays lay in the buffer
        assert all(r["copied"] == 0 and r["in_place"] > 0 for r in flushes), flushes
    else:
        assert all(r["copied"] > 0 and r["in_place"] == 0 for r in flushes), flushes
    if buffer < 64 << 10:  # smaller than a rank's share of one timestep: flushes waited for buffer space
        assert any(r["reason"] == "buffer full" and r["waited"] > 0 for r in flushes), flushes
        assert any(r["pieces"] > 1 for r in flushes)


def test_arrays_lent_in_place_stay_until_written_with_timesteps_in_flight(tmp_path):
    # in_flight=2 and zip on the I/O rank: flush k is called while step k - 1 is still being written from its
    # array in the node's buffer, which the compute ranks overwrite as soon as flush k returns
    result, describe = _run(3, 3, {"out": str(tmp_path), "steps": 5}, script="io_ranks_in_place")
    assert result is not None, describe
    sys.path.insert(0, str(HERE / "mpi_scripts"))
    from io_ranks_in_place import step_array
    with hzio.open(str(tmp_path / "run.idx")) as ds:
        assert ds.times == [0, 1, 2, 3, 4]
        for step in range(5):
            np.testing.assert_array_equal(ds.read(field="t", time=step), step_array(step), err_msg=f"step {step}")
    flushes = [r for rank in result["reports"] for r in rank]
    assert all(r["copied"] == 0 and r["in_place"] > 0 for r in flushes), flushes
    assert any(r["reason"] == "in-place arrays in flight" and r["waited"] > 0 for r in flushes), flushes


def test_a_refused_flush_also_keeps_in_place_arrays_until_written(tmp_path):
    # in_flight=2: step 0 handed over in place, then a flush refused before it hands anything over (a copy's
    # plane exceeds the room); its caller overwrites step 0's array as soon as it returns
    result, describe = _run(3, 3, {"out": str(tmp_path), "steps": 2, "refuse": True}, script="io_ranks_in_place")
    assert result is not None, describe
    assert "does not fit" in (result["refused"] or ""), result["refused"]
    sys.path.insert(0, str(HERE / "mpi_scripts"))
    from io_ranks_in_place import step_array
    with hzio.open(str(tmp_path / "refused.idx")) as ds:
        assert 0 in ds.times
        np.testing.assert_array_equal(ds.read(field="t", time=0), step_array(0))


def test_an_error_on_the_io_side_reaches_every_compute_rank(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    bad = str(tmp_path / "a-file" / "run.idx")
    result, describe = _run(3, 3, {"out": str(tmp_path), "per_node": 1, "buffer_bytes": 1 << 16, "steps": 1,
                                   "codec": "raw", "seed": 0, "bad_path": bad})
    assert result is not None, describe
    assert len(result["errors"]) == 2 and all(e and "could not create" in e for e in result["errors"])


def test_a_failed_dataset_does_not_pile_up_the_steps_it_will_never_write(tmp_path):
    # step 0 committed, then the data folder becomes a file: every later flush fails on the I/O side, which
    # copies each step out of its small buffer; the copies of a dataset that can no longer flush must go
    result, describe = _run(3, 3, {"out": str(tmp_path), "flushes": 8}, script="io_ranks_failed")
    assert result is not None, describe
    for errors in result["errors"]:
        assert all(e is not None for e in errors), errors
    first, last = result["rss_kib"]
    # six more steps of 16 MiB each reached the I/O rank after the first measure; kept, they would add 96 MiB
    assert last - first < 32 * 1024, result["rss_kib"]


def test_start_io_ranks_checks_its_arguments():
    pytest.importorskip("mpi4py")
    from mpi4py import MPI
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.start_io_ranks(MPI.COMM_SELF, per_node=1)  # a node of one rank has no compute rank left
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.start_io_ranks(MPI.COMM_SELF, buffer_bytes=10)


@pytest.mark.parametrize("buffer,shared", [(1 << 20, True), (6 << 10, False)],
                         ids=["slots-hold-a-step", "smaller-than-a-step"])
def test_two_datasets_through_the_same_io_ranks_keep_their_own_bytes(tmp_path, buffer, shared):
    # write() copies into the next flush's slot of the node's buffer when it has room; another dataset's
    # flush, or a shared array taken meanwhile, must move those copies out of the way first.
    result, describe = _run(4, 4, {"out": str(tmp_path), "buffer_bytes": buffer, "steps": 4, "shared": shared},
                            script="io_ranks_two")
    assert result is not None, describe
    sys.path.insert(0, str(HERE / "mpi_scripts"))
    from io_ranks_two import values
    shape = tuple(result["shape"])
    for name in "ab":
        with hzio.open(str(tmp_path / f"{name}.idx")) as ds:
            assert ds.times == [0, 1, 2, 3]
            for step in range(4):
                np.testing.assert_array_equal(ds.read(field="t", time=step), values(shape, name, step))


def test_a_shared_buffer_larger_than_the_node_can_hold_is_refused_at_start():
    # The buffer's memory is reserved at the start: a compute rank's first copy cannot meet a full /dev/shm
    # (which would end it with SIGBUS). 1 TiB is beyond any test machine's shared memory.
    result, describe = _run(2, 2, {"buffer_bytes": 1 << 40}, script="io_ranks_start")
    assert result is not None, describe
    assert len(result["errors"]) == 2
    for kind, message in result["errors"]:
        assert kind == "IoError" and "/dev/shm" in message and "buffer_bytes" in message, message


WRITER = textwrap.dedent("""
    import sys, time, numpy as np, hzio
    path, steps = sys.argv[1], int(sys.argv[2])
    with hzio.create(path, shape=(32, 32, 32), fields={"t": "float32"}, times=[0], overwrite=True) as ds:
        ds.write(np.full((32, 32, 32), 0, np.float32), time=0)
    for step in range(1, steps):
        time.sleep(0.2)
        with hzio.open(path, mode="r+") as ds:
            ds.write(np.full((32, 32, 32), step, np.float32), time=step)
""")


def test_a_reader_sees_each_timestep_once_committed(tmp_path):
    path = str(tmp_path / "live.idx")
    steps = 5
    writer = subprocess.Popen([sys.executable, "-c", WRITER, path, str(steps)])
    try:
        deadline = 60
        import time
        start = time.monotonic()
        while not os.path.exists(path):
            assert time.monotonic() - start < deadline
            time.sleep(0.02)
        with hzio.open(path) as ds:
            for step in range(steps):
                ds.wait_for_time(step, timeout=deadline)
                assert step in ds.times
                got = ds.read(time=step)
                assert np.all(got == step), step  # never a partial timestep
            assert not ds.refresh()  # nothing new after the last commit
            with pytest.raises(hzio.WaitTimeoutError):
                ds.wait_for_time(steps + 1, timeout=0.3)
    finally:
        assert writer.wait(timeout=60) == 0


@pytest.mark.parametrize("victim", ["io", "compute"])
def test_a_killed_rank_leaves_every_committed_timestep_intact(tmp_path, victim):
    import signal
    import time

    import mpi_launch
    mpi_launch.skip_module_without_mpi()
    sys.path.insert(0, str(HERE / "mpi_scripts"))
    from io_ranks_kill import values
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", HZIO_RANKS_PER_NODE="4")
    cmd = [mpi_launch.MPIEXEC, "-n", "4", *mpi_launch.launcher_flags(), sys.executable,
           str(HERE / "mpi_scripts" / "io_ranks_kill.py"), f'{{"out": "{tmp_path}"}}']
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    path = str(tmp_path / "run.idx")
    try:
        deadline = time.monotonic() + 120
        committed = []
        while len(committed) < 3:  # let a few timesteps commit, then kill in the middle of the run
            assert time.monotonic() < deadline and proc.poll() is None, "the run did not reach 3 commits"
            try:
                with hzio.open(path) as ds:
                    committed = ds.times
            except hzio.Error:
                pass
            time.sleep(0.05)
        pid = int((tmp_path / f"pid.{3 if victim == 'io' else 1}").read_text())
        os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=120)  # mpiexec aborts the other ranks
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0
    with hzio.open(path) as ds:
        assert ds.times[: len(committed)] == committed and len(ds.times) < 200
        for step in ds.times:  # every listed timestep is whole: never a partial one
            np.testing.assert_array_equal(ds.read(time=step), values(step))
    verify = subprocess.run([sys.executable, "-m", "hzio", "verify", path], capture_output=True, text=True,
                            timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
