"""Named result types: what reads, queries, progressive reads, commits and ``hzio.index`` return, and what the
binding ``hzio._core`` returns underneath; type hints and keyword-only options of the public API.

The dataset: ``(16, 32, 32)`` float32 ``arange`` in field ``t`` (raw, 1024 samples per block: 16 blocks of
4096 bytes, 4 per data file) and a never-written vector field ``v``. Expectations come from that layout
and from NumPy, not from hzio's own reports. The collective results run under ``mpiexec`` at 1 and 3
ranks (``mpi_scripts/results_collective.py``).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from collections.abc import Mapping
from pathlib import Path

import hzio
import hzio.cli
import hzio.errors
import hzio.parallel
import numpy as np
import pytest
from hzio import _core
from hzio._views import Field, LevelView, _ArrayView

SHAPE, BPB, BPF = (16, 32, 32), 10, 4
BLOCKS = 2 ** 14 // 2 ** BPB  # 16
BLOCK_BYTES = 2 ** BPB * 4
DATA = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)

READ_KEYS = ("files_opened", "blocks_read", "blocks_missing", "bytes_read", "min_bytes", "requests", "bytes_received",
             "method", "assembly")
WRITE_KEYS = ("ranks", "aggregators", "rounds", "placement", "bytes", "file_bytes", "files", "rank_conforming",
              "messages", "message_bytes", "partitions", "index_space", "groups", "merge", "moved_messages",
              "moved_bytes", "max", "mean", "levels")
PHASE_KEYS = ("restructure", "hz", "aggregate", "compress", "stats", "write", "commit", "stage", "other", "total")
LEVEL_KEYS = ("level", "blocks", "bytes", "hz_max", "hz_mean", "write_max", "write_mean")


def block_level(block):
    """Block 0 holds levels 0..BPB; block b > 0 lies in level BPB + bit_length(b) (docs/glossary.md "block")."""
    return BPB + block.bit_length() if block else BPB


@pytest.fixture
def written(tmp_path):
    path = tmp_path / "rec.idx"
    ds = hzio.create(path, shape=SHAPE, fields={"t": "float32", "v": "float32[3]"}, bits_per_block=BPB,
                     blocks_per_file=BPF, durable=False)
    ds.write(DATA, field="t")
    return path, ds


def check_mapping(rep, keys, types):
    """``rep`` is a frozen result whose mapping view has exactly ``keys``, each equal to the attribute."""
    assert isinstance(rep, Mapping) and dataclasses.is_dataclass(rep)
    assert tuple(dict(rep)) == keys and tuple(rep.keys()) == keys and len(rep) == len(keys)
    for k in keys:
        assert rep[k] == getattr(rep, k) and k in rep and rep.get(k) == getattr(rep, k)
    for k, t in types.items():
        assert isinstance(getattr(rep, k), t), (k, type(getattr(rep, k)))
    assert rep == dict(rep) and "nope" not in rep and rep.get("nope") is None
    with pytest.raises(KeyError):
        rep["nope"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(rep, keys[0], 0)
    assert hash(rep) == hash(type(rep)(**dict(rep)))


def test_write_report_of_flush_and_close(written):
    path, ds = written
    rep = ds.flush()
    assert type(rep) is hzio.WriteReport and rep is ds.last_write_report
    check_mapping(rep, WRITE_KEYS, {k: int for k in ("ranks", "aggregators", "rounds", "bytes", "file_bytes", "files")})
    assert (rep.ranks, rep.placement, rep.bytes) == (1, "serial", DATA.nbytes)
    assert (rep.files, rep.file_bytes) == (BLOCKS // BPF, BLOCKS * BLOCK_BYTES)  # raw blocks, all written
    for phases in (rep.max, rep["mean"]):
        assert type(phases) is hzio.PhaseTimes
        check_mapping(phases, PHASE_KEYS, {k: float for k in PHASE_KEYS})
    assert isinstance(rep.levels, tuple) and rep["levels"] is rep.levels
    want = {}
    for b in range(BLOCKS):
        want[block_level(b)] = want.get(block_level(b), 0) + 1
    assert {lv.level: lv.blocks for lv in rep.levels} == want
    for lv in rep.levels:
        assert type(lv) is hzio.LevelTimes and lv.bytes == lv.blocks * BLOCK_BYTES
        check_mapping(lv, LEVEL_KEYS, {"level": int, "blocks": int, "bytes": int, "hz_max": float})
    plain = json.loads(json.dumps(dataclasses.asdict(rep)))  # JSON through asdict, nested results as dicts
    assert plain["max"] == dict(rep.max) and plain["levels"][0] == dict(rep.levels[0])
    ds.write(DATA[:1] + 1, field="t")
    ds.close()
    assert type(ds.last_write_report) is hzio.WriteReport and ds.last_write_report.bytes == DATA[:1].nbytes
    assert ds.last_write_report != rep


def test_read_reports_count_the_blocks_of_the_layout(written):
    path, ds = written
    ds.close()
    with hzio.open(path) as ds:
        assert ds.last_read_report is None and ds.last_write_report is None
        np.testing.assert_array_equal(ds.read(field="t"), DATA)
        rep = ds.last_read_report
        assert type(rep) is hzio.ReadReport
        check_mapping(rep, READ_KEYS, {k: int for k in READ_KEYS[:7]} | {"method": str, "assembly": str})
        assert (rep.blocks_read, rep.blocks_missing, rep.files_opened) == (BLOCKS, 0, BLOCKS // BPF)
        assert rep.requests == rep.bytes_received == 0  # local files: no request (test_http_reads counts them)
        assert rep.min_bytes == BLOCKS * BLOCK_BYTES and rep.bytes_read >= rep.min_bytes
        assert (rep.method, rep.assembly) == ("independent", "blocks")
        np.testing.assert_array_equal(ds.field("v")[...], np.zeros(SHAPE + (3,), np.float32))
        assert (ds.last_read_report.blocks_read, ds.last_read_report["blocks_missing"]) == (0, BLOCKS)


def test_query_and_progressive_reports_add_their_key(written):
    path, ds = written
    ds.close()
    with hzio.open(path) as ds:
        lo, hi = 5000.0, 5100.0
        coords, values = ds.query("t", lo, hi)
        np.testing.assert_array_equal(coords, np.argwhere((DATA >= lo) & (DATA <= hi)))
        np.testing.assert_array_equal(values, DATA[(DATA >= lo) & (DATA <= hi)])
        rep = ds.last_read_report
        assert type(rep) is hzio.QueryReport and isinstance(rep, hzio.ReadReport)
        check_mapping(rep, READ_KEYS + ("blocks_skipped",), {"blocks_skipped": int, "blocks_read": int})
        assert rep.blocks_read + rep.blocks_skipped == BLOCKS and 0 < rep.blocks_read < BLOCKS
        mask = ds.query("t", lo, hi, mask=True)
        np.testing.assert_array_equal(mask, (DATA >= lo) & (DATA <= hi))
        assert mask.dtype == bool and mask.flags.writeable and values.flags.writeable
        steps = []
        for level, arr in ds.progressive(field="t", levels=[BPB, 12, 14]):
            rep = ds.last_read_report
            assert type(rep) is hzio.ProgressiveReport and rep.level == rep["level"] == level
            check_mapping(rep, READ_KEYS + ("level",), {"level": int})
            steps.append(rep.blocks_read)
            finest = arr
        np.testing.assert_array_equal(finest, DATA)
        assert steps == [1, 1 + 2, 4 + 8]  # each step reads the blocks of its new levels only


def test_index_returns_a_result_and_takes_options_by_keyword(written):
    path, ds = written
    ds.close()
    rep = hzio.index(path, sub_block_bits=0)
    assert type(rep) is hzio.IndexReport
    check_mapping(rep, ("files", "blocks", "seconds"), {"files": int, "blocks": int, "seconds": float})
    assert (rep.files, rep.blocks) == (BLOCKS // BPF, BLOCKS)  # field v was never written: no blocks
    with pytest.raises(TypeError):
        hzio.index(path, 0)


# ------------------------------------------------------------------------------------------ hzio._core

RESULT_RETURNS = {  # function -> the _core result type (or list of them) it returns
    (_core.Dataset, "box"): "Box", (_core.Dataset, "fields"): "list[hzio._core.FieldSpec]",
    (_core.Dataset, "level_grid"): "SampleGrid", (_core.Dataset, "read_box"): "ReadReport",
    (_core.Dataset, "block_infos"): "list[hzio._core.BlockInfo]", (_core.Dataset, "query"): "QueryResult",
    (_core.Dataset, "flush"): "WriteReport", (_core.Dataset, "close"): "WriteReport",
    (_core.ProgressiveRead, "next_grid"): "SampleGrid", (_core.ProgressiveRead, "next"): "ReadReport",
}
if _core.with_mpi:
    RESULT_RETURNS.update({(_core.ParallelDataset, "read_box"): "ReadReport",
                           (_core.ParallelDataset, "flush"): "WriteReport",
                           (_core.ParallelDataset, "close"): "WriteReport",
                           (_core.ParallelDataset, "last_write_report"): "WriteReport"})


@pytest.mark.parametrize("cls, name", list(RESULT_RETURNS), ids=lambda v: getattr(v, "__name__", v))
def test_core_signatures_return_named_results(cls, name):
    attr = inspect.getattr_static(cls, name)
    func = attr.fget if isinstance(attr, property) else getattr(cls, name)
    returns = func.__nb_signature__[0][0].rsplit(" -> ", 1)[1]
    want = RESULT_RETURNS[(cls, name)]
    assert returns == (want if want.startswith("list[") else f"hzio._core.{want}")


def test_core_returns_result_types_not_dicts_tuples_or_text(written):
    path, ds = written
    core = ds._core
    lo, hi = (0, 0, 0), (32, 32, 16)
    out = np.empty(SHAPE, np.float32)
    grid = core.level_grid(lo, hi, -1)
    results = {
        "box": core.box, "level_grid": grid, "read_box": core.read_box(lo, hi, -1, "t", 0, out),
        "query": core.query(lo, hi, -1, "t", 0, 10.0, 20.0, 0, False), "flush": core.flush(),
    }
    reader = _core.ProgressiveRead.start(core, lo, hi, "t", 0, [BPB, 14])
    results["next_grid"] = reader.next_grid()
    results["next"] = reader.next(np.empty(results["next_grid"].count[::-1], np.float32))
    fields, blocks = core.fields, core.block_infos("t", 0)
    results["close"] = core.close()
    for name, value in results.items():
        assert not isinstance(value, (dict, tuple, str, list)), name
        assert type(value).__module__ == "hzio._core", name
        assert type(value).__name__ in repr(value), name
    assert [type(f).__name__ for f in fields] == ["FieldSpec", "FieldSpec"]
    assert [(f.name, f.dtype, f.codec, f.layout, f.default_value) for f in fields] == [
        ("t", "float32", "raw", "hzorder", 0.0), ("v", "float32[3]", "raw", "hzorder", 0.0)]
    assert len(blocks) == BLOCKS and all(type(b).__name__ == "BlockInfo" for b in blocks)
    assert [b.level for b in blocks] == [block_level(b) for b in range(BLOCKS)]
    assert all(b.size == BLOCK_BYTES and b.stats_known for b in blocks)  # committed by the flush above
    assert (results["box"].lo, results["box"].hi) == ((0, 0, 0), (32, 32, 16))
    assert (grid.origin, grid.spacing, grid.count, grid.sample_count) == ((0, 0, 0), (1, 1, 1), (32, 32, 16), 2 ** 14)
    assert results["next_grid"].sample_count == 2 ** BPB and results["next"].blocks_read == 1  # block 0 alone
    np.testing.assert_array_equal(out, DATA)
    q = results["query"]
    want = np.argwhere((DATA >= 10) & (DATA <= 20))[:, ::-1]  # x first
    assert q.points.dtype == np.int64 and q.points.shape == (len(want), 3)
    np.testing.assert_array_equal(q.points, want)
    np.testing.assert_array_equal(q.values.view(np.float32), DATA[(DATA >= 10) & (DATA <= 20)])
    assert q.mask.size == 0 and type(q.report).__name__ == "ReadReport"
    assert q.blocks_skipped > 0 and q.blocks_skipped + q.report.blocks_read == BLOCKS
    assert results["flush"].bytes == DATA.nbytes and results["close"].bytes == 0


def test_core_query_arrays_are_views_of_the_result(written):
    """The buffers are not copied: an array's memory belongs to the result, which the array keeps alive."""
    _, ds = written
    q = ds._core.query((0, 0, 0), (32, 32, 16), -1, "t", 0, 0.0, 1e9, 0, False)
    points = q.points
    assert np.shares_memory(points, q.points) and not points.flags.owndata
    del q
    np.testing.assert_array_equal(points[:, ::-1], np.argwhere(DATA >= 0))


