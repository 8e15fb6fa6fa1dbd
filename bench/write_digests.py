"""Byte-identity check: write fixed, seeded IDX datasets with one process and with 4 MPI ranks; hash every file.

    .venv/bin/python bench/write_digests.py write OUTDIR        # OUTDIR/serial/, OUTDIR/mpi4/, OUTDIR/digests.json
    .venv/bin/python bench/write_digests.py compare A/digests.json B/digests.json
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback

import hzio
import numpy as np

SEED = 20261124
RANKS = 4
GROUPS = ("serial", f"mpi{RANKS}")
MPI_TIMEOUT_S = 300
HZIO_BUILT = time.ctime(os.path.getmtime(hzio._core.__file__))  # the build this process loaded


def op(lo=None, hi=None, field=None, time=None):
    """One ``ds.write`` of seeded samples into the box ``[lo, hi)`` (None: the whole dataset)."""
    return {"lo": lo, "hi": hi, "field": field, "time": time}


# Each dataset is created, then written phase by phase: the writes of a phase never overlap (so each rank
# can stage its slab of every write), and each phase ends with a commit (flush; close after the last).
# Later phases rewrite regions of earlier ones; partial boxes leave blocks to merge with stored ones.
# "reopen" closes the dataset and opens it again with mode "r+". Every shape is a non-power of two.
DATASETS = [
    dict(name="u8_raw_hzorder", shape=(37, 50, 61), fields={"v": "uint8"}, codec="raw", layout="hzorder",
         bits_per_block=10, blocks_per_file=8, aggregator_bytes=1,  # one block per round under MPI
         phases=[[op()], [op((5, 7, 9), (30, 41, 50))]]),
    dict(name="i16_zip_rowmajor_times", shape=(33, 47, 29), fields={"v": "int16"}, codec="zip",
         layout="rowmajor", bits_per_block=9, blocks_per_file=4, times=[0, 1, 2],  # timestep 1 never written
         phases=[[op(time=0), op((3, 0, 5), (20, 47, 21), time=2)],
                 [op((10, 10, 10), (13, 40, 25), time=0), op((0, 5, 0), (33, 30, 29), time=2)]]),
    dict(name="i32_lz4_hzorder_boxes", shape=(40, 31, 23), fields={"v": "int32"}, codec="lz4", layout="hzorder",
         bits_per_block=11, blocks_per_file=4, sub_block_bits=2,
         phases=[[op((0, 0, 0), (20, 16, 12)), op((20, 0, 0), (40, 31, 7)), op((0, 16, 12), (17, 31, 23)),
                  op((25, 20, 10), (39, 30, 22))],  # disjoint boxes leaving holes (default value)
                 [op((10, 5, 3), (30, 25, 20))]]),
    dict(name="f32_zfp_reversible", shape=(48, 40, 36), fields={"v": "float32"},
         codec="zfp-reversible-reversible", bits_per_block=12, blocks_per_file=4,
         phases=[[op()], [op((7, 3, 1), (41, 39, 30))]]),
    dict(name="f32_zfp_lossy", shape=(32, 33, 35), fields={"v": "float32"}, codec="zfp-precision=20-precision=20",
         bits_per_block=12, blocks_per_file=8,
         phases=[[op()], [op((4, 4, 4), (20, 30, 33))]]),  # the rewrite merges with decoded lossy blocks
    dict(name="f64_raw_rowmajor_times", shape=(29, 34, 27), fields={"v": "float64"}, codec="raw",
         layout="rowmajor", bits_per_block=10, blocks_per_file=16, times=[0, 1],
         phases=[[op(time=0)], [op((2, 3, 4), (27, 30, 20), time=1), op((0, 0, 0), (5, 34, 27), time=0)]]),
    # The one durable dataset: float32 blocks of 64 KiB, whole inside the z slabs, travel detached under MPI.
    dict(name="f32_raw_durable_big_blocks", shape=(128, 64, 72), fields={"v": "float32"}, codec="raw",
         bits_per_block=14, blocks_per_file=4, times=[0, 1], durable=True, aggregator_bytes=200000,
         phases=[[op(time=0)], [op((0, 0, 0), (96, 64, 64), time=1), op((40, 9, 13), (77, 50, 70), time=0)]]),
    dict(name="f32x3_zip_hzorder", shape=(21, 26, 30), fields={"wind": "float32[3]"}, codec="zip",
         bits_per_block=10, blocks_per_file=8,
         phases=[[op()], [op((3, 2, 1), (18, 20, 29))]]),
    dict(name="u8x3_lz4_rowmajor", shape=(17, 45, 38), fields={"rgb": "uint8[3]"}, codec="lz4", layout="rowmajor",
         bits_per_block=11, blocks_per_file=2, times=[0, 1, 2], placement="uniform", aggregator_count=2,
         phases=[[op(time=1), op((0, 0, 0), (17, 20, 38), time=2)], [op((2, 11, 5), (9, 40, 30), time=1)]]),
    dict(name="multi_field", shape=(30, 28, 26), codec="raw", bits_per_block=9, blocks_per_file=8, times=[0, 1, 2],
         fields=[("temp", "float32", {"codec": "zip"}), ("pressure", "float64", {"layout": "rowmajor"}),
                 ("mask", "uint8", {"codec": "lz4", "default_value": 255}),
                 ("vel", "float32[3]", {"codec": "lz4"}),  # zfp refuses vectors: UnsupportedError at write
                 ("count", "int32", {"codec": "zfp-reversible-reversible"})],
         phases=[[op(field="temp", time=0), op((0, 0, 0), (15, 28, 26), "pressure", 0),
                  op((5, 5, 5), (25, 20, 20), "mask", 0), op(field="vel", time=2)],
                 [op((10, 0, 0), (20, 28, 13), "temp", 0), op(field="pressure", time=2),
                  op((0, 0, 0), (30, 10, 26), "mask", 0), op((3, 4, 5), (27, 24, 21), "count", 2)]]),
    dict(name="plane_2d", shape=(300, 257), codec="zip", layout="rowmajor", bits_per_block=8, blocks_per_file=8,
         times=[0, 1, 2], fields=[("h", "float32"), ("k", "int16", {"codec": "lz4", "layout": "hzorder"})],
         phases=[[op(field="h", time=1), op((10, 20), (200, 250), "k", 1)],
                 [op((50, 0), (120, 100), "h", 1), op((0, 0), (300, 128), "k", 0)]]),
    dict(name="f32_raw_reopened", shape=(45, 39, 41), fields={"v": "float32"}, codec="raw", bits_per_block=12,
         blocks_per_file=2, times=[0, 2],
         phases=[[op(time=0)], "reopen",
                 [op((20, 10, 10), (44, 30, 40), time=0), op((0, 0, 0), (45, 39, 20), time=1)]]),  # adds time 1
]


def box_content(dtype, lo, hi, seed):
    """Samples of one write: smooth waves of the dataset coordinates, shifted and noised from ``seed``.

    Parameters
    ----------
    dtype : str
        The field's dtype (``"int16"``, ``"float32[3]"``).
    lo, hi : tuple of int
        The box, ``[z, y, x]`` (or ``[y, x]``), exclusive upper corner.
    seed : list of int
        Seeds ``numpy.random.default_rng``; the same on every rank.

    Returns
    -------
    numpy.ndarray
        C-contiguous, of the box's shape (plus a component axis for vector fields) and the field's dtype.
    """
    _, scalar, comps = hzio.parse_dtype(dtype)
    rng = np.random.default_rng(seed)
    axes = np.meshgrid(*[np.arange(a, b) for a, b in zip(lo, hi)], indexing="ij", sparse=True)
    shift = rng.uniform(0, 2 * np.pi)
    wave = sum(np.sin(g * (0.09 + 0.05 * k) + shift) for k, g in enumerate(axes))
    if comps > 1:
        wave = wave[..., None] + np.arange(comps)
    wave = np.broadcast_to(wave, tuple(b - a for a, b in zip(lo, hi)) + ((comps,) if comps > 1 else ()))
    if scalar.kind == "f":
        return (100 * wave + 0.01 * rng.standard_normal(wave.shape)).astype(scalar)
    info = np.iinfo(scalar)
    amp, mid = min((int(info.max) - int(info.min)) // 16, 10**6), (int(info.max) + int(info.min)) // 2
    return (np.rint(amp * wave) + mid + rng.integers(0, 4, wave.shape)).astype(scalar)


def stage(ds, spec, write, seed, comm):
    """Stage one write: the whole box in one process, or this rank's slab of it (split along axis 0).

    A rank whose slab is empty stages nothing; it still joins the phase's flush.
    """
    field = write["field"] or next(iter(ds.fields))
    lo = write["lo"] or (0,) * len(spec["shape"])
    hi = write["hi"] or spec["shape"]
    data = box_content(ds.fields[field], lo, hi, seed)
    if comm is not None:
        n = hi[0] - lo[0]
        a, b = n * comm.rank // comm.size, n * (comm.rank + 1) // comm.size
        if a == b:
            return
        data, lo = data[a:b], (lo[0] + a,) + tuple(lo[1:])
    ds.write(data, offset=lo, field=field, time=write["time"])


def write_dataset(root, index, spec, comm=None):
    """Create one dataset of :data:`DATASETS` under ``root`` and write its phases (Collective with ``comm``).

    Parameters
    ----------
    root : str
        Folder of the dataset's ``.idx`` (``<name>.idx``) and data folder.
    index : int
        The dataset's position in :data:`DATASETS`, part of every write's seed.
    spec : dict
        ``name``, ``phases`` and the keyword arguments of ``hzio.create``.
    comm : mpi4py.MPI.Comm, optional
        Write collectively; every rank must call this with the same arguments.
    """
    path = os.path.join(root, spec["name"] + ".idx")
    kwargs = {k: v for k, v in spec.items() if k not in ("name", "phases")}
    kwargs.setdefault("durable", False)
    threads = 1 if comm is not None else 0
    ds = hzio.create(path, threads=threads, comm=comm, **kwargs)
    phases = spec["phases"]
    for p, phase in enumerate(phases):
        if phase == "reopen":
            ds.close()
            ds = hzio.open(path, mode="r+", durable=kwargs["durable"], threads=threads, comm=comm)
            continue
        for w, write in enumerate(phase):
            stage(ds, spec, write, [SEED, index, p, w], comm)
        if p < len(phases) - 1:
            ds.flush()
    ds.close()


def write_all(root, comm=None):
    """Write every dataset of :data:`DATASETS` into ``root`` (created if missing)."""
    os.makedirs(root, exist_ok=True)
    for index, spec in enumerate(DATASETS):
        write_dataset(root, index, spec, comm)


def run_mpi_writes(root):
    """Run this script's ``write-mpi`` mode on :data:`RANKS` ranks under mpiexec, into ``root``.

    Returns
    -------
    bool
        True when mpiexec exited with 0 within :data:`MPI_TIMEOUT_S`; its output is printed otherwise.
    """
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONUNBUFFERED="1")
    cmd = ["mpiexec", "-n", str(RANKS), "--oversubscribe", sys.executable, os.path.abspath(__file__), "write-mpi",
           root]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True)
    except OSError as e:
        print(f"FAIL: cannot run {' '.join(cmd)}: {e}")
        return False
    try:
        out, _ = proc.communicate(timeout=MPI_TIMEOUT_S)
        ok = proc.returncode == 0
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, ok = proc.communicate()[0], False
    if not ok:
        print(f"FAIL: {' '.join(cmd)} exited with {proc.returncode}\n{out[-6000:]}")
    return ok


def write_mpi_main(root):
    """The ``write-mpi`` mode (one rank of the mpiexec job): write every dataset collectively."""
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    try:
        if comm.size != RANKS:
            raise RuntimeError(f"write-mpi runs on {RANKS} ranks, not {comm.size}")
        write_all(root, comm)
    except Exception:
        traceback.print_exc()
        sys.stdout.flush()
        comm.Abort(1)
    return 0


def tree_digests(root):
    """Return ``{relative path: sha256 hex}`` of every file under ``root``, sorted by path."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            out[os.path.relpath(path, root).replace(os.sep, "/")] = h.hexdigest()
    return dict(sorted(out.items()))


