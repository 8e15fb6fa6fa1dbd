"""Collective (MPI) writes: the files equal a one-process write's, OpenVisus reads them, a crash keeps them valid.

Each case runs ``mpi_scripts/write_random.py`` under ``mpiexec`` at 1, 2, 3, 4 and 8 ranks (more ranks
than cores are oversubscribed). The script writes random fields of several dtypes and timesteps, cut into
a random uneven decomposition with random rank owners (some ranks own nothing), collectively into
``parallel.idx``, then rank 0 writes the same boxes with the one-process writer into ``serial.idx``.
One ``mpiexec`` run per (rank count, case) serves every test of that pair. The kill tests run
``mpi_scripts/write_then_die.py``, which commits timestep 0 and then loses a rank while timestep 1 is
written; mpiexec must abort the job and the dataset must stay readable at its last commit.

Notes
-----
The whole module is skipped when ``mpiexec`` or mpi4py is missing or hzio was built without MPI.
Every ``mpiexec`` runs in its own session with a 60 s timeout; on timeout, or if a process outlives
``mpiexec``, the session is killed and the test fails. About a minute on two cores.

Environment: ``HZIO_TEST_SEED`` reproduces a run (the seed is printed); ``HZIO_MPIEXEC`` names the
launcher (default ``mpiexec``); ``OMPI_ALLOW_RUN_AS_ROOT`` is set for Open MPI under root.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import hz_expect as he
import hzio  # the package under test: a missing build must fail, not skip
import mpi_launch
import numpy as np
import ov_helpers as oh
import pytest

SCRIPTS = mpi_launch.SCRIPTS
MPIEXEC = mpi_launch.MPIEXEC
TIMEOUT_S = 60

mpi_launch.skip_module_without_mpi()


def _load(name):
    spec = importlib.util.spec_from_file_location(f"hzio_mpi_script_{name}", SCRIPTS / f"{name}.py")
    spec.loader.exec_module(module := importlib.util.module_from_spec(spec))
    return module


write_random = _load("write_random")
write_then_die = _load("write_then_die")

RANKS = (1, 2, 3, 4, 8)
CASES = {
    # Three fields of different dtypes, one declared timestep never written, an idle rank.
    "zip-hzorder-localized": dict(
        shape=[40, 33, 17], fields=[["t", "float32"], ["p", "int16"], ["c", "uint8[3]"]], times=[0, 2, 5],
        written_times=[0, 5], codec="zip", layout="hzorder", bits_per_block=10, blocks_per_file=4,
        placement="localized", idle_ranks=1, borrow=0.5, rewrite=0.3, sub_block_bits=3),
    # Per-field codec and layout, an explicit bitmask with a spare digit, one block per round.
    "lz4-rowmajor-uniform-rounds": dict(
        shape=[23, 30, 19], fields=[["a", "float64"], ["m", "uint8", {"codec": "raw", "layout": "hzorder"}],
                                    ["c", "uint8[3]"]],
        times=[1, 2], codec="lz4", layout="rowmajor",
        bitmask=he.random_bitmask(np.random.default_rng(2024), (23, 30, 19), extra=1), bits_per_block=8,
        blocks_per_file=2, placement="uniform", aggregator_count=2, aggregator_bytes=1, durable=True),
    # 2-D, no time folder, boxes left unwritten, two collective flushes (the second rewrites files).
    "raw-2d-holes-two-flushes": dict(
        shape=[45, 37], fields=[["i", "int32"], ["t", "float32", {"codec": "zip"}]], times=None, codec="raw",
        bits_per_block=7, blocks_per_file=3, placement="localized", aggregator_bytes=1500, holes=0.25,
        flushes=2, borrow=0.5, rewrite=0.3, sub_block_bits=2),
    # Blocks of 4 and 8 bytes staged back to back for direct writes: a byte too many would overwrite a
    # neighbour.
    "raw-tiny-blocks-durable": dict(
        shape=[19, 14, 9], fields=[["b", "uint8"], ["s", "int16"]], times=None, codec="raw",
        bits_per_block=2, blocks_per_file=16, placement="localized", durable=True),
    # Slabs holding whole blocks: float32 blocks of 64 KiB travel detached and are received straight
    # into the staged files; int16 blocks (32 KiB) stay in the bulk messages; two timesteps, small rounds.
    "raw-detached-blocks-durable": dict(
        shape=[128, 64, 64], fields=[["f", "float32"], ["s", "int16"]], times=[0, 1], codec="raw",
        bits_per_block=14, blocks_per_file=4, placement="localized", aggregator_bytes=200000, durable=True,
        slabs=True),
    # Domain partitioning in global index space (the files stay those of one process): boxes straddle
    # the partition planes, partitions without a rank of their own, shared files merged, rewrites.
    "zip-partitions-2": dict(
        shape=[40, 33, 17], fields=[["t", "float32"], ["c", "uint8[3]"]], times=[0, 3], codec="zip",
        bits_per_block=8, blocks_per_file=4, placement="localized", partitions=2, borrow=0.5, rewrite=0.3,
        sub_block_bits=2),
    "raw-partitions-4-two-flushes": dict(
        shape=[31, 44, 20], fields=[["a", "float64"], ["i", "int16", {"codec": "lz4"}]], times=[0, 1],
        codec="raw", layout="rowmajor", bits_per_block=7, blocks_per_file=2, placement="uniform",
        aggregator_bytes=3000, partitions=4, flushes=2, holes=0.2),
    # Every write (junk rewrites too) from node memory: the aggregators read the boxes where they lie, so
    # no record travels; a rank's overlapping writes must keep their order.
    "zip-node-memory-rewrites": dict(
        shape=[40, 33, 17], fields=[["t", "float32"], ["c", "uint8[3]"]], times=[0, 2], codec="zip",
        bits_per_block=9, blocks_per_file=4, placement="localized", idle_ranks=1, rewrite=0.3, node_memory=1.0,
        sub_block_bits=2),
    # Half the writes from node memory, the others borrowed or copied: ranks with both are not read where
    # they lie; whole raw blocks in rounds, durable.
    "raw-node-memory-mixed-slabs": dict(
        shape=[128, 64, 64], fields=[["f", "float32"], ["s", "int16", {"codec": "lz4"}]], times=[0, 1],
        codec="raw", bits_per_block=14, blocks_per_file=4, placement="localized", aggregator_bytes=200000,
        durable=True, slabs=True, borrow=0.5, rewrite=0.3, node_memory=0.5),
    "raw-slabs-partitions-8": dict(
        shape=[64, 32, 32], fields=[["f", "float32"]], times=[0, 1], codec="raw", bits_per_block=9,
        blocks_per_file=8, placement="localized", partitions=8, slabs=True, durable=True),
}
KILLS = [  # (ranks, mode, victim, fraction of the timestep-0 flush time after which the victim dies, partitions)
    (2, "before_flush", 1, 0.0, 1),
    (3, "in_flush", 1, 0.3, 1),
    (3, "in_flush", 2, 0.75, 1),
    (3, "in_flush", 1, 0.9, 1),
    (3, "in_flush", 0, 1.2, 1),
    (4, "in_flush", 2, 0.6, 1),
    (4, "in_flush", 1, 0.5, 2),
    (4, "in_flush", 3, 0.9, 4),
]


# ---------------------------------------------------------------------------------------------- mpiexec
@dataclass
class Run:
    cmd: list
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self):
        return (f"command: {' '.join(self.cmd)}\nexit code {self.returncode} after {self.seconds:.1f} s\n"
                f"stdout (end):\n{self.stdout[-3000:]}\nstderr (end):\n{self.stderr[-3000:]}")


LAUNCHER_FLAGS = mpi_launch.launcher_flags()


def _session_members(sid):
    """Pids of live processes in session ``sid`` (Linux /proc; empty elsewhere)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