# ------------------------------------------------------------------------------------------ the public API

PUBLIC_FUNCTIONS = [hzio.create, hzio.open, hzio.index, hzio.parse_dtype, hzio.errors.error_class, hzio.cli.main,
                    hzio.cli.build_parser]
PUBLIC_CLASSES = [hzio.Dataset, hzio.parallel.ParallelDataset, LevelView, Field, _ArrayView]


def public_members():
    for cls in PUBLIC_CLASSES:
        for name, member in vars(cls).items():
            if name.startswith("_") and name not in ("__getitem__", "__setitem__", "__enter__", "__exit__"):
                continue
            func = member.fget if isinstance(member, property) else member
            if callable(func):
                yield f"{cls.__name__}.{name}", func
    for func in PUBLIC_FUNCTIONS:
        yield func.__qualname__, func


@pytest.mark.parametrize("name, func", list(public_members()), ids=lambda v: v if isinstance(v, str) else "")
def test_public_api_is_typed_and_says_local_or_collective(name, func):
    hints = typing.get_type_hints(func)
    params = [p for p in inspect.signature(func).parameters if p != "self"]
    assert "return" in hints and all(p in hints for p in params), (name, set(params) - set(hints))
    assert "Local" in func.__doc__ or "Collective" in func.__doc__, name


