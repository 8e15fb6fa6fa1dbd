"""``hzio plan``: the plan simulated in one process equals the plan the real ranks compute (their write
report), its per-level figures follow from the decomposition, and the CLI prints it."""

from __future__ import annotations

import json
import subprocess
import sys

import hzio
import pytest

pytestmark = pytest.mark.skipif(not getattr(hzio._core, "with_mpi", False), reason="hzio built without MPI")


@pytest.mark.parametrize("case", [
    dict(grid=[2, 2, 2], side=8, fields=2, bits_per_block=6, blocks_per_file=4, aggregator_bytes=4096,
         placement="localized", order="row-major"),
    dict(grid=[2, 4, 1], side=8, fields=3, bits_per_block=5, blocks_per_file=8, aggregator_bytes=1 << 20,
         placement="uniform", order="morton"),
    dict(grid=[2, 2, 2], side=8, fields=2, bits_per_block=5, blocks_per_file=2, aggregator_bytes=4096,
         placement="localized", order="row-major", partitions=2, shift=3),
    dict(grid=[1, 2, 4], side=8, fields=1, bits_per_block=4, blocks_per_file=4, aggregator_bytes=1 << 20,
         placement="uniform", order="row-major", partitions=4, shift=2),
    dict(grid=[2, 2, 2], side=8, fields=2, bits_per_block=6, blocks_per_file=1, aggregator_bytes=1 << 20,
         placement="localized", order="morton", partitions=8),
    dict(grid=[2, 2, 2], side=8, fields=2, bits_per_block=4, blocks_per_file=2, aggregator_bytes=4096,
         placement="localized", order="row-major", partitions=4, shift=3, index_space="local"),
], ids=["localized", "uniform", "partitions2-straddling", "partitions4-straddling", "partitions8", "local4-straddling"])
def test_simulated_plan_equals_the_plan_of_8_real_ranks(tmp_path, case):
    import mpi_launch
    mpi_launch.skip_module_without_mpi()
    result, describe = mpi_launch.run_json(8, "plan_vs_real", {"out": str(tmp_path), **case}, timeout=240)
    assert result is not None, describe
    real, sim = result["report"], result["simulated"]
    for key in ("ranks", "aggregators", "rounds", "files", "rank_conforming", "partitions", "messages",
                "moved_messages", "index_space"):
        assert sim[key] == real[key], (key, sim[key], real[key])
    if case.get("partitions", 1) > 1:
        # bytes: the plan counts sample bytes, the report message bytes (record headers included)
        def strip(d):
            return {k: v for k, v in dict(d).items() if k not in ("bytes", "seconds")}
        assert [strip(g) for g in sim["groups"]] == [strip(g) for g in real["groups"]]
        assert strip(sim["merge"]) == strip(real["merge"])
        assert all(0 < g["bytes"] <= r["bytes"] for g, r in zip(sim["groups"], real["groups"]) if g["messages"])
        if case.get("shift"):
            assert real["moved_messages"] > 0, "no box straddles a partition plane"
    real_blocks = {lv["level"]: lv["blocks"] for lv in real["levels"] if lv["blocks"]}
    sim_blocks = {lv["level"]: lv["blocks"] for lv in sim["levels"]}  # every field's blocks
    if case.get("index_space") != "local":  # local writes report no levels
        assert sim_blocks == real_blocks
    assert sim["bytes"] == real["bytes"]


def test_per_level_figures_follow_from_the_decomposition():
    # 8 x 8 ranks of 16 x 16 samples, one field: the coarse block gets a sample from every rank but its
    # aggregator, the finest level's files each come from the ranks that hold them.
    p = hzio.plan((128, 128), grid=(8, 8), rank_conforming=True, bits_per_block=8, blocks_per_file=4)
    assert p["ranks"] == 64 and p["rank_conforming"] and p["bitmask"] == hzio.rank_conforming_bitmask(
        (128, 128), hzio.grid_boxes((128, 128), (8, 8)))
    first, last = p["levels"][0], p["levels"][-1]
    assert first["level"] == 8 and first["senders_max"] == 63 and first["aggregators"] == 1
    assert last["level"] == 14 and last["blocks"] == 2 ** 13 // 2 ** 8
    assert sum(lv["blocks"] for lv in p["levels"]) == 2 ** 14 // 2 ** 8
    assert p["bytes"] == 128 * 128 * 4
    # a finest file holds consecutive Z ranges, so with this bitmask a few neighbouring ranks send to it
    assert 0 < last["senders_max"] < first["senders_max"] and last["files"] == last["aggregators"]
    # partitions: messages crossing them exist only on levels whose blocks span partitions
    q = hzio.plan((128, 128), grid=(8, 8), rank_conforming=True, bits_per_block=8, blocks_per_file=4, partitions=4)
    assert q["levels"][0]["cross_partition_messages"] > 0 and q["levels"][-1]["cross_partition_messages"] == 0