def run_mpi(nprocs, script, payload, timeout=TIMEOUT_S):
    """Run ``script`` under mpiexec in its own session; on timeout kill the session and fail.

    Also fails if any process of the session outlives mpiexec (after killing it).
    """
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONUNBUFFERED="1")
    cmd = [MPIEXEC, "-n", str(nprocs), *LAUNCHER_FLAGS, sys.executable, str(script), json.dumps(payload)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        run = Run(cmd, proc.returncode, out, err, time.monotonic() - start)
        pytest.fail(f"mpiexec did not finish within {timeout} s; its process group was killed\n{run.describe()}")
    run = Run(cmd, proc.returncode, out, err, time.monotonic() - start)
    deadline = time.monotonic() + 5
    while _session_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _session_members(proc.pid)
    if left:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"processes {left} outlived mpiexec (killed now)\n{run.describe()}")
    return run


# ---------------------------------------------------------------------------------------------- random writes
@pytest.fixture(scope="module")
def collective_run(tmp_path_factory):
    """``collective_run(seed, nprocs, name)`` -> (case, result JSON); one mpiexec run per key."""
    runs = {}

    def get(seed, nprocs, name):
        key = (seed, nprocs, name)
        if key not in runs:
            out = tmp_path_factory.mktemp(f"{name}-n{nprocs}")
            run = run_mpi(nprocs, SCRIPTS / "write_random.py", {"out": str(out), "seed": seed, "case": CASES[name]})
            lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
            runs[key] = (run, json.loads(lines[-1]) if run.returncode == 0 and lines else None)
            print(f"{name} at {nprocs} ranks: {run.seconds:.1f} s")
        run, result = runs[key]
        if result is None:
            pytest.fail(f"write_random.py failed\n{run.describe()}")
        return write_random.normalize_case(CASES[name]), result

    return get


