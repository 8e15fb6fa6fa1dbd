"""Collective (MPI) reads: every rank gets exactly NumPy's answer, whatever the method and rank count.

``mpi_scripts/read_collective.py`` runs under ``mpiexec`` at 1, 2, 3 and 4 ranks (oversubscribed past
the cores). It reads two datasets: one written here by the one-process writer (3-D, a scalar and a
vector field, partly written), and one it writes itself with ``N1 = max(1, N - 1)`` ranks over a
sub-communicator (2-D, two fields, some slabs left unwritten). Every rank opens each dataset with
``hzio.open(path, comm=COMM_WORLD)``, reads its own random box at a random level with ``method`` auto,
independent and two-phase (one rank asking for nothing, ``box=()``), slices ``ds[...]`` and
``ds.level(h)[...]`` collectively, and compares with NumPy slicing of the known array at the level's grid
(:mod:`hz_expect`). It also checks ``last_read_report``: the forced method; ``auto`` following the documented
rule (docs/guide/parallel-io.md "Reads"); each rank's own missing blocks and ``min_bytes``; independent
reads touching exactly the rank's blocks and files; two-phase reads reading each block and file once over
all ranks. One ``mpiexec`` run per rank count serves every test of that count.

Notes
-----
Skipped when ``mpiexec`` or mpi4py is missing or hzio was built without MPI. Each ``mpiexec`` runs in its
own session with a timeout; on timeout the session is killed and the test fails. About 15 s on two cores.
``HZIO_TEST_SEED`` reproduces a run; ``HZIO_MPIEXEC`` names the launcher (default ``mpiexec``).
"""

from __future__ import annotations

import hz_expect as he
import hzio  # the package under test: a missing build must fail, not skip
import mpi_launch
import numpy as np
import pytest

RANKS = (1, 2, 3, 4)

mpi_launch.skip_module_without_mpi()


def run_mpi(nprocs, payload, timeout):
    """Run ``mpi_scripts/read_collective.py``; returns (result JSON or None, description)."""
    return mpi_launch.run_json(nprocs, "read_collective", payload, timeout)