def kind_counts(paths):
    """Describe ``paths`` as counts of ``.idx`` files, statistics sidecars and data files."""
    idx = sum(p.endswith(".idx") for p in paths)
    sidecars = sum(p.endswith(".hzstats") for p in paths)
    return f"{len(paths) - idx - sidecars} data files, {sidecars} sidecars, {idx} .idx"


def describe(spec, digests):
    """One line about a dataset of :data:`DATASETS`: shape, fields, codecs, layouts, times, commits, files."""
    items = spec["fields"].items() if isinstance(spec["fields"], dict) else spec["fields"]
    fields = ", ".join(f"{i[0]} {i[1]} {(i[2] if len(i) > 2 else {}).get('codec', spec['codec'])} "
                       f"{(i[2] if len(i) > 2 else {}).get('layout', spec.get('layout', 'hzorder'))}" for i in items)
    commits = sum(phase != "reopen" for phase in spec["phases"])
    files = sum(p.startswith(spec["name"] + "/") for p in digests)
    return (f"  {spec['name']}: shape {spec['shape']}, {fields}; times {spec.get('times')}, "
            f"bits_per_block {spec['bits_per_block']}, blocks_per_file {spec['blocks_per_file']}, "
            f"{commits} commits, {files} files{', durable' if spec.get('durable') else ''}")