def _tree(root: Path):
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*")) if p.is_file()}


def _times(case):
    return case["times"] if case["times"] is not None else [0]


def _present_blocks(ds, case):
    """Present blocks of every (field, timestep): rows of (field, time, file, size)."""
    rows = []
    for f, t in write_random.all_keys(case):
        for b in ds.blocks(field=f, time=t):
            if b["present"]:
                rows.append((f, t, str(b["file"]), int(b["size"])))
    return rows


grid = pytest.mark.parametrize("nprocs", RANKS, ids=lambda n: f"{n}ranks")
cases = pytest.mark.parametrize("name", list(CASES))


@grid
@cases
def test_collective_files_are_byte_identical_to_one_process_files(collective_run, seed, nprocs, name):
    case, result = collective_run(seed, nprocs, name)
    assert result["same_data"], "the ranks built different global arrays from the same seed"
    par, ser = Path(result["parallel"]), Path(result["serial"])
    par_files, ser_files = _tree(par.with_suffix("")), _tree(ser.with_suffix(""))
    assert par_files, "the collective write left no data file"
    assert sorted(par_files) == sorted(ser_files), "the two writes left different files"
    for rel, p in par_files.items():
        a, b = p.read_bytes(), ser_files[rel].read_bytes()
        if a != b:
            n = min(len(a), len(b))
            first = next((i for i in range(n) if a[i] != b[i]), n)
            pytest.fail(f"{rel} differs: {len(a)} bytes collectively, {len(b)} from one process, "
                        f"first difference at byte {first}")
    par_text, ser_text = par.read_text(), ser.read_text()
    assert par_text.count("./parallel/") == 1, par_text
    assert par_text.replace("./parallel/", "./serial/") == ser_text


@pytest.mark.parametrize("name", ["zip-node-memory-rewrites", "raw-node-memory-mixed-slabs"])
def test_node_memory_across_emulated_nodes_is_read_where_it_lies_only_on_its_node(tmp_path, seed, name):
    """Four ranks as two nodes of two ($HZIO_RANKS_PER_NODE): a box in node memory is read where it lies
    by aggregators of its own node and sent to the others; the files stay those of one process.

    Every rank writes a slab along the first axis, so the first block (coarse samples from the whole
    domain) needs data from both nodes: its aggregator must receive from the other node, and its node-mate
    must not send. With random boxes, all writers may fall on one node and nothing would cross."""
    runs = {}
    for per_node, node_memory in (("2", 1.0), ("4", 1.0), ("2", 0.0)):
        case = dict(CASES[name], node_memory=node_memory, borrow=1.0, slabs=True)
        env_before = os.environ.get("HZIO_RANKS_PER_NODE")
        os.environ["HZIO_RANKS_PER_NODE"] = per_node
        try:
            out = tmp_path / f"per-node-{per_node}-{node_memory}"
            run = run_mpi(4, SCRIPTS / "write_random.py", {"out": str(out), "seed": seed, "case": case})
        finally:
            if env_before is None:
                del os.environ["HZIO_RANKS_PER_NODE"]
            else:
                os.environ["HZIO_RANKS_PER_NODE"] = env_before
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
        assert run.returncode == 0 and lines, run.describe()
        runs[per_node, node_memory] = json.loads(lines[-1])
    for key, result in runs.items():
        par, ser = Path(result["parallel"]).with_suffix(""), Path(result["serial"]).with_suffix("")
        par_files, ser_files = _tree(par), _tree(ser)
        assert sorted(par_files) == sorted(ser_files) and par_files
        assert all(p.read_bytes() == ser_files[rel].read_bytes() for rel, p in par_files.items()), key
    messages = {key: sum(r["messages"] for r in result["reports"][0]) for key, result in runs.items()}
    assert messages["4", 1.0] == 0, "on one node every box in node memory is read where it lies"
    # On two nodes the other node's aggregators cannot read a box where it lies (it is sent), its own can.
    assert 0 < messages["2", 1.0] < messages["2", 0.0], messages