@pytest.mark.parametrize("func, first", [(hzio.create, 3), (hzio.open, 1), (hzio.index, 1)])
def test_options_after_the_first_arguments_are_keyword_only(func, first):
    params = list(inspect.signature(func).parameters.values())
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params[:first])
    assert params[first:] and all(p.kind is p.KEYWORD_ONLY for p in params[first:])


def test_parallel_dataset_docstring_says_which_calls_are_collective():
    doc = " ".join(hzio.parallel.ParallelDataset.__doc__.split())
    collective, local = doc.split("**Local**")
    for call in ("read", "ds[...]", "ds.level(h)[...]", "ds.field(f)[...]", "flush", "close", "hzio.create",
                 "hzio.open"):
        assert call in collective, call
    for call in ("write", "progressive", "query", "blocks", "verify_block", "metadata"):
        assert call in local, call
    for method in (hzio.Dataset.__getitem__, hzio.Dataset.level, hzio.Dataset.field, LevelView.__getitem__,
                   Field.__getitem__):
        assert "Collective on a dataset opened with comm" in " ".join(method.__doc__.split()), method


def test_the_package_ships_its_type_information():
    package = Path(hzio.__file__).parent
    assert (package / "py.typed").is_file()
    stub = package / "_core.pyi"
    assert stub.is_file() and "def read_box(" in stub.read_text() and "class WriteReport" in stub.read_text()
    assert set(hzio.__all__) >= {"ReadReport", "QueryReport", "ProgressiveReport", "WriteReport", "PhaseTimes",
                                 "LevelTimes", "IndexReport"}


