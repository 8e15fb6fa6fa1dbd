"""The collective writer under bad paths and failed commits: the same promises as one process
(``test_dataset_paths.py``, ``test_failed_commits.py``) at 1, 2, 3 and 4 ranks.

Runs ``mpi_scripts/collective_safety.py`` once per rank count; see its docstring for what it reports.
Oracles: the seeded arrays every rank writes, the .idx bytes saved before a failed write.
"""

from __future__ import annotations

import mpi_launch
import pytest
from test_failed_commits import STEPS

mpi_launch.skip_module_without_mpi()

GOOD = ["d.IDX", "d", "my data ü.idx"]
BAD = ["sub", "p%d.idx", "run.idx"]
RANKS = (1, 2, 3, 4)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    cache = {}

    def get(nprocs):
        if nprocs not in cache:
            out = tmp_path_factory.mktemp(f"safety{nprocs}")
            payload = {"out": str(out), "seed": 20261125 + nprocs, "good": GOOD, "bad": BAD,
                       "steps": {name: list(step) for name, step in STEPS.items()}}
            cache[nprocs] = mpi_launch.run_json(nprocs, "collective_safety", payload, timeout=240)
        return cache[nprocs]

    return get


@pytest.mark.parametrize("nprocs", RANKS)
def test_every_rank_reads_back_datasets_at_odd_paths(reports, nprocs):
    report, describe = reports(nprocs)
    assert report is not None, describe
    for name in GOOD:
        assert report["good"][name] == [True] * nprocs, name


@pytest.mark.parametrize("nprocs", RANKS)
def test_every_rank_hears_why_a_path_is_refused(reports, nprocs):
    report, describe = reports(nprocs)
    assert report is not None, describe
    for name in BAD:
        errors = report["bad"][name]
        assert all(e and e.startswith("InvalidArgumentError") for e in errors), (name, errors)
    assert all(e and "blocked" in e for e in report["blocked"]), report["blocked"]


@pytest.mark.parametrize("nprocs", RANKS)
def test_ranks_making_the_same_new_time_folders_at_once_do_not_trip(reports, nprocs):
    report, describe = reports(nprocs)
    assert report is not None, describe
    assert report["many_times"] == [[None] * 12] * nprocs, report["many_times"]


@pytest.mark.parametrize("nprocs", RANKS)
@pytest.mark.parametrize("step", sorted(STEPS))
def test_a_failed_collective_flush_publishes_nothing_it_did_not_write(reports, nprocs, step):
    report, describe = reports(nprocs)
    assert report is not None, describe
    for rank, r in enumerate(report["steps"][step]):
        assert r["error"] and r["error"].startswith("IoError"), (rank, r)
        assert r["idx_same"] and r["times"] == [0], (rank, r)
        assert r["t0"] == ("b" if step == "idx rename" else "a"), (rank, r)
        assert r["debris"] == [], (rank, r)
        assert r["close_again"] is None and r["times_after"] == [0, 1] and r["t1_after"], (rank, r)