@grid
@cases
def test_collective_flush_reports_match_the_writes(collective_run, seed, nprocs, name):
    case, result = collective_run(seed, nprocs, name)
    writes = write_random.plan_writes(seed, case, nprocs)
    arrays = write_random.build_arrays(seed, case)
    staged = np.zeros((nprocs, case["flushes"]), dtype=np.int64)
    for rank, flush, f, t, lo, hi in writes:
        staged[rank, flush] += arrays[(f, t)][tuple(slice(l, h) for l, h in zip(lo, hi))].nbytes
    assert result["staged_bytes"] == staged.tolist()
    if case["idle_ranks"] and nprocs > case["idle_ranks"]:
        assert (staged.sum(axis=1) == 0).sum() >= case["idle_ranks"], "no rank was left without a box"
    junk = np.array(result["junk_bytes"], dtype=np.int64)  # rewritten regions: staged, then replaced
    if case["rewrite"] > 0:
        assert junk.sum() > 0, "no rank rewrote a region: the case tests nothing of rewrites"
    reports = result["reports"]
    assert len(reports) == nprocs and all(len(r) == case["flushes"] for r in reports)
    assert all(r == reports[0] for r in reports), "ranks returned different reports for the same flush"
    cap = case["aggregator_count"] or nprocs
    for i, rep in enumerate(reports[0]):
        assert rep["ranks"] == nprocs
        assert rep["bytes"] == staged[:, i].sum() + junk[:, i].sum()
        assert rep["placement"] == case["placement"]
        if staged[:, i].sum() == 0:  # nothing staged anywhere: an empty flush
            assert (rep["files"], rep["file_bytes"], rep["rounds"]) == (0, 0, 0), rep
            continue
        assert rep["files"] >= 1 and 1 <= rep["aggregators"] <= min(nprocs, cap)
        assert rep["partitions"] == case["partitions"]
        if case["partitions"] == 1:
            assert rep["rounds"] >= math.ceil(rep["files"] / rep["aggregators"])
            assert not rep["groups"] and rep["merge"]["files"] == 0 and rep["moved_messages"] == 0
        else:
            _check_partitioned_report(rep, case, nprocs)
        assert sum(lv["bytes"] for lv in rep["levels"]) == rep["file_bytes"]
        if case.get("node_memory", 0) == 1.0 and case["partitions"] == 1:  # every rank on this machine's node
            assert rep["messages"] == 0, "boxes in node memory were sent instead of read where they lie"
    if case["flushes"] != 1:
        return
    rep = reports[0][0]
    with hzio.open(result["parallel"]) as ds:
        rows = _present_blocks(ds, case)
    bins = list(Path(result["parallel"]).with_suffix("").rglob("*.bin"))
    assert rep["files"] == len(bins) == len({r[2] for r in rows})
    assert rep["file_bytes"] == sum(r[3] for r in rows)
    assert sum(lv["blocks"] for lv in rep["levels"]) == len(rows)
    if case["aggregator_bytes"] == 1:  # every block is its own chunk; a file's chunks share one aggregator
        assert rep["rounds"] >= max(Counter(r[2] for r in rows).values())


