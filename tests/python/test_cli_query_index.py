"""``hzio query`` and ``hzio index``, run as ``python -m hzio`` (and under ``mpiexec``), and a smoke run of
the MPI write benchmark ``bench/write_bench.py`` (run as a script, never imported).

Oracles: NumPy scans of the arrays written, restricted to a level's grid with ``hz_expect.level_slices``
(query); per-block count, min and max computed here from HZ addresses (``hz_expect.hz_address``) and the
known values of the OpenVisus-written samples (index); the sidecar bytes of a one-process index (index
under mpiexec); the benchmark's own collective read-back check and its JSON.

Notes
-----
The mpiexec tests are skipped when ``mpiexec`` or mpi4py is missing or hzio was built without MPI; each
runs in its own session with a 120 s timeout and at most 3 ranks (oversubscribed with Open MPI).
``HZIO_MPIEXEC`` names the launcher (default ``mpiexec``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import hz_expect as he
import hzio
import mpi_launch
import numpy as np
import pytest

LAUNCHER = mpi_launch.LAUNCHER
MPIEXEC = mpi_launch.MPIEXEC
WRITE_BENCH = Path(__file__).resolve().parents[2] / "bench" / "write_bench.py"
MPI_MISSING = (f"{LAUNCHER} not found" if MPIEXEC is None else
               "mpi4py is not installed" if importlib.util.find_spec("mpi4py") is None else
               "hzio was built without MPI" if not getattr(hzio._core, "with_mpi", False) else None)
needs_mpi = pytest.mark.skipif(MPI_MISSING is not None, reason=MPI_MISSING or "")
MPI_TIMEOUT_S = 120


def run(*args, cwd=None):
    """Run ``python -m hzio ARGS``; return the CompletedProcess (text stdout/stderr)."""
    return subprocess.run([sys.executable, "-m", "hzio", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def run_ok(*args, cwd=None):
    proc = run(*args, cwd=cwd)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return proc


def run_mpi(nprocs, *args, cwd=None, script=None):
    """Run ``mpiexec -n N python -m hzio ARGS`` (or ``python SCRIPT ARGS``) in its own session; kill the
    session on timeout."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONUNBUFFERED="1")
    program = [str(script)] if script else ["-m", "hzio"]
    cmd = [MPIEXEC, "-n", str(nprocs), *mpi_launch.launcher_flags(), sys.executable, *program, *map(str, args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=MPI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} did not finish in {MPI_TIMEOUT_S} s (killed)\n{out[-3000:]}\n{err[-3000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def expected_query(src, bitmask, box, level, lo, hi, component=None):
    """(coords, values) of the level-``level`` grid samples of ``src`` inside ``box`` with a value in [lo, hi]."""
    slices = he.level_slices(bitmask, box, level)
    grid = src[slices]
    tested = grid if component is None else grid[..., component]
    hits = np.argwhere((tested >= lo) & (tested <= hi))  # C order, like hzio
    coords = np.stack([np.arange(s.start, h, s.step)[hits[:, a]] for a, (s, h) in enumerate(zip(slices, box[1]))],
                      axis=1)
    return coords, grid[tuple(hits.T)]


# ---------------------------------------------------------------------------------------------- query
@pytest.fixture
def ramp(tmp_path, rng):
    """A zip dataset of a smooth float32 ramp plus noise (so statistics can skip blocks); (path, array)."""
    z, y, x = np.meshgrid(np.arange(24), np.arange(40), np.arange(36), indexing="ij")
    array = (z * 100.0 + y * 2.0 + x * 0.05 + rng.random((24, 40, 36))).astype(np.float32)
    path = tmp_path / "ramp.idx"
    with hzio.create(path, shape=array.shape, fields={"t": "float32"}, codec="zip", bits_per_block=8,
                     blocks_per_file=16) as ds:
        ds.write(array)
    return path, array


@pytest.mark.parametrize("box_text, box, level_drop", [
    (None, ((0, 0, 0), (24, 40, 36)), 0),
    ("3:20,5:33,:", ((3, 5, 0), (20, 33, 36)), 0),
    ("3:20,5:33,1:30", ((3, 5, 1), (20, 33, 30)), 4),
], ids=["whole", "box", "box-coarse"])
def test_query_equals_a_numpy_scan(ramp, tmp_path, box_text, box, level_drop):
    path, array = ramp
    with hzio.open(path) as ds:
        bitmask, level = ds.bitmask, ds.max_level - level_drop
    lo, hi = 1000.0, 1490.5
    out = tmp_path / "hits.npz"
    args = ["query", path, "--field", "t", "--range", lo, hi, "--level", level, "--out", out, "--json", "--limit", 5]
    result = json.loads(run_ok(*args, *(["--box", box_text] if box_text else [])).stdout)
    coords, values = expected_query(array, bitmask, box, level, lo, hi)
    assert len(coords) > 0
    assert result["count"] == len(coords)
    assert result["bbox"] == [coords.min(axis=0).tolist(), (coords.max(axis=0) + 1).tolist()]
    assert result["value_min"] == float(values.min()) and result["value_max"] == float(values.max())
    saved = np.load(out)
    np.testing.assert_array_equal(saved["coords"], coords)
    np.testing.assert_array_equal(saved["values"], values)
    assert [m["coord"] for m in result["matches"]] == coords[:5].tolist()
    rep, whole = result["report"], result["full_read"]
    assert rep["blocks_skipped"] > 0 and rep["blocks_read"] < whole["blocks_read"]
    assert 0 < rep["bytes_read"] < whole["bytes_read"]


def test_query_prints_counts_bytes_and_the_first_matches(ramp):
    path, array = ramp
    proc = run_ok("query", path, "--range", 2000, 2010, "--limit", 3)
    count = int(((array >= 2000) & (array <= 2010)).sum())
    assert count > 3
    assert re.search(rf"^  matches\s+{count}$", proc.stdout, re.M), proc.stdout
    assert "bytes read" in proc.stdout and "for a full read" in proc.stdout
    assert f"first {min(3, count)} matches" in proc.stdout


def test_query_with_no_match_reports_zero(ramp):
    path, _ = ramp
    result = json.loads(run_ok("query", path, "--range", -50, -10, "--json").stdout)
    assert (result["count"], result["bbox"], result["value_min"]) == (0, None, None)


def test_query_tests_one_component_of_a_vector_field(samples_dir, tmp_path):
    name = "u8x3_2d_hzorder_zip"
    path = samples_dir / f"{name}.idx"
    src = he.sample_value(name, (8, 16))
    result = json.loads(run_ok("query", path, "--range", 3, 5, "--component", 2, "--json", "--out",
                               tmp_path / "v.npz").stdout)
    coords, values = expected_query(src, "V0101010", ((0, 0), (8, 16)), 7, 3, 5, component=2)
    assert result["count"] == len(coords) and result["component"] == 2
    saved = np.load(tmp_path / "v.npz")
    np.testing.assert_array_equal(saved["coords"], coords)
    np.testing.assert_array_equal(saved["values"], values)


@pytest.mark.parametrize("args, needles", [
    (["--range", 5, 1], ["LO <= HI"]),
    (["--range", 0, 1, "--field", "nope"], ["no field 'nope'", "'t'"]),
    (["--range", 0, 1, "--time", 3], ["no timestep 3"]),
    (["--range", 0, 1, "--component", 1], ["scalar"]),
    (["--range", 0, 1, "--box", "0:99,:,:"], ["outside the dataset box"]),
], ids=["lo-above-hi", "field", "time", "component", "box"])
def test_query_usage_errors_exit_2_without_traceback(ramp, args, needles):
    proc = run("query", ramp[0], *args)
    assert proc.returncode == 2 and proc.stderr.startswith("hzio: error:"), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr


def test_query_of_a_vector_field_needs_a_component(samples_dir):
    proc = run("query", samples_dir / "u8x3_2d_hzorder_zip.idx", "--range", 0, 1)
    assert proc.returncode == 2 and "--component" in proc.stderr


# ---------------------------------------------------------------------------------------------- index
INDEX_SAMPLES = ["f32_3d_2fields_zip", "f32_3d_rowmajor_lz4", "i16_3d_npot_rowmajor_raw", "u8_2d_partial_missing",
                 "u8_2d_time", "u8x3_2d_hzorder_zip", "u8_2d_hzorder_raw_multifile"]


def expected_block_stats(name, ds, field, time):
    """{block: (count, min, max)} from the sample's known values and HZ addresses (min/max per component)."""
    src = he.sample_value(name, ds.grid_shape, field=field, time=time)
    block = he.hz_address(ds.bitmask, np.indices(ds.grid_shape)) >> ds.bits_per_block
    flat = src.reshape(block.size, -1)
    out = {}
    for b in np.unique(block):
        vals = flat[block.reshape(-1) == b]
        out[int(b)] = (len(vals), vals.min(axis=0).astype(np.float64), vals.max(axis=0).astype(np.float64))
    return out


@pytest.mark.parametrize("name", INDEX_SAMPLES)
def test_index_gives_every_present_block_exact_statistics(sample_copy, name):
    path = sample_copy(name)
    with hzio.open(path) as ds:
        rows = [ds.blocks(field=f, time=t) for f in ds.fields for t in ds.times]
        assert not any((b["stats_known"] & b["present"]).any() for b in rows), "the sample already has statistics"
    result = json.loads(run_ok("index", path, "--json").stdout)
    assert result["ranks"] == 1 and result["stats_known_blocks"] == result["present_blocks"] > 0
    with hzio.open(path) as ds:
        for field in ds.fields:
            for time in ds.times:
                expected = expected_block_stats(name, ds, field, time)
                rows = ds.blocks(field=field, time=time)
                for row in rows[rows["present"]]:
                    count, lo, hi = expected[int(row["block"])]
                    assert row["stats_known"] and row["count"] == count, (field, time, row["block"])
                    np.testing.assert_array_equal(np.atleast_1d(row["min"]), lo)
                    np.testing.assert_array_equal(np.atleast_1d(row["max"]), hi)


def test_query_after_index_skips_blocks_and_equals_numpy(sample_copy):
    name = "f32_3d_2fields_zip"
    path = sample_copy(name)
    run_ok("index", path)
    src = he.sample_value(name, (32, 32, 32), field="a")
    # Blocks 4 to 7 hold level 15, whose samples all have an odd z (the last bitmask digit), so values >= 10000.
    result = json.loads(run_ok("query", path, "--field", "a", "--range", 0, 5000, "--json").stdout)
    coords, values = expected_query(src, "V012012012012012", ((0, 0, 0), (32, 32, 32)), 15, 0, 5000)
    assert result["count"] == len(coords) > 0 and result["report"]["blocks_skipped"] > 0
    assert result["bbox"] == [coords.min(axis=0).tolist(), (coords.max(axis=0) + 1).tolist()]
    assert (result["value_min"], result["value_max"]) == (float(values.min()), float(values.max()))
    with hzio.open(path) as ds:
        assert ds.blocks("a")["min"].min() == src.min() and ds.blocks("a")["max"].max() == src.max()


def test_index_rejects_a_negative_sub_block_bits(sample_copy):
    proc = run("index", sample_copy("u8_2d_time"), "--sub-block-bits", -1)
    assert proc.returncode == 2 and "--sub-block-bits" in proc.stderr


def _sidecars(path):
    return {p.name: p.read_bytes() for p in sorted(Path(path).with_suffix("").rglob("*.hzstats"))}


@needs_mpi
@pytest.mark.parametrize("name", ["u8_2d_hzorder_raw_multifile", "u8_2d_time"])
def test_index_under_mpiexec_writes_the_sidecars_of_a_serial_index(sample_copy, name):
    path = sample_copy(name)
    run_ok("index", path, "--sub-block-bits", 2)
    serial = _sidecars(path)
    assert serial
    for p in Path(path).with_suffix("").rglob("*.hzstats"):
        p.unlink()
    proc = run_mpi(2, "index", path, "--sub-block-bits", 2, "--json")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    result = json.loads(proc.stdout)  # one JSON object: only rank 0 prints
    assert result["ranks"] == 2 and result["stats_known_blocks"] == result["present_blocks"]
    assert _sidecars(path) == serial


# ---------------------------------------------------------------------------------------------- write benchmark
BENCH_CASES = {
    "documented": (2, ["--global", "32,32,32", "--reps", 1, "--placement", "both"]),
    "uneven-vector-timesteps": (3, ["--global", "11,9,5", "--decomp", "1,1,3", "--dtype", "int16[2]", "--fields", 2,
                                    "--timesteps", 2, "--reps", 2, "--bits-per-block", 5, "--blocks-per-file", 4,
                                    "--placement", "uniform", "--aggregator-bytes", 200]),
    "partitions": (2, ["--global", "32,32,32", "--decomp", "1,1,2", "--reps", 1, "--bits-per-block", 8,
                       "--partitions", "1,2"]),
}


@needs_mpi
@pytest.mark.parametrize("case", list(BENCH_CASES))
def test_bench_write_under_mpiexec_checks_its_writes_and_reports(tmp_path, case):
    ranks, args = BENCH_CASES[case]
    out = tmp_path / "bench.json"
    proc = run_mpi(ranks, *args, "--json", out, cwd=tmp_path, script=WRITE_BENCH)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert not (tmp_path / "hzio_bench_tmp").exists(), "the scratch folder was left behind"
    assert proc.stdout.count("read-back check") == proc.stdout.count(": OK (every rank read its box") >= 1
    r = json.loads(out.read_text())
    assert {"benchmark", "ranks", "config", "bytes", "rank_bytes", "cases", "ratios", "verified", "load_before",
            "load_after", "mpi_library", "hzio_version"} <= set(r)
    hzio_cases = {f"hzio_{p}" + (f"_p{n}" if n > 1 else ""): (p, n)
                  for p in r["config"]["placements"] for n in r["config"]["partitions"]}
    assert r["ranks"] == ranks and r["verified"] is True
    assert set(r["cases"]) == {"fpp", "shared"} | set(hzio_cases)
    _, scalar, comps = hzio.parse_dtype(r["config"]["dtype"])
    assert r["bytes"] == np.prod(r["config"]["global"]) * comps * scalar.itemsize * r["config"]["fields"] \
        * r["config"]["timesteps"]
    for case_result in r["cases"].values():
        assert len(case_result["seconds"]) == r["config"]["reps"]
        assert case_result["min_s"] <= case_result["median_s"] <= case_result["max_s"]
        assert case_result["mib_per_s"] == pytest.approx(r["bytes"] / 2**20 / case_result["median_s"])
    for name, (p, n) in hzio_cases.items():
        hz = r["cases"][name]
        assert hz["verified"] is True and set(r["ratios"][name]) == {"vs_fpp", "vs_shared"}
        rep = hz["report"]
        assert rep["ranks"] == ranks and rep["placement"] == p and rep["bytes"] == r["bytes"]
        assert {"write", "commit", "total"} <= set(rep["max"]) and set(rep["max"]) == set(rep["mean"])
        assert sum(lv["bytes"] for lv in rep["levels"]) == rep["file_bytes"]
        part = hz["partitioning"]
        assert rep["partitions"] == part["partitions"] == n and sum(part["ranks_per_group"]) == ranks
        assert part["messages"] == rep["messages"] == \
            part["group_messages"] + part["merge"]["messages"] + part["moved_messages"]
        assert (len(rep["groups"]) == part["groups"]) if n > 1 else (rep["groups"] == [] and part["groups"] == 1)
    if any(n > 1 for _, n in hzio_cases.values()):
        assert "record messages between ranks by partition count" in proc.stdout


@needs_mpi
def test_bench_write_rejects_partition_counts_that_are_not_powers_of_two(tmp_path):
    proc = run_mpi(1, "--global", "8,8,8", "--partitions", "1,3", cwd=tmp_path, script=WRITE_BENCH)
    assert proc.returncode == 2 and "write_bench: error: --partitions expects comma-separated powers of two" \
        in proc.stderr, (proc.stdout, proc.stderr)
