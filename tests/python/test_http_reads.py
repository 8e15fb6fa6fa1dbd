"""Reading datasets over HTTP from a plain web server (tests/python/web_server.py): every read feature
equals NumPy on the source and the same read of the local files; a coarse preview costs at most 3
requests after the .idx; a server that ignores Range, a missing file and a write are clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hzio
import numpy as np
import pytest
from web_server import WebServer

SHAPE = (24, 40, 32)  # [z, y, x]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A dataset of a raw float32 field over two timesteps and a zip int16 field, and its sources."""
    root = tmp_path_factory.mktemp("www")
    rng = np.random.default_rng(11)
    temp = [rng.standard_normal(SHAPE).astype(np.float32) + t for t in range(2)]
    count = rng.integers(-3000, 3000, SHAPE, dtype=np.int16)
    path = root / "sim" / "run.idx"
    path.parent.mkdir()
    with hzio.create(path, shape=SHAPE, fields={"temp": "float32", "count": "int16"}, codec="raw",
                     times=[0, 1], bits_per_block=10, blocks_per_file=4) as ds:
        for t in range(2):
            ds.write(temp[t], field="temp", time=t)
        ds.write(count, field="count", time=0)
    return root, path, temp, count


def test_remote_reads_equal_numpy_and_the_local_reads(served):
    root, path, temp, count = served
    with WebServer(root) as server:
        url = f"{server.url}/sim/run.idx"
        with hzio.open(url) as remote, hzio.open(path) as local:
            assert remote.shape == SHAPE
            for t in range(2):
                np.testing.assert_array_equal(remote.read(field="temp", time=t), temp[t])
            np.testing.assert_array_equal(remote.read(field="count"), count)
            box = ((3, 5, 0), (17, 39, 9))  # [z, y, x] low and high corners
            np.testing.assert_array_equal(remote.read(field="temp", time=1, box=box), temp[1][3:17, 5:39, 0:9])
            for level in (0, 4, remote.max_level - 3):
                np.testing.assert_array_equal(remote.read(field="temp", level=level),
                                              local.read(field="temp", level=level))
            got = remote.query("temp", 1.5, 2.0, time=0)
            want = np.argwhere((temp[0] >= 1.5) & (temp[0] <= 2.0))
            np.testing.assert_array_equal(got[0], want)
            np.testing.assert_array_equal(got[1], temp[0][tuple(want.T)])
            steps = list(remote.progressive(field="temp"))
            assert steps[-1][0] == remote.max_level
            np.testing.assert_array_equal(steps[-1][1], temp[0])
    assert any(r[2].startswith("bytes=") for r in server.requests)  # blocks come as byte ranges


def test_a_coarse_preview_costs_at_most_three_requests_after_the_idx(served):
    root, _, temp, _ = served
    with WebServer(root, latency=0.02) as server:
        with hzio.open(f"{server.url}/sim/run.idx") as ds:
            after_idx = len(server.requests)
            assert [r[1] for r in server.requests] == ["/sim/run.idx"]
            coarse = ds.read(field="temp", level=3)
            assert coarse.size > 1
            assert len(server.requests) - after_idx <= 3, server.requests
            # The read report counts the requests the server saw, and the bytes it sent for them.
            report = ds.last_read_report
            assert report.requests == len(server.requests) - after_idx
            sent = sum(_range_length(r[2], (root / r[1].lstrip("/")).stat().st_size)
                       for r in server.requests[after_idx:])
            assert report.bytes_received == sent
            before = len(server.requests)
            ds.read(field="temp", time=1)
            assert ds.last_read_report.requests == len(server.requests) - before > 0
    with hzio.open(served[1]) as local:
        local.read(field="temp", level=3)
        assert local.last_read_report.requests == local.last_read_report.bytes_received == 0


def _range_length(header, file_size):
    """Bytes a request for ``Range: bytes=a-b`` of a file of ``file_size`` bytes gets."""
    first, last = header.removeprefix("bytes=").split("-")
    return min(int(last), file_size - 1) - int(first) + 1


def test_blocks_are_asked_for_at_once_and_neighbours_together(served):
    """A read of blocks in many files sends its requests concurrently (hints fetch them ahead on several
    connections), neighbouring blocks of a file in one request, and each byte once."""
    root, _, temp, _ = served
    with WebServer(root, latency=0.02) as server:
        with hzio.open(f"{server.url}/sim/run.idx") as ds:
            box = ((0, 0, 0), (12, 40, 32))
            np.testing.assert_array_equal(ds.read(field="temp", box=box), temp[0][:12])
            blocks = ds.last_read_report["blocks_read"]
            ranges = [r for r in server.requests if r[1].endswith(".bin")]
    assert len(ranges) == len(set(ranges)), ranges
    files = {r[1] for r in ranges}
    assert len(files) > 1 and len(ranges) - len(files) < blocks, (len(ranges), len(files), blocks)  # headers + payloads
    assert server.most_in_flight > 1


def test_a_server_that_answers_another_range_is_an_error_not_data(served):
    """A server that answers every range with bytes from the file's start (and says so in Content-Range)
    is refused even with checksums off: those bytes are not the ones asked for."""
    root, _, _, _ = served
    with WebServer(root, wrong_ranges=True) as server:
        with pytest.raises(hzio.IoError, match="sent bytes 0-"):
            with hzio.open(f"{server.url}/sim/run.idx", verify=False) as ds:
                ds.read(field="temp")


def test_a_server_that_ignores_range_is_named(served):
    root, _, _, _ = served
    with WebServer(root, ranges=False) as server:
        with hzio.open(f"{server.url}/sim/run.idx") as ds:
            with pytest.raises(hzio.Error, match="byte ranges"):
                ds.read(field="temp")


def test_missing_files_and_writes_are_clear_errors(served, tmp_path):
    root, path, _, _ = served
    with WebServer(root) as server:
        with pytest.raises(hzio.NotFoundError, match="nothing.idx"):
            hzio.open(f"{server.url}/sim/nothing.idx")
        with pytest.raises(hzio.Error, match="read-only"):
            hzio.open(f"{server.url}/sim/run.idx", mode="r+")
    # A dataset whose data files are not served reads as missing blocks: the default value, as locally.
    lone = tmp_path / "www"
    lone.mkdir()
    (lone / "run.idx").write_bytes(path.read_bytes())
    with WebServer(lone) as server:
        with hzio.open(f"{server.url}/run.idx") as ds:
            assert not ds.read(field="temp").any()


def test_a_server_that_is_gone_is_named_after_retries(served):
    root, _, _, _ = served
    server = WebServer(root)
    with server:
        url = f"{server.url}/sim/run.idx"
        ds = hzio.open(url)
    with pytest.raises(hzio.Error, match="attempts"):
        ds.read(field="temp")
    ds.close()


def test_paths_outside_the_served_folder_are_not_served(served):
    root, _, _, _ = served
    secret = Path(root).parent / "secret.txt"
    secret.write_text("no")
    with WebServer(root) as server:
        with pytest.raises(hzio.NotFoundError):
            hzio.open(f"{server.url}/../secret.txt")


def test_the_cli_reads_and_verifies_remote_datasets(served, tmp_path):
    root, _, temp, _ = served
    with WebServer(root) as server:
        url = f"{server.url}/sim/run.idx"
        out = tmp_path / "t.npy"
        for args in (["info", url], ["verify", url], ["read", url, "--field", "temp", "--time", "1", "-o", str(out)]):
            run = subprocess.run([sys.executable, "-m", "hzio", *args], capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, (args, run.stdout, run.stderr)
    np.testing.assert_array_equal(np.load(out), temp[1])
