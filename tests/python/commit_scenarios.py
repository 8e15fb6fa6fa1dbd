"""The commits that the failed-commit tests make fail, shared by the one-process tests
(test_failed_commits.py) and the collective ones (mpi_scripts/collective_safety.py)."""

from __future__ import annotations

SHAPE = (16, 16, 16)
PART = (slice(3, 5), slice(2, 9), slice(1, 4))  # cuts blocks: merged with the stored blocks at commit


def scenario_result(scenario, a, b, c):
    """{timestep: array} the dataset holds once the writes of ``scenario`` over ``a`` are committed."""
    t0 = a.copy()
    if scenario in ("rewrite", "rewrite and new timestep"):
        t0 = b
    if scenario == "partial rewrite":
        t0[PART] = b[PART]
    return {0: t0, 1: c} if scenario in ("new timestep", "rewrite and new timestep") else {0: t0}