def diff_mapping(a, b):
    """Compare two ``{path: digest}`` mappings.

    Returns
    -------
    tuple of list
        ``(identical, differing, missing, extra)`` paths, sorted: ``missing`` are in ``a`` only,
        ``extra`` in ``b`` only.
    """
    identical = sorted(p for p in a if p in b and a[p] == b[p])
    differing = sorted(p for p in a if p in b and a[p] != b[p])
    return identical, differing, sorted(set(a) - set(b)), sorted(set(b) - set(a))


def report_diff(label, a, b):
    """Print the differences of two mappings under ``label``; return (summary text, whether all are equal)."""
    identical, differing, missing, extra = diff_mapping(a, b)
    for title, paths in (("differ", differing), ("missing", missing), ("extra", extra)):
        for p in paths:
            print(f"  {label}: {title}: {p}")
    same = not (differing or missing or extra)
    text = f"{label}: {len(identical)} files identical"
    if not same:
        text += f", {len(differing)} differ, {len(missing)} missing, {len(extra)} extra"
    return text, same


def write_main(outdir):
    """The ``write`` mode: one-process and MPI writes, digests.json, and the serial == mpi check."""
    outdir = os.path.abspath(outdir)
    roots = {g: os.path.join(outdir, g) for g in GROUPS}
    digests_path = os.path.join(outdir, "digests.json")
    taken = [p for p in (*roots.values(), digests_path) if os.path.exists(p)]
    if taken:
        print(f"FAIL: {', '.join(taken)} already exist(s); give a new OUTDIR or remove them")
        return 2
    print(f"hzio {hzio.__version__}, _core built {HZIO_BUILT}; {len(DATASETS)} datasets")
    write_all(roots["serial"])
    if not run_mpi_writes(roots[GROUPS[1]]):
        return 1
    digests = {"hzio": hzio.__version__, "hzio_core_built": HZIO_BUILT}
    digests.update({g: tree_digests(roots[g]) for g in GROUPS})
    with open(digests_path, "w") as f:
        json.dump(digests, f, indent=1)
        f.write("\n")
    for spec in DATASETS:
        print(describe(spec, digests["serial"]))
    for g in GROUPS:
        print(f"{g}: {len(digests[g])} files ({kind_counts(digests[g])})")
    print(f"wrote {digests_path}")
    text, same = report_diff(f"serial vs {GROUPS[1]}", digests["serial"], digests[GROUPS[1]])
    print(text + ("" if same else "\nFAIL: the files depend on the rank count"))
    return 0 if same else 1


def compare_main(path_a, path_b):
    """The ``compare`` mode: per group, files that differ, are missing from B or extra in B."""
    try:
        with open(path_a) as f:
            a = json.load(f)
        with open(path_b) as f:
            b = json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL: cannot read the digests: {e}")
        return 2
    texts, same = [], True
    for g in GROUPS:
        text, ok = report_diff(g, a.get(g, {}), b.get(g, {}))
        texts.append(text)
        same &= ok
    print("; ".join(texts))
    return 0 if same else 1


def main(argv):
    usage = "usage: write_digests.py write OUTDIR | compare A/digests.json B/digests.json"
    if len(argv) == 2 and argv[0] == "write":
        return write_main(argv[1])
    if len(argv) == 2 and argv[0] == "write-mpi":
        return write_mpi_main(argv[1])
    if len(argv) == 3 and argv[0] == "compare":
        return compare_main(argv[1], argv[2])
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