# ------------------------------------------------------------------------------------------ collective

@pytest.mark.parametrize("nprocs", [1, 3])
def test_collective_calls_return_result_types_on_every_rank(tmp_path, nprocs):
    import mpi_launch
    mpi_launch.skip_module_without_mpi()
    result, describe = mpi_launch.run_json(nprocs, "results_collective", {"out": str(tmp_path)}, timeout=240)
    assert result is not None, describe
    seen = result["seen"]
    assert len(seen) == nprocs
    shape = (2 * nprocs, 8, 16)
    for rank in seen:
        assert rank["core_flush"] == rank["core_last_write_report"] == ["hzio._core", "WriteReport"]
        assert rank["core_read_box"] == ["hzio._core", "ReadReport"] and rank["core_read_equal"]
        assert rank["flush"] == rank["close_report"] == ["hzio._results", "WriteReport"]
        assert rank["read"] == ["hzio._results", "ReadReport"] and rank["read_equal"]
        assert rank["flush_is_last"] and rank["flush_attr_equals_item"]
        assert rank["flush_report"] == seen[0]["flush_report"] or _without_times(rank) == _without_times(seen[0])
        rep = rank["flush_report"]
        assert tuple(rep) == WRITE_KEYS and tuple(rep["max"]) == PHASE_KEYS
        assert all(tuple(lv) == LEVEL_KEYS for lv in rep["levels"])
        assert (rep["ranks"], rep["bytes"]) == (nprocs, int(np.prod(shape)) * 4)
        assert rank["close_bytes"] == int(np.prod(shape)) * 4
        assert tuple(rank["read_report"]) == READ_KEYS
    # The report accounts for the write's wall time: stage (the write call's copy) plus the flush's wall
    # time, which its phases and `other` cover; it lies within the calls as every rank timed them.
    slowest = max(r["timed"]["write_s"] + r["timed"]["flush_s"] for r in seen)
    for rank in seen:
        mx, mean = rank["timed"]["report"]["max"], rank["timed"]["report"]["mean"]
        assert 0 < mx["stage"] <= max(r["timed"]["write_s"] for r in seen) + 1e-6
        assert mx["total"] <= slowest + 1e-6
        assert mx["other"] >= 0 and mean["other"] >= 0
        assert mean["total"] >= mean["stage"] + mean["other"] - 1e-9
        if nprocs == 1:  # one rank's own figures: other is what the phases leave of the flush, if anything
            phases = sum(mx[k] for k in PHASE_KEYS[:7])
            if mx["other"] > 0:
                assert mx["total"] == pytest.approx(phases + mx["stage"] + mx["other"], abs=1e-9)
            else:
                assert mx["total"] <= phases + mx["stage"] + 1e-9
        assert rank["borrowed_stage"] == 0.0  # copy=False copies nothing


def _without_times(rank):
    rep = rank["flush_report"]
    return {k: v for k, v in rep.items() if k not in ("max", "mean", "levels")}