def test_cli_takes_a_rank_box_and_a_dtype_per_field():
    """--rank-box is the grid it divides the domain into; per-field dtypes move their own sample bytes."""
    base = [sys.executable, "-m", "hzio", "plan", "--global", "32,64,64", "--json"]
    by_grid = subprocess.run(base + ["--grid", "2,2,4"], capture_output=True, text=True, timeout=120)
    by_box = subprocess.run(base + ["--rank-box", "16,32,16"], capture_output=True, text=True, timeout=120)
    assert by_grid.returncode == 0 and by_box.returncode == 0, by_box.stderr
    a, b = json.loads(by_grid.stdout), json.loads(by_box.stdout)
    a.pop("seconds"), b.pop("seconds")
    assert a == b and a["ranks"] == 16
    mixed = subprocess.run(base + ["--grid", "2,2,4", "--dtype", "float32,float64,uint8"], capture_output=True,
                           text=True, timeout=120)
    assert mixed.returncode == 0, mixed.stderr
    assert json.loads(mixed.stdout)["bytes"] == 32 * 64 * 64 * (4 + 8 + 1)
    for bad in (["--grid", "2,2,4", "--rank-box", "16,32,16"], ["--rank-box", "10,32,16"], []):
        out = subprocess.run(base + bad, capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and ("--grid" in out.stderr or "--rank-box" in out.stderr), (bad, out.stderr)
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.plan((32, 64, 64), grid=(2, 2, 4), dtype=["float32", "float64"], fields=3)


def test_bad_plans_raise_hzio_errors():
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.plan((64, 64), grid=(2, 2), partitions=3)
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.plan((64, 64), grid=(2, 2), placement="everywhere")
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.plan((64, 64))
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.plan((64, 64), grid=(3, 2), rank_conforming=True)


def test_cli_prints_json_and_a_table():
    cmd = [sys.executable, "-m", "hzio", "plan", "--global", "64,64,64", "--grid", "2,2,4", "--fields", "2",
           "--dtype", "float64", "--partitions", "2"]
    out = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["ranks"] == 16 and summary["partitions"] == 2
    assert summary == {**hzio.plan((64, 64, 64), grid=(2, 2, 4), fields=2, dtype="float64", partitions=2),
                       "seconds": summary["seconds"]}
    table = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert table.returncode == 0 and "cross-partition" in table.stdout and "16 ranks" in table.stdout
    bad = subprocess.run(cmd[:5] + ["--grid", "2,2"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--grid" in bad.stderr


def test_plot_shows_where_the_aggregators_sit(tmp_path):
    # seed 002 figure 6: 512 ranks in row-major order and 32 aggregators; with the rank-conforming
    # bitmask, every level's aggregators spread over the whole rank range
    grid, shape, opts = (8, 8, 8), (128, 128, 128), dict(aggregator_count=32, bits_per_block=12, blocks_per_file=8)

    def spread(finest):
        assert len(finest["aggregator_ranks"]) == finest["aggregators"] <= 32
        assert finest["aggregator_ranks"] == sorted(finest["aggregator_ranks"])
        return max(finest["aggregator_ranks"]) - min(finest["aggregator_ranks"])

    conforming = hzio.plan(shape, grid=grid, rank_conforming=True, details=True, **opts)["levels"][-1]
    default = hzio.plan(shape, grid=grid, details=True, **opts)["levels"][-1]
    assert spread(conforming) > 0.75 * 512 and spread(default) < spread(conforming)
    out = subprocess.run([sys.executable, "-m", "hzio", "plan", "--global", "128,128,128", "--grid", "8,8,8",
                          "--aggregator-count", "32", "--bits-per-block", "12", "--blocks-per-file", "8", "--plot",
                          str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    png = tmp_path / "plan_aggregators.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    png = tmp_path / "plan_partitions.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_partitions_bound_aggregation_groups():
    # 512 ranks of 16^3: without partitions the coarse file's aggregator hears from every other rank; with
    # R partitions from the ranks of its group only, and the merge takes one message per group at most per
    # shared file
    opts = dict(grid=(8, 8, 8), bits_per_block=12, blocks_per_file=8)
    base = hzio.plan((128, 128, 128), **opts)
    assert base["senders_max"] == 511 and not base["groups"]
    for r in (2, 4, 8, 16):
        p = hzio.plan((128, 128, 128), partitions=r, **opts)
        assert len(p["groups"]) == r and all(g["ranks"] == 512 // r for g in p["groups"])
        assert p["senders_max"] == 512 // r - 1, (r, p["senders_max"])
        assert p["files"] == base["files"] and p["bytes"] == base["bytes"]
        assert p["merge"]["files"] == min(r, base["files"])
        assert p["merge"]["messages"] <= p["merge"]["files"] * r
        assert p["moved_messages"] == 0  # the 16^3 boxes never straddle the first 4 bitmask characters' planes
