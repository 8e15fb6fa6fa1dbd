"""Hostile datasets cost what their bytes justify (docs/format.md "Limits"): a small .idx that declares
huge blocks, many fields, timesteps or ranges, or templates that leave its folder, is refused by every
command with an error naming the problem, or served in bounded memory; never a traceback, a hang or
an allocation of what the .idx merely declares.

Every CLI verb runs in a child process under an address-space limit (``RLIMIT_AS``) and a time limit
that only guards against hangs (the test asserts outcomes, not speed). Oracle: the limits and messages
docs/format.md states, and NumPy for the one dataset that is readable.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import hzio
import numpy as np
import pytest

BASE = """(version)
6
(box)
0 31 0 31 0 31
(fields)
a float32 default_compression(zip) default_layout(hzorder) default_value(0) min(0) max(0)
+ b float32 default_compression(zip) default_layout(hzorder) default_value(0) min(0) max(0)
(bits)
V012012012012012
(bitsperblock)
12
(blocksperfile)
8
(filename_template)
./f32_3d_2fields_zip/%04x.bin
"""
MEMORY_LIMIT = 4 << 30
HANG_GUARD_S = 300


def _base() -> str:
    return BASE


def _with_fields(n: int) -> str:
    base = _base()
    fields = "(fields)\n" + "\n+ ".join(f"f{i} float32" for i in range(n)) + "\n"
    return base.split("(fields)")[0] + fields + "(bits)" + base.split("(bits)")[1]


# name -> (.idx text, what the error must say, or None when the dataset opens)
CASES = {
    "bits per block beyond memory": (
        _base().replace("(bitsperblock)\n12", "(bitsperblock)\n38").replace("V012012012012012", "V" + "012" * 13),
        "bytes per block"),
    "more fields than the limit": (_with_fields(65537), "65536 fields"),
    "a huge time range": (_base() + "(time)\n0 2000000000 time_%010d/\n", "1048576"),
    "more time ranges than the limit": (
        _base() + "(time)\ntime_%06d/ " + " ".join(f"({2 * i},{2 * i},1)" for i in range(70000)) + "\n", "ranges"),
    "an absolute template": (_base().replace("./f32_3d_2fields_zip/%04x.bin", "/etc/%04x.bin"), "outside its folder"),
    "a template climbing out": (
        _base().replace("./f32_3d_2fields_zip/%04x.bin", "../../etc/%04x.bin"), "outside its folder"),
    "a time template climbing out": (_base() + "(time)\n0 3 ../../t%d/\n", "outside its folder"),
    "as many fields as the limit": (_with_fields(65536), None),
    "a 1-D dataset of 2^34 samples and no files": (
        _base().replace("0 31 0 31 0 31", "0 17179869183 0 0 0 0").replace("V012012012012012", "V" + "0" * 34),
        None),
}

VERBS = [["info"], ["read", "-o", "{out}"], ["verify", "--allow-missing"], ["dump"], ["index"],
         ["query", "--range", "0", "1"]]


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    paths = {}
    for i, (name, (text, _)) in enumerate(CASES.items()):
        paths[name] = folder / f"h{i}.idx"
        paths[name].write_text(text)
    return paths


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
def test_every_command_answers_a_hostile_idx_cleanly(hostile, tmp_path, name, verb):
    path = hostile[name]
    _, message = CASES[name]
    args = [a.format(out=tmp_path / "o.npy") for a in verb]
    if verb[0] == "read" and name.startswith("a 1-D"):
        args += ["--box", "0:1000", "--level", "20"]  # the whole axis is 64 GiB: a box of it
    # Few malloc arenas: on a many-core machine each thread's arena reserves address space under the limit.
    proc = subprocess.run([sys.executable, "-m", "hzio", args[0], str(path), *args[1:]], capture_output=True,
                          text=True, timeout=HANG_GUARD_S, preexec_fn=_limited,
                          env=dict(os.environ, MALLOC_ARENA_MAX="2"))
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if message is None:  # served: an answer (1: verify of an empty one), or a clean "too large to answer"
        assert proc.returncode in (0, 1) or proc.stderr.startswith("hzio: error: out of memory"), (
            proc.stdout[-2000:] + proc.stderr[-2000:])
        if verb[0] == "query" and name.startswith("a 1-D"):  # its default value 0 matches all 2^34 samples
            assert proc.returncode == 2 and "the query matches more than" in proc.stderr, proc.stderr[-2000:]
    else:
        assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert proc.stderr.startswith("hzio: error:") and message in proc.stderr, proc.stderr


@pytest.mark.parametrize("name", [n for n, (_, m) in CASES.items() if m])
def test_the_python_api_raises_an_hzio_error(hostile, name):
    with pytest.raises(hzio.Error, match=CASES[name][1]):
        hzio.open(hostile[name])


def test_templates_may_leave_the_folder_when_the_user_allows_it(tmp_path):
    """The same dataset, its data folder moved out of the .idx's folder: refused, then read when allowed."""
    a = np.arange(4 * 8 * 8, dtype=np.float32).reshape(4, 8, 8)
    inner = tmp_path / "inner"
    with hzio.create(inner / "d.idx", shape=a.shape, fields={"v": "float32"}) as ds:
        ds.write(a)
    (inner / "d").rename(tmp_path / "data")
    text = (inner / "d.idx").read_text()
    (inner / "d.idx").write_text(text.replace("./d/", "../data/"))
    with pytest.raises(hzio.InvalidArgumentError, match="outside its folder"):
        hzio.open(inner / "d.idx")
    with hzio.open(inner / "d.idx", allow_outside_folder=True) as ds:
        np.testing.assert_array_equal(ds.read(), a)
