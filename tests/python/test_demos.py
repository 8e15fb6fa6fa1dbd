"""The demos run and check themselves (each compares every read with its simulation and fails loudly). Here
their figures must be real PNGs, and their hot spot query must equal NumPy on the temperature simulated
again without hzio, and read a small share of the blocks."""

import os
import re
import shutil
import subprocess
import sys

import hzio
import numpy as np
import pytest
from PIL import Image

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")
SIZE, STEPS, ITERATIONS = 32, 2, 5
RUN_ARGS = ["--size", str(SIZE), "--steps", str(STEPS), "--iterations", str(ITERATIONS)]
FIGURES = ("u_views.png", "v_views.png", "temperature_query.png")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def demo():
    """The one-process demo as a module, for its simulation (``heater``, ``heat_step``) and query range."""
    sys.path.insert(0, EXAMPLES)
    try:
        import demo as module
    finally:
        sys.path.remove(EXAMPLES)
    return module


def simulated_temperature(demo):
    """The last timestep's temperature, simulated again with NumPy alone (the demos' writes play no part)."""
    temperature, source = demo.heater(SIZE)
    for _ in range((STEPS - 1) * ITERATIONS):
        demo.heat_step(temperature, source)
    return temperature


def check_figures(out_dir):
    """Every figure is a PNG of a real plot: large enough, and drawn with many colours (not a blank page)."""
    for name in FIGURES:
        path = os.path.join(out_dir, name)
        with open(path, "rb") as f:
            assert f.read(8) == PNG_SIGNATURE, name
        with Image.open(path) as png:
            assert png.format == "PNG" and png.width >= 800 and png.height >= 400, (name, png.size)
            pixels = np.asarray(png.convert("RGB")).reshape(-1, 3)
        assert len(np.unique(pixels, axis=0)) > 200, f"{name} has few colours: no colour map drawn"
        assert os.path.getsize(path) > 20_000, name


def check_hot_spot_query(demo, idx, stdout):
    """The query the demo ran, again on its dataset: it equals NumPy, finds a small feature and reads under a
    quarter of the blocks; the demo printed the same counts."""
    truth = simulated_temperature(demo)
    lo, hi = demo.hot_range(truth)
    with hzio.open(idx) as ds:
        coords, values = ds.query("temperature", lo, hi, time=STEPS - 1)
        report = ds.last_read_report
        holding = int((ds.blocks("temperature", time=STEPS - 1)["count"] > 0).sum())
    mask = (truth >= lo) & (truth <= hi)
    np.testing.assert_array_equal(coords, np.argwhere(mask))
    np.testing.assert_array_equal(values, truth[mask])
    assert 0 < mask.sum() < 0.01 * mask.size, "the hot spot should be found and occupy a small part"
    assert holding == 64, "the demo picks blocks so that the dataset has 64"
    assert 0 < report.blocks_read < 0.25 * holding, f"the query read {report.blocks_read} of {holding} blocks"
    printed = re.search(r"hot spot query: .*: (\d+) samples .*\n  (\d+) of (\d+) blocks read", stdout)
    assert printed, stdout
    assert tuple(map(int, printed.groups())) == (mask.sum(), report.blocks_read, holding)


def test_one_process_demo_draws_its_figures_and_its_query_reads_few_blocks(demo, tmp_path):
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "demo.py"), "--out", str(tmp_path), *RUN_ARGS],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    check_figures(tmp_path)
    check_hot_spot_query(demo, tmp_path / "gray_scott.idx", out.stdout)


@pytest.mark.skipif(shutil.which("mpiexec") is None or not getattr(hzio._core, "with_mpi", False),
                    reason="needs mpiexec and hzio built with MPI")
def test_mpi_demo_on_four_ranks_matches_the_one_process_simulation(demo, tmp_path):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run(["mpiexec", "-n", "4", "--oversubscribe", sys.executable,
                          os.path.join(EXAMPLES, "demo_mpi.py"), "--out", str(tmp_path), *RUN_ARGS],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "progressive read" in out.stdout
    check_figures(tmp_path)
    # the slabs' halo exchange sums in the one-process order, so the NumPy rerun is the oracle here too
    check_hot_spot_query(demo, tmp_path / "gray_scott_mpi.idx", out.stdout)
    # the run through one I/O rank: a reader in another process saw every timestep, in order, and the
    # files equal the synchronous run's (the demo compares them; here the two datasets are read too)
    steps = [int(t) for t in re.findall(r"live reader: timestep (\d+) committed", out.stdout)]
    assert "byte-identical to the synchronous run's" in out.stdout and steps == list(range(len(steps))) and steps
    with hzio.open(str(tmp_path / "gray_scott_mpi.idx")) as a, \
            hzio.open(str(tmp_path / "io_ranks" / "gray_scott_mpi.idx")) as b:
        assert a.times == b.times == steps
        np.testing.assert_array_equal(a.read(field="u", time=steps[-1]), b.read(field="u", time=steps[-1]))