def _check_partitioned_report(rep, case, nprocs):
    """The groups of a partitioned write hold every rank once and every partition at most once; their
    files and the merged ones are all the files; every group's rounds are within the report's."""
    groups = rep["groups"]
    assert sum(g["ranks"] for g in groups) == nprocs
    named = sorted(p for g in groups for p in g["partitions"])
    assert len(named) == len(set(named)) and set(named) <= set(range(case["partitions"]))
    assert all(g["partition"] in g["partitions"] for g in groups)
    assert rep["files"] == sum(g["files"] for g in groups) + rep["merge"]["files"]
    assert rep["merge"]["files"] >= 1 and 1 <= rep["merge"]["mergers"] <= len(groups)
    assert rep["merge"]["messages"] <= rep["merge"]["files"] * len(groups) * max(1, rep["rounds"])
    assert rep["messages"] == sum(g["messages"] for g in groups) + rep["merge"]["messages"] + rep["moved_messages"]
    for g in groups:
        if g["files"]:
            assert 1 <= g["aggregators"] <= g["ranks"]
            assert rep["rounds"] >= math.ceil(g["files"] / g["aggregators"])


@grid
@cases
def test_one_process_report_matches_collective_report(collective_run, seed, nprocs, name):
    case, result = collective_run(seed, nprocs, name)
    serial, par = result["serial_report"], result["reports"][0]
    assert serial["ranks"] == 1 and serial["placement"] == "serial"
    assert serial["bytes"] + sum(map(sum, result["junk_bytes"])) == sum(r["bytes"] for r in par)
    if case["flushes"] == 1:
        assert serial["file_bytes"] == par[0]["file_bytes"]
        assert serial["levels"] == par[0]["levels"]


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.get("flushes", 1) == 1])
def test_one_process_report_counts_the_files_it_wrote(collective_run, seed, name):
    """``files`` means "data files written" in both writers (include/hzio/write_report.hpp)."""
    _, result = collective_run(seed, 2, name)
    bins = list(Path(result["serial"]).with_suffix("").rglob("*.bin"))
    assert result["reports"][0][0]["files"] == len(bins)
    assert result["serial_report"]["files"] == len(bins)


@grid
@cases
def test_hzio_reads_collective_dataset_back(collective_run, seed, rng, nprocs, name):
    case, result = collective_run(seed, nprocs, name)
    expected = write_random.expected_arrays(seed, case, nprocs)
    with hzio.open(result["parallel"]) as ds:
        assert ds.grid_shape == case["shape"]
        assert dict(ds.fields) == {f[0]: f[1] for f in case["fields"]}
        assert ds.times == _times(case)
        if case["bitmask"]:
            assert ds.bitmask == case["bitmask"]
        full = ((0,) * len(case["shape"]), case["shape"])
        for (f, t), want in expected.items():
            got = ds.read(field=f, time=t)
            assert got.dtype == want.dtype and got.shape == want.shape, (f, t)
            np.testing.assert_array_equal(got, want, err_msg=f"field {f} time {t}")
            level = int(rng.integers(0, ds.max_level))
            np.testing.assert_array_equal(ds.read(level=level, field=f, time=t),
                                          he.expected_level(want, ds.bitmask, full, level),
                                          err_msg=f"field {f} time {t} level {level}")


@grid
@cases
def test_openvisus_reads_collective_dataset_back(openvisus, collective_run, seed, rng, nprocs, name):
    case, result = collective_run(seed, nprocs, name)
    expected = write_random.expected_arrays(seed, case, nprocs)
    path = result["parallel"]
    info = oh.ov_info(path)
    assert info["shape"] == case["shape"] and info["times"] == _times(case)
    assert info["fields"] == [f[0] for f in case["fields"]]
    db = oh.ov_open(path)
    with hzio.open(path) as ds:
        for (f, t), want in expected.items():
            ov_time = t if case["times"] is not None else None
            got = oh.ov_read(None, f, ov_time, db=db)
            assert got.dtype == want.dtype and got.shape == want.shape, (f, t)
            np.testing.assert_array_equal(got, want, err_msg=f"OpenVisus field {f} time {t}")
            level = int(rng.integers(0, ds.max_level))
            np.testing.assert_array_equal(oh.ov_read(None, f, ov_time, level=level, db=db),
                                          ds.read(level=level, field=f, time=t),
                                          err_msg=f"OpenVisus vs hzio, field {f} time {t} level {level}")


