"""Indexing templates: the rank-conforming bitmask of a grid of ranks (seed 002's example), the check, its
agreement with a brute-force oracle of HZ order (NumPy over hz_expect's addresses), and the flag of a
collective write's report."""

from __future__ import annotations

import itertools

import hz_expect as he
import hzio
import numpy as np
import pytest


def _visits_ranks_in_order(bitmask, shape, boxes):
    """The oracle: within each level, HZ order meets the boxes' owners in non-decreasing rank order."""
    owner = np.full(shape, -1)
    for r, (lo, hi) in enumerate(boxes):
        owner[tuple(slice(a, b) for a, b in zip(lo, hi))] = r
    hz = he.hz_address(bitmask, np.indices(shape))
    level = np.where(hz == 0, 0, np.floor(np.log2(np.maximum(hz, 1))).astype(int) + 1)
    order = np.lexsort((hz.ravel(), level.ravel()))
    ranks, levels = owner.ravel()[order], level.ravel()[order]
    same = levels[1:] == levels[:-1]
    return bool(np.all(ranks[1:][same] >= ranks[:-1][same]))


def test_seed_002_example():
    boxes = hzio.grid_boxes((32, 32), (4, 4))  # 4 x 4 ranks, row-major, 8 x 8 samples each
    assert boxes[1] == ((0, 8), (8, 16)) and boxes[4] == ((8, 0), (16, 8))
    assert hzio.rank_conforming_bitmask((32, 32), boxes) == "V" + "1100" + "101010"  # yyxx + yxyxyx
    assert hzio.rank_conforming_bitmask((32, 32), hzio.grid_boxes((32, 32), (4, 4), "morton")) == "V1010101010"
    assert hzio.rank_conforming_bitmask((32, 32), hzio.grid_boxes((32, 32), (4, 4), "column-major")) == "V0011101010"


@pytest.mark.parametrize("shape,grid", [((16, 32, 8), (2, 4, 1)), ((8, 8, 8), (2, 2, 2)), ((64,), (8,)),
                                        ((16, 64), (4, 2)), ((4, 8, 16), (1, 1, 4))])
@pytest.mark.parametrize("order", ["row-major", "column-major", "morton"])
def test_made_bitmasks_pass_the_check_and_the_oracle(shape, grid, order):
    boxes = hzio.grid_boxes(shape, grid, order)
    bitmask = hzio.rank_conforming_bitmask(shape, boxes)
    assert hzio.is_rank_conforming(bitmask, boxes) and hzio.why_not_rank_conforming(bitmask, boxes) is None
    assert _visits_ranks_in_order(bitmask, shape, boxes)
    # every other arrangement of the same digits the check accepts passes the oracle too
    for digits in set(itertools.islice(itertools.permutations(bitmask[1:]), 400)):
        other = "V" + "".join(digits)
        if hzio.is_rank_conforming(other, boxes):
            assert _visits_ranks_in_order(other, shape, boxes), other


def test_the_default_bitmask_is_not_rank_conforming_for_row_major_ranks(tmp_path):
    shape, grid = (32, 32), (4, 4)
    boxes = hzio.grid_boxes(shape, grid)
    with hzio.create(str(tmp_path / "d.idx"), shape=shape, fields={"a": "u1"}) as ds:
        default = ds.bitmask
    assert not hzio.is_rank_conforming(default, boxes) and not _visits_ranks_in_order(default, shape, boxes)
    assert "rank" in hzio.why_not_rank_conforming(default, boxes)


@pytest.mark.parametrize("shape,grid", [((24, 8), (3, 1)), ((20, 8), (2, 1))])
def test_decompositions_no_prefix_can_number_are_refused(shape, grid):
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.rank_conforming_bitmask(shape, hzio.grid_boxes(shape, grid))


def test_bad_arguments_raise_hzio_errors():
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.grid_boxes((8, 8), (2,))
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.grid_boxes((8, 8), (3, 2), order="morton")
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.rank_conforming_bitmask((8, 8), [((0, 0), (8,))])
    with pytest.raises(hzio.FormatError):
        hzio.is_rank_conforming("Vxyz", hzio.grid_boxes((8, 8), (2, 2)))


@pytest.mark.parametrize("nprocs,grid,order", [(4, [2, 2, 1], "row-major"), (8, [2, 2, 2], "morton"),
                                               (2, [1, 2, 1], "column-major")])
def test_collective_write_reports_whether_it_is_rank_conforming(tmp_path, nprocs, grid, order):
    import mpi_launch
    mpi_launch.skip_module_without_mpi()
    result, describe = mpi_launch.run_json(nprocs, "template_write",
                                           {"out": str(tmp_path), "grid": grid, "side": 8, "order": order},
                                           timeout=240)
    assert result is not None, describe
    seen = result["seen"]
    assert result["same_on_every_rank"]
    assert seen["conforming"]["flag"] and seen["conforming"]["equal"]
    assert seen["default"]["equal"]
    shape = tuple(g * 8 for g in grid)
    boxes = hzio.grid_boxes(shape, grid, order)
    # the report's flag agrees with the check and the oracle for the default bitmask too
    want = hzio.is_rank_conforming(seen["default"]["bitmask"], boxes)
    assert seen["default"]["flag"] == want == _visits_ranks_in_order(seen["default"]["bitmask"], shape, boxes)