def write_serial_dataset(root, seed):
    """A 3-D dataset written by the one-process writer, partly, with its full arrays saved as .npy."""
    rng = np.random.default_rng([seed, 77])
    shape = (19, 14, 23)
    fields = {"t": "float32", "c": "uint8[3]"}
    arrays = {f: np.zeros(shape + ((3,) if "[" in dt else ()), he.split_dtype(dt)[0]) for f, dt in fields.items()}
    path = root / "serial.idx"
    with hzio.create(str(path), shape=shape, fields=fields, bits_per_block=6, blocks_per_file=4, codec="zip",
                     layout=str(rng.choice(["hzorder", "rowmajor"]))) as ds:
        for f, dt in fields.items():
            for _ in range(3):
                lo = [int(rng.integers(0, n // 2)) for n in shape]
                hi = [int(rng.integers(a + 1, n + 1)) for a, n in zip(lo, shape)]
                data = he.random_array(rng, [h - l for l, h in zip(lo, hi)], dt)
                ds.write(data, offset=lo, field=f)
                arrays[f][tuple(slice(l, h) for l, h in zip(lo, hi))] = data
    npy = {}
    for f, a in arrays.items():
        npy[f] = str(root / f"{f}.npy")
        np.save(npy[f], a)
    with hzio.open(str(path)) as ds:  # the fixture's own sanity: the one-process read gives the arrays
        for f, a in arrays.items():
            np.testing.assert_array_equal(ds.read(field=f), a)
    return {"path": str(path), "npy": npy}


@pytest.fixture(scope="module")
def serial_dataset(tmp_path_factory):
    """``serial_dataset(seed)`` -> the one-process dataset of that seed (written once)."""
    made = {}

    def get(seed):
        if seed not in made:
            made[seed] = write_serial_dataset(tmp_path_factory.mktemp("serial"), seed)
        return made[seed]

    return get


@pytest.fixture(scope="module")
def collective_run(tmp_path_factory, serial_dataset):
    """``collective_run(seed, nprocs)`` -> the script's result JSON; one mpiexec run per key."""
    runs = {}

    def get(seed, nprocs):
        if (seed, nprocs) not in runs:
            out = tmp_path_factory.mktemp(f"read-n{nprocs}")
            runs[(seed, nprocs)] = run_mpi(nprocs, {"out": str(out), "seed": seed, "serial": serial_dataset(seed)}, 60)
            print(runs[(seed, nprocs)][1].splitlines()[1])
        result, describe = runs[(seed, nprocs)]
        if result is None:
            pytest.fail(f"read_collective.py failed\n{describe}")
        assert result["size"] == nprocs
        return result

    return get


def _assert_check(result, name, minimum=1):
    count = result["checks"].get(name, 0)
    failures = result["failures"].get(name, [])
    assert count >= minimum, f"check {name!r} ran {count} times, expected at least {minimum}"
    assert not failures, f"{len(failures)} of {count} {name!r} checks failed:\n" + "\n".join(failures[:8])


grid = pytest.mark.parametrize("nprocs", RANKS, ids=lambda n: f"{n}ranks")


@grid
def test_every_rank_reads_its_box_at_its_level_exactly(collective_run, seed, nprocs):
    result = collective_run(seed, nprocs)
    _assert_check(result, "values", minimum=2 * 3 * 3 * nprocs)
    _assert_check(result, "one-process read of the N1-rank dataset", minimum=2 * nprocs)


@grid
def test_a_rank_asking_for_nothing_gets_an_empty_array(collective_run, seed, nprocs):
    _assert_check(collective_run(seed, nprocs), "empty request", minimum=2 * 3)


@grid
def test_reports_name_the_method_that_ran(collective_run, seed, nprocs):
    """Forced methods are reported as such; auto follows parallel-io.md (two-phase iff the ranks span more
    than one node and the requested blocks summed over ranks are at least 1.5 times the distinct blocks)."""
    _assert_check(collective_run(seed, nprocs), "method reported", minimum=2 * 3 * 3 * nprocs)


@grid
def test_each_rank_reports_its_own_missing_blocks_and_min_bytes(collective_run, seed, nprocs):
    _assert_check(collective_run(seed, nprocs), "own missing blocks and min_bytes", minimum=2 * 3 * 3 * nprocs)


@grid
def test_independent_reads_touch_only_the_ranks_own_blocks_and_files(collective_run, seed, nprocs):
    _assert_check(collective_run(seed, nprocs), "independent counts", minimum=2 * 3 * nprocs)


@pytest.mark.parametrize("nprocs", [n for n in RANKS if n > 1], ids=lambda n: f"{n}ranks")
def test_two_phase_reads_each_block_and_file_once_over_all_ranks(collective_run, seed, nprocs):
    _assert_check(collective_run(seed, nprocs), "two-phase reads each block once", minimum=2 * 3 * nprocs)


@grid
def test_large_two_phase_reads_are_assembled_in_windows_exactly(collective_run, seed, nprocs):
    """Outputs of 8 MiB and more of two-phase reads are assembled window by window from the received
    blocks, with the default value where blocks are missing."""
    _assert_check(collective_run(seed, nprocs), "large two-phase reads assembled in windows", minimum=nprocs)


@grid
def test_collective_slicing_equals_numpy(collective_run, seed, nprocs):
    result = collective_run(seed, nprocs)
    _assert_check(result, "collective slicing", minimum=2 * 2 * nprocs)
    _assert_check(result, "collective level slicing", minimum=2 * 2 * nprocs)


@pytest.mark.parametrize("nprocs", [n for n in RANKS if n > 1], ids=lambda n: f"{n}ranks")
def test_auto_reads_independently_when_no_request_overlaps(collective_run, seed, nprocs):
    """Rank 0 asks for block 0 only (one point at level 0), the others for nothing: 1 requested block,
    1 distinct block, less than 1.5 times, so parallel-io.md says independent."""
    _assert_check(collective_run(seed, nprocs), "auto without overlap is independent", minimum=nprocs)


def test_a_rank_selecting_nothing_still_takes_part_in_collective_slicing(serial_dataset, tmp_path, seed):
    """``ds[0:0]`` on one rank while the others slice a real box: slicing is Collective (ParallelDataset.read),
    so the empty selection must not leave the others waiting or mismatch the next collective read."""
    result, describe = run_mpi(2, {"out": str(tmp_path), "seed": seed, "serial": serial_dataset(seed),
                                   "mode": "empty_slice"}, timeout=12)
    if result is None:
        pytest.fail(f"a rank with an empty selection broke the collective read\n{describe}")
    _assert_check(result, "empty selection", minimum=2)
    _assert_check(result, "read after an empty selection", minimum=2)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_a_rank_with_bad_arguments_fails_the_collective_read_on_every_rank(serial_dataset, tmp_path, nprocs):
    """One rank's unknown field, out-of-domain box, level, method, index or ``out`` must not leave the
    other ranks waiting in the collective read: every rank raises, and the next read works."""
    result, describe = run_mpi(nprocs, {"out": str(tmp_path), "seed": 1, "serial": serial_dataset(1),
                                        "mode": "bad_arguments"}, timeout=30)
    if result is None:
        pytest.fail(f"a rank with bad arguments hung or broke the collective read\n{describe}")
    for name in ("unknown field", "box outside the domain", "level past the finest", "unknown method", "bad index",
                 "wrong out"):
        _assert_check(result, f"every rank raises: {name}", minimum=nprocs)
        _assert_check(result, f"read after: {name}", minimum=nprocs)
