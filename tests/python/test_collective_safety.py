"""The collective writer under bad paths and failed commits: the same promises as one process
(``test_dataset_paths.py``, ``test_failed_commits.py``) at 1, 2, 3 and 4 ranks.

Runs ``mpi_scripts/collective_safety.py`` once per rank count; see its docstring for what it reports.
The failed commits are the matrix of ``test_failed_commits.py`` (every step a commit takes, with ENOSPC,
EIO, EACCES and EROFS, for a new timestep, a rewrite, a partial rewrite merged with the stored blocks,
and a rewrite with a new timestep; durable and not), all of it at 1 and 4 ranks and one errno per step
in turn at 2 and 3 ranks, with the fault armed on every rank; and the steps each scenario does not
take, armed, must fail nothing. Oracles: the seeded arrays every rank writes, the .idx bytes saved
before a failed write, block statistics computed from HZ addresses, ``hzio verify``.
"""

from __future__ import annotations

import errno
import os

import mpi_launch
import pytest
from test_failed_commits import (
    ERRNOS,
    NOT_TAKEN,
    PUBLISHED,
    SCENARIOS,
    STEPS,
    SYNC_STEPS,
    names_reason,
)

mpi_launch.skip_module_without_mpi()

GOOD = ["d.IDX", "d", "my data ü.idx"]
BAD = ["sub", "p%d.idx", "run.idx"]
RANKS = (1, 2, 3, 4)
FULL = (1, 4)  # rank counts that run every errno at every step


def case_id(scenario, step, err, durable):
    return f"{scenario}-{step}-{errno.errorcode[err]}-{'durable' if durable else 'cached'}"


def failing_cases(nprocs):
    """(scenario, step, errno, durable) of the failed commits run at ``nprocs`` ranks."""
    cases = []
    for durable in (True, False):
        for scenario, (_, skipped) in SCENARIOS.items():
            taken = [s for s in STEPS if s not in skipped and (durable or s not in SYNC_STEPS)]
            for i, step in enumerate(taken):
                every = durable and nprocs in FULL
                for err in ERRNOS if every else ERRNOS[(i + nprocs) % len(ERRNOS):][:1]:
                    cases.append((scenario, step, err, durable))
    return cases


def payload_cases(nprocs):
    out = []
    for scenario, step, err, durable in failing_cases(nprocs):
        s = STEPS[step]
        out.append({"id": case_id(scenario, step, err, durable), "scenario": scenario, "op": s.op,
                    "pattern": s.pattern, "after_bytes": s.after_bytes, "errno": err, "durable": durable})
    for scenario, step in NOT_TAKEN:
        s = STEPS[step]
        out.append({"id": f"not taken: {scenario}-{step}", "scenario": scenario, "op": s.op, "pattern": s.pattern,
                    "after_bytes": s.after_bytes, "errno": errno.EIO, "durable": True})
    return out


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    cache = {}

    def get(nprocs):
        if nprocs not in cache:
            out = tmp_path_factory.mktemp(f"safety{nprocs}")
            payload = {"out": str(out), "seed": 20261125 + nprocs, "good": GOOD, "bad": BAD,
                       "cases": payload_cases(nprocs)}
            cache[nprocs] = mpi_launch.run_json(nprocs, "collective_safety", payload, timeout=300)
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


def check_after(ranks, scenario):
    """The same handle's retry and a fresh open's writes committed, read back right, and left nothing."""
    times, _ = SCENARIOS[scenario]
    expected_times = sorted({0, 2, *times})
    for rank, r in enumerate(ranks):
        assert r["close_again"] is None and r["times_after"] == expected_times, (rank, r)
        assert all(r["after"].values()) and len(r["after"]) == len(expected_times), (rank, r)
        assert r["debris_after"] == [], (rank, r)
    assert ranks[0]["wrong_stats_after"] == [] and ranks[0]["verify_after"] == 0, ranks[0]


def collective_params():
    out = []
    for nprocs in RANKS:
        for scenario, step, err, durable in failing_cases(nprocs):
            name = case_id(scenario, step, err, durable)
            out.append(pytest.param(nprocs, name, scenario, step, err, id=f"{nprocs}-{name}"))
    return out


@pytest.mark.parametrize(("nprocs", "case", "scenario", "step", "err"), collective_params())
def test_a_failed_collective_commit_publishes_nothing_it_did_not_write(reports, nprocs, case, scenario, step, err):
    report, describe = reports(nprocs)
    assert report is not None, describe
    ranks = report["cases"][case]
    times, _ = SCENARIOS[scenario]
    published = 0 in times and step in PUBLISHED  # a rewrite renamed into place before the failure
    for rank, r in enumerate(ranks):
        assert r["error"] and r["error"].startswith("IoError"), (rank, r)
        assert names_reason(r["error"], err), (rank, r)
        assert r["idx_same"] and r["times"] == [0] and r["t1_missing"], (rank, r)
        assert r["t0"] == ("new" if published else "old"), (rank, r)
        assert r["debris"] == [], (rank, r)
    assert ranks[0]["wrong_stats"] == [] and ranks[0]["verify"] == 0, ranks[0]
    check_after(ranks, scenario)
    # Every rank names the file of the failing step: that of the rank that met the failure (its process
    # id), of a timestep written (with 2 files, their aggregators fail at once and either may be named).
    names = set()
    for t in times:
        data = ranks[0]["data"][str(t)]
        names |= {STEPS[step].names.format(data=data, folder=os.path.dirname(data), idx=ranks[0]["idx"],
                                           pid=r["pid"]) for r in ranks}
    for rank, r in enumerate(ranks):
        assert any(n in r["error"] for n in names), (rank, names, r["error"])


@pytest.mark.parametrize("nprocs", FULL)
@pytest.mark.parametrize(("scenario", "step"), NOT_TAKEN)
def test_a_collective_commit_does_not_take_the_steps_it_does_not_need(reports, nprocs, scenario, step):
    report, describe = reports(nprocs)
    assert report is not None, describe
    ranks = report["cases"][f"not taken: {scenario}-{step}"]
    times, _ = SCENARIOS[scenario]
    for rank, r in enumerate(ranks):
        assert r["error"] is None and r["idx_same"] == (1 not in times), (rank, r)
        assert r["t0"] == ("new" if 0 in times else "old"), (rank, r)
    check_after(ranks, scenario)