# ---------------------------------------------------------------------------------------------- kills
def _check_committed(path, arrays, times):
    """hzio and (if installed) OpenVisus read exactly ``arrays`` at ``times``."""
    with hzio.open(path) as ds:
        assert ds.times == list(times)
        for f, _, _ in write_then_die.FIELDS:
            for t in times:
                np.testing.assert_array_equal(ds.read(field=f, time=t), arrays[(f, t)],
                                              err_msg=f"hzio field {f} time {t}")
    if oh.have_openvisus():
        assert oh.ov_info(path)["times"] == list(times)
        db = oh.ov_open(path)
        for f, _, _ in write_then_die.FIELDS:
            for t in times:
                np.testing.assert_array_equal(oh.ov_read(None, f, t, db=db), arrays[(f, t)],
                                              err_msg=f"OpenVisus field {f} time {t}")


@pytest.mark.parametrize("nprocs,mode,victim,fraction,partitions", KILLS,
                         ids=[f"{n}ranks-{m}-rank{v}-{fr}-partitions{p}" for n, m, v, fr, p in KILLS])
def test_rank_killed_during_write_keeps_last_commit(tmp_path, seed, nprocs, mode, victim, fraction, partitions):
    run = run_mpi(nprocs, SCRIPTS / "write_then_die.py",
                  {"out": str(tmp_path), "seed": seed, "mode": mode, "victim": victim, "fraction": fraction,
                   "partitions": partitions})
    assert run.returncode != 0, f"the job survived the loss of rank {victim}\n{run.describe()}"
    assert (tmp_path / "t0.json").exists(), f"the run died before committing timestep 0\n{run.describe()}"
    returned = (tmp_path / "flush_returned").exists()
    path = str(tmp_path / "killed.idx")
    left = sorted(p.name for p in (tmp_path / "killed" / "time_0001").glob("*"))
    print(f"victim's flush returned before it died: {returned}; in time_0001: {len(left)} files {left[:4]}")
    arrays = write_then_die.build_arrays(seed)
    with hzio.open(path) as ds:
        times = ds.times
    assert times in ([0], [0, 1]), times
    if times == [0]:
        assert not returned, "the victim's flush returned but timestep 1 is not committed"
        with hzio.open(path) as ds, pytest.raises(hzio.NotFoundError):
            ds.read(time=1)
    _check_committed(path, arrays, times)
    # A later one-process writer is not confused by what the dead run left behind.
    with hzio.open(path, mode="r+") as ds:
        for f, _, _ in write_then_die.FIELDS:
            ds.write(arrays[(f, 1)], field=f, time=1)
    _check_committed(path, arrays, [0, 1])


def test_timestep_added_after_a_crash_ignores_its_unlisted_files(tmp_path, rng):
    """The crash row "before the .idx rename" (docs/design/commit.md): every data file of the new
    timestep is in place but the .idx does not list it. Adding that timestep later must start from an
    empty timestep, not revive the dead run's blocks (else a partial write shows a mix of both runs)."""
    shape, fields = (16, 16, 16), {"t": "float32"}
    kw = dict(shape=shape, fields=fields, bits_per_block=6, blocks_per_file=4, overwrite=True)
    t0 = he.random_array(rng, shape, "float32")
    dead = he.random_array(rng, shape, "float32")
    with hzio.create(str(tmp_path / "a.idx"), times=[0], **kw) as ds:
        ds.write(t0, time=0)
    with hzio.create(str(tmp_path / "dead.idx"), times=[0, 1], **kw) as ds:  # what the dead run renamed
        ds.write(dead, time=1)
    shutil.copytree(tmp_path / "dead" / "time_0001", tmp_path / "a" / "time_0001")
    with hzio.open(str(tmp_path / "a.idx")) as ds:
        assert ds.times == [0]
        with pytest.raises(hzio.NotFoundError):
            ds.read(time=1)
    part = he.random_array(rng, (5, 7, 3), "float32")
    with hzio.open(str(tmp_path / "a.idx"), mode="r+") as ds:
        ds.write(part, offset=(2, 3, 4), time=1)
    want = np.zeros(shape, np.float32)
    want[2:7, 3:10, 4:7] = part
    with hzio.open(str(tmp_path / "a.idx")) as ds:
        got = ds.read(time=1)  # the samples outside `part` were never written by a committed run
    assert np.array_equal(got, want), f"{np.count_nonzero(got != want)} samples come from the uncommitted run"
